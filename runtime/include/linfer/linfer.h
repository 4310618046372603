// SPDX-License-Identifier: Apache-2.0
/* linfer C API: load a .lfm model, create a session with all memory planned up front, run.
 *
 * Error policy: no function aborts or throws. Every function that can fail returns a
 * linfer_status; the one-line message describing the last failure on the calling thread is
 * returned by linfer_last_error(). Bad model files fail at load, bad options at session
 * creation, bad inputs (empty, too long, token id outside the vocabulary) at run, before any
 * computation. linfer_session_run* allocate no memory.
 *
 * Threading: a linfer_model is immutable and may be shared by any number of threads and
 * sessions. A linfer_session must be used by one thread at a time. */
#ifndef LINFER_LINFER_H_
#define LINFER_LINFER_H_

#include <stddef.h>
#include <stdint.h>

#include "linfer/linfer_status.h"  /* linfer_status: LINFER_OK and the error codes */
#include "linfer/linfer_version.h" /* LINFER_VERSION_MAJOR, _MINOR, _PATCH, _STRING */

/* The library exports the C API only; everything else in it is hidden. */
#define LINFER_API __attribute__((visibility("default")))

#ifdef __cplusplus
extern "C" {
#endif

typedef struct linfer_model linfer_model;
typedef struct linfer_session linfer_session;

typedef enum linfer_head_kind {
  LINFER_HEAD_NONE = 0,       /* output: hidden states [T, dim] */
  LINFER_HEAD_LM_LOGITS = 1,  /* output: logits [T, vocab_size] */
  LINFER_HEAD_CLASSIFIER = 2, /* output: class logits [1, num_classes] */
  LINFER_HEAD_POOLED = 3      /* output: the pooled vector [1, dim], a sentence embedding */
} linfer_head_kind;

/* What linfer_model_get_info fills. Set struct_size = sizeof(linfer_model_info) (the C++
 * wrapper does): the library writes only the fields that fit, so the struct can grow. */
typedef struct linfer_model_info {
  size_t struct_size;
  uint32_t vocab_size; /* 0: the model takes embeddings (linfer_session_run_embeddings) */
  uint32_t dim;
  uint32_t num_layers;
  uint32_t num_heads;
  uint32_t head_dim;
  uint32_t ff_dim;
  uint32_t max_seq_len; /* n: runs take 1..n tokens */
  uint32_t proj_len;    /* k */
  linfer_head_kind head;
  uint32_t output_channels; /* columns of the output */
  uint64_t parameter_count;
  uint64_t file_bytes;
  uint64_t resident_weight_bytes; /* bytes of weights the model holds for all its sessions, in
                                     their file dtype: read in place from the file, or (format
                                     version 1) packed once at load. Sessions add none. */
  const char* attention_kind;     /* the converter's name of the kind, e.g. "linformer", "full"
                                     (the table of kinds: schema/attention_kinds.txt) */
  const char* weight_dtype;       /* of the dense layers: "f32", "f16", "int8" or "mixed" */
  uint32_t format_version; /* of the file: 1 (row-major), 2 (dense layers in panels), 3 (int8 input scales), 4 or 5
                              (int8 f32 inputs) */
} linfer_model_info;

/* Which code runs the dense layers (Q, K, V, output, feed-forward, heads). */
typedef enum linfer_dense_path {
  LINFER_DENSE_AUTO = 0,   /* linfer's own kernels, on the model's shared weights */
  LINFER_DENSE_XNNPACK = 1 /* f32 layers through XNNPACK operators: each session packs its own
                              copy of the weights (int8 layers keep the own kernels) */
} linfer_dense_path;

/* The row pipeline runs a layer as one parallel region over blocks of rows (docs/performance.md). */
typedef enum linfer_row_pipeline {
  LINFER_PIPELINE_AUTO = 0, /* where the layer's weights fit the last-level cache */
  LINFER_PIPELINE_OFF = 1,  /* operator by operator */
  LINFER_PIPELINE_ON = 2    /* whenever the model allows it (softmax attention, own kernels) */
} linfer_row_pipeline;

/* How the session's worker threads wait between parallel regions. Spinning answers fastest, but
 * a spinning thread holds its core: with more threads than free cores (several sessions, or
 * num_threads above the CPU count) spinning threads starve the ones with work. So a thread spins
 * for at most 50 microseconds (enough to catch the next region of a run) and then sleeps. */
typedef enum linfer_thread_wait {
  LINFER_WAIT_AUTO = 0, /* spin when num_threads fits the CPUs this process may run on */
  LINFER_WAIT_SPIN = 1, /* spin up to 50 microseconds, then sleep */
  LINFER_WAIT_YIELD = 2 /* sleep in the kernel: a few microseconds more per parallel region */
} linfer_thread_wait;

/* Instruction sets of the kernels, for a cap (linfer_session_options.max_isa): tests and
 * comparisons run lower targets on a CPU that has higher ones. The cap holds for the dense-layer
 * kernels and for the Highway kernels (norms, attention, compression) of the session's runs. A
 * bare-metal build has its core's kernels only and takes LINFER_ISA_AUTO alone (docs/microcontrollers.md). */
typedef enum linfer_isa {
  LINFER_ISA_AUTO = 0,        /* the best this CPU has */
  LINFER_ISA_GENERIC = 1,     /* portable C++ */
  LINFER_ISA_X86_AVX2 = 2,    /* AVX2, FMA, F16C */
  LINFER_ISA_X86_AVXVNNI = 3, /* + AVX-VNNI */
  LINFER_ISA_X86_AVX512 = 4,  /* AVX-512 F, BW, DQ, VL */
  LINFER_ISA_X86_AVX512_VNNI = 5,
  LINFER_ISA_ARM_NEON = 6,        /* ARMv8.0 (Raspberry Pi 4); 32-bit Arm: NEON with VFPv4 */
  LINFER_ISA_ARM_NEON_DOT = 7,    /* + dot product (Raspberry Pi 5) */
  LINFER_ISA_X86_SSE4 = 8,        /* SSE4.2: the Highway kernels' SSE4 target, portable dense layers */
  LINFER_ISA_ARM_NEON_I8MM = 9,   /* + int8 matrix multiply (SMMLA; phones' Cortex-A510/A710/X2 on) */
  LINFER_ISA_X86_AMX = 10,        /* + AMX int8 tiles (Sapphire Rapids and later) */
  LINFER_ISA_X86_AVX512_BF16 = 11 /* + AVX-512 BF16: the int8 models' attention values in bf16 (AMD Zen 4);
                                     in the caps' order between AVX512_VNNI and AMX */
} linfer_isa;

/* Session options. Start from linfer_session_options_default(), which sets struct_size, then
 * change fields: a program built against this header keeps working with a later library that
 * has appended fields (they keep their defaults), and a later program with this library as long
 * as it leaves the fields this library does not know at zero. */
typedef struct linfer_session_options {
  size_t struct_size;   /* sizeof(linfer_session_options) as the caller was compiled */
  uint32_t max_seq_len; /* longest input this session accepts; 0: the model's n */
  uint32_t num_threads; /* 0 or 1: run on the calling thread */
  void* arena;          /* optional caller buffer of arena_size bytes; NULL: the session allocates */
  size_t arena_size;
  uint32_t enable_profiling; /* non-zero: accumulate time per operator kind (linfer_session_profile) */
  linfer_dense_path dense_path;
  linfer_row_pipeline row_pipeline;
  uint32_t pipeline_block_rows; /* rows per block of the row pipeline; 0: chosen for the cache */
  linfer_thread_wait thread_wait;
  linfer_isa max_isa;       /* the kernels use at most this instruction set; the CPU's otherwise */
  uint32_t fp16_arithmetic; /* non-zero: the f16 dense layers use fp16 multiply-adds and f16
                               sums (ARMv8.2 FP16, e.g. the Raspberry Pi 5's Cortex-A76), which
                               changes results by about 0.5% (docs/quantization.md). Accepted and
                               ignored where it cannot apply: f32 and int8 layers, CPUs without
                               fp16 arithmetic (Cortex-A72, x86, 32-bit Arm, wasm), max_isa below
                               LINFER_ISA_ARM_NEON_DOT, and dense_path LINFER_DENSE_XNNPACK. */
} linfer_session_options;

/* Operator kinds for profiling. */
typedef enum linfer_op_kind {
  LINFER_OP_EMBEDDING = 0, /* token lookup, positions */
  LINFER_OP_NORM,          /* layer norms */
  LINFER_OP_DENSE,         /* Q, K', V', out, feed-forward and head layers, int8 quantization */
  LINFER_OP_COMPRESS,      /* E X: the sequence compression */
  LINFER_OP_ATTENTION,     /* K'^T transpose, scores, softmax, P V' */
  LINFER_OP_ACTIVATION,    /* GELU */
  LINFER_OP_ELEMENTWISE,   /* residual adds, biases through E, pooling */
  LINFER_OP_KIND_COUNT
} linfer_op_kind;

typedef struct linfer_profile {
  double milliseconds[LINFER_OP_KIND_COUNT]; /* summed over the runs since the last reset */
  uint64_t runs;
} linfer_profile;

/* LINFER_VERSION_STRING of the library that is loaded (it may differ from the header's). */
LINFER_API const char* linfer_version(void);
LINFER_API const char* linfer_status_string(linfer_status status);
/* Message of the last failure on this thread ("" if none). Valid until the next linfer call. */
LINFER_API const char* linfer_last_error(void);

LINFER_API linfer_status linfer_model_load(const char* path, linfer_model** out_model);
/* Copies the bytes; the caller may free them afterwards. */
LINFER_API linfer_status linfer_model_load_from_memory(const void* data, size_t size, linfer_model** out_model);
/* Reads the bytes in place, without a copy (a model in flash on a microcontroller, or a buffer the
   application keeps): data must be 64-byte aligned and stay alive and unchanged until
   linfer_model_free. A version 2 file's weights are then used where they lie. */
LINFER_API linfer_status linfer_model_load_in_place(const void* data, size_t size, linfer_model** out_model);
LINFER_API void linfer_model_free(linfer_model* model);
LINFER_API linfer_status linfer_model_get_info(const linfer_model* model, linfer_model_info* out_info);

/* Floating-point operations (multiply-add = 2) of one run over `length` tokens, for GFLOP/s. */
LINFER_API uint64_t linfer_model_flops(const linfer_model* model, size_t length);

LINFER_API linfer_session_options linfer_session_options_default(void);
/* Bytes of arena a session with these options needs (pass a buffer of this size in options.arena). */
LINFER_API linfer_status linfer_session_arena_size(const linfer_model* model, const linfer_session_options* options,
                                                   size_t* out_bytes);
LINFER_API linfer_status linfer_session_create(const linfer_model* model, const linfer_session_options* options,
                                               linfer_session** out_session);
LINFER_API void linfer_session_free(linfer_session* session);

/* Runs the model on `length` token ids (1 <= length <= the session's max_seq_len). */
LINFER_API linfer_status linfer_session_run(linfer_session* session, const int32_t* token_ids, size_t length);
/* Runs the model on token embeddings [length x dim] (row-major); positions are added by the model. */
LINFER_API linfer_status linfer_session_run_embeddings(linfer_session* session, const float* embeddings, size_t length);
/* Causal models of the kinds that keep an attention state (linear_elu; performer, unless its key
 * stabiliser spans the input): run one token at a time. The session carries each layer's
 * attention state, so memory stays constant however many tokens are fed; output is the one new
 * row. linfer_session_run or linfer_session_reset_state start over. Fails with
 * LINFER_ERROR_INVALID_ARGUMENT for other models or past max_seq_len tokens. */
LINFER_API linfer_status linfer_session_step(linfer_session* session, int32_t token_id);
LINFER_API void linfer_session_reset_state(linfer_session* session);

/* The last run's output, valid until the next run or free: `rows` x `cols` floats, row-major. */
LINFER_API linfer_status linfer_session_output(const linfer_session* session, const float** out_data, size_t* out_rows,
                                               size_t* out_cols);
/* Profile accumulated since creation or the last reset (needs options.enable_profiling). */
LINFER_API linfer_status linfer_session_profile(const linfer_session* session, linfer_profile* out);
LINFER_API void linfer_session_profile_reset(linfer_session* session);
LINFER_API const char* linfer_op_kind_name(linfer_op_kind kind);

/* The last run's final hidden states [length x dim] (after the final norm, before any head):
 * for sentence vectors and features. Valid until the next run or free. */
LINFER_API linfer_status linfer_session_hidden_states(const linfer_session* session, const float** out_data,
                                                      size_t* out_rows, size_t* out_cols);

/* Arena bytes of this session, and weight bytes it holds of its own: 0 on linfer's kernels,
 * which read the model's weights; with LINFER_DENSE_XNNPACK, the copies XNNPACK packed. */
LINFER_API linfer_status linfer_session_memory(const linfer_session* session, size_t* out_arena_bytes,
                                               size_t* out_packed_weight_bytes);

/* One line on what the session runs: dense kernels per weight dtype, the Highway target of the
 * other kernels, the row pipeline, threads. Valid as long as the session. */
LINFER_API const char* linfer_session_describe(const linfer_session* session);

/* Text to token ids with the tokenizer the model file carries (docs/tokenizers.md): the model ids
 * of utf8[0, length) with the model's template around them ([CLS] ... [SEP], <s> ... </s>).
 * Allocates nothing. *out_count gets the number of ids; with capacity 0 (ids may be NULL) that is
 * a size query and returns LINFER_OK; a smaller non-zero capacity gets the first ids and
 * LINFER_ERROR_BUFFER_TOO_SMALL. Ill-formed UTF-8 is read as U+FFFD per maximal subpart.
 * LINFER_ERROR_UNSUPPORTED: the model has no tokenizer, or a byte-level BPE word without a space
 * or punctuation runs past 4096 bytes. */
LINFER_API linfer_status linfer_tokenize(const linfer_model* model, const char* utf8, size_t length, int32_t* ids,
                                         size_t capacity, size_t* out_count);
/* Model ids back to text (the template's and added special pieces left out), into utf8[0,
 * capacity), not NUL-terminated; *out_length gets the bytes it needs (capacity 0: a size query).
 * LINFER_ERROR_BUFFER_TOO_SMALL when it does not fit. */
LINFER_API linfer_status linfer_detokenize(const linfer_model* model, const int32_t* ids, size_t count, char* utf8,
                                           size_t capacity, size_t* out_length);
/* 1 if the model file carries a tokenizer, else 0. */
LINFER_API int linfer_model_has_tokenizer(const linfer_model* model);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* LINFER_LINFER_H_ */
