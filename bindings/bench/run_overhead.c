// SPDX-License-Identifier: Apache-2.0
/* The C API's time of one run, for the bindings' overhead (run_overhead.sh): a session with
 * max_seq_len = T and one thread, `runs` runs on the same ids after a warm-up, each timed; prints
 * "c min_us median_us". Usage: run_overhead MODEL.lfm T RUNS */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "linfer/linfer.h"

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int compare(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s MODEL.lfm T RUNS\n", argv[0]);
    return 2;
  }
  const int T = atoi(argv[2]), runs = atoi(argv[3]);
  linfer_model* model = NULL;
  if (linfer_model_load(argv[1], &model) != LINFER_OK) {
    fprintf(stderr, "%s\n", linfer_last_error());
    return 1;
  }
  linfer_session_options options = linfer_session_options_default();
  options.max_seq_len = (uint32_t)T;
  options.num_threads = 1;
  linfer_session* session = NULL;
  if (linfer_session_create(model, &options, &session) != LINFER_OK) {
    fprintf(stderr, "%s\n", linfer_last_error());
    return 1;
  }
  int32_t* ids = malloc(sizeof(int32_t) * T);
  double* times = malloc(sizeof(double) * runs);
  for (int i = 0; i < T; i++) ids[i] = (i * 37 + 11) % 256;
  const float* out = NULL;
  size_t rows = 0, cols = 0;
  double sink = 0;
  for (int r = -runs / 4; r < runs; r++) {
    const double t0 = now_us();
    if (linfer_session_run(session, ids, (size_t)T) != LINFER_OK) return 1;
    linfer_session_output(session, &out, &rows, &cols);
    sink += out[0];
    if (r >= 0) times[r] = now_us() - t0;
  }
  qsort(times, (size_t)runs, sizeof(double), compare);
  printf("c %.1f %.1f (%zu x %zu, %g)\n", times[0], times[runs / 2], rows, cols, sink > 0 ? 1.0 : 0.0);
  linfer_session_free(session);
  linfer_model_free(model);
  free(ids);
  free(times);
  return 0;
}
