// SPDX-License-Identifier: Apache-2.0
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
//
// With --lines each non-empty line of the text is classified on its own, one output line each:
// the most likely label, its probability and the start of the line (`de (99.7%)  Guten Morgen`).
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
  std::fprintf(stderr, "usage: %s [--threshold P] [--lines] MODEL.lfm LABELS.txt [TEXT_FILE | -]\n", argv0);
  return 2;
}

// The first `length` bytes of text, or fewer so as not to cut a UTF-8 character.
size_t utf8_prefix(const std::string& text, size_t length) {
  if (length >= text.size()) return text.size();
  while (length > 1 && (static_cast<unsigned char>(text[length]) & 0xC0) == 0x80) --length;
  return length;
}

// Class probabilities (softmax of the logits) of the text's bytes, and the classes from most to
// least likely.
linfer::Status classify(linfer::Session& session, const std::string& text, std::vector<double>* p,
                        std::vector<size_t>* order) {
  std::vector<int32_t> ids;
  for (unsigned char c : text) ids.push_back(c);
  linfer::Status status = session.Run(ids);
  if (!status) return status;
  const linfer::OutputView logits = session.output();
  p->assign(logits.cols, 0.0);
  const float top = *std::max_element(logits.data, logits.data + logits.cols);
  double sum = 0;
  for (size_t c = 0; c < p->size(); ++c) sum += (*p)[c] = std::exp(double(logits.data[c]) - top);
  for (double& v : *p) v /= sum;
  order->resize(p->size());
  for (size_t c = 0; c < order->size(); ++c) (*order)[c] = c;
  std::stable_sort(order->begin(), order->end(), [&](size_t a, size_t b) { return (*p)[a] > (*p)[b]; });
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  double threshold = -1;  // none
  bool lines = false;
  std::vector<const char*> args;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--lines") == 0) {
      lines = true;
    } else if (std::strcmp(argv[i], "--threshold") == 0) {
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
    std::fprintf(stderr, "%s has %zu labels, the model has %u classes\n", args[1], labels.size(), info.output_channels);
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
  linfer::SessionOptions options;
  linfer::Session session;
  std::vector<double> p;
  std::vector<size_t> order;
  if (lines) {  // one session for every line: its arena sized for the model's longest input
    status = linfer::Session::Create(model, options, &session);
    size_t start = 0, count = 0;
    while (status && start < text.size()) {
      size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      std::string line = text.substr(start, end - start);
      start = end + 1;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.empty()) continue;
      line.resize(utf8_prefix(line, info.max_seq_len));
      status = classify(session, line, &p, &order);
      if (!status) break;
      const size_t shown = utf8_prefix(line, 60);
      const std::string label = p[order[0]] < threshold ? "unknown" : labels[order[0]];
      char answer[64];
      std::snprintf(answer, sizeof answer, "%s (%.1f%%)", label.c_str(), 100.0 * p[order[0]]);
      std::printf("%-15s %s%s\n", answer, line.substr(0, shown).c_str(), shown < line.size() ? "..." : "");
      ++count;
    }
    if (status && count == 0) {
      std::fprintf(stderr, "%s has no text\n", source);
      return 1;
    }
  } else {
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    if (text.empty()) {
      std::fprintf(stderr, "%s is empty\n", source);
      return 1;
    }
    text.resize(utf8_prefix(text, info.max_seq_len));
    options.max_seq_len = uint32_t(text.size());
    status = linfer::Session::Create(model, options, &session);
    if (status) status = classify(session, text, &p, &order);
  }
  if (!status) {
    std::fprintf(stderr, "%s\n", status.message().c_str());
    return 1;
  }
  if (lines) return 0;
  const size_t shown = std::min<size_t>(3, order.size());
  if (p[order[0]] < threshold) {
    std::printf("unknown\n");
    for (size_t i = 0; i < shown; ++i) std::printf("  %s (%.1f%%)\n", labels[order[i]].c_str(), 100.0 * p[order[i]]);
    return 0;
  }
  std::printf("%s (%.1f%%)\n", labels[order[0]].c_str(), 100.0 * p[order[0]]);
  for (size_t i = 1; i < shown; ++i) std::printf("  then %s (%.1f%%)\n", labels[order[i]].c_str(), 100.0 * p[order[i]]);
  return 0;
}
