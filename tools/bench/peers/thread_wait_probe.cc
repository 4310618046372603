// SPDX-License-Identifier: Apache-2.0
// thread_wait_probe MODEL.lfm N [THREADS]: times one session per worker wait mode (spin, then
// yield) on N token ids, 1 warm-up + 7 timed runs each, and prints the median, min and max.
// Shows what linfer's 2-thread cells in docs/peers.md pay on a machine with more runnable threads
// than cores: LINFER_WAIT_AUTO spins whenever THREADS fits the CPUs the process may use, and each
// barrier then waits for a time slice. Build (after linfer's build in build/):
//   g++ -O2 -std=c++17 -Iruntime/include -Ibuild/version_include
//       tools/bench/peers/thread_wait_probe.cc -Lbuild/runtime -llinfer
//       -Wl,-rpath,$PWD/build/runtime -o build-peers/thread_wait_probe
#include <linfer/linfer.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: thread_wait_probe MODEL.lfm N [THREADS]\n");
    return 2;
  }
  linfer::Model model;
  if (!linfer::Model::Load(argv[1], &model).ok()) {
    std::fprintf(stderr, "thread_wait_probe: cannot load %s\n", argv[1]);
    return 1;
  }
  const int n = std::atoi(argv[2]);
  const int threads = argc > 3 ? std::atoi(argv[3]) : 2;
  if (n < 1 || threads < 1) {
    std::fprintf(stderr, "thread_wait_probe: N and THREADS must be positive\n");
    return 2;
  }
  std::vector<int32_t> ids(n);
  for (int i = 0; i < n; ++i) ids[i] = (i * 37) % 256;
  for (linfer_thread_wait wait : {LINFER_WAIT_SPIN, LINFER_WAIT_YIELD}) {
    linfer::SessionOptions options;
    options.num_threads = uint32_t(threads);
    options.thread_wait = wait;
    linfer::Session session;
    if (!linfer::Session::Create(model, options, &session).ok()) {
      std::fprintf(stderr, "thread_wait_probe: cannot create a session (N beyond the model's n?)\n");
      return 1;
    }
    std::vector<double> ms;
    for (int r = 0; r < 8; ++r) {
      const auto t = std::chrono::steady_clock::now();
      if (!session.Run(ids.data(), size_t(n)).ok()) return 1;
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count());
    }
    std::sort(ms.begin() + 1, ms.end());  // ms[0]: warm-up
    std::printf("%s threads %d, n %d: median %.1f ms, min %.1f, max %.1f\n",
                wait == LINFER_WAIT_SPIN ? "spin: " : "yield:", threads, n, ms[4], ms[1], ms[7]);
  }
  return 0;
}
