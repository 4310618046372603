// SPDX-License-Identifier: Apache-2.0
// The Cortex-M test firmware (scripts/test-cortex-m.sh): a trained int8 Linformer linked into flash
// is loaded in place, run on the shipped inputs with a static arena, and compared with the host
// build's outputs on the same model; then bad input, each of which must come back as a status with
// a message, never a fault; then every int8 dense kernel of the build against the reference
// (test_kernels does not run on a microcontroller). Ends with "N passed, 0 failed" (exit code 0) or the failures.
//
// With the semihosting command line "bench K" it only loads the model and runs the first input K
// times (instruction counts per inference: the difference of two such runs, scripts/test-cortex-m.sh);
// "bench K I" runs input I (0-based) instead (tools/bench/cortex-m-peers/run.sh).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <memory>

#include "kernels.h"
#include "linfer/format/kinds/linformer.h"
#include "linfer/format/lfm.h"
#include "linfer/format/panel.h"
#include "linfer/linfer.h"
#include "model_options.h"

extern "C" {
extern const uint8_t linfer_cm_model[], linfer_cm_model_end[];
extern const uint8_t linfer_cm_cases[], linfer_cm_cases_end[];
const char* linfer_cm_cmdline(void);
size_t linfer_cm_heap_used(void);
size_t linfer_cm_heap_size(void);
extern char __stack_bottom[], __stack_top[];
}

namespace {

constexpr size_t kMaxLen = LINFER_CM_MAX_LEN;  // the session's longest input (the model's n)
alignas(64) uint8_t g_arena[LINFER_CM_ARENA_BYTES];
// A copy of the model that the bad-input tests damage; BULK memory, not the device's budget.
alignas(64) __attribute__((section(".bulk"))) uint8_t g_copy[LINFER_CM_COPY_BYTES];

int g_passed = 0, g_failed = 0;
bool g_verbose = false;  // command line "verbose": every check named as it passes

void check(bool ok, const char* what) {
  if (ok && g_verbose) std::printf("ok: %s\n", what);
  if (ok) {
    ++g_passed;
  } else {
    ++g_failed;
    std::printf("FAILED: %s (last error: %s)\n", what, linfer_last_error());
  }
}

// The bytes below the stack's lowest use still hold this pattern.
constexpr uint32_t kStackPaint = 0x5a5a5a5au;
void paint_stack() {
  uint32_t* p = reinterpret_cast<uint32_t*>(__stack_bottom);
  uint32_t* here = reinterpret_cast<uint32_t*>(__builtin_frame_address(0)) - 64;
  while (p < here) *p++ = kStackPaint;
}
size_t stack_used() {
  const uint32_t* p = reinterpret_cast<const uint32_t*>(__stack_bottom);
  while (p < reinterpret_cast<const uint32_t*>(__stack_top) && *p == kStackPaint) ++p;
  return size_t(__stack_top - reinterpret_cast<const char*>(p));
}

// cases.bin (tests/cortex_m/make_cases.py): "LFCM", count, classes; per case: length, the input's
// bytes (padded to 4), the host's logits; then "LFRM", a count and (offset, byte) pairs.
struct Cases {
  uint32_t count = 0, classes = 0;
  const uint8_t* next = nullptr;
  bool read_header() {
    if (linfer_cm_cases_end - linfer_cm_cases < 12 || std::memcmp(linfer_cm_cases, "LFCM", 4) != 0) return false;
    std::memcpy(&count, linfer_cm_cases + 4, 4);
    std::memcpy(&classes, linfer_cm_cases + 8, 4);
    next = linfer_cm_cases + 12;
    return true;
  }
  // The next case: its bytes and the host's logits (logits null: skipped).
  bool read(const uint8_t** text, uint32_t* length, float* logits) {
    if (linfer_cm_cases_end - next < 4) return false;
    std::memcpy(length, next, 4);
    const size_t padded = (*length + 3) / 4 * 4;
    if (size_t(linfer_cm_cases_end - next) < 4 + padded + 4 * classes) return false;
    *text = next + 4;
    if (logits) std::memcpy(logits, next + 4 + padded, 4 * classes);
    next += 4 + padded + 4 * classes;
    return true;
  }
  // After the cases: the changes that make the model's first dense weight row-major, as format
  // version 1 stores dense weights (make_cases.py row_major_patch), *n (offset, byte) uint32 pairs.
  bool read_row_major_patch(const uint8_t** pairs, uint32_t* n) {
    const uint8_t* text;
    uint32_t length;
    if (!read_header()) return false;
    for (uint32_t i = 0; i < count; ++i)
      if (!read(&text, &length, nullptr)) return false;
    if (linfer_cm_cases_end - next < 8 || std::memcmp(next, "LFRM", 4) != 0) return false;
    std::memcpy(n, next + 4, 4);
    *pairs = next + 8;
    return size_t(linfer_cm_cases_end - *pairs) / 8 >= *n;
  }
};

size_t argmax(const float* x, size_t n) {
  size_t best = 0;
  for (size_t i = 1; i < n; ++i)
    if (x[i] > x[best]) best = i;
  return best;
}

// x in millionths, for printf without floating point (newlib-nano's).
unsigned micro(double x) { return unsigned(x * 1e6 + 0.5); }

double cosine(const float* a, const float* b, size_t n) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < n; ++i) ab += double(a[i]) * b[i], aa += double(a[i]) * a[i], bb += double(b[i]) * b[i];
  return ab / std::sqrt(aa * bb + 1e-300);
}

