// SPDX-License-Identifier: Apache-2.0
// linfer-tokenize MODEL.lfm [FILE] [--time]: each input line's token ids (the model's tokenizer,
// with its template), space-separated, one output line per input line; standard input without
// FILE. The line's end (\n, and a \r before it) is not part of the line. --time: no ids; the time
// spent tokenizing (linfer_tokenize alone, one thread) and tokens per second on standard error.
#include <chrono>
#include <cstdio>
#include <algorithm>
#include <string>
#include <vector>

#include "linfer/linfer.hpp"

namespace {

int fail(const std::string& message) {
  std::fprintf(stderr, "linfer-tokenize: %s\n", message.c_str());
  return 1;
}

// Reads one line (without its \n) into *line; false at the end of the input.
bool read_line(std::FILE* in, std::string* line) {
  line->clear();
  int c;
  while ((c = std::fgetc(in)) != EOF && c != '\n') line->push_back(char(c));
  return c != EOF || !line->empty();
}

}  // namespace

int main(int argc, char** argv) {
  bool time = false;
  if (argc >= 2 && std::string(argv[argc - 1]) == "--time") time = true, --argc;
  if (argc < 2 || argc > 3 || argv[1][0] == '-') {
    const bool help = argc >= 2 && (std::string(argv[1]) == "-h" || std::string(argv[1]) == "--help");
    std::fprintf(help ? stdout : stderr, "usage: linfer-tokenize MODEL.lfm [FILE] [--time]\n");
    return help ? 0 : 2;
  }
  linfer::Model model;
  linfer::Status s = linfer::Model::Load(argv[1], &model);
  if (!s) return fail(std::string(argv[1]) + ": " + s.message());
  if (!model.has_tokenizer()) return fail(std::string(argv[1]) + ": the model file carries no tokenizer");
  std::FILE* in = stdin;
  if (argc == 3) {
    in = std::fopen(argv[2], "rb");
    if (!in) return fail(std::string("cannot open '") + argv[2] + "'");
  }
  std::string line, out;
  std::vector<int32_t> ids;
  std::vector<std::string> lines;
  for (size_t number = 1; read_line(in, &line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (time) {
      lines.push_back(line);
      continue;
    }
    s = model.Tokenize(line, &ids);
    if (!s) return fail("line " + std::to_string(number) + ": " + s.message());
    out.clear();
    for (size_t i = 0; i < ids.size(); ++i) {
      if (i) out.push_back(' ');
      out += std::to_string(ids[i]);
    }
    out.push_back('\n');
    if (std::fwrite(out.data(), 1, out.size(), stdout) != out.size()) return fail("cannot write the output");
  }
  if (std::ferror(in)) return fail("cannot read the input");
  if (time) {  // into one buffer big enough for any line (3 tokens a byte at most: ill-formed bytes are U+FFFD)
    size_t longest = 0, tokens = 0, bytes = 0;
    for (const std::string& l : lines) longest = std::max(longest, l.size());
    ids.resize(3 * longest + 64);
    const auto t0 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < lines.size(); ++i) {
      size_t count = 0;
      if (linfer_tokenize(model.get(), lines[i].data(), lines[i].size(), ids.data(), ids.size(), &count) != LINFER_OK)
        return fail("line " + std::to_string(i + 1) + ": " + linfer_last_error());
      tokens += count;
      bytes += lines[i].size();
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::fprintf(stderr, "linfer: %zu lines, %zu bytes, %zu tokens in %.3f s: %.0f tokens/s, %.1f MB/s\n", lines.size(),
                 bytes, tokens, seconds, tokens / seconds, bytes / seconds / 1e6);
  }
  if (std::fflush(stdout) != 0) return fail("cannot write the output");
  return 0;
}
