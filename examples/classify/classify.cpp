// Classifies a text file with a byte-level classifier model (the shipped langid model):
//
//   linfer_classify examples/models/langid.f32.lfm examples/models/langid.labels.txt FILE.txt
//
// Each byte of the file is one token; a longer file is cut to the model's maximum length.
#include <linfer/linfer.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s MODEL.lfm LABELS.txt TEXT_FILE\n", argv[0]);
    return 2;
  }
  linfer::Model model;
  linfer::Status status = linfer::Model::Load(argv[1], &model);
  if (!status) {
    std::fprintf(stderr, "%s: %s\n", argv[1], status.message().c_str());
    return 1;
  }
  const linfer_model_info info = model.info();
  if (info.head != LINFER_HEAD_CLASSIFIER || info.vocab_size < 256) {
    std::fprintf(stderr, "%s is not a byte-level classifier\n", argv[1]);
    return 1;
  }
  std::vector<std::string> labels;
  std::ifstream label_file(argv[2]);
  for (std::string line; std::getline(label_file, line);) labels.push_back(line);
  if (labels.size() != info.output_channels) {
    std::fprintf(stderr, "%s has %zu labels, the model has %u classes\n", argv[2], labels.size(),
                 info.output_channels);
    return 1;
  }
  std::ifstream text_file(argv[3], std::ios::binary);
  if (!text_file) {
    std::fprintf(stderr, "cannot open %s\n", argv[3]);
    return 1;
  }
  const std::string text((std::istreambuf_iterator<char>(text_file)), {});
  if (text.empty()) {
    std::fprintf(stderr, "%s is empty\n", argv[3]);
    return 1;
  }
  std::vector<int32_t> ids;
  for (unsigned char c : text.substr(0, info.max_seq_len)) ids.push_back(c);

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
  std::vector<size_t> order(p.size());
  for (size_t c = 0; c < order.size(); ++c) order[c] = c;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p[a] > p[b]; });
  std::printf("%s (%.1f%%)\n", labels[order[0]].c_str(), 100.0 * p[order[0]] / sum);
  for (size_t i = 1; i < std::min<size_t>(3, order.size()); ++i)
    std::printf("  then %s (%.1f%%)\n", labels[order[i]].c_str(), 100.0 * p[order[i]] / sum);
  return 0;
}