linfer_session_options session_options(void* arena, size_t arena_size) {
  linfer_session_options o = linfer_session_options_default();
  o.max_seq_len = kMaxLen;
  // Few rows per block of the row pipeline: its buffers are most of the arena (docs/microcontrollers.md).
  o.pipeline_block_rows = LINFER_CM_BLOCK_ROWS;
  o.arena = arena;
  o.arena_size = arena_size;
  return o;
}

int32_t g_ids[kMaxLen + 1];
float g_out[64];

// Runs `length` bytes as ids; the logits copied to g_out, their number in *out_count.
linfer_status run_ids(linfer_session* s, const int32_t* ids, size_t length, size_t* out_count) {
  *out_count = 0;
  const linfer_status st = linfer_session_run(s, ids, length);
  if (st != LINFER_OK) return st;
  const float* data = nullptr;
  size_t rows = 0, cols = 0;
  if (linfer_session_output(s, &data, &rows, &cols) != LINFER_OK || rows * cols > 64) return LINFER_ERROR_INTERNAL;
  std::memcpy(g_out, data, rows * cols * sizeof(float));
  *out_count = rows * cols;
  return LINFER_OK;
}
linfer_status run_bytes(linfer_session* s, const uint8_t* text, size_t length, size_t* out_count) {
  for (size_t i = 0; i < length; ++i) g_ids[i] = text[i];
  return run_ids(s, g_ids, length, out_count);
}

// A damaged model must load with a status (or load, if the damage hit only weight values, and
// then run with one); anything else ends in the fault handler.
bool damaged_model_behaves(size_t size, const uint8_t* text, size_t length) {
  linfer_model* m = nullptr;
  const linfer_status st = linfer_model_load_in_place(g_copy, size, &m);
  if (st != LINFER_OK) return m == nullptr && linfer_last_error()[0] != 0;
  size_t need = 0;
  linfer_session_options o = session_options(g_arena, sizeof g_arena);
  bool ok = true;
  if (linfer_session_arena_size(m, &o, &need) != LINFER_OK) {
    ok = linfer_last_error()[0] != 0;
  } else if (need <= sizeof g_arena) {
    linfer_session* s = nullptr;
    if (linfer_session_create(m, &o, &s) != LINFER_OK) {
      ok = linfer_last_error()[0] != 0 && !s;
    } else {
      size_t count = 0;
      run_bytes(s, text, length, &count);  // any status; no fault
      linfer_session_free(s);
    }
  }
  linfer_model_free(m);
  return ok;
}

uint32_t g_rng = 20261126u;
uint32_t next_random() {
  g_rng ^= g_rng << 13, g_rng ^= g_rng >> 17, g_rng ^= g_rng << 5;
  return g_rng;
}

