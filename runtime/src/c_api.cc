// SPDX-License-Identifier: Apache-2.0
// The C API: hands the runtime's Status (status.h: the code and the message of the place that
// failed) to the caller, keeps the message per thread, and catches whatever escapes.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <new>
#include <string>

#include "linfer/linfer.h"
#include "c_enum.h"
#include "model.h"
#include "dense_layer.h"
#include "inference.h"

struct linfer_model {
  std::unique_ptr<linfer::rt::LoadedModel> impl;
};
struct linfer_session {
  std::unique_ptr<linfer::rt::Inference> impl;
};

// The converter's calibration hook (dense_layer.h), here because only this file knows the session.
void linfer::rt::set_dense_input_hook(linfer_session* session, const DenseInputHook& hook) {
  session->impl->set_dense_input_hook(hook);
}

namespace {
#if LINFER_BARE_METAL
std::string g_last_error;  // one thread of control; no thread-local storage without an OS
#else
thread_local std::string g_last_error;
#endif

linfer_status fail(linfer_status status, std::string message) {
  g_last_error = std::move(message);
  return status;
}
linfer_status fail(const linfer::rt::Status& s) { return fail(s.code(), s.message()); }
linfer_status ok() {
  g_last_error.clear();
  return LINFER_OK;
}

// Runs body, turning an escaped exception into a status. Only a std::bad_alloc is expected, from
// an allocation the runtime does not name itself (a container inside the format's parser, a
// message): its code stays LINFER_ERROR_OUT_OF_MEMORY, and the message names the entry point.
template <class Fn>
linfer_status guarded(const char* entry_point, Fn&& body) {
#if !defined(__cpp_exceptions)
  // Built without exceptions (bare metal): what a bad model can make the runtime allocate is
  // checked before it is allocated (status.h, allocating()), and the platform's allocator stops
  // the program with a message if a small allocation fails anyway.
  return body();
#else
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return fail(linfer::rt::failure(LINFER_ERROR_OUT_OF_MEMORY, "out of memory in {}", entry_point));
  } catch (const std::exception& e) {
    return fail(linfer::rt::internal_error("internal error: {}", e.what()));
  } catch (...) {
    return fail(LINFER_ERROR_INTERNAL, "internal error");
  }
#endif
}

// linfer_tokenize's and linfer_detokenize's frame: the arguments, a model with a tokenizer, and a
// caller's buffer too small for the *out_size units the call needed (capacity 0: a size query).
template <class Fn>
linfer_status tokenizer_call(const char* entry_point, const linfer_model* model, bool arguments_ok,
                             const char* arguments, size_t capacity, size_t* out_size, const char* units, Fn&& call) {
  return guarded(entry_point, [&] {
    if (!model || !out_size || !arguments_ok) return fail(linfer::rt::invalid_argument("{} is null", arguments));
    *out_size = 0;
    if (!LINFER_TOKENIZERS && model->impl->desc.tokenizer.present)
      return fail(LINFER_ERROR_UNSUPPORTED, "this build has no tokenizers (-DLINFER_TOKENIZERS=OFF)");
    if (!model->impl->tokenizer) return fail(LINFER_ERROR_UNSUPPORTED, "the model file carries no tokenizer");
#if LINFER_TOKENIZERS  // (without, no model has a tokenizer: the call is never made, nor compiled)
    if (linfer::rt::Status s = call(*model->impl->tokenizer); !s.ok()) return fail(s);
#else
    (void)call;
#endif
    if (capacity && *out_size > capacity)
      return fail(linfer::rt::failure(LINFER_ERROR_BUFFER_TOO_SMALL, "the text has {} {}, the buffer room for {}",
                                      linfer::rt::kept(*out_size), units, linfer::rt::kept(capacity)));
    return ok();
  });
}

linfer_status finish_load(linfer::rt::Result<std::unique_ptr<linfer::rt::LoadedModel>> r, linfer_model** out) {
  if (!r.ok()) return fail(r.status());
  *out = new linfer_model{std::move(r.value())};
  return ok();
}
}  // namespace

