// SPDX-License-Identifier: Apache-2.0
// Sentence vectors: the mean of a model's final hidden states over the tokens, and the cosine
// similarity of two texts' vectors.
//
//   linfer_embed MODEL.lfm TEXT_A TEXT_B
#include <linfer/linfer.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {
// Returns false and prints why on failure.
bool sentence_vector(linfer::Session& session, const std::vector<int32_t>& ids, std::vector<double>* v) {
  const linfer::Status s = session.Run(ids);
  if (!s) {
    std::fprintf(stderr, "%s\n", s.message().c_str());
    return false;
  }
  const linfer::OutputView h = session.hidden_states();
  v->assign(h.cols, 0.0);
  for (size_t r = 0; r < h.rows; ++r)
    for (size_t c = 0; c < h.cols; ++c) (*v)[c] += h.row(r)[c] / double(h.rows);
  return true;
}

bool read_bytes(const char* path, size_t max_len, std::vector<int32_t>* ids) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  const std::string text((std::istreambuf_iterator<char>(f)), {});
  ids->clear();
  for (unsigned char c : text.substr(0, max_len)) ids->push_back(c);
  return !ids->empty();
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s MODEL.lfm TEXT_A TEXT_B\n", argv[0]);
    return 2;
  }
  linfer::Model model;
  linfer::Status s = linfer::Model::Load(argv[1], &model);
  if (!s) {
    std::fprintf(stderr, "%s: %s\n", argv[1], s.message().c_str());
    return 1;
  }
  const uint32_t n = model.info().max_seq_len;
  std::vector<int32_t> a, b;
  if (!read_bytes(argv[2], n, &a) || !read_bytes(argv[3], n, &b)) {
    std::fprintf(stderr, "cannot read the two texts (missing or empty)\n");
    return 1;
  }
  linfer::Session session;  // one session serves both texts: sized for the model's n
  s = linfer::Session::Create(model, linfer::SessionOptions(), &session);
  if (!s) {
    std::fprintf(stderr, "%s\n", s.message().c_str());
    return 1;
  }
  std::vector<double> va, vb;
  if (!sentence_vector(session, a, &va) || !sentence_vector(session, b, &vb)) return 1;
  double dot = 0, na = 0, nb = 0;
  for (size_t i = 0; i < va.size(); ++i) {
    dot += va[i] * vb[i];
    na += va[i] * va[i];
    nb += vb[i] * vb[i];
  }
  std::printf("vector size %zu\ncosine similarity %.4f\n", va.size(), dot / std::sqrt(na * nb));
  return 0;
}
