// SPDX-License-Identifier: Apache-2.0
// The dense kernels of this build, what each needs from the CPU, and the choice among them.
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "dense/dense_internal.h"

#if (defined(__aarch64__) || defined(__arm__)) && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

namespace linfer::kernels {

const char* to_string(Isa isa) {
  switch (isa) {
    case Isa::Generic:
      return "generic";
    case Isa::X86Sse4:
      return "sse4";
    case Isa::X86Avx2:
      return "avx2";
    case Isa::X86AvxVnni:
      return "avxvnni";
    case Isa::X86Avx512:
      return "avx512";
    case Isa::X86Avx512Vnni:
      return "avx512vnni";
    case Isa::X86Avx512Bf16:
      return "avx512bf16";
    case Isa::X86Amx:
      return "amx";
    case Isa::ArmDsp:
      return "arm_dsp";
    case Isa::ArmMve:
      return "arm_mve";
    case Isa::ArmNeon:
      return "neon";
    case Isa::ArmNeonDot:
      return "neondot";
    case Isa::ArmNeonI8mm:
      return "neoni8mm";
    case Isa::WasmSimd128:
      return "wasm_simd128";
  }
  return "?";
}

namespace {
bool is_x86(Isa i) { return i >= Isa::X86Sse4 && i <= Isa::X86Amx; }
bool is_arm(Isa i) { return i >= Isa::ArmDsp && i <= Isa::ArmNeonI8mm; }
bool is_wasm(Isa i) { return i == Isa::WasmSimd128; }
}  // namespace

#if defined(__x86_64__)
namespace {
// The x86 features the kernels need, read with CPUID and XGETBV (not __builtin_cpu_supports: clang
// 14 knows neither "f16c" nor "avxvnni" there). A feature counts only when the OS saves the
// registers it uses (XCR0).
struct X86Features {
  bool sse4 = false, avx2 = false, avxvnni = false, avx512 = false, avx512vnni = false, avx512bf16 = false, amx = false;
  X86Features() {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return;
    sse4 = (c & (1u << 9)) && (c & (1u << 19)) && (c & (1u << 20));  // SSSE3, SSE4.1, SSE4.2
    const bool fma = c & (1u << 12), osxsave = c & (1u << 27), avx = c & (1u << 28), f16c = c & (1u << 29);
    if (!osxsave || !avx) return;
    unsigned xcr0_lo, xcr0_hi;
    __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
    const bool ymm_state = (xcr0_lo & 0x6) == 0x6;    // SSE and AVX state
    const bool zmm_state = (xcr0_lo & 0xe6) == 0xe6;  // and opmask, ZMM_Hi256, Hi16_ZMM
    if (!ymm_state || __get_cpuid_max(0, nullptr) < 7) return;
    __cpuid_count(7, 0, a, b, c, d);
    const bool has_avx2 = b & (1u << 5), f = b & (1u << 16), dq = b & (1u << 17), bw = b & (1u << 30),
               vl = b & (1u << 31), vnni512 = c & (1u << 11);
    const bool amx_tile = d & (1u << 24), amx_int8 = d & (1u << 25);
    const bool tile_state = (xcr0_lo & 0x60000) == 0x60000;  // XTILECFG and XTILEDATA
    const unsigned max_subleaf = a;
    bool vnni256 = false, bf16_512 = false;
    if (max_subleaf >= 1) {
      __cpuid_count(7, 1, a, b, c, d);
      vnni256 = a & (1u << 4);
      bf16_512 = a & (1u << 5);
    }
    avx2 = has_avx2 && fma && f16c;
    avxvnni = avx2 && vnni256;
    avx512 = avx2 && zmm_state && f && dq && bw && vl;
    avx512vnni = avx512 && vnni512;
    avx512bf16 = avx512vnni && bf16_512;
    amx = avx512vnni && amx_tile && amx_int8 && tile_state && dense::amx_permitted();
  }
};
}  // namespace
#endif

bool cpu_has(Isa isa) {
#if defined(__x86_64__)
  static const X86Features x86;
  const bool avx2 = x86.avx2, avxvnni = x86.avxvnni, avx512 = x86.avx512, avx512vnni = x86.avx512vnni;
  switch (isa) {
    case Isa::Generic:
      return true;
    case Isa::X86Sse4:
      return x86.sse4;
    case Isa::X86Avx2:
      return avx2;
    case Isa::X86AvxVnni:
      return avxvnni;
    case Isa::X86Avx512:
      return avx512;
    case Isa::X86Avx512Vnni:
      return avx512vnni;
    case Isa::X86Avx512Bf16:
      return x86.avx512bf16;
    case Isa::X86Amx:
      return x86.amx;
    default:
      return false;
  }
#elif defined(__aarch64__)
  static const unsigned long hwcap = getauxval(AT_HWCAP), hwcap2 = getauxval(AT_HWCAP2);
  const bool dot = (hwcap & HWCAP_ASIMD) && (hwcap & HWCAP_ASIMDDP);
  switch (isa) {
    case Isa::Generic:
      return true;
    case Isa::ArmNeon:
      return (hwcap & HWCAP_ASIMD) != 0;
    case Isa::ArmNeonDot:
      return dot;
    // Every I8MM core has the dot product too; requiring both keeps the caps' order a chain.
    case Isa::ArmNeonI8mm:
      return dot && (hwcap2 & HWCAP2_I8MM);
    default:
      return false;
  }
#elif defined(__arm__) && defined(__linux__)
  // 32-bit Arm: ArmNeon is NEON with VFPv4 (fused multiply-add, half-precision conversions), the
  // dense_*_neonv7 kernels' instructions (Cortex-A7 and later; a Cortex-A8 or A9 has NEON but
  // VFPv3). A 32-bit OS on an ARMv8 core reports both. No dot product in 32-bit kernels.
  static const unsigned long hwcap = getauxval(AT_HWCAP);
  switch (isa) {
    case Isa::Generic:
      return true;
    case Isa::ArmNeon:
      return (hwcap & HWCAP_NEON) && (hwcap & HWCAP_VFPv4);
    case Isa::ArmDsp:
      return true;  // ARMv7-A, the armhf baseline, has SMLAD and SXTB16
    default:
      return false;
  }
#elif defined(__wasm_simd128__)
  // A wasm module cannot ask the engine: SIMD128 is what the build was compiled for, and an
  // engine without it refuses the whole module at compile time.
  return isa == Isa::Generic || isa == Isa::WasmSimd128;
#elif defined(__ARM_FEATURE_DSP)  // a microcontroller built for a core with the DSP extension
#if defined(__ARM_FEATURE_MVE)    // and Helium: the build is for that core, which has both
  if (isa == Isa::ArmMve) return true;
#endif
  return isa == Isa::Generic || isa == Isa::ArmDsp;
#else
  return isa == Isa::Generic;
#endif
}

bool isa_within(Isa isa, Isa max) {
  if (isa == Isa::Generic) return true;
  if (is_x86(isa)) return is_x86(max) && isa <= max;
  if (is_arm(isa)) return is_arm(max) && isa <= max;
  if (is_wasm(isa)) return is_wasm(max);
  return false;
}

Isa best_isa() {
  for (Isa isa :
       {Isa::X86Amx, Isa::X86Avx512Bf16, Isa::X86Avx512Vnni, Isa::X86Avx512, Isa::X86AvxVnni, Isa::X86Avx2,
        Isa::X86Sse4, Isa::ArmNeonI8mm, Isa::ArmNeonDot, Isa::ArmNeon, Isa::ArmMve, Isa::ArmDsp, Isa::WasmSimd128})
    if (cpu_has(isa)) return isa;
  return Isa::Generic;
}

namespace {
using namespace dense;

const DenseKernel kF32Ref{"dense_f32_ref", DType::F32, Isa::Generic, 0, false, nullptr, run_f32_ref};
const DenseKernel kF16Ref{"dense_f16_ref", DType::F16, Isa::Generic, 0, false, nullptr, run_f16_ref};
const DenseKernel kInt8Ref{"dense_int8_ref", DType::I8, Isa::Generic, 1, false, quantize_s8_ref, run_int8_ref};

const DenseKernel kF32Generic{"dense_f32_generic", DType::F32, Isa::Generic, 0, false, nullptr, run_f32_generic};
const DenseKernel kF16Generic{"dense_f16_generic", DType::F16, Isa::Generic, 0, false, nullptr, run_f16_generic};
const DenseKernel kInt8Generic{"dense_int8_generic", DType::I8,       Isa::Generic, 1, false,
                               quantize_s8_ref,      run_int8_generic};

#if defined(__x86_64__)
const DenseKernel kF32Avx512{"dense_f32_avx512", DType::F32, Isa::X86Avx512, 0, false, nullptr, run_f32_avx512};
const DenseKernel kF16Avx512{"dense_f16_avx512", DType::F16, Isa::X86Avx512, 0, false, nullptr, run_f16_avx512};
const DenseKernel kInt8Avx512Vnni{"dense_int8_avx512vnni", DType::I8,          Isa::X86Avx512Vnni, 1, true,
                                  quantize_u8_avx512,      run_int8_avx512vnni};
const DenseKernel kInt8Amx{"dense_int8_amx",   DType::I8,    Isa::X86Amx,       1,     true,
                           quantize_u8_avx512, run_int8_amx, /*q_pairs=*/false, false, 128};
const DenseKernel kF32Avx2{"dense_f32_avx2", DType::F32, Isa::X86Avx2, 0, false, nullptr, run_f32_avx2};
const DenseKernel kF16Avx2{"dense_f16_avx2", DType::F16, Isa::X86Avx2, 0, false, nullptr, run_f16_avx2};
const DenseKernel kInt8AvxVnni{"dense_int8_avxvnni", DType::I8,       Isa::X86AvxVnni, 1, true,
                               quantize_u8_avx2,     run_int8_avxvnni};
const DenseKernel kInt8Avx2{"dense_int8_avx2", DType::I8, Isa::X86Avx2, 2, false, quantize_s16_avx2, run_int8_avx2};

const DenseKernel* const kF32[] = {&kF32Avx512, &kF32Avx2, &kF32Generic};
const DenseKernel* const kF16[] = {&kF16Avx512, &kF16Avx2, &kF16Generic};
const DenseKernel* const kInt8[] = {&kInt8Amx, &kInt8Avx512Vnni, &kInt8AvxVnni, &kInt8Avx2, &kInt8Generic};
#elif defined(__aarch64__)
const DenseKernel kF32Neon{"dense_f32_neon", DType::F32, Isa::ArmNeon, 0, false, nullptr, run_f32_neon};
const DenseKernel kF16Neon{"dense_f16_neon", DType::F16, Isa::ArmNeon, 0, false, nullptr, run_f16_neon};
const DenseKernel kInt8I8mm{"dense_int8_i8mm", DType::I8, Isa::ArmNeonI8mm, 1, false, quantize_s8_neon, run_int8_i8mm};
const DenseKernel kInt8NeonDot{"dense_int8_neondot", DType::I8,       Isa::ArmNeonDot, 1, false,
                               quantize_s8_neon,     run_int8_neondot};
const DenseKernel kInt8Neon{"dense_int8_neon", DType::I8, Isa::ArmNeon, 1, false, quantize_s8_neon, run_int8_neon};

// Not in kF16: chosen only by select_dense_f16_fp16_arithmetic. Its isa is the cap level it
// counts as (ARMv8.2, the Pi 5's); the CPU must report fp16 arithmetic besides.
const DenseKernel kF16NeonFp16{"dense_f16_neonfp16", DType::F16, Isa::ArmNeonDot, 0, false, nullptr, run_f16_neonfp16};

const DenseKernel* const kF32[] = {&kF32Neon, &kF32Generic};
const DenseKernel* const kF16[] = {&kF16Neon, &kF16Generic};
const DenseKernel* const kInt8[] = {&kInt8I8mm, &kInt8NeonDot, &kInt8Neon, &kInt8Generic};
#elif defined(__arm__) && defined(__linux__)
const DenseKernel kF32NeonV7{"dense_f32_neonv7", DType::F32, Isa::ArmNeon, 0, false, nullptr, run_f32_neonv7};
const DenseKernel kF16NeonV7{"dense_f16_neonv7", DType::F16, Isa::ArmNeon, 0, false, nullptr, run_f16_neonv7};
const DenseKernel kInt8NeonV7{"dense_int8_neonv7", DType::I8,      Isa::ArmNeon, 1, false,
                              quantize_s8_neonv7,  run_int8_neonv7};

const DenseKernel kInt8Dsp{"dense_int8_dsp", DType::I8, Isa::ArmDsp, 2, false, quantize_s16_pairs, run_int8_dsp, true};

const DenseKernel* const kF32[] = {&kF32NeonV7, &kF32Generic};
const DenseKernel* const kF16[] = {&kF16NeonV7, &kF16Generic};
const DenseKernel* const kInt8[] = {&kInt8NeonV7, &kInt8Dsp, &kInt8Generic};
#elif defined(__wasm_simd128__)
// The relaxed module compiles the float tiles with relaxed SIMD's multiply-add (dense_wasm_simd128.h).
#if defined(__wasm_relaxed_simd__)
#define LINFER_WASM_FLOAT_KERNEL(dtype) "dense_" dtype "_wasm_relaxed"
#else
#define LINFER_WASM_FLOAT_KERNEL(dtype) "dense_" dtype "_wasm_simd128"
#endif
const DenseKernel kF32Wasm{
    LINFER_WASM_FLOAT_KERNEL("f32"), DType::F32, Isa::WasmSimd128, 0, false, nullptr, run_f32_wasm_simd128};
const DenseKernel kF16Wasm{
    LINFER_WASM_FLOAT_KERNEL("f16"), DType::F16, Isa::WasmSimd128, 0, false, nullptr, run_f16_wasm_simd128};
const DenseKernel kInt8Wasm{"dense_int8_wasm_simd128", DType::I8, Isa::WasmSimd128, 2, false, quantize_s16_wasm_simd128,
                            run_int8_wasm_simd128};

const DenseKernel* const kF32[] = {&kF32Wasm, &kF32Generic};
const DenseKernel* const kF16[] = {&kF16Wasm, &kF16Generic};
#if defined(__wasm_relaxed_simd__)
// The relaxed module's: an engine runs the module only if it has relaxed SIMD (the JavaScript
// package loads it after its probe), so it comes first, unless the engine's relaxed dot product
// is the slower arithmetic (linfer_wasm_use_relaxed_dot).
const DenseKernel kInt8WasmRelaxed{"dense_int8_wasm_relaxed",
                                   DType::I8,
                                   Isa::WasmSimd128,
                                   2,
                                   false,
                                   quantize_split_u7_wasm_relaxed,
                                   run_int8_wasm_relaxed,
                                   false,
                                   true};
const DenseKernel* const kInt8[] = {&kInt8WasmRelaxed, &kInt8Wasm, &kInt8Generic};
bool use_relaxed_dot = true;
#else
const DenseKernel* const kInt8[] = {&kInt8Wasm, &kInt8Generic};
#endif
#elif defined(__ARM_FEATURE_DSP)  // a Cortex-M with the DSP extension (bare metal)
const DenseKernel kInt8Dsp{"dense_int8_dsp", DType::I8, Isa::ArmDsp, 2, false, quantize_s16_pairs, run_int8_dsp, true};

const DenseKernel* const kF32[] = {&kF32Generic};
const DenseKernel* const kF16[] = {&kF16Generic};
// The core's int8 kernel only: a build for one core takes no cap (plan.cc refuses max_isa other
// than AUTO there), so the portable kernel (3.7 KB) and, on a Helium core, SMLAD's would never run.
#if defined(__ARM_FEATURE_MVE)    // Cortex-M55
const DenseKernel kInt8Mve{"dense_int8_mve", DType::I8, Isa::ArmMve, 1, false, quantize_s8_ref, run_int8_mve};
const DenseKernel* const kInt8[] = {&kInt8Mve};
#else
const DenseKernel* const kInt8[] = {&kInt8Dsp};
#endif
#else
const DenseKernel* const kF32[] = {&kF32Generic};
const DenseKernel* const kF16[] = {&kF16Generic};
const DenseKernel* const kInt8[] = {&kInt8Generic};
#endif
}  // namespace

const DenseKernel& dense_kernel_ref(DType dtype) {
  return dtype == DType::F32 ? kF32Ref : dtype == DType::F16 ? kF16Ref : kInt8Ref;
}

// (Projects that build the kernels without the top level's definitions, tools/bench/arm: all.)
#ifndef LINFER_DENSE_F32
#define LINFER_DENSE_F32 1
#define LINFER_DENSE_F16 1
#define LINFER_DENSE_INT8 1
#endif
// A data type left out of the build (LINFER_DTYPES) has no kernels: its list is never named, so
// the linker drops them. select_dense_kernel gives it a stand-in that writes zeros, never run: the
// loader refuses such models (runtime/src/model.cc), and an int8 compression of the sequence is off.
namespace {
LINFER_DENSE_RUN(run_left_out) {
  for (size_t r = 0; r < rows; ++r)
    for (size_t n = n_begin; n < n_end; ++n) y[r * y_stride + n] = 0.0f;
}
const DenseKernel kLeftOut[] = {
    {"dense_f32_left_out", DType::F32, Isa::Generic, 0, false, nullptr, run_left_out},
    {"dense_f16_left_out", DType::F16, Isa::Generic, 0, false, nullptr, run_left_out},
    {"dense_int8_left_out", DType::I8, Isa::Generic, 1, false, quantize_s8_ref, run_left_out}};
}  // namespace

const DenseKernel* const* dense_kernels(DType dtype, size_t* count) {
  *count = 0;
  switch (dtype) {
    case DType::F32:
      if (!LINFER_DENSE_F32) return nullptr;
      *count = std::size(kF32);
      return kF32;
    case DType::F16:
      if (!LINFER_DENSE_F16) return nullptr;
      *count = std::size(kF16);
      return kF16;
    case DType::I8:
      if (!LINFER_DENSE_INT8) return nullptr;
      *count = std::size(kInt8);
      return kInt8;
  }
  return nullptr;
}

bool dense_dtype_built(DType dtype) {
  size_t count = 0;
  dense_kernels(dtype, &count);
  return count > 0;
}

const DenseKernel& select_dense_kernel(DType dtype, Isa max) {
  size_t count = 0;
  const DenseKernel* const* list = dense_kernels(dtype, &count);
  for (size_t i = 0; i < count; ++i) {
#if defined(__wasm_relaxed_simd__)
    if (list[i] == &kInt8WasmRelaxed && !use_relaxed_dot) continue;
#endif
    if (cpu_has(list[i]->isa) && isa_within(list[i]->isa, max)) return *list[i];
  }
  // The portable kernel runs everywhere; a type left out has a stand-in.
  return count ? *list[count - 1] : kLeftOut[size_t(dtype)];
}

bool cpu_has_fp16_arithmetic() {
#if defined(__aarch64__)
  static const unsigned long hwcap = getauxval(AT_HWCAP);
  return (hwcap & HWCAP_FPHP) && (hwcap & HWCAP_ASIMDHP);
#else
  return false;
#endif
}

const DenseKernel* select_dense_f16_fp16_arithmetic(Isa max) {
#if defined(__aarch64__)
  if (LINFER_DENSE_F16 && cpu_has_fp16_arithmetic() && isa_within(kF16NeonFp16.isa, max)) return &kF16NeonFp16;
#else
  (void)max;
#endif
  return nullptr;
}

void int8_rows_to_input(const DenseKernel& kernel, const int8_t* src, size_t src_stride, size_t rows, size_t k,
                        int8_t* q, size_t q_stride, int32_t* sums) {
  const size_t padded = int8_padded_inputs(uint32_t(k));
  for (size_t r = 0; r < rows; ++r) {
    const int8_t* s = src + r * src_stride;
    int8_t* dst = q + r * q_stride;
    const Int8Form form = int8_form(kernel);
    if (!int8_form_built(form)) continue;  // (no kernel of this build reads it)
    if (int8_form_two_bytes(form)) {       // AVX2 without VNNI, wasm SIMD128 and relaxed SIMD, SMLAD
      int16_t* d = reinterpret_cast<int16_t*>(dst);
      for (size_t i = 0; i < k; ++i) d[i] = s[i];
      for (size_t i = k; i < padded; ++i) d[i] = 0;
      if (form == Int8Form::S16Pairs) swap_middle_pairs(d, padded);
      if (form == Int8Form::SplitU7) s16_to_split_u7(d, padded);
    } else if (form == Int8Form::U8Offset) {  // q + 128 (x86 VNNI's unsigned operand)
      uint8_t* d = reinterpret_cast<uint8_t*>(dst);
      for (size_t i = 0; i < k; ++i) d[i] = uint8_t(s[i] ^ 0x80);  // two's complement: q + 128
      for (size_t i = k; i < padded; ++i) d[i] = 128;
    } else {
      std::memcpy(dst, s, k);
      std::memset(dst + k, 0, padded - k);
    }
    if (sums) {
      int32_t sum = 0;
      for (size_t i = 0; i < k; ++i) sum += s[i];
      sums[r] = sum;
    }
  }
}

}  // namespace linfer::kernels

#if defined(__wasm_relaxed_simd__)
// Whether int8 dense layers take the relaxed dot product or SIMD128's, for sessions created from now
// on. Engines lower it differently (one VPDPBUSD or SDOT, or on x86 without AVX-VNNI five
// instructions, slower than SIMD128's two per 8 multiply-adds), and a module cannot ask its engine
// how: the JavaScript package (runtime/js/src/linfer_js.c) times both and says.
extern "C" void linfer_wasm_use_relaxed_dot(int yes) { linfer::kernels::use_relaxed_dot = yes != 0; }
#endif