extern "C" {

const char* linfer_version(void) { return LINFER_VERSION_STRING; }

const char* linfer_status_string(linfer_status status) {
  switch (linfer::rt::raw_value(status)) {
    case LINFER_OK:
      return "ok";
    case LINFER_ERROR_INVALID_ARGUMENT:
      return "invalid argument";
    case LINFER_ERROR_IO:
      return "i/o error";
    case LINFER_ERROR_INVALID_MODEL:
      return "invalid model";
    case LINFER_ERROR_UNSUPPORTED:
      return "unsupported";
    case LINFER_ERROR_OUT_OF_MEMORY:
      return "out of memory";
    case LINFER_ERROR_BUFFER_TOO_SMALL:
      return "buffer too small";
    case LINFER_ERROR_INTERNAL:
      return "internal error";
  }
  return "unknown status";
}

const char* linfer_last_error(void) { return g_last_error.c_str(); }

linfer_status linfer_model_load(const char* path, linfer_model** out_model) {
  return guarded("linfer_model_load", [&] {
    if (!path || !out_model) return fail(LINFER_ERROR_INVALID_ARGUMENT, "path or out_model is null");
    *out_model = nullptr;
    return finish_load(linfer::rt::load_model_file(path), out_model);
  });
}

int linfer_model_has_tokenizer(const linfer_model* model) { return model && model->impl->tokenizer ? 1 : 0; }

linfer_status linfer_tokenize(const linfer_model* model, const char* utf8, size_t length, int32_t* ids, size_t capacity,
                              size_t* out_count) {
  return tokenizer_call("linfer_tokenize", model, (utf8 || !length) && (ids || !capacity),
                        "model, out_count, utf8 or ids", capacity, out_count, "tokens",
                        [&](const linfer::rt::Tokenizer& t) {
                          linfer::rt::IdSink sink{ids, capacity};
                          linfer::rt::Status s = t.tokenize(utf8, length, &sink);
                          *out_count = sink.count;
                          return s;
                        });
}

linfer_status linfer_detokenize(const linfer_model* model, const int32_t* ids, size_t count, char* utf8,
                                size_t capacity, size_t* out_length) {
  return tokenizer_call(
      "linfer_detokenize", model, (ids || !count) && (utf8 || !capacity), "model, out_length, ids or utf8", capacity,
      out_length, "bytes",
      [&](const linfer::rt::Tokenizer& t) { return t.detokenize(ids, count, utf8, capacity, out_length); });
}

linfer_status linfer_model_load_from_memory(const void* data, size_t size, linfer_model** out_model) {
  return guarded("linfer_model_load_from_memory", [&] {
    if (!data || !out_model) return fail(LINFER_ERROR_INVALID_ARGUMENT, "data or out_model is null");
    *out_model = nullptr;
    return finish_load(linfer::rt::load_model_memory(data, size), out_model);
  });
}

linfer_status linfer_model_load_in_place(const void* data, size_t size, linfer_model** out_model) {
  return guarded("linfer_model_load_in_place", [&] {
    if (!data || !out_model) return fail(LINFER_ERROR_INVALID_ARGUMENT, "data or out_model is null");
    *out_model = nullptr;
    return finish_load(linfer::rt::load_model_in_place(data, size), out_model);
  });
}

void linfer_model_free(linfer_model* model) { delete model; }

linfer_status linfer_model_get_info(const linfer_model* model, linfer_model_info* out) {
  if (!model || !out) return fail(LINFER_ERROR_INVALID_ARGUMENT, "model or out_info is null");
  constexpr size_t kFirstVersion = offsetof(linfer_model_info, format_version);
  if (out->struct_size < kFirstVersion)
    return fail(linfer::rt::invalid_argument("out_info->struct_size is {}: set it to sizeof(linfer_model_info)",
                                             linfer::rt::kept(out->struct_size)));
  const linfer::rt::LoadedModel& m = *model->impl;
  const linfer::EncoderConfig& c = m.desc.config;
  linfer_model_info info{};
  info.struct_size = sizeof info;
  info.vocab_size = c.vocab_size;
  info.dim = c.dim;
  info.num_layers = c.num_layers;
  info.num_heads = c.num_heads;
  info.head_dim = c.head_dim;
  info.ff_dim = c.ff_dim;
  info.max_seq_len = c.max_seq_len;
  info.proj_len = linfer::projected_key_count(c);
  info.head = linfer_head_kind(c.head);
  info.output_channels = c.output_channels();
  linfer::rt::WeightCounts counts;
  if (linfer_status s = guarded("linfer_model_get_info",
                                [&] {
                                  counts = linfer::rt::count_weights(m);
                                  return LINFER_OK;
                                });
      s != LINFER_OK)
    return s;
  info.parameter_count = counts.parameters;
  info.file_bytes = m.size;
  info.resident_weight_bytes = counts.bytes;
  info.attention_kind = linfer::to_string(c.attention_kind);
  info.weight_dtype = counts.dense_dtype;
  info.format_version = m.format_version;
  // Only what fits the caller's struct: a caller built against an older header has fewer fields.
  const size_t n = std::min(out->struct_size, sizeof info);
  std::memcpy(out, &info, n);
  out->struct_size = n;
  return ok();
}

uint64_t linfer_model_flops(const linfer_model* model, size_t length) {
  return model ? linfer::rt::forward_flops(model->impl->desc.config, length) : 0;
}

linfer_session_options linfer_session_options_default(void) {
  linfer_session_options o{};
  o.struct_size = sizeof(linfer_session_options);
  o.num_threads = 1;
  o.dense_path = LINFER_DENSE_AUTO;
  o.row_pipeline = LINFER_PIPELINE_AUTO;
  o.thread_wait = LINFER_WAIT_AUTO;
  return o;
}

namespace {
// The caller's options as this library's struct: fields past the caller's struct_size keep their
// defaults; fields of a later header that this library does not know must be zero.
linfer_status read_options(const linfer_session_options* in, linfer_session_options* out) {
  *out = linfer_session_options_default();
  if (!in) return LINFER_OK;
  constexpr size_t kFirstVersion = offsetof(linfer_session_options, dense_path);
  if (in->struct_size < kFirstVersion)
    return fail(linfer::rt::invalid_argument("options.struct_size is {}: start from linfer_session_options_default()",
                                             linfer::rt::kept(in->struct_size)));
  const size_t known = std::min(in->struct_size, sizeof(linfer_session_options));
  std::memcpy(out, in, known);
  out->struct_size = sizeof(linfer_session_options);
  const unsigned char* extra = reinterpret_cast<const unsigned char*>(in) + known;
  for (size_t i = 0; i < in->struct_size - known; ++i)
    if (extra[i])
      return fail(
          linfer::rt::unsupported("the options set a field this library (linfer {}) does not know", linfer_version()));
  return LINFER_OK;
}
}  // namespace

linfer_status linfer_session_arena_size(const linfer_model* model, const linfer_session_options* options,
                                        size_t* out_bytes) {
  return guarded("linfer_session_arena_size", [&] {
    if (!model || !out_bytes) return fail(LINFER_ERROR_INVALID_ARGUMENT, "model or out_bytes is null");
    linfer_session_options o;
    if (const linfer_status rs = read_options(options, &o); rs != LINFER_OK) return rs;
    linfer::rt::Result<size_t> bytes = linfer::rt::Inference::arena_size(*model->impl, o);
    if (!bytes.ok()) return fail(bytes.status());
    *out_bytes = bytes.value();
    return ok();
  });
}

linfer_status linfer_session_create(const linfer_model* model, const linfer_session_options* options,
                                    linfer_session** out_session) {
  return guarded("linfer_session_create", [&] {
    if (!model || !out_session) return fail(LINFER_ERROR_INVALID_ARGUMENT, "model or out_session is null");
    *out_session = nullptr;
    linfer_session_options o;
    if (const linfer_status rs = read_options(options, &o); rs != LINFER_OK) return rs;
    linfer::rt::Result<std::unique_ptr<linfer::rt::Inference>> s = linfer::rt::Inference::create(*model->impl, o);
    if (!s.ok()) return fail(s.status());
    *out_session = new linfer_session{std::move(s.value())};
    return ok();
  });
}

void linfer_session_free(linfer_session* session) { delete session; }

// run() must not allocate, so it does not go through guarded() (nothing in it throws) and only
// touches the thread-local message on failure.
linfer_status linfer_session_run(linfer_session* session, const int32_t* ids, size_t length) {
  if (!session) return fail(LINFER_ERROR_INVALID_ARGUMENT, "session is null");
  const linfer::rt::Status s = session->impl->run_ids(ids, length);
  if (!s.ok()) return fail(s);
  if (!g_last_error.empty()) g_last_error.clear();
  return LINFER_OK;
}

linfer_status linfer_session_run_embeddings(linfer_session* session, const float* embeddings, size_t length) {
  if (!session) return fail(LINFER_ERROR_INVALID_ARGUMENT, "session is null");
  const linfer::rt::Status s = session->impl->run_embeddings(embeddings, length);
  if (!s.ok()) return fail(s);
  if (!g_last_error.empty()) g_last_error.clear();
  return LINFER_OK;
}

linfer_status linfer_session_step(linfer_session* session, int32_t token_id) {
  if (!session) return fail(LINFER_ERROR_INVALID_ARGUMENT, "session is null");
  const linfer::rt::Status s = session->impl->step(token_id);
  if (!s.ok()) return fail(s);
  if (!g_last_error.empty()) g_last_error.clear();
  return LINFER_OK;
}

void linfer_session_reset_state(linfer_session* session) {
  if (session) session->impl->reset_state();
}

linfer_status linfer_session_output(const linfer_session* session, const float** data, size_t* rows, size_t* cols) {
  if (!session || !data || !rows || !cols)
    return fail(LINFER_ERROR_INVALID_ARGUMENT, "session or an output pointer is null");
  const linfer::rt::Inference& s = *session->impl;
  if (!s.output()) return fail(LINFER_ERROR_INVALID_ARGUMENT, "the session has not run yet");
  *data = s.output();
  *rows = s.output_rows();
  *cols = s.output_cols();
  return LINFER_OK;
}

linfer_status linfer_session_profile(const linfer_session* session, linfer_profile* out) {
  if (!session || !out) return fail(LINFER_ERROR_INVALID_ARGUMENT, "session or out is null");
  *out = session->impl->profile();
  return LINFER_OK;
}

void linfer_session_profile_reset(linfer_session* session) {
  if (session) session->impl->reset_profile();
}

const char* linfer_op_kind_name(linfer_op_kind kind) {
  static const char* const names[LINFER_OP_KIND_COUNT] = {"embedding", "norm",       "dense",      "compress",
                                                          "attention", "activation", "elementwise"};
  const int k = linfer::rt::raw_value(kind);
  return k >= 0 && k < LINFER_OP_KIND_COUNT ? names[k] : "unknown";
}

linfer_status linfer_session_hidden_states(const linfer_session* session, const float** data, size_t* rows,
                                           size_t* cols) {
  if (!session || !data || !rows || !cols)
    return fail(LINFER_ERROR_INVALID_ARGUMENT, "session or an output pointer is null");
  const linfer::rt::Inference& s = *session->impl;
  if (!s.output()) return fail(LINFER_ERROR_INVALID_ARGUMENT, "the session has not run yet");
  *data = s.hidden_states();
  *rows = s.hidden_rows();
  *cols = s.hidden_cols();
  return LINFER_OK;
}

const char* linfer_session_describe(const linfer_session* session) {
  const char* text = "";
  if (session)  // (a few hundred bytes, made on the first call: a failure reaches the guard, and gives "")
    guarded("linfer_session_describe", [&] {
      text = session->impl->description().c_str();
      return LINFER_OK;
    });
  return text;
}

linfer_status linfer_session_memory(const linfer_session* session, size_t* arena_bytes, size_t* packed_bytes) {
  if (!session || !arena_bytes || !packed_bytes)
    return fail(LINFER_ERROR_INVALID_ARGUMENT, "session or an output pointer is null");
  *arena_bytes = session->impl->arena_bytes();
  *packed_bytes = session->impl->packed_weight_bytes();
  return LINFER_OK;
}

}  // extern "C"
