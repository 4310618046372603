// SPDX-License-Identifier: Apache-2.0
/* What the JavaScript package (lib/core.js) calls besides linfer.h: the C API's structs and
 * by-value returns flattened into plain arguments, so that the JavaScript side never hard-codes
 * a struct layout, and the allocator's count of bytes in use, which the tests watch. */
#include <malloc.h>
#include <stdint.h>
#if LINFER_JS_EMMALLOC
#include <emscripten/emmalloc.h>
#endif

#include "linfer/linfer.h"

#define LINFER_JS __attribute__((used, visibility("default")))

/* The model's linfer_model_info: numbers in the order of core.js's INFO_NUMBERS (as doubles:
 * the 64-bit counts stay exact up to 2^53), the two strings through `strings`. */
LINFER_JS linfer_status linfer_js_model_info(const linfer_model* model, double* numbers, const char** strings) {
  linfer_model_info info;
  info.struct_size = sizeof info;
  const linfer_status s = linfer_model_get_info(model, &info);
  if (s != LINFER_OK) return s;
  const double values[] = {info.vocab_size,
                           info.dim,
                           info.num_layers,
                           info.num_heads,
                           info.head_dim,
                           info.ff_dim,
                           info.max_seq_len,
                           info.proj_len,
                           (double)info.head,
                           info.output_channels,
                           (double)info.parameter_count,
                           (double)info.file_bytes,
                           (double)info.resident_weight_bytes,
                           info.format_version};
  for (unsigned i = 0; i < sizeof values / sizeof values[0]; ++i) numbers[i] = values[i];
  strings[0] = info.attention_kind;
  strings[1] = info.weight_dtype;
  return LINFER_OK;
}

/* linfer_model_flops as a double: a 64-bit return would reach JavaScript as its low 32 bits
 * (emscripten splits an i64 result without WASM_BIGINT), which wrapped past 2^31. Exact up to
 * 2^53. */
LINFER_JS double linfer_js_model_flops(const linfer_model* model, size_t length) {
  return (double)linfer_model_flops(model, length);
}

/* A session for inputs of up to max_seq_len tokens (0: the model's n) on num_threads threads
 * (more than 1 only in the threads module: the others refuse it with the build option). */
LINFER_JS linfer_status linfer_js_session_create(const linfer_model* model, uint32_t max_seq_len, uint32_t num_threads,
                                                 linfer_session** out) {
  linfer_session_options o = linfer_session_options_default();
  o.max_seq_len = max_seq_len;
  o.num_threads = num_threads;
  return linfer_session_create(model, &o, out);
}

#if defined(__wasm_relaxed_simd__)
void linfer_wasm_use_relaxed_dot(int yes); /* kernels/dense/dense_select.cc */

/* The relaxed module: whether the int8 dense layers of sessions created from now on take the relaxed
 * dot product (1, the default) or SIMD128's (0). core.js times both on this engine and says. */
LINFER_JS void linfer_js_use_relaxed_dot(int yes) { linfer_wasm_use_relaxed_dot(yes); }
#endif

/* The last run's output: its address, rows and columns in out[0..2]. */
LINFER_JS linfer_status linfer_js_session_output(const linfer_session* session, uint32_t* out) {
  const float* data = 0;
  size_t rows = 0, cols = 0;
  const linfer_status s = linfer_session_output(session, &data, &rows, &cols);
  out[0] = (uint32_t)(uintptr_t)data;
  out[1] = (uint32_t)rows;
  out[2] = (uint32_t)cols;
  return s;
}

/* Bytes the allocator has handed out and not taken back: the blocks in use, each with the
 * allocator's header. dlmalloc's mallinfo().uordblks is that; emmalloc's (the threads module,
 * LINFER_JS_EMMALLOC) adds the 8-byte header of every free region, which makes it move with how
 * the free space is split, so it is taken off: emmalloc keeps a region's size at both its ends
 * (2 x uint32_t, emscripten's system/lib/emmalloc.c). Read while no other thread allocates. */
LINFER_JS uint32_t linfer_js_heap_in_use(void) {
#if LINFER_JS_EMMALLOC
  size_t free_regions_by_size[32];
  const size_t free_regions = emmalloc_compute_free_dynamic_memory_fragmentation_map(free_regions_by_size);
  return (uint32_t)(mallinfo().uordblks - free_regions * 2 * sizeof(uint32_t));
#else
  return (uint32_t)mallinfo().uordblks;
#endif
}