// Every int8 dense kernel of the build that the core runs, against dense_int8_ref on random int8
// weights in the panel layout: rows through the 2-row tiles and their remainder, outputs through
// partial and whole panels, inputs through every remainder of groups of 4 and of 16 (Helium's
// vectors), every epilogue with and without bias; bit for bit but after GELU (the fast GELU's
// tolerance). One check per kernel and shape.
namespace int8_kernels {
using linfer::DType;
using namespace linfer::kernels;
constexpr size_t kMaxRows = 5, kMaxOut = 33, kMaxIn = 130, kMaxPadded = (kMaxIn + 3) / 4 * 4;
constexpr size_t kXStride = kMaxIn + 3, kYStride = kMaxOut + 5, kQStride = 2 * kMaxPadded + 8;
alignas(64) uint8_t g_panels[3 * kMaxPadded * 16];  // panel_matrix_bytes(I8, 33, 130, 1)
int8_t g_weights[kMaxOut * kMaxIn];
int32_t g_sums[kMaxOut];
float g_scales[kMaxOut], g_bias[kMaxOut], g_x[kMaxRows * kXStride], g_y0[kMaxRows * kYStride];
float g_want[kMaxRows * kYStride], g_got[kMaxRows * kYStride], g_q_scales[kMaxRows], g_ref_scales[kMaxRows];
alignas(16) int8_t g_q[kMaxRows * kQStride], g_ref_q[kMaxRows * kQStride];

float uniform(float bound) { return (float(next_random() % 20001u) - 10000.0f) * (bound / 10000.0f); }

bool same_outputs(bool gelu) {
  for (size_t i = 0; i < std::size(g_got); ++i) {
    const float d = std::fabs(g_got[i] - g_want[i]);
    if (gelu ? !(d <= 1e-5f * (1.0f + std::fabs(g_want[i]))) : std::memcmp(&g_got[i], &g_want[i], 4) != 0) return false;
  }
  return true;
}

// Kernel against reference on one shape, every epilogue; the first difference printed.
bool matches(const DenseKernel& kernel, size_t rows, size_t out, size_t in) {
  const DenseKernel& ref = dense_kernel_ref(DType::I8);
  for (size_t i = 0; i < out * in; ++i) g_weights[i] = int8_t(int(next_random() % 255u) - 127);
  for (size_t n = 0; n < out; ++n) g_scales[n] = 0.005f + std::fabs(uniform(0.01f)), g_bias[n] = uniform(1.0f);
  for (float& v : g_x) v = uniform(2.0f);
  for (float& v : g_y0) v = uniform(1.0f);
  linfer::pack_panels(DType::I8, g_weights, uint32_t(out), uint32_t(in), 1, g_panels);
  linfer::int8_row_sums(g_weights, uint32_t(out), uint32_t(in), g_sums);
  const size_t padded = linfer::int8_padded_inputs(uint32_t(in));
  ref.quantize(g_x, kXStride, rows, in, g_ref_q, padded, g_ref_scales);
  kernel.quantize(g_x, kXStride, rows, in, g_q, kQStride, g_q_scales);
  const DenseInput ref_input{g_x, kXStride, g_ref_q, padded, g_ref_scales};
  const DenseInput input{g_x, kXStride, g_q, kQStride, g_q_scales};
  const DenseEpilogue epilogues[] = {{DenseActivation::None, false},    {DenseActivation::Relu, false},
                                     {DenseActivation::GeluErf, false}, {DenseActivation::GeluTanh, false},
                                     {DenseActivation::None, true},     {DenseActivation::Relu, true}};
  for (const bool with_bias : {true, false})
    for (const DenseEpilogue e : epilogues) {
      if (e.activation == DenseActivation::GeluTanh && !LINFER_OPTION_GELU_TANH) continue;  // (left out)
      const DenseWeights w{DType::I8, in, out, g_panels, g_scales, g_sums, with_bias ? g_bias : nullptr};
      std::memcpy(g_want, g_y0, sizeof g_y0);
      std::memcpy(g_got, g_y0, sizeof g_y0);
      ref.run(w, ref_input, rows, g_want, kYStride, 0, out, e);
      kernel.run(w, input, rows, g_got, kYStride, 0, out, e);
      if (!same_outputs(e.activation == DenseActivation::GeluErf || e.activation == DenseActivation::GeluTanh)) {
        std::printf("%s: %u rows x %u outputs x %u inputs, activation %d, accumulate %d, bias %d: outputs differ\n",
                    kernel.name, unsigned(rows), unsigned(out), unsigned(in), int(e.activation), int(e.accumulate),
                    int(with_bias));
        return false;
      }
    }
  return true;
}

void check_all() {
  size_t count = 0;
  const DenseKernel* const* kernels = dense_kernels(DType::I8, &count);
  for (size_t k = 0; k < count; ++k) {
    if (!cpu_has(kernels[k]->isa)) continue;
    unsigned shapes = 0;
    for (size_t rows : {1, 2, 3, 5})
      for (size_t out : {1, 15, 16, 17, 33})
        for (size_t in : {1, 3, 4, 5, 15, 16, 17, 31, 33, 64, 130}) {
          check(matches(*kernels[k], rows, out, in), kernels[k]->name);
          ++shapes;
        }
    std::printf("%s: %u shapes against dense_int8_ref\n", kernels[k]->name, shapes);
  }
}
}  // namespace int8_kernels

