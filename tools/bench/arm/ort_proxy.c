// SPDX-License-Identifier: Apache-2.0
/* ort_proxy: ONNX Runtime as the peer of linfer-bench in the instruction-count proxy
 * (README.md). Loads ONNX Runtime's own linux-arm64 libonnxruntime.so.1 (from the onnxruntime-node
 * npm package) with dlopen, and runs one ONNX model on fixed int64 ids the way the x86 suite's
 * ort_bench.js configures it: the CPU execution provider, intra- and inter-op threads 1,
 * sequential execution, all graph optimizations.
 *
 *   ort_proxy LIB.so MODEL.onnx IDS.txt [--warmup W] [--runs R] [--out OUT.f32]
 *
 * W + R calls of Run() on the ids (whitespace-separated token ids; the model's input is [T] int64);
 * --out writes the last output as raw little-endian float32. No timing: the instructions of one
 * Run() are count(--runs 2) - count(--runs 1) under the insn_count plugin, as for linfer-bench.
 * Exit status 1 with a one-line message on any error. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ort_c_api.h"

static const void* const* api; /* the OrtApi table */
#define ORT(entry, type) ((type)api[kOrt##entry])

static void die(const char* what, const char* detail) {
  fprintf(stderr, "ort_proxy: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
  exit(1);
}

static void check(OrtStatus* st, const char* what) {
  if (st) die(what, ORT(GetErrorMessage, OrtGetErrorMessageFn)(st));
}

static int64_t* read_ids(const char* path, size_t* n) {
  FILE* f = fopen(path, "r");
  if (!f) die("cannot open the ids file", path);
  size_t cap = 1024, len = 0;
  int64_t* ids = malloc(cap * sizeof *ids);
  long long v;
  while (ids && fscanf(f, "%lld", &v) == 1) {
    if (len == cap && !(ids = realloc(ids, (cap *= 2) * sizeof *ids))) break;
    ids[len++] = v;
  }
  if (!ids) die("out of memory reading", path);
  if (!feof(f) || len == 0) die("the ids file holds something other than integers, or nothing", path);
  fclose(f);
  *n = len;
  return ids;
}

static unsigned long parse_count(const char* flag, const char* s) {
  char* end;
  unsigned long v = strtoul(s, &end, 10);
  if (!*s || *end || v > 1000000) die("expected a count after", flag);
  return v;
}

int main(int argc, char** argv) {
  if (argc < 4) die("usage: ort_proxy LIB.so MODEL.onnx IDS.txt [--warmup W] [--runs R] [--out OUT.f32]", NULL);
  unsigned long warmup = 1, runs = 1;
  const char* out_path = NULL;
  for (int i = 4; i < argc; ++i) {
    if (i + 1 >= argc) die("missing value after", argv[i]);
    if (!strcmp(argv[i], "--warmup"))
      warmup = parse_count(argv[i], argv[i + 1]);
    else if (!strcmp(argv[i], "--runs"))
      runs = parse_count(argv[i], argv[i + 1]);
    else if (!strcmp(argv[i], "--out"))
      out_path = argv[i + 1];
    else
      die("unknown argument", argv[i]);
    ++i;
  }
  size_t n_ids;
  int64_t* ids = read_ids(argv[3], &n_ids);

  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) die("cannot load ONNX Runtime", dlerror());
  OrtGetApiBaseFn get_base = (OrtGetApiBaseFn)dlsym(lib, "OrtGetApiBase");
  if (!get_base) die("no OrtGetApiBase in", argv[1]);
  const OrtApiBase* base = get_base();
  api = (const void* const*)base->GetApi(1);
  if (!api) die("GetApi(1) returned nothing", NULL);

  OrtEnv* env;
  check(ORT(CreateEnv, OrtCreateEnvFn)(ORT_LOGGING_LEVEL_WARNING, "ort_proxy", &env), "CreateEnv");
  check(ORT(DisableTelemetryEvents, OrtDisableTelemetryEventsFn)(env), "DisableTelemetryEvents");
  OrtSessionOptions* opts;
  check(ORT(CreateSessionOptions, OrtCreateSessionOptionsFn)(&opts), "CreateSessionOptions");
  check(ORT(SetIntraOpNumThreads, OrtSetOptionIntFn)(opts, 1), "SetIntraOpNumThreads");
  check(ORT(SetInterOpNumThreads, OrtSetOptionIntFn)(opts, 1), "SetInterOpNumThreads");
  check(ORT(SetSessionExecutionMode, OrtSetOptionIntFn)(opts, ORT_SEQUENTIAL), "SetSessionExecutionMode");
  check(ORT(SetSessionGraphOptimizationLevel, OrtSetOptionIntFn)(opts, ORT_ENABLE_ALL),
        "SetSessionGraphOptimizationLevel");
  OrtSession* session;
  check(ORT(CreateSession, OrtCreateSessionFn)(env, argv[2], opts, &session), "CreateSession");

  OrtAllocator* alloc;
  check(ORT(GetAllocatorWithDefaultOptions, OrtGetAllocatorWithDefaultOptionsFn)(&alloc),
        "GetAllocatorWithDefaultOptions");
  char *in_name, *out_name;
  check(ORT(SessionGetInputName, OrtSessionGetNameFn)(session, 0, alloc, &in_name), "SessionGetInputName");
  check(ORT(SessionGetOutputName, OrtSessionGetNameFn)(session, 0, alloc, &out_name), "SessionGetOutputName");

  OrtMemoryInfo* mem;
  check(ORT(CreateCpuMemoryInfo, OrtCreateCpuMemoryInfoFn)(OrtArenaAllocator, OrtMemTypeDefault, &mem),
        "CreateCpuMemoryInfo");
  const int64_t shape[1] = {(int64_t)n_ids};
  OrtValue* input;
  check(ORT(CreateTensorWithDataAsOrtValue, OrtCreateTensorWithDataFn)(mem, ids, n_ids * sizeof *ids, shape, 1,
                                                                       ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64, &input),
        "CreateTensorWithDataAsOrtValue");

  const char* in_names[1] = {in_name};
  const char* out_names[1] = {out_name};
  const OrtValue* inputs[1] = {input};
  for (unsigned long r = 0; r < warmup + runs; ++r) {
    OrtValue* output = NULL;
    check(ORT(Run, OrtRunFn)(session, NULL, in_names, inputs, 1, out_names, 1, &output), "Run");
    if (r + 1 == warmup + runs && out_path) {
      OrtTensorTypeAndShapeInfo* info;
      size_t count;
      void* data;
      check(ORT(GetTensorTypeAndShape, OrtGetTensorTypeAndShapeFn)(output, &info), "GetTensorTypeAndShape");
      check(ORT(GetTensorShapeElementCount, OrtGetTensorShapeElementCountFn)(info, &count),
            "GetTensorShapeElementCount");
      ORT(ReleaseTensorTypeAndShapeInfo, OrtReleaseFn)(info);
      check(ORT(GetTensorMutableData, OrtGetTensorMutableDataFn)(output, &data), "GetTensorMutableData");
      FILE* f = fopen(out_path, "wb");
      if (!f) die("cannot write", out_path);
      if (fwrite(data, sizeof(float), count, f) != count || fclose(f) != 0) die("cannot write", out_path);
    }
    ORT(ReleaseValue, OrtReleaseFn)(output);
  }

  ORT(ReleaseValue, OrtReleaseFn)(input);
  ORT(ReleaseMemoryInfo, OrtReleaseFn)(mem);
  check(ORT(AllocatorFree, OrtAllocatorFreeFn)(alloc, in_name), "AllocatorFree");
  check(ORT(AllocatorFree, OrtAllocatorFreeFn)(alloc, out_name), "AllocatorFree");
  ORT(ReleaseSession, OrtReleaseFn)(session);
  ORT(ReleaseSessionOptions, OrtReleaseFn)(opts);
  ORT(ReleaseEnv, OrtReleaseFn)(env);
  free(ids);
  printf("ort_proxy: %s, %zu ids, %lu warm-up + %lu runs, ONNX Runtime %s\n", argv[2], n_ids, warmup, runs,
         base->GetVersionString());
  return 0;
}
