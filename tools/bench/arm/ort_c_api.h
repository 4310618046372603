// SPDX-License-Identifier: Apache-2.0
/* ort_c_api.h: this project's declarations of the part of ONNX Runtime's C API that ort_proxy.c
 * calls. ONNX Runtime's npm package (onnxruntime-node), which ships the linux-arm64
 * libonnxruntime.so.1 measured here, carries no C header, and nothing else reachable from this
 * machine (Debian, npm) does; so, as qemu_plugin_v1.h does for QEMU's plugin API, the few
 * functions used are declared here.
 *
 * The C API is one table of function pointers (struct OrtApi) returned by
 * OrtGetApiBase()->GetApi(version). The table only ever grows at its end, so an entry's position
 * is the same in every version that has it. The positions below were read from
 * include/onnxruntime/core/session/onnxruntime_c_api.h (API version 29, the header that serves the
 * 1.30 library) by counting its entries from the first; every entry used here exists since API
 * version 1, which is the version ort_proxy.c asks for. On Linux ORT_API_CALL is empty (the
 * platform's C calling convention) and every function returns an OrtStatus* that is NULL on
 * success. */
#ifndef LINFER_ORT_C_API_H
#define LINFER_ORT_C_API_H

#include <stddef.h>
#include <stdint.h>

typedef struct OrtStatus OrtStatus;
typedef struct OrtEnv OrtEnv;
typedef struct OrtSession OrtSession;
typedef struct OrtSessionOptions OrtSessionOptions;
typedef struct OrtRunOptions OrtRunOptions;
typedef struct OrtValue OrtValue;
typedef struct OrtMemoryInfo OrtMemoryInfo;
typedef struct OrtAllocator OrtAllocator;
typedef struct OrtTensorTypeAndShapeInfo OrtTensorTypeAndShapeInfo;

/* enum values as the header gives them */
enum { ORT_LOGGING_LEVEL_WARNING = 2 };
enum { ORT_SEQUENTIAL = 0 };    /* ExecutionMode */
enum { ORT_ENABLE_ALL = 99 };   /* GraphOptimizationLevel */
enum { OrtArenaAllocator = 1 }; /* OrtAllocatorType */
enum { OrtMemTypeDefault = 0 }; /* OrtMemType */
enum { ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64 = 7 };

typedef struct OrtApiBase {
  const void* (*GetApi)(uint32_t version); /* the OrtApi table, or NULL */
  const char* (*GetVersionString)(void);
} OrtApiBase;
typedef const OrtApiBase* (*OrtGetApiBaseFn)(void);

/* positions in the OrtApi table */
enum OrtApiEntry {
  kOrtGetErrorMessage = 2,
  kOrtCreateEnv = 3,
  kOrtDisableTelemetryEvents = 6,
  kOrtCreateSession = 7,
  kOrtRun = 9,
  kOrtCreateSessionOptions = 10,
  kOrtSetSessionExecutionMode = 13,
  kOrtSetSessionGraphOptimizationLevel = 23,
  kOrtSetIntraOpNumThreads = 24,
  kOrtSetInterOpNumThreads = 25,
  kOrtSessionGetInputName = 36,
  kOrtSessionGetOutputName = 37,
  kOrtCreateTensorWithDataAsOrtValue = 49,
  kOrtGetTensorMutableData = 51,
  kOrtGetTensorShapeElementCount = 64,
  kOrtGetTensorTypeAndShape = 65,
  kOrtCreateCpuMemoryInfo = 69,
  kOrtAllocatorFree = 76,
  kOrtGetAllocatorWithDefaultOptions = 78,
  kOrtReleaseEnv = 92,
  kOrtReleaseStatus = 93,
  kOrtReleaseMemoryInfo = 94,
  kOrtReleaseSession = 95,
  kOrtReleaseValue = 96,
  kOrtReleaseTensorTypeAndShapeInfo = 99,
  kOrtReleaseSessionOptions = 100,
};

/* the signatures of those entries */
typedef const char* (*OrtGetErrorMessageFn)(const OrtStatus*);
typedef OrtStatus* (*OrtCreateEnvFn)(int level, const char* logid, OrtEnv** out);
typedef OrtStatus* (*OrtDisableTelemetryEventsFn)(const OrtEnv*);
typedef OrtStatus* (*OrtCreateSessionFn)(const OrtEnv*, const char* path, const OrtSessionOptions*, OrtSession** out);
typedef OrtStatus* (*OrtRunFn)(OrtSession*, const OrtRunOptions*, const char* const* input_names,
                               const OrtValue* const* inputs, size_t n_inputs, const char* const* output_names,
                               size_t n_outputs, OrtValue** outputs);
typedef OrtStatus* (*OrtCreateSessionOptionsFn)(OrtSessionOptions** out);
typedef OrtStatus* (*OrtSetOptionIntFn)(OrtSessionOptions*, int); /* mode, level, threads */
typedef OrtStatus* (*OrtSessionGetNameFn)(const OrtSession*, size_t index, OrtAllocator*, char** out);
typedef OrtStatus* (*OrtCreateTensorWithDataFn)(const OrtMemoryInfo*, void* data, size_t bytes, const int64_t* shape,
                                                size_t rank, int type, OrtValue** out);
typedef OrtStatus* (*OrtGetTensorMutableDataFn)(OrtValue*, void** out);
typedef OrtStatus* (*OrtGetTensorShapeElementCountFn)(const OrtTensorTypeAndShapeInfo*, size_t* out);
typedef OrtStatus* (*OrtGetTensorTypeAndShapeFn)(const OrtValue*, OrtTensorTypeAndShapeInfo** out);
typedef OrtStatus* (*OrtCreateCpuMemoryInfoFn)(int allocator_type, int mem_type, OrtMemoryInfo** out);
typedef OrtStatus* (*OrtAllocatorFreeFn)(OrtAllocator*, void*);
typedef OrtStatus* (*OrtGetAllocatorWithDefaultOptionsFn)(OrtAllocator** out);
typedef void (*OrtReleaseFn)(void*);

#endif
