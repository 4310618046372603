// The execution path a test binary runs on, chosen by ctest through LINFER_TEST_PATH (read here,
// in the tests; the library reads no environment): "pipeline" (default: the row pipeline where
// the model allows it), "operators" (operator by operator) or "xnnpack" (f32 dense layers on
// XNNPACK operators).
#pragma once

#include <cstdlib>
#include <string>

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
  return base;
}

inline SessionOptions path_options(SessionOptions base = SessionOptions()) {
  return with_path(base, test_path());
}

}  // namespace linfer::testing
