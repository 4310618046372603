// SPDX-License-Identifier: Apache-2.0
// dense_proxy: runs one dense layer shape N times with one kernel, and times nothing. Built for
// aarch64 and run under qemu-aarch64 with the instruction-counting plugin (run_proxy.sh), it gives
// the ARM proxy "instructions per repetition" as count(--reps 2) - count(--reps 1): everything
// else the program does (weights, packing, the check) is the same in both runs and cancels.
//
//   dense_proxy --list                      the dense kernels of this build and this CPU
//   dense_proxy --best DTYPE                the kernel select_dense_kernel(DTYPE, best_isa()) picks
//   dense_proxy --kernel K --shape RxINxOUT --reps N [--no-check]
//
// K: a kernel name as --list prints it (dense_f32_generic, dense_int8_neon, dense_f16_ref, ...),
// "best:f32|f16|int8" (the kernel the runtime would select on this CPU), or "xnnpack" (XNNPACK's
// f32 fully connected operator through linfer's XnnpackDense, single-threaded). Shape: rows x
// inputs x outputs, y[rows x out] = x[rows x in] W^T + b, no activation. One repetition is what
// a forward pass does for that layer: for int8 kernels the kernel's own activation quantizer over
// all rows, then the kernel over all rows and all output channels; for XNNPACK, setup + run.
//
// After the repetitions the first rows of y are checked against the scalar reference of the
// weights' dtype (int8 bit for bit, as kernels.h requires; f32, f16 and XNNPACK within a float
// summation bound), so that a proxy count never comes from a kernel that computes something else.
// Prints one line of key=value pairs; exit status 0 when the check passed (or was skipped).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "dense/dense_internal.h"
#include "kernels.h"
#include "linfer/format/panel.h"
#include "linfer/types/half.h"
#include "linfer/types/int8.h"

using linfer::DType;
using linfer::kernels::DenseEpilogue;
using linfer::kernels::DenseInput;
using linfer::kernels::DenseKernel;
using linfer::kernels::DenseWeights;
namespace lk = linfer::kernels;

namespace {

int fail(const std::string& m, int code = 1) {
  std::fprintf(stderr, "dense_proxy: %s\n", m.c_str());
  if (code == 2)
    std::fprintf(stderr,
                 "usage: dense_proxy --list | --best f32|f16|int8 |\n"
                 "       dense_proxy --kernel NAME|best:DTYPE|xnnpack --shape ROWSxINxOUT --reps N "
                 "[--no-check]\n");
  return code;
}

const char* dtype_name(DType d) { return d == DType::F32 ? "f32" : d == DType::F16 ? "f16" : "int8"; }
bool parse_dtype(const std::string& s, DType* d) {
  if (s == "f32")
    *d = DType::F32;
  else if (s == "f16")
    *d = DType::F16;
  else if (s == "int8" || s == "i8")
    *d = DType::I8;
  else
    return false;
  return true;
}

// Every kernel of this build for dtype, the reference last.
std::vector<const DenseKernel*> kernels_of(DType d) {
  size_t count = 0;
  const DenseKernel* const* list = lk::dense_kernels(d, &count);
  std::vector<const DenseKernel*> out(list, list + count);
  out.push_back(&lk::dense_kernel_ref(d));
  return out;
}

const DenseKernel* find_kernel(const std::string& name) {
  for (DType d : {DType::F32, DType::F16, DType::I8})
    for (const DenseKernel* k : kernels_of(d))
      if (name == k->name) return k;
  return nullptr;
}

// Deterministic values in [-1, 1) (xorshift; no <random> so that the sequence is the same with
// every standard library).
struct Rng {
  uint64_t s;
  float next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return float(int64_t(s >> 40) - (int64_t(1) << 23)) / float(int64_t(1) << 23);
  }
};

struct Aligned {
  void operator()(void* p) const { std::free(p); }
};
template <class T>
std::unique_ptr<T[], Aligned> alloc(size_t n) {
  const size_t bytes = std::max<size_t>(64, (n * sizeof(T) + 63) / 64 * 64);
  void* p = std::aligned_alloc(64, bytes);
  if (!p) {
    std::fprintf(stderr, "dense_proxy: out of memory (%zu bytes)\n", bytes);
    std::exit(1);
  }
  std::memset(p, 0, bytes);
  return std::unique_ptr<T[], Aligned>(static_cast<T*>(p));
}

