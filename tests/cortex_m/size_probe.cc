// SPDX-License-Identifier: Apache-2.0
// The smallest firmware that uses linfer as an application would (docs/microcontrollers.md): the
// model read in place from flash, a static arena, one input, the class printed. Its code size
// (text minus the model) is the runtime's cost in flash; it prints no numbers, so that no printf
// is linked.
#include <cstdint>
#include <cstring>

#include "linfer/linfer.h"

extern "C" {
extern const uint8_t linfer_cm_model[], linfer_cm_model_end[];
void linfer_cm_puts(const char* s);
}

namespace {
alignas(64) uint8_t g_arena[LINFER_CM_ARENA_BYTES];
const char kInput[] = "Der schnelle braune Fuchs springt über den faulen Hund.";
}  // namespace

int main() {
  linfer_model* model = nullptr;
  if (linfer_model_load_in_place(linfer_cm_model, size_t(linfer_cm_model_end - linfer_cm_model), &model) != LINFER_OK)
    return linfer_cm_puts(linfer_last_error()), 1;
  linfer_session_options o = linfer_session_options_default();
  o.max_seq_len = LINFER_CM_MAX_LEN;
  o.pipeline_block_rows = LINFER_CM_BLOCK_ROWS;
  o.arena = g_arena;
  o.arena_size = sizeof g_arena;
  linfer_session* session = nullptr;
  if (linfer_session_create(model, &o, &session) != LINFER_OK) return linfer_cm_puts(linfer_last_error()), 1;
  int32_t ids[sizeof kInput - 1];
  for (size_t i = 0; i + 1 < sizeof kInput; ++i) ids[i] = uint8_t(kInput[i]);
  if (linfer_session_run(session, ids, sizeof ids / sizeof ids[0]) != LINFER_OK)
    return linfer_cm_puts(linfer_last_error()), 1;
  const float* logits = nullptr;
  size_t rows = 0, cols = 0;
  linfer_session_output(session, &logits, &rows, &cols);
  size_t best = 0;
  for (size_t i = 1; i < cols; ++i)
    if (logits[i] > logits[best]) best = i;
  char line[] = "class ?\n";
  line[6] = char('0' + best % 10);
  linfer_cm_puts(line);
  linfer_session_free(session);
  linfer_model_free(model);
  return 0;
}