// The sinusoidal position table without libm (sinusoids_f32_hwy, Highway's double Exp, Log, Sin
// and Cos) against the reference (libm's pow, sin and cos, linked here): within 2^-23 of it (the
// double results' few ULP may round to the neighbouring float), most of it the same floats. Dims
// 64 and 10 (odd half), positions from 0, 2 (fairseq's offset) and up to the 39,000 it is held to.
void check_sinusoids() {
  // (In the damaged copies' scratch memory, free by now.)
  static_assert(2 * 512 * 64 * sizeof(float) <= sizeof g_copy, "the sinusoid tables fit g_copy");
  float* const hwy = reinterpret_cast<float*>(g_copy);
  float* const ref = hwy + 512 * 64;
  struct Table {
    size_t rows, dim;
    double first;
  };
  for (const Table& t : {Table{512, 64, 0}, Table{300, 64, 2}, Table{512, 10, 38999 - 511}}) {
    linfer::kernels::sinusoids_f32_hwy(hwy, t.rows, t.dim, t.first, 10000.0);
    linfer::kernels::sinusoids_f32_ref(ref, t.rows, t.dim, t.first, 10000.0);
    size_t same = 0, far = 0;
    for (size_t i = 0; i < t.rows * t.dim / 2 * 2; ++i) {
      const size_t at = i / (t.dim / 2 * 2) * t.dim + i % (t.dim / 2 * 2);
      same += hwy[at] == ref[at];
      far += !(std::fabs(hwy[at] - ref[at]) <= 0x1p-23f);
    }
    std::printf("sinusoids_f32_hwy: %u rows x %u from %u: %u of %u values the reference's, %u further than 2^-23\n",
                unsigned(t.rows), unsigned(t.dim), unsigned(t.first), unsigned(same),
                unsigned(t.rows * (t.dim / 2 * 2)), unsigned(far));
    check(far == 0 && same * 100 >= t.rows * (t.dim / 2 * 2) * 99, "sinusoids_f32_hwy against sinusoids_f32_ref");
  }
}

