// SPDX-License-Identifier: Apache-2.0
// Loads a model with the C++ API of an installed linfer and runs it on ids 1..T.
//   consumer MODEL.lfm                      runs it
//   consumer MODEL.lfm --refused threads    (a build without threads) a 2-thread session must be
//   consumer MODEL.lfm --refused xnnpack    refused, (without XNNPACK) the XNNPACK dense path too,
//                                           with a message naming the build option
#include <linfer/linfer.hpp>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 2 && argc != 4) return 2;
  // The installed header and the installed library name one version.
  if (std::strcmp(linfer_version(), LINFER_VERSION_STRING) != 0) {
    std::fprintf(stderr, "liblinfer %s under a linfer.h of %s\n", linfer_version(), LINFER_VERSION_STRING);
    return 1;
  }
  linfer::Model model;
  linfer::Status s = linfer::Model::Load(argv[1], &model);
  if (!s) {
    std::fprintf(stderr, "%s\n", s.message().c_str());
    return 1;
  }
  linfer::Session session;
  if (argc == 4) {
    const bool threads = std::strcmp(argv[3], "threads") == 0;
    linfer::SessionOptions options;
    if (threads)
      options.num_threads = 2;
    else
      options.dense_path = LINFER_DENSE_XNNPACK;
    s = linfer::Session::Create(model, options, &session);
    const std::string option = threads ? "-DLINFER_THREADS=ON" : "-DLINFER_WITH_XNNPACK=ON";
    if (s || s.code() != LINFER_ERROR_UNSUPPORTED || s.message().find(option) == std::string::npos) {
      std::fprintf(stderr, "expected a refusal naming %s, got: %s\n", option.c_str(), s.message().c_str());
      return 1;
    }
    std::printf("consumer ok: refused: %s\n", s.message().c_str());
    return 0;
  }
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
