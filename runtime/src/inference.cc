// SPDX-License-Identifier: Apache-2.0
// Inference (a session) running: the entry points, embeddings, the layer loop and the output heads
// (inference_prepare.cc creates it).
#include "inference.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "attention/attention_kind.h"
#include "model_options.h"
#include "weight_rows.h"

namespace linfer::rt {

// ---------------------------------------------------------------------------------------------
// run

Status Inference::run_ids(const int32_t* ids, size_t length) {
  kernels::set_hwy_cap(plan_.max_isa);  // this thread's Highway kernels, as the session's cap says
  const EncoderConfig& c = cfg_;
  if (c.vocab_size == 0) return invalid_argument("this model takes embeddings, not token ids (vocab_size is 0)");
  if (length == 0 || length > plan_.max_len || !ids)
    return !ids ? invalid_argument("token ids are null") : input_length_error(length, plan_.max_len);
  for (size_t t = 0; t < length; ++t)
    if (ids[t] < 0 || uint32_t(ids[t]) >= c.vocab_size) return token_id_error(ids[t], t, c.vocab_size);
  const auto t0 = now();
  const WeightView& table = model_->desc.token_embedding;
  for (size_t t = 0; t < length; ++t)
    widen_weight_row(table, uint32_t(ids[t]), c.dim, c.embedding_scale, buf_.residual + t * c.dim);
  lap(LINFER_OP_EMBEDDING, t0);
  return forward(length);
}

Status Inference::step(int32_t id) {
  kernels::set_hwy_cap(plan_.max_isa);  // this thread's Highway kernels, as the session's cap says
  const EncoderConfig& c = cfg_;
  if (Status s = attention_->can_step(c); !s.ok()) return s;
  if (c.head == HeadKind::Classifier || c.head == HeadKind::Pooled)
    return invalid_argument(
        "token-by-token runs give one row per token; a classifier or a pooled head pools the whole input");
  if (step_position_ >= plan_.max_len)
    return invalid_argument("the session has taken {} tokens, its maximum length; reset the state to start over",
                            kept(step_position_));
  if (step_position_ == 0) attention_->start_sequence();  // a fresh sequence
  stepping_ = true;
  Status s = run_ids(&id, 1);
  stepping_ = false;
  if (s.ok()) ++step_position_;
  return s;
}

Status Inference::run_embeddings(const float* embeddings, size_t length) {
  kernels::set_hwy_cap(plan_.max_isa);  // this thread's Highway kernels, as the session's cap says
  if (length == 0 || length > plan_.max_len || !embeddings)
    return !embeddings ? invalid_argument("embeddings are null") : input_length_error(length, plan_.max_len);
  std::memcpy(buf_.residual, embeddings, length * cfg_.dim * sizeof(float));
  return forward(length);
}

linfer_profile Inference::profile() const {
  linfer_profile p{};
  for (size_t k = 0; k < LINFER_OP_KIND_COUNT; ++k)
    p.milliseconds[k] = std::chrono::duration<double, std::milli>(profile_time_[k]).count();
  p.runs = profile_runs_;
  return p;
}

void Inference::layernorm_rows(const float* in, float* out, size_t rows, const NormWeights& n) {
  const auto t0 = now();
  const size_t D = cfg_.dim;
  workers_.light_ranges(rows, D, [&](size_t b, size_t e, size_t) {
    kernels::layernorm_f32_hwy(in + b * D, D, out + b * D, D, e - b, D, f32_data(n.weight), f32_data(n.bias),
                               cfg_.norm_eps);
  });
  lap(LINFER_OP_NORM, t0);
}

// Positions of rows [0, T) (rows [step_position_, ...) of the sequence when stepping) added to x.
void Inference::add_positions(size_t T) {
  const EncoderConfig& c = cfg_;
  const size_t D = c.dim, first = stepping_ ? step_position_ : 0;
  if (sinusoidal_positions(c)) {
    add_rows(buf_.residual, buf_.sinusoids + first * D, T, D);
  } else if (c.positions == PositionKind::Learned) {
    const WeightView& table = model_->desc.position_embedding;
    const size_t row0 = c.position_offset + first;
    if (table.dtype == DType::F32) {
      add_rows(buf_.residual, f32_data(table) + row0 * D, T, D);
    } else {  // widened into h, which is free until the first layer
      const auto t0 = now();
      workers_.ranges(T, 1, [&](size_t b, size_t e, size_t) {
        for (size_t t = b; t < e; ++t) widen_weight_row(table, uint32_t(row0 + t), D, 1.0f, buf_.normed + t * D);
      });
      lap(LINFER_OP_EMBEDDING, t0);
      add_rows(buf_.residual, buf_.normed, T, D);
    }
  }
}

Inference::LayerRoute Inference::layer_route() const {
  const NormPlacement placement = norm_placement(cfg_);
  return {placement == NormPlacement::Reversible ? buf_.residual2 : buf_.residual, placement == NormPlacement::Post};
}

bool Inference::feed_forward(LayerOps& ops, const float* in, size_t R, float* residual) {
  return run_dense(ops.fc1, R, in, buf_.ff_hidden) && run_dense(ops.fc2, R, buf_.ff_hidden, residual, true);
}

bool Inference::output_head(size_t T) {
  const EncoderConfig& c = cfg_;
  const size_t D = c.dim;
  const HeadWeights& hw = model_->desc.head;
  if (c.head == HeadKind::None) {
    output_ = buf_.residual;
    output_rows_ = T;
    output_cols_ = D;
    return true;
  }
  if (c.head == HeadKind::LmLogits) {
    const float* in = buf_.residual;
    if (hw.dense.weight.present()) {
      if (!run_dense(head_dense_, T, buf_.residual, buf_.normed)) return false;  // with its activation
      in = buf_.normed;
    }
    if (hw.norm.weight.present()) {
      layernorm_rows(in, buf_.normed, T, hw.norm);
      in = buf_.normed;
    }
    if (!run_dense(head_out_, T, in, buf_.head_out)) return false;
    output_ = buf_.head_out;
    output_rows_ = T;
    output_cols_ = c.vocab_size;
    return true;
  }
  // Classifier over a pooled vector: the first row, or the mean of all rows.
  const auto t0 = now();
  float* pooled = buf_.pooled;
  if (c.pooling == Pooling::First)
    std::memcpy(pooled, buf_.residual, D * sizeof(float));
  else
    kernels::mean_rows_f32_hwy(buf_.residual, T, D, D, pooled);
  lap(LINFER_OP_ELEMENTWISE, t0);
  if (c.head == HeadKind::Pooled) {  // a sentence embedding: the pooled vector itself
    if (c.normalize_output) {        // x / max(|x|, 1e-12), as torch.nn.functional.normalize (in f32:
      float squares = 0.0f;          // no soft-float doubles on a Cortex-M4)
      for (size_t i = 0; i < D; ++i) squares += pooled[i] * pooled[i];
      const float scale = 1.0f / std::max(std::sqrt(squares), 1e-12f);
      for (size_t i = 0; i < D; ++i) pooled[i] *= scale;
    }
    output_ = pooled;
    output_rows_ = 1;
    output_cols_ = D;
    return true;
  }
  if (hw.dense.weight.present()) {  // dense + tanh
    if (!run_dense(head_dense_, 1, pooled, buf_.pooled_dense)) return false;
    pooled = buf_.pooled_dense;
  }
  if (!run_dense(head_out_, 1, pooled, buf_.head_out)) return false;
  output_ = buf_.head_out;
  output_rows_ = 1;
  output_cols_ = c.num_classes;
  return true;
}

Status Inference::forward(size_t T) {
  const EncoderConfig& c = cfg_;
  const EncoderDescription& d = model_->desc;
  const size_t D = c.dim;
  output_ = nullptr;
  output_rows_ = output_cols_ = 0;
  if (plan_.profiling) ++profile_runs_;
  last_length_ = T;
  if (!stepping_) step_position_ = 0;  // a whole run starts a new sequence
  add_positions(T);
  if (c.embedding_norm) layernorm_rows(buf_.residual, buf_.residual, T, d.embedding_norm);

  // The rows the model adds (a kind's learned tokens) ride as rows [T, R) of the same buffers.
  const size_t R = T + c.num_global_tokens;
  if (c.num_global_tokens) attention_->write_added_rows(*this, buf_.residual + T * D);
  bool ok = true;
  const NormPlacement placement = norm_placement(c);
  const LayerRoute route = layer_route();
  if (placement == NormPlacement::Reversible) std::memcpy(buf_.residual2, buf_.residual, R * D * sizeof(float));
  for (uint32_t i = 0; i < c.num_layers && ok; ++i) {
    const LayerWeights& w = d.layers[i];
    LayerOps& ops = layer_ops_[i];
    if (plan_.row_pipeline) {
      ok = layer_rows(i, w, ops, T);
      continue;
    }
    // The sublayers add into the residual streams themselves. With post-norm their input is
    // the stream: each reads it in full (Q, K, V; the first feed-forward layer) before the last
    // dense layer adds to it.
    const float* in = buf_.residual;
    if (!route.post) {
      layernorm_rows(route.side, buf_.normed, R, w.attention_norm);
      in = buf_.normed;
    }
    ok = attention_->run(*this, AttentionLayer{i, w, ops.q, ops.out}, in, T, buf_.residual);
    if (route.post) layernorm_rows(buf_.residual, buf_.residual, R, w.attention_norm);
    const float* ff_in = buf_.residual;
    if (!route.post) {
      layernorm_rows(buf_.residual, buf_.normed, R, w.feed_forward_norm);
      ff_in = buf_.normed;
    }
    ok = ok && feed_forward(ops, ff_in, R, route.side);
    if (route.post) layernorm_rows(buf_.residual, buf_.residual, R, w.feed_forward_norm);
  }
  if (ok && placement == NormPlacement::Reversible) {
    add_rows(buf_.residual, buf_.residual2, T, D);
    if (c.reversible_merge == ReversibleMerge::Mean)  // (y1 + y2) / 2
      kernels::scale_f32_hwy(buf_.residual, T * D, 0.5f, buf_.residual);
  }
  if (ok && c.final_norm) layernorm_rows(buf_.residual, buf_.residual, T, d.final_norm);
  if (ok) ok = output_head(T);
  if (!ok) return internal_error("an XNNPACK dense operator failed during the run");
  return {};
}

}  // namespace linfer::rt