int list_kernels() {
  std::printf("# dense kernels of this build (hwy target %s, best isa %s)\n", lk::hwy_kernel_target(),
              lk::to_string(lk::best_isa()));
  std::printf("# name dtype isa runs_here\n");
  for (DType d : {DType::F32, DType::F16, DType::I8})
    for (const DenseKernel* k : kernels_of(d))
      std::printf("%s %s %s %s\n", k->name, dtype_name(d), lk::to_string(k->isa), lk::cpu_has(k->isa) ? "yes" : "no");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string kernel_arg, shape_arg, best_arg;
  long reps = -1;
  bool check = true, list = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](std::string* dst) {
      if (i + 1 >= argc) return false;
      *dst = argv[++i];
      return true;
    };
    std::string v;
    if (a == "--list")
      list = true;
    else if (a == "--no-check")
      check = false;
    else if (a == "--kernel" && value(&kernel_arg)) {
    } else if (a == "--shape" && value(&shape_arg)) {
    } else if (a == "--best" && value(&best_arg)) {
    } else if (a == "--reps" && value(&v)) {
      char* end = nullptr;
      reps = std::strtol(v.c_str(), &end, 10);
      if (*end || reps < 0 || reps > 1000000) return fail("--reps takes an integer in [0, 1000000]", 2);
    } else
      return fail("bad argument '" + a + "'", 2);
  }
  if (list) return list_kernels();
  if (!best_arg.empty()) {
    DType d;
    if (!parse_dtype(best_arg, &d)) return fail("--best takes f32, f16 or int8", 2);
    const DenseKernel& k = lk::select_dense_kernel(d, lk::best_isa());
    std::printf("%s\n", k.name);
    return 0;
  }
  size_t rows = 0, in = 0, out = 0;
  {
    unsigned long r, k, n;
    char tail;
    if (std::sscanf(shape_arg.c_str(), "%lux%lux%lu%c", &r, &k, &n, &tail) != 3 || !r || !k || !n)
      return fail("--shape takes ROWSxINxOUT, e.g. 512x256x1024", 2);
    rows = r, in = k, out = n;
  }
  if (kernel_arg.empty() || reps < 0) return fail("--kernel and --reps are needed", 2);

  // The kernel.
  const bool xnnpack = kernel_arg == "xnnpack";
  const DenseKernel* kernel = nullptr;
  DType dtype = DType::F32;
  if (kernel_arg.rfind("best:", 0) == 0) {
    if (!parse_dtype(kernel_arg.substr(5), &dtype)) return fail("best: takes f32, f16 or int8", 2);
    kernel = &lk::select_dense_kernel(dtype, lk::best_isa());
  } else if (!xnnpack) {
    kernel = find_kernel(kernel_arg);
    if (!kernel) return fail("no dense kernel named '" + kernel_arg + "' in this build (see --list)");
    dtype = kernel->dtype;
  }
  if (kernel && !lk::cpu_has(kernel->isa))
    return fail(std::string(kernel->name) + " needs " + lk::to_string(kernel->isa) +
                ", which this CPU lacks (try another qemu -cpu)");

  // Weights W [out x in], bias, inputs x [rows x in].
  Rng rng{0x9e3779b97f4a7c15ull};
  const float w_scale = 1.0f / std::sqrt(float(in));
  std::vector<float> w(out * in), bias(out);
  for (float& v : w) v = rng.next() * w_scale;
  for (float& v : bias) v = rng.next() * 0.1f;
  auto x = alloc<float>(rows * in);
  for (size_t i = 0; i < rows * in; ++i) x[i] = rng.next();
  auto y = alloc<float>(rows * out);

  // The weights in panel layout as the kernels read them (one group), and what the reference
  // compares against: `wf` holds each weight as the kernel sees it (f16- or int8-rounded).
  const uint64_t panel_size = linfer::panel_matrix_bytes(dtype, uint32_t(out), uint32_t(in), 1);
  auto panels = alloc<uint8_t>(panel_size);
  std::vector<float> scales, wf(w);
  std::vector<int32_t> sums;
  if (dtype == DType::F32) {
    linfer::pack_panels(DType::F32, w.data(), uint32_t(out), uint32_t(in), 1, panels.get());
  } else if (dtype == DType::F16) {
    std::vector<uint16_t> h(w.size());
    for (size_t i = 0; i < w.size(); ++i) {
      h[i] = linfer::float_to_half(w[i]);
      wf[i] = linfer::half_to_float(h[i]);
    }
    linfer::pack_panels(DType::F16, h.data(), uint32_t(out), uint32_t(in), 1, panels.get());
  } else {
    std::vector<int8_t> q(w.size());
    scales.resize(out);
    sums.resize(out);
    for (size_t n = 0; n < out; ++n) {
      scales[n] = linfer::quantize_row_int8(&w[n * in], in, &q[n * in]);
      for (size_t k = 0; k < in; ++k) wf[n * in + k] = scales[n] * float(q[n * in + k]);
    }
    linfer::int8_row_sums(q.data(), uint32_t(out), uint32_t(in), sums.data());
    linfer::pack_panels(DType::I8, q.data(), uint32_t(out), uint32_t(in), 1, panels.get());
  }
  DenseWeights dw;
  dw.dtype = dtype;
  dw.in = in;
  dw.out = out;
  dw.panels = panels.get();
  dw.scales = scales.empty() ? nullptr : scales.data();
  dw.sums = sums.empty() ? nullptr : sums.data();
  dw.bias = bias.data();

  // int8 activations: the kernel's quantized rows.
  const size_t q_bytes = kernel && kernel->q_bytes ? kernel->q_bytes : 1;
  const size_t q_stride = (linfer::int8_padded_inputs(uint32_t(in)) * q_bytes + 63) / 64 * 64;
  std::unique_ptr<int8_t[], Aligned> q;
  std::unique_ptr<float[], Aligned> q_scales;
  if (dtype == DType::I8) {
    q = alloc<int8_t>(rows * q_stride);
    q_scales = alloc<float>(rows);
  }
  DenseInput input;
  input.x = x.get();
  input.x_stride = in;
  input.q = q.get();
  input.q_stride = q_stride;
  input.q_scales = q_scales.get();
  const DenseEpilogue epilogue{};

  lk::XnnpackDense xdense;
  if (xnnpack) {
    const std::string err = lk::initialize_xnnpack();
    if (!err.empty()) return fail(err);
    size_t packed_bytes = 0;
    const std::string e2 = xdense.create(in, out, w.data(), bias.data(), false, false, &packed_bytes);
    if (!e2.empty()) return fail(e2);
  }

  // The measured repetitions.
  for (long r = 0; r < reps; ++r) {
    if (xnnpack) {
      if (!xdense.run(rows, x.get(), y.get(), nullptr)) return fail("XNNPACK run failed");
    } else {
      if (dtype == DType::I8) kernel->quantize(x.get(), in, rows, in, q.get(), q_stride, q_scales.get());
      kernel->run(dw, input, rows, y.get(), out, 0, out, epilogue);
    }
  }

  // The check: the first rows against the reference of the weights' dtype.
  const char* verdict = "skipped";
  double max_err = 0.0;
  int status = 0;
  if (check && reps > 0) {
    const size_t check_rows = std::min<size_t>(rows, 4);
    const DenseKernel& ref = lk::dense_kernel_ref(dtype);
    auto y_ref = alloc<float>(check_rows * out);
    DenseInput ref_in = input;
    std::unique_ptr<int8_t[], Aligned> q_ref;
    std::unique_ptr<float[], Aligned> q_ref_scales;
    if (dtype == DType::I8) {
      const size_t ref_stride = (linfer::int8_padded_inputs(uint32_t(in)) + 63) / 64 * 64;
      q_ref = alloc<int8_t>(check_rows * ref_stride);
      q_ref_scales = alloc<float>(check_rows);
      ref.quantize(x.get(), in, check_rows, in, q_ref.get(), ref_stride, q_ref_scales.get());
      ref_in.q = q_ref.get();
      ref_in.q_stride = ref_stride;
      ref_in.q_scales = q_ref_scales.get();
    }
    ref.run(dw, ref_in, check_rows, y_ref.get(), out, 0, out, epilogue);
    bool ok = true;
    for (size_t r = 0; r < check_rows; ++r)
      for (size_t n = 0; n < out; ++n) {
        const float got = y[r * out + n], want = y_ref[r * out + n];
        const double err = std::fabs(double(got) - double(want));
        max_err = std::max(max_err, err);
        if (dtype == DType::I8 && !xnnpack) {
          if (std::memcmp(&got, &want, sizeof got) != 0) ok = false;
        } else {
          // float sums of `in` products: |error| <= in * 2^-24 * sum |x w| (+ the bias add).
          double l1 = std::fabs(bias[n]);
          for (size_t k = 0; k < in; ++k) l1 += std::fabs(double(x[r * in + k]) * wf[n * in + k]);
          if (!(err <= (double(in) + 2.0) * std::ldexp(1.0, -24) * l1)) ok = false;
        }
      }
    verdict = ok ? "ok" : "FAILED";
    status = ok ? 0 : 1;
  }
  double checksum = 0.0;
  for (size_t i = 0; i < rows * out; ++i) checksum += y[i];
  std::printf(
      "kernel=%s dtype=%s isa=%s shape=%zux%zux%zu reps=%ld macs_per_rep=%zu check=%s "
      "max_abs_err=%.3g checksum=%.6g\n",
      xnnpack ? "xnnpack_f32" : kernel->name, dtype_name(dtype), xnnpack ? "xnnpack" : lk::to_string(kernel->isa), rows,
      in, out, reps, rows * in * out, verdict, max_err, checksum);
  if (status) std::fprintf(stderr, "dense_proxy: the result differs from the reference\n");
  return status;
}