// The model options this build leaves out (-DLINFER_MODEL_OPTIONS; the Cortex-M build: all of
// them): the shipped model's description with one option changed each time must be refused
// with LINFER_ERROR_UNSUPPORTED naming the option, and accepted where the option is built.
void check_model_options() {
  using namespace linfer;
  // (On the heap, after the model is freed: the stack and heap figures stay the runtime's.)
  std::unique_ptr<EncoderDescription> d(new EncoderDescription), changed(new EncoderDescription);
  LfmInfo info;
  const err::Status parsed = parse_lfm(linfer_cm_model, size_t(linfer_cm_model_end - linfer_cm_model), d.get(), &info);
  check(parsed.ok() && rt::model_options_built(*d).ok(), "model options: the shipped model needs none left out");
  if (!parsed.ok()) return;
  struct Case {
    const char* option;
    bool built;
    void (*change)(EncoderDescription&);
  };
  const Case cases[] = {
      {"float_projections", rt::kFloatProjectionsBuilt,
       [](EncoderDescription& e) { e.layers[1].kind_tensors[LinformerTensors::kProjK].dtype = DType::F16; }},
      {"per_head_projections", rt::kPerHeadProjectionsBuilt,
       [](EncoderDescription& e) { linformer_fields(e.config).projection_sharing = ProjectionSharing::None; }},
      {"sinusoidal", rt::kSinusoidalBuilt,
       [](EncoderDescription& e) { e.config.positions = PositionKind::Sinusoidal; }},
      {"rotary", rt::kRotaryBuilt, [](EncoderDescription& e) { e.config.rotary = Rotary::AdjacentPairs; }},
      {"post_norm", rt::kPostNormBuilt, [](EncoderDescription& e) { e.config.norm_placement = NormPlacement::Post; }},
      {"reversible", rt::kReversibleBuilt,
       [](EncoderDescription& e) { e.config.norm_placement = NormPlacement::Reversible; }},
      {"gelu_tanh", rt::kGeluTanhBuilt, [](EncoderDescription& e) { e.config.activation = Activation::GeluTanh; }},
      {"tanh", rt::kTanhBuilt, [](EncoderDescription& e) { e.config.activation = Activation::Tanh; }},
      // (A classifier head with a dense layer: tanh after it, the config's default.)
      {"tanh", rt::kTanhBuilt, [](EncoderDescription& e) {
         e.head.dense.weight.shape = {64, 64};
       }}};
  for (const Case& c : cases) {
    *changed = *d;
    c.change(*changed);
    const rt::Status s = rt::model_options_built(*changed);
    const bool ok =
        c.built ? s.ok() : s.code() == LINFER_ERROR_UNSUPPORTED && std::strstr(s.message().c_str(), c.option);
    if (g_verbose || !ok) std::printf("model option %s: %s\n", c.option, s.ok() ? "built" : s.message().c_str());
    check(ok, "model options: a model needing one left out is refused, naming it");
  }
}

int bench(int runs, int index) {
  linfer_model* m = nullptr;
  if (linfer_model_load_in_place(linfer_cm_model, size_t(linfer_cm_model_end - linfer_cm_model), &m) != LINFER_OK)
    return std::printf("bench: %s\n", linfer_last_error()), 1;
  linfer_session_options o = session_options(g_arena, sizeof g_arena);
  linfer_session* s = nullptr;
  if (linfer_session_create(m, &o, &s) != LINFER_OK) return std::printf("bench: %s\n", linfer_last_error()), 1;
  Cases cases;
  const uint8_t* text;
  uint32_t length;
  float want[64];
  if (!cases.read_header() || index < 0 || uint32_t(index) >= cases.count)
    return std::printf("bench: no case %d\n", index), 1;
  for (int i = 0; i <= index; ++i)
    if (!cases.read(&text, &length, want)) return std::printf("bench: no case %d\n", index), 1;
  size_t count = 0;
  for (int i = 0; i < runs; ++i)
    if (run_bytes(s, text, length, &count) != LINFER_OK) return std::printf("bench: %s\n", linfer_last_error()), 1;
  std::printf("bench: %d runs of %u bytes\n", runs, unsigned(length));
  linfer_session_free(s);
  linfer_model_free(m);
  return 0;
}

}  // namespace

