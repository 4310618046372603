// Loads a model with the C++ API of an installed linfer and runs it on ids 1..T.
#include <linfer/linfer.hpp>

#include <cstdio>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  linfer::Model model;
  linfer::Status s = linfer::Model::Load(argv[1], &model);
  if (!s) {
    std::fprintf(stderr, "%s\n", s.message().c_str());
    return 1;
  }
  linfer::Session session;
  s = linfer::Session::Create(model, linfer::SessionOptions(), &session);
  std::vector<int32_t> ids(5, 1);
  if (s) s = session.Run(ids);
  if (!s) {
    std::fprintf(stderr, "%s\n", s.message().c_str());
    return 1;
  }
  std::printf("consumer ok: %zu x %zu\n", session.output().rows, session.output().cols);
  return 0;
}
