// Classifies a text with a byte-level classifier model (the shipped langid model):
//
//   linfer_classify examples/models/langid.int8.lfm examples/models/langid.labels.txt FILE.txt
//   echo "Das ist ein Satz." | linfer_classify MODEL LABELS          (no file or "-": standard input)
//   linfer_classify --threshold 0.6 MODEL LABELS FILE.txt
//
// Each byte of the text is one token; a longer text is cut to the model's maximum length (at a
// character boundary), and line breaks at its end (echo's) are not part of it. Prints the three
// most likely labels with their probabilities (softmax of the logits):
//
//   es (97.1%)
//     then pt_BR (2.5%)
//     then it (0.2%)
//
// With --threshold P (0 <= P <= 1), when the most likely label's probability is below P the first
// line is "unknown" and the three candidates follow as "  es (45.0%)" lines.
#include <linfer/linfer.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

namespace {

int usage(const char* argv0) {
  std::fprintf(stderr, "usage: %s [--threshold P] MODEL.lfm LABELS.txt [TEXT_FILE | -]\n", argv0);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  double threshold = -1;  // none
  std::vector<const char*> args;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--threshold") == 0) {
      if (i + 1 >= argc) return usage(argv[0]);
      char* end = nullptr;
      threshold = std::strtod(argv[++i], &end);
      if (end == argv[i] || *end != '\0' || !(threshold >= 0 && threshold <= 1)) {
        std::fprintf(stderr, "--threshold takes a probability between 0 and 1, not '%s'\n", argv[i]);
        return 2;
      }
    } else {
      args.push_back(argv[i]);
    }
  }
  if (args.size() != 2 && args.size() != 3) return usage(argv[0]);
  const bool from_stdin = args.size() == 2 || std::strcmp(args[2], "-") == 0;
  const char* source = from_stdin ? "standard input" : args[2];

  linfer::Model model;
  linfer::Status status = linfer::Model::Load(args[0], &model);
  if (!status) {
    std::fprintf(stderr, "%s: %s\n", args[0], status.message().c_str());
    return 1;
  }
  const linfer_model_info info = model.info();
  if (info.head != LINFER_HEAD_CLASSIFIER || info.vocab_size < 256) {
    std::fprintf(stderr, "%s is not a byte-level classifier\n", args[0]);
    return 1;
  }
  std::vector<std::string> labels;
  std::ifstream label_file(args[1]);
  for (std::string line; std::getline(label_file, line);) labels.push_back(line);
  if (labels.size() != info.output_channels) {
    std::fprintf(stderr, "%s has %zu labels, the model has %u classes\n", args[1], labels.size(),
                 info.output_channels);
    return 1;
  }
  std::string text;
  if (from_stdin) {
    text.assign(std::istreambuf_iterator<char>(std::cin), {});
  } else {
    std::ifstream text_file(args[2], std::ios::binary);
    if (!text_file) {
      std::fprintf(stderr, "cannot open %s\n", args[2]);
      return 1;
    }
    text.assign(std::istreambuf_iterator<char>(text_file), {});
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (text.empty()) {
    std::fprintf(stderr, "%s is empty\n", source);
    return 1;
  }
  size_t length = std::min<size_t>(text.size(), info.max_seq_len);
  if (length < text.size()) {  // do not cut a UTF-8 character
    while (length > 1 && (static_cast<unsigned char>(text[length]) & 0xC0) == 0x80) --length;
  }
  std::vector<int32_t> ids;
  for (size_t i = 0; i < length; ++i) ids.push_back(static_cast<unsigned char>(text[i]));

  linfer::SessionOptions options;
  options.max_seq_len = uint32_t(ids.size());
  linfer::Session session;
  status = linfer::Session::Create(model, options, &session);
  if (status) status = session.Run(ids);
  if (!status) {
    std::fprintf(stderr, "%s\n", status.message().c_str());
    return 1;
  }
  // Softmax over the class logits, then the classes from most to least likely.
  const linfer::OutputView logits = session.output();
  std::vector<double> p(logits.cols);
  const float top = *std::max_element(logits.data, logits.data + logits.cols);
  double sum = 0;
  for (size_t c = 0; c < p.size(); ++c) sum += p[c] = std::exp(double(logits.data[c]) - top);
  for (double& v : p) v /= sum;
  std::vector<size_t> order(p.size());
  for (size_t c = 0; c < order.size(); ++c) order[c] = c;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p[a] > p[b]; });
  const size_t shown = std::min<size_t>(3, order.size());
  if (p[order[0]] < threshold) {
    std::printf("unknown\n");
    for (size_t i = 0; i < shown; ++i)
      std::printf("  %s (%.1f%%)\n", labels[order[i]].c_str(), 100.0 * p[order[i]]);
    return 0;
  }
  std::printf("%s (%.1f%%)\n", labels[order[0]].c_str(), 100.0 * p[order[0]]);
  for (size_t i = 1; i < shown; ++i)
    std::printf("  then %s (%.1f%%)\n", labels[order[i]].c_str(), 100.0 * p[order[i]]);
  return 0;
}