int main() {
  paint_stack();
  std::setvbuf(stdout, nullptr, _IONBF, 0);  // semihosting is no terminal: newlib would buffer it all
  const char* cmdline = linfer_cm_cmdline();
  if (std::strncmp(cmdline, "bench ", 6) == 0) {
    char* rest = nullptr;
    const int runs = int(std::strtol(cmdline + 6, &rest, 10));
    return bench(runs, int(std::strtol(rest, nullptr, 10)));  // no index: 0, the first input
  }
  g_verbose = std::strcmp(cmdline, "verbose") == 0;

  const size_t model_size = size_t(linfer_cm_model_end - linfer_cm_model);
  std::printf("linfer %s on Cortex-M: model %u bytes in flash at %p\n", linfer_version(), unsigned(model_size),
              static_cast<const void*>(linfer_cm_model));

  // The model, read in place.
  linfer_model* model = nullptr;
  check(linfer_model_load_in_place(linfer_cm_model, model_size, &model) == LINFER_OK, "load the model in place");
  if (!model) return 1;
  linfer_model_info info;
  std::memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  check(linfer_model_get_info(model, &info) == LINFER_OK, "model info");
  linfer_session_options options = session_options(g_arena, sizeof g_arena);
  size_t arena_needed = 0;
  check(linfer_session_arena_size(model, &options, &arena_needed) == LINFER_OK, "arena size");
  std::printf("arena: %u bytes needed, %u given\n", unsigned(arena_needed), unsigned(sizeof g_arena));
  linfer_session* session = nullptr;
  check(linfer_session_create(model, &options, &session) == LINFER_OK, "session on the static arena");
  if (!session) return 1;

  // The shipped inputs against the host build's outputs: the same class, cosine >= 0.999 (the
  // bound the WebAssembly package's tests hold int8 models to against the native build).
  Cases cases;
  check(cases.read_header(), "cases.bin header");
  const uint8_t* text = nullptr;
  uint32_t length = 0;
  float want[64];
  unsigned same_class = 0, ran = 0;
  double worst_cosine = 1.0;
  const uint8_t* first_text = nullptr;
  uint32_t first_length = 0;
  for (uint32_t i = 0; i < cases.count && cases.classes <= 64; ++i) {
    if (!cases.read(&text, &length, want)) {
      check(false, "cases.bin: a case is cut short");
      break;
    }
    if (!first_text) first_text = text, first_length = length;
    size_t count = 0;
    const bool ok = run_bytes(session, text, length, &count) == LINFER_OK && count == cases.classes;
    const double c = ok ? cosine(g_out, want, cases.classes) : 0.0;
    const bool same = ok && argmax(g_out, count) == argmax(want, cases.classes);
    worst_cosine = c < worst_cosine ? c : worst_cosine;
    same_class += same;
    ++ran;
    if (!(ok && same && c >= 0.999))
      std::printf("case %u: class %u (host %u), cosine %u millionths\n", unsigned(i),
                  unsigned(argmax(g_out, cases.classes)), unsigned(argmax(want, cases.classes)), micro(c));
    check(ok && same && c >= 0.999, "an input: the host's class and logits");
  }
  std::printf("inputs: %u of %u with the host's class; worst cosine to the host's logits %u millionths\n", same_class,
              ran, micro(worst_cosine));

  // Bad input: a status and a message, every time.
  size_t count = 0;
  int32_t bad_ids[2] = {65, int32_t(info.vocab_size)};
  // (The runtime's messages keep their numbers on bare metal, negative ones too: kept().)
  char want_message[96];
  std::snprintf(want_message, sizeof want_message, "token id %u at position 1 is outside the vocabulary [0, %u)",
                unsigned(info.vocab_size), unsigned(info.vocab_size));
  check(run_ids(session, bad_ids, 2, &count) == LINFER_ERROR_INVALID_ARGUMENT &&
            std::strcmp(linfer_last_error(), want_message) == 0,
        "an id out of the vocabulary, named with its position");
  const int32_t negative_id[1] = {-3};
  std::snprintf(want_message, sizeof want_message, "token id -3 at position 0 is outside the vocabulary [0, %u)",
                unsigned(info.vocab_size));
  check(run_ids(session, negative_id, 1, &count) == LINFER_ERROR_INVALID_ARGUMENT &&
            std::strcmp(linfer_last_error(), want_message) == 0,
        "a negative id, named");
  static uint8_t long_text[kMaxLen + 1];
  std::memset(long_text, 'a', sizeof long_text);
  check(run_bytes(session, long_text, kMaxLen + 1, &count) == LINFER_ERROR_INVALID_ARGUMENT,
        "an input longer than the session's maximum");
  linfer_session* small = nullptr;
  linfer_session_options too_small = session_options(g_arena, arena_needed - 64 - 1);
  check(linfer_session_create(model, &too_small, &small) == LINFER_ERROR_BUFFER_TOO_SMALL && !small,
        "an arena smaller than the model needs");
  linfer_session_options capped = options;
  capped.max_isa = LINFER_ISA_GENERIC;  // (the portable kernels are not linked)
  check(linfer_session_create(model, &capped, &small) == LINFER_ERROR_UNSUPPORTED && !small &&
            std::strstr(linfer_last_error(), "max_isa"),
        "an instruction-set cap (a bare-metal build has its core's kernels only)");
  linfer_model* none = nullptr;
  check(linfer_model_load("model.lfm", &none) == LINFER_ERROR_UNSUPPORTED && !none,
        "loading a file without a file system");
  check(linfer_model_load_in_place(linfer_cm_model + 4, model_size - 4, &none) == LINFER_ERROR_INVALID_ARGUMENT,
        "model bytes that are not 64-byte aligned");
  for (size_t cut : {size_t(0), size_t(7), size_t(64), model_size / 3, model_size - 1})
    check(linfer_model_load_in_place(linfer_cm_model, cut, &none) != LINFER_OK && !none, "a truncated model");
  // Damaged copies: single bytes changed in the FlatBuffers tables (the file's first part) and in
  // the weights.
  bool damaged_ok = model_size <= sizeof g_copy;
  check(damaged_ok, "the damaged copies fit the scratch buffer");
  for (int round = 0; damaged_ok && round < LINFER_CM_DAMAGED; ++round) {
    std::memcpy(g_copy, linfer_cm_model, model_size);
    const size_t span = round % 4 == 3 ? model_size : 4096;
    for (int j = 0; j < 1 + round % 3; ++j) {
      const size_t at = next_random() % span;
      g_copy[at] ^= uint8_t(1u + next_random() % 255u);
      if (g_verbose) std::printf("damaged model %d: byte %u\n", round, unsigned(at));
    }
    if (!damaged_model_behaves(model_size, first_text, first_length)) {
      check(false, "a damaged model");
      damaged_ok = false;
    }
  }
  check(damaged_ok, "damaged models: a status each, no fault");
  // A dense weight row-major (format version 1's dense weights; the host packs them): refused,
  // the packing is not linked on bare metal; the message says to repack.
  const uint8_t* pairs = nullptr;
  uint32_t changes = 0;
  const bool patch_ok = Cases().read_row_major_patch(&pairs, &changes) && model_size <= sizeof g_copy;
  check(patch_ok, "cases.bin: the row-major copy's changes");
  if (patch_ok) {
    std::memcpy(g_copy, linfer_cm_model, model_size);
    for (uint32_t i = 0; i < changes; ++i) {
      uint32_t at, byte;
      std::memcpy(&at, pairs + 8 * i, 4);
      std::memcpy(&byte, pairs + 8 * i + 4, 4);
      if (at < model_size) g_copy[at] = uint8_t(byte);
    }
    check(linfer_model_load_in_place(g_copy, model_size, &none) == LINFER_ERROR_UNSUPPORTED && !none &&
              std::strstr(linfer_last_error(), "row-major") && std::strstr(linfer_last_error(), "linfer-convert"),
          "a row-major dense weight (format version 1): refused, to be repacked");
    if (g_verbose) std::printf("row-major dense weight: %s\n", linfer_last_error());
  }
  std::memset(g_copy, 0xff, 4096);
  check(linfer_model_load_in_place(g_copy, 4096, &none) == LINFER_ERROR_INVALID_MODEL && !none,
        "bytes that are no model");

  int8_kernels::check_all();
  check_sinusoids();

  linfer_session_free(session);
  linfer_model_free(model);
  check_model_options();
  std::printf("memory: arena %u bytes (static), heap %u of %u bytes at most, stack %u bytes at most\n",
              unsigned(arena_needed), unsigned(linfer_cm_heap_used()), unsigned(linfer_cm_heap_size()),
              unsigned(stack_used()));
  std::printf("%d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
