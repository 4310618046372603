// SPDX-License-Identifier: Apache-2.0
// linfer-embed MODEL.lfm [FILE] [--threads N]: one embedding per input line (standard input
// without FILE), its values space-separated on one output line. The model must carry its
// tokenizer and pool its output (a sentence-transformers model converted with its modules.json, or
// linfer-convert --pooling). A line longer than the model's n tokens is cut to n, keeping its last
// token (the template's closing one), as Hugging Face's truncation does.
#include <cstdio>
#include <string>
#include <vector>

#include "linfer/linfer.hpp"
#include "tool_util.h"

namespace {

constexpr const char* kUsage = "usage: linfer-embed MODEL.lfm [FILE] [--threads N]";

int fail(const std::string& message, int code = 1) {
  std::fprintf(stderr, "linfer-embed: %s\n", message.c_str());
  if (code == 2) std::fprintf(stderr, "%s\n", kUsage);
  return code;
}

// Reads one line (without its \n, nor a \r before it) into *line; false at the end of the input.
bool read_line(std::FILE* in, std::string* line) {
  line->clear();
  int c;
  while ((c = std::fgetc(in)) != EOF && c != '\n') line->push_back(char(c));
  if (c == EOF && line->empty()) return false;
  if (!line->empty() && line->back() == '\r') line->pop_back();
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::string model_path, input_path;
  uint32_t threads = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--threads") {
      if (i + 1 >= argc) return fail("--threads needs a value", 2);
      if (!linfer::tools::parse_uint(argv[++i], 1, 256, &threads))
        return fail(std::string("--threads must be an integer in [1, 256], got '") + argv[i] + "'", 2);
    } else if (a == "-h" || a == "--help") {
      std::printf("%s\n", kUsage);
      return 0;
    } else if (!a.empty() && a[0] == '-') {
      return fail("unknown option '" + a + "'", 2);
    } else if (model_path.empty()) {
      model_path = a;
    } else if (input_path.empty()) {
      input_path = a;
    } else {
      return fail("unexpected argument '" + a + "'", 2);
    }
  }
  if (model_path.empty()) return fail("no model given", 2);
  linfer::Model model;
  linfer::Status s = linfer::Model::Load(model_path, &model);
  if (!s) return fail(model_path + ": " + s.message());
  if (!model.has_tokenizer()) return fail(model_path + ": the model file carries no tokenizer");
  const linfer_model_info info = model.info();
  if (info.head != LINFER_HEAD_POOLED)
    return fail(model_path +
                ": the model's output is not a pooled vector (convert it with its modules.json, or "
                "with linfer-convert --pooling cls|mean)");
  linfer::SessionOptions options;
  options.num_threads = threads;
  linfer::Session session;
  s = linfer::Session::Create(model, options, &session);
  if (!s) return fail(model_path + ": " + s.message());
  std::FILE* in = stdin;
  if (!input_path.empty() && !(in = std::fopen(input_path.c_str(), "rb")))
    return fail("cannot open '" + input_path + "'");
  std::string line, out;
  std::vector<int32_t> ids;
  char number[32];
  for (size_t n = 1; read_line(in, &line); ++n) {
    s = model.Tokenize(line, &ids);
    if (!s) return fail("line " + std::to_string(n) + ": " + s.message());
    if (ids.empty()) return fail("line " + std::to_string(n) + ": no tokens");
    if (ids.size() > info.max_seq_len) {
      ids[info.max_seq_len - 1] = ids.back();
      ids.resize(info.max_seq_len);
    }
    s = session.Run(ids);
    if (!s) return fail("line " + std::to_string(n) + ": " + s.message());
    const linfer::OutputView o = session.output();
    out.clear();
    for (size_t i = 0; i < o.cols; ++i) {
      std::snprintf(number, sizeof number, i ? " %.9g" : "%.9g", double(o.data[i]));
      out += number;
    }
    out.push_back('\n');
    if (std::fwrite(out.data(), 1, out.size(), stdout) != out.size()) return fail("cannot write the output");
  }
  if (std::ferror(in)) return fail("cannot read the input");
  if (std::fflush(stdout) != 0) return fail("cannot write the output");
  return 0;
}
