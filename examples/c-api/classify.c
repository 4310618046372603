// SPDX-License-Identifier: Apache-2.0
/* Plain C use of linfer: load a model, run it on token ids read from a file (or the bytes of a
 * text file with --text), print the output shape and, for a classifier, the predicted class.
 *
 *   linfer_example_c MODEL.lfm IDS.txt
 *   linfer_example_c MODEL.lfm --text FILE.txt */
#include <linfer/linfer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int read_ids(const char* path, int text, int32_t** out, size_t* count) {
  FILE* f = fopen(path, "rb");
  size_t cap = 256, n = 0;
  int32_t* ids;
  if (!f) return 0;
  ids = (int32_t*)malloc(cap * sizeof *ids);
  for (;;) {
    long v;
    if (text) {
      int ch = fgetc(f);
      if (ch == EOF) break;
      v = ch;
    } else if (fscanf(f, "%ld", &v) != 1) {
      break;
    }
    if (n == cap) {
      cap *= 2;
      ids = (int32_t*)realloc(ids, cap * sizeof *ids);
    }
    ids[n++] = (int32_t)v;
  }
  fclose(f);
  *out = ids;
  *count = n;
  return 1;
}

int main(int argc, char** argv) {
  linfer_model* model = NULL;
  linfer_session* session = NULL;
  linfer_session_options options = linfer_session_options_default();
  linfer_model_info info;
  const float* out;
  size_t rows, cols, count = 0, c, best = 0;
  int32_t* ids = NULL;
  int text = argc == 4 && strcmp(argv[2], "--text") == 0;

  if (argc != 3 && !text) {
    fprintf(stderr, "usage: %s MODEL.lfm (IDS.txt | --text FILE)\n", argv[0]);
    return 2;
  }
  if (!read_ids(argv[text ? 3 : 2], text, &ids, &count) || count == 0) {
    fprintf(stderr, "cannot read input tokens from %s\n", argv[text ? 3 : 2]);
    return 1;
  }
  if (linfer_model_load(argv[1], &model) != LINFER_OK) {
    fprintf(stderr, "load failed: %s\n", linfer_last_error());
    free(ids);
    return 1;
  }
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info; /* the library fills the fields that fit in this size */
  linfer_model_get_info(model, &info);
  options.max_seq_len = (uint32_t)(count < info.max_seq_len ? count : info.max_seq_len);
  if (linfer_session_create(model, &options, &session) != LINFER_OK ||
      linfer_session_run(session, ids, count) != LINFER_OK ||
      linfer_session_output(session, &out, &rows, &cols) != LINFER_OK) {
    fprintf(stderr, "error: %s\n", linfer_last_error());
    linfer_session_free(session);
    linfer_model_free(model);
    free(ids);
    return 1;
  }
  printf("output %zu x %zu, first value %.6f\n", rows, cols, out[0]);
  if (info.head == LINFER_HEAD_CLASSIFIER) {
    for (c = 1; c < cols; ++c)
      if (out[c] > out[best]) best = c;
    printf("class %zu\n", best);
  }
  linfer_session_free(session);
  linfer_model_free(model);
  free(ids);
  return 0;
}
