// Weak stand-ins for the entry points of the aarch64 dense kernels that dense_select.cc lists
// (kernels/dense/dense_internal.h), so that dense_proxy links while a kernel's source does not
// exist yet. A kernel that is built defines its entry point strongly and replaces the stand-in at
// link time (CMakeLists.txt links linfer_kernels whole); dense_proxy compares a kernel's run and
// quantize pointers with linfer_proxy_missing_run/_quantize and reports it as "not built" instead
// of calling it. Called anyway, a stand-in stops the program with a message.
#include <cstdio>
#include <cstdlib>

#include "dense/dense_internal.h"

using linfer::kernels::DenseEpilogue;
using linfer::kernels::DenseInput;
using linfer::kernels::DenseWeights;

extern "C" LINFER_DENSE_RUN(linfer_proxy_missing_run) {
  std::fprintf(stderr, "dense_proxy: this dense kernel is not built (its source is missing)\n");
  std::abort();
}

extern "C" LINFER_DENSE_QUANTIZE(linfer_proxy_missing_quantize) {
  std::fprintf(stderr, "dense_proxy: this int8 quantizer is not built (its source is missing)\n");
  std::abort();
}

#if defined(__aarch64__)
namespace linfer::kernels::dense {
#define LINFER_PROXY_WEAK_RUN(fn) \
  LINFER_DENSE_RUN(fn) __attribute__((weak, alias("linfer_proxy_missing_run")));
#define LINFER_PROXY_WEAK_QUANTIZE(fn) \
  LINFER_DENSE_QUANTIZE(fn) __attribute__((weak, alias("linfer_proxy_missing_quantize")));
LINFER_PROXY_WEAK_RUN(run_f32_neon)
LINFER_PROXY_WEAK_RUN(run_f16_neon)
LINFER_PROXY_WEAK_RUN(run_int8_neon)
LINFER_PROXY_WEAK_RUN(run_int8_neondot)
LINFER_PROXY_WEAK_QUANTIZE(quantize_s8_neon)
}  // namespace linfer::kernels::dense
#endif
