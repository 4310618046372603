// SPDX-License-Identifier: Apache-2.0
/* Prints, as one JSON object, what the Python package's ctypes declarations must match: the size
 * and field offsets of the C API's structs as this compiler lays them out for this target, and the
 * library's default session options. Built for the target (run under the emulator when cross
 * compiling) and read by tests/python/test_api.py. */
#include <linfer/linfer.h>
#include <stddef.h>
#include <stdio.h>

#define FIELD(s, f) printf("\"%s.%s\": [%zu, %zu], ", #s, #f, offsetof(s, f), sizeof(((s*)0)->f))

int main(void) {
  linfer_session_options o = linfer_session_options_default();
  printf("{");
  printf("\"sizeof.linfer_model_info\": %zu, ", sizeof(linfer_model_info));
  FIELD(linfer_model_info, struct_size);
  FIELD(linfer_model_info, vocab_size);
  FIELD(linfer_model_info, dim);
  FIELD(linfer_model_info, num_layers);
  FIELD(linfer_model_info, num_heads);
  FIELD(linfer_model_info, head_dim);
  FIELD(linfer_model_info, ff_dim);
  FIELD(linfer_model_info, max_seq_len);
  FIELD(linfer_model_info, proj_len);
  FIELD(linfer_model_info, head);
  FIELD(linfer_model_info, output_channels);
  FIELD(linfer_model_info, parameter_count);
  FIELD(linfer_model_info, file_bytes);
  FIELD(linfer_model_info, resident_weight_bytes);
  FIELD(linfer_model_info, attention_kind);
  FIELD(linfer_model_info, weight_dtype);
  FIELD(linfer_model_info, format_version);
  printf("\"sizeof.linfer_session_options\": %zu, ", sizeof(linfer_session_options));
  FIELD(linfer_session_options, struct_size);
  FIELD(linfer_session_options, max_seq_len);
  FIELD(linfer_session_options, num_threads);
  FIELD(linfer_session_options, arena);
  FIELD(linfer_session_options, arena_size);
  FIELD(linfer_session_options, enable_profiling);
  FIELD(linfer_session_options, dense_path);
  FIELD(linfer_session_options, row_pipeline);
  FIELD(linfer_session_options, pipeline_block_rows);
  FIELD(linfer_session_options, thread_wait);
  FIELD(linfer_session_options, max_isa);
  FIELD(linfer_session_options, fp16_arithmetic);
  printf("\"sizeof.linfer_profile\": %zu, ", sizeof(linfer_profile));
  FIELD(linfer_profile, milliseconds);
  FIELD(linfer_profile, runs);
  printf(
      "\"default\": {\"struct_size\": %zu, \"max_seq_len\": %u, \"num_threads\": %u, "
      "\"arena_size\": %zu, \"enable_profiling\": %u, \"dense_path\": %d, \"row_pipeline\": %d, "
      "\"pipeline_block_rows\": %u, \"thread_wait\": %d, \"max_isa\": %d, \"fp16_arithmetic\": %u, "
      "\"arena_is_null\": %d}",
      o.struct_size, o.max_seq_len, o.num_threads, o.arena_size, o.enable_profiling, (int)o.dense_path,
      (int)o.row_pipeline, o.pipeline_block_rows, (int)o.thread_wait, (int)o.max_isa, o.fp16_arithmetic,
      o.arena == NULL);
  printf("}\n");
  return 0;
}
