// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: .lfm bytes -> linfer_model_load_from_memory; if the model loads, its info, a
// session (max_seq_len = min(n, 64), one thread) and one run on token ids (or embeddings) taken
// from the input, and with a tokenizer its last bytes tokenized; then everything is freed. The C
// API must never crash, abort or leak, whatever the bytes. check_views() adds an oracle for the weights XNNPACK reads
// (it is not instrumented). Sessions alternate between the default dense path and the XNNPACK option.
//
// Models that are valid but expensive are skipped after loading (a fuzzer that spends its time
// packing a 1024-layer model finds nothing): the checks below bound the session's memory and one
// run's work, not what the loader accepts.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <sanitizer/asan_interface.h>

#include "linfer/linfer.h"
#include "model.h"

namespace {

constexpr uint32_t kMaxLength = 64;
constexpr size_t kMaxArenaBytes = size_t(64) << 20;
constexpr uint64_t kMaxParameters = uint64_t(4) << 20;  // described weights: bounds packing work
constexpr uint64_t kMaxFlops = uint64_t(1) << 28;       // one run

// An oracle for what ASan cannot see: XNNPACK is a prebuilt library without ASan instrumentation,
// so its reads of the weights when it packs them are unchecked. Every weight view the kernels are
// given must therefore lie in memory the loaded model owns (the file copy, or the panels a version
// 1 file is packed into at load): ASan's shadow memory says whether each region is addressable.
// (This is how a converted copy handed to a larger tensor that shared its offset showed up;
// tests/fuzz/regressions/fuzz_lfm.)
void check_views(const uint8_t* data, size_t size) {
  auto loaded = linfer::rt::load_model_memory(data, size);
  if (!loaded.ok()) return;
  const std::unique_ptr<linfer::rt::LoadedModel>& m = loaded.value();
  linfer::for_each_weight(m->desc, [&](const std::string& name, const linfer::WeightView& w) {
    if (!w.present()) return;
    const void* bad = __asan_region_is_poisoned(const_cast<void*>(w.data), w.bytes());
    if (!bad && w.scales) bad = __asan_region_is_poisoned(const_cast<float*>(w.scales), w.rows() * sizeof(float));
    if (bad) {
      std::fprintf(stderr, "fuzz_lfm: weight %s (%s, %llu bytes) reaches unowned memory\n", name.c_str(),
                   linfer::to_string(w.dtype), (unsigned long long)w.bytes());
      abort();
    }
  });
}

// FNV-1a, to derive the ids from the whole input (so mutations anywhere change them a little).
uint32_t hash(const uint8_t* data, size_t size) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 16777619u;
  return h;
}

void exercise(const linfer_model* model, const uint8_t* data, size_t size) {
  linfer_model_info info{};
  info.struct_size = sizeof info;
  if (linfer_model_get_info(model, &info) != LINFER_OK) abort();  // a loaded model has info
  if (info.parameter_count > kMaxParameters) return;
  const uint32_t max_len = std::min(info.max_seq_len, kMaxLength);
  const uint32_t seed = hash(data, size);
  const size_t length = 1 + seed % max_len;
  if (linfer_model_flops(model, length) > kMaxFlops) return;

  linfer_session_options options = linfer_session_options_default();
  options.max_seq_len = max_len;
  options.num_threads = 1;
  options.enable_profiling = (seed >> 8) & 1;
  if ((seed >> 10) & 1) options.dense_path = LINFER_DENSE_XNNPACK;
  size_t arena_bytes = 0;
  if (linfer_session_arena_size(model, &options, &arena_bytes) != LINFER_OK) abort();
  if (arena_bytes > kMaxArenaBytes) return;
  // Half the time the caller owns the arena (exactly the size asked for, not 64-byte aligned).
  void* arena = nullptr;
  if ((seed >> 9) & 1) {
    arena = std::malloc(arena_bytes + 8);
    options.arena = static_cast<char*>(arena) + 8;
    options.arena_size = arena_bytes;
  }
  linfer_session* session = nullptr;
  if (linfer_session_create(model, &options, &session) == LINFER_OK) {
    linfer_status s;
    if (info.vocab_size > 0) {
      std::vector<int32_t> ids(length);
      for (size_t t = 0; t < length; ++t)
        ids[t] = int32_t((data[(seed + t * 7919u) % size] + 257u * t + seed) % info.vocab_size);
      s = linfer_session_run(session, ids.data(), length);
      // Causal models also run token by token (the carried state); others refuse step().
      if (s == LINFER_OK)
        for (size_t t = 0; t < std::min<size_t>(length, 3); ++t)
          if (linfer_session_step(session, ids[t]) != LINFER_OK) break;
    } else {
      std::vector<float> x(length * size_t(info.dim));
      for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(data[(seed + i) % size]) - 128) / 64.0f;
      s = linfer_session_run_embeddings(session, x.data(), length);
    }
    const float* out = nullptr;
    size_t rows = 0, cols = 0;
    if (linfer_session_output(session, &out, &rows, &cols) == LINFER_OK) {
      volatile float sink = 0.0f;  // read every output value (ASan checks the extent)
      for (size_t i = 0; i < rows * cols; ++i) sink = sink + out[i];
      if (linfer_session_hidden_states(session, &out, &rows, &cols) == LINFER_OK)
        for (size_t i = 0; i < rows * cols; ++i) sink = sink + out[i];
    } else if (s == LINFER_OK) {
      abort();  // a successful run has an output
    }
    size_t arena_in_use = 0, packed = 0;
    linfer_session_memory(session, &arena_in_use, &packed);
    linfer_profile profile;
    linfer_session_profile(session, &profile);
    linfer_session_free(session);
  }
  std::free(arena);
}

}  // namespace

// A model with a tokenizer: its last bytes (up to 256) as text, in a block of their exact size so
// that ASan catches a read past them, tokenized and the ids turned back into text.
void tokenize(const linfer_model* model, const uint8_t* data, size_t size) {
  if (!linfer_model_has_tokenizer(model)) return;
  const size_t n = std::min<size_t>(size, 256);
  std::unique_ptr<char[]> text(new char[n]);
  std::memcpy(text.get(), data + size - n, n);
  size_t count = 0, filled = 0, length = 0;
  // The one refusal: a word past the stack's bound, which a character map of the file may make of
  // 256 bytes (a rule that maps to a long string); it must name itself.
  const linfer_status s = linfer_tokenize(model, text.get(), n, nullptr, 0, &count);
  if (s == LINFER_ERROR_UNSUPPORTED && std::strstr(linfer_last_error(), "is longer than")) return;
  if (s != LINFER_OK) abort();
  std::vector<int32_t> ids(count);
  if (linfer_tokenize(model, text.get(), n, ids.data(), ids.size(), &filled) != LINFER_OK || filled != count) abort();
  if (linfer_detokenize(model, ids.data(), ids.size(), nullptr, 0, &length) != LINFER_OK) abort();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  linfer_model* model = nullptr;
  const linfer_status s = linfer_model_load_from_memory(data, size, &model);
  if (s != LINFER_OK) {
    if (model || linfer_last_error()[0] == '\0') abort();  // a failure names its problem
    return 0;
  }
  check_views(data, size);
  tokenize(model, data, size);
  exercise(model, data, size);
  linfer_model_free(model);
  return 0;
}
