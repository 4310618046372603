// SPDX-License-Identifier: Apache-2.0
/* The smallest program that uses linfer: load a model, run it once, print the arg-max of the last
 * output row. Linked with the library's objects (as a static liblinfer.a would be), its stripped
 * size is the footprint an application gains (docs/footprint.md, tests/footprint/sizes.txt).
 *   linfer_minimal MODEL.lfm ID [ID ...] */
#include <stdio.h>
#include <stdlib.h>

#include "linfer/linfer.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: linfer_minimal MODEL.lfm ID [ID ...]\n");
    return 2;
  }
  int32_t ids[64];
  size_t length = 0;
  for (int i = 2; i < argc && length < 64; ++i) ids[length++] = (int32_t)atoi(argv[i]);
  linfer_model* model = NULL;
  linfer_session* session = NULL;
  const float* out = NULL;
  size_t rows = 0, cols = 0;
  linfer_session_options options = linfer_session_options_default();
  options.max_seq_len = (uint32_t)length;
  if (linfer_model_load(argv[1], &model) != LINFER_OK ||
      linfer_session_create(model, &options, &session) != LINFER_OK ||
      linfer_session_run(session, ids, length) != LINFER_OK ||
      linfer_session_output(session, &out, &rows, &cols) != LINFER_OK) {
    fprintf(stderr, "linfer_minimal: %s\n", linfer_last_error());
    linfer_session_free(session);
    linfer_model_free(model);
    return 1;
  }
  size_t best = 0;
  for (size_t c = 1; c < cols; ++c)
    if (out[(rows - 1) * cols + c] > out[(rows - 1) * cols + best]) best = c;
  printf("%zu\n", best);
  linfer_session_free(session);
  linfer_model_free(model);
  return 0;
}
