// SPDX-License-Identifier: Apache-2.0
// The execution path a test binary runs on, chosen by ctest through environment variables (read
// here, in the tests; the library reads no environment):
//   LINFER_TEST_PATH: "pipeline" (default: the row pipeline where the model allows it),
//                     "operators" (operator by operator) or "xnnpack" (f32/f16 dense layers on
//                     XNNPACK operators);
//   LINFER_TEST_ISA:  "avx2" or "sse4" (x86), "generic": the session's kernels capped there
//                     (max_isa: the dense kernels, the portable ones for sse4 and generic, and
//                     Highway's at that target, its scalar one for generic), so that one machine
//                     tests the lower targets its CPU also runs.
#pragma once

#include <cstdlib>
#include <string>

#include <hwy/highway.h>  // HWY_STATIC_TARGET: the portable target the build compiles

#include "linfer/linfer.hpp"

namespace linfer::testing {

inline std::string test_path() {
  const char* v = std::getenv("LINFER_TEST_PATH");
  return v && *v ? v : "pipeline";
}

// Options selecting `path` on top of `base`.
inline SessionOptions with_path(SessionOptions base, const std::string& path) {
  base.dense_path = path == "xnnpack" ? LINFER_DENSE_XNNPACK : LINFER_DENSE_AUTO;
  base.row_pipeline = path == "operators" ? LINFER_PIPELINE_OFF : LINFER_PIPELINE_AUTO;
  // XNNPACK's pool (pthreadpool) spins about a million pauses before it sleeps, in the workers
  // after each operator and in the caller waiting for them: beside the tests ctest runs next to
  // this one, 2 spinning threads on 2 CPUs made a worker wait whole time slices per operator
  // (test_determinism's XNNPACK 2-thread runs: 95 s instead of 0.8). Its workers sleep instead.
  if (path == "xnnpack") base.thread_wait = LINFER_WAIT_YIELD;
  return base;
}

inline std::string test_isa() {
  const char* v = std::getenv("LINFER_TEST_ISA");
  return v && *v ? v : "";
}

// The Highway target name that sessions under LINFER_TEST_ISA must report ("" when nothing is
// forced): the session's max_isa caps the Highway kernels too.
inline std::string force_test_isa() {
  const std::string isa = test_isa();
#if defined(__x86_64__)
  if (isa == "avx2") return "AVX2";
  if (isa == "sse4") return "SSE4";
#endif
  if (isa == "generic") return HWY_STATIC_TARGET == HWY_SCALAR ? "SCALAR" : "EMU128";
  return "";
}

inline SessionOptions path_options(SessionOptions base = SessionOptions()) {
  const std::string isa = test_isa();
  if (isa == "avx2") base.max_isa = LINFER_ISA_X86_AVX2;
  if (isa == "sse4") base.max_isa = LINFER_ISA_X86_SSE4;
  if (isa == "generic") base.max_isa = LINFER_ISA_GENERIC;
  return with_path(base, test_path());
}

}  // namespace linfer::testing
