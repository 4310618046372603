// linfer-tokenize MODEL.lfm [FILE]: each input line's token ids (the model's tokenizer, with its
// template), space-separated, one output line per input line; standard input without FILE.
// The line's end (\n, and a \r before it) is not part of the line.
#include <cstdio>
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
  if (argc < 2 || argc > 3 || std::string(argv[1]) == "-h" || std::string(argv[1]) == "--help") {
    std::fprintf(argc >= 2 && argv[1][0] == '-' && argv[1][1] == 'h' ? stdout : stderr,
                 "usage: linfer-tokenize MODEL.lfm [FILE]\n");
    return argc >= 2 && argv[1][0] == '-' && argv[1][1] == 'h' ? 0 : 2;
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
  for (size_t number = 1; read_line(in, &line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
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
  if (std::fflush(stdout) != 0) return fail("cannot write the output");
  return 0;
}
