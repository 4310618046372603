// SPDX-License-Identifier: Apache-2.0
// linfer C++ API: a thin, header-only RAII wrapper over the C API (linfer.h). No exceptions:
// failures come back as a Status carrying the code and the one-line message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "linfer/linfer.h"

namespace linfer {

class Status {
 public:
  Status() = default;
  static Status FromLast(linfer_status code) {
    Status s;
    s.code_ = code;
    if (code != LINFER_OK) s.message_ = linfer_last_error();
    return s;
  }
  bool ok() const { return code_ == LINFER_OK; }
  linfer_status code() const { return code_; }
  const std::string& message() const { return message_; }
  explicit operator bool() const { return ok(); }

 private:
  linfer_status code_ = LINFER_OK;
  std::string message_;
};

class Model {
 public:
  static Status Load(const std::string& path, Model* out) {
    linfer_model* m = nullptr;
    Status s = Status::FromLast(linfer_model_load(path.c_str(), &m));
    if (s.ok()) out->model_.reset(m);
    return s;
  }
  static Status LoadFromMemory(const void* data, size_t size, Model* out) {
    linfer_model* m = nullptr;
    Status s = Status::FromLast(linfer_model_load_from_memory(data, size, &m));
    if (s.ok()) out->model_.reset(m);
    return s;
  }
  // The bytes are read in place: 64-byte aligned, alive and unchanged while the model is.
  static Status LoadInPlace(const void* data, size_t size, Model* out) {
    linfer_model* m = nullptr;
    Status s = Status::FromLast(linfer_model_load_in_place(data, size, &m));
    if (s.ok()) out->model_.reset(m);
    return s;
  }
  linfer_model_info info() const {
    linfer_model_info i{};
    i.struct_size = sizeof i;
    linfer_model_get_info(model_.get(), &i);
    return i;
  }
  const linfer_model* get() const { return model_.get(); }
  bool loaded() const { return model_ != nullptr; }
  bool has_tokenizer() const { return linfer_model_has_tokenizer(model_.get()) != 0; }
  // The model ids of UTF-8 text, with its template (linfer_tokenize; this one sizes the vector).
  Status Tokenize(std::string_view text, std::vector<int32_t>* ids) const {
    size_t count = 0;
    Status s = Status::FromLast(linfer_tokenize(model_.get(), text.data(), text.size(), nullptr, 0, &count));
    if (!s.ok()) return s;
    ids->resize(count);
    return Status::FromLast(linfer_tokenize(model_.get(), text.data(), text.size(), ids->data(), ids->size(), &count));
  }
  Status Detokenize(const std::vector<int32_t>& ids, std::string* text) const {
    size_t length = 0;
    Status s = Status::FromLast(linfer_detokenize(model_.get(), ids.data(), ids.size(), nullptr, 0, &length));
    if (!s.ok()) return s;
    text->resize(length);
    return Status::FromLast(
        linfer_detokenize(model_.get(), ids.data(), ids.size(), text->data(), text->size(), &length));
  }

 private:
  struct Free {
    void operator()(linfer_model* m) const { linfer_model_free(m); }
  };
  std::unique_ptr<linfer_model, Free> model_;
};

struct SessionOptions {
  uint32_t max_seq_len = 0;  // 0: the model's n
  uint32_t num_threads = 1;
  void* arena = nullptr;  // optional caller-owned buffer
  size_t arena_size = 0;
  bool enable_profiling = false;
  linfer_dense_path dense_path = LINFER_DENSE_AUTO;
  linfer_row_pipeline row_pipeline = LINFER_PIPELINE_AUTO;
  uint32_t pipeline_block_rows = 0;  // 0: chosen for the cache
  linfer_thread_wait thread_wait = LINFER_WAIT_AUTO;
  linfer_isa max_isa = LINFER_ISA_AUTO;
  bool fp16_arithmetic = false;  // f16 layers with fp16 multiply-adds where the CPU has them (linfer.h)
  linfer_session_options c() const {
    linfer_session_options o = linfer_session_options_default();
    o.max_seq_len = max_seq_len;
    o.num_threads = num_threads;
    o.arena = arena;
    o.arena_size = arena_size;
    o.enable_profiling = enable_profiling ? 1u : 0u;
    o.dense_path = dense_path;
    o.row_pipeline = row_pipeline;
    o.pipeline_block_rows = pipeline_block_rows;
    o.thread_wait = thread_wait;
    o.max_isa = max_isa;
    o.fp16_arithmetic = fp16_arithmetic ? 1u : 0u;
    return o;
  }
};

// The output of a run: a view into the session's arena, valid until the next run.
struct OutputView {
  const float* data = nullptr;
  size_t rows = 0, cols = 0;
  const float* row(size_t r) const { return data + r * cols; }
};

class Session {
 public:
  static Status ArenaSize(const Model& model, const SessionOptions& options, size_t* bytes) {
    const linfer_session_options o = options.c();
    return Status::FromLast(linfer_session_arena_size(model.get(), &o, bytes));
  }
  // The model must outlive the session.
  static Status Create(const Model& model, const SessionOptions& options, Session* out) {
    const linfer_session_options o = options.c();
    linfer_session* s = nullptr;
    Status st = Status::FromLast(linfer_session_create(model.get(), &o, &s));
    if (st.ok()) out->session_.reset(s);
    return st;
  }
  Status Run(const int32_t* ids, size_t length) {
    return Status::FromLast(linfer_session_run(session_.get(), ids, length));
  }
  Status Run(const std::vector<int32_t>& ids) { return Run(ids.data(), ids.size()); }
  // Causal models of the kinds that keep an attention state: one token at a time (see linfer.h).
  Status Step(int32_t token_id) { return Status::FromLast(linfer_session_step(session_.get(), token_id)); }
  void ResetState() { linfer_session_reset_state(session_.get()); }
  Status RunEmbeddings(const float* embeddings, size_t length) {
    return Status::FromLast(linfer_session_run_embeddings(session_.get(), embeddings, length));
  }
  OutputView output() const {
    OutputView v;
    linfer_session_output(session_.get(), &v.data, &v.rows, &v.cols);
    return v;
  }
  // Final hidden states [rows x dim] of the last run (after the final norm, before the head).
  OutputView hidden_states() const {
    OutputView v;
    linfer_session_hidden_states(session_.get(), &v.data, &v.rows, &v.cols);
    return v;
  }
  size_t arena_bytes() const {
    size_t a = 0, p = 0;
    linfer_session_memory(session_.get(), &a, &p);
    return a;
  }
  // Milliseconds per operator kind summed over runs (needs SessionOptions::enable_profiling).
  linfer_profile profile() const {
    linfer_profile p{};
    linfer_session_profile(session_.get(), &p);
    return p;
  }
  size_t packed_weight_bytes() const {
    size_t a = 0, p = 0;
    linfer_session_memory(session_.get(), &a, &p);
    return p;
  }
  // The C handle, to mix in C API calls.
  linfer_session* get() { return session_.get(); }
  const linfer_session* get() const { return session_.get(); }
  // What the session runs on (kernels, paths, threads), one line.
  std::string describe() const { return linfer_session_describe(session_.get()); }

 private:
  struct Free {
    void operator()(linfer_session* s) const { linfer_session_free(s); }
  };
  std::unique_ptr<linfer_session, Free> session_;
};

}  // namespace linfer
