// SPDX-License-Identifier: Apache-2.0
#include "dense_layer.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include "linfer/format/panel.h"

namespace linfer::rt {
Status DenseLayer::prepare(const ExecutionPlan& plan, const WeightView& weight, uint32_t group, const WeightView& bias,
                           kernels::DenseActivation activation, bool yield_workers) {
  const uint32_t groups = weight.panel_groups, group_rows = weight.shape[0] / groups;
  in_ = weight.shape[1];
  out_ = group_rows;
  activation_ = activation;
  fused_ = activation == kernels::DenseActivation::Tanh ? kernels::DenseActivation::None : activation;
  const float* b = bias.present() ? static_cast<const float*>(bias.data) + size_t(group) * group_rows : nullptr;
  source_ = weight.data;
  if (!LINFER_BARE_METAL) hook_ = &plan.dense_input_hook;  // (no calibration on bare metal)

#if LINFER_WITH_XNNPACK
  if (plan.xnnpack && weight.dtype != DType::I8) {
    const bool xnnpack_fusable =
        activation == kernels::DenseActivation::None || activation == kernels::DenseActivation::Relu;
    // XNNPACK packs from row-major f32: this group's rows widened into a temporary.
    const size_t elements = size_t(group_rows) * in_;
    std::unique_ptr<float[]> rows(new (std::nothrow) float[elements]);
    if (!rows)
      return out_of_memory(message("the f32 rows of a {}x{} XNNPACK dense layer", kept(in_), kept(out_)),
                           uint64_t(elements) * sizeof(float));
    for (uint32_t r = 0; r < group_rows; ++r)
      read_row_f32(weight, group * group_rows + r, rows.get() + size_t(r) * in_);
    fused_ = xnnpack_fusable ? activation : kernels::DenseActivation::None;
    return xnnpack_.create(in_, out_, rows.get(), b, activation == kernels::DenseActivation::Relu, yield_workers,
                           &packed_bytes_);
  }
#endif
  kernel_ = &plan.kernel_for(weight.dtype);
  const uint64_t group_bytes = uint64_t(panel_count(group_rows)) * panel_bytes(weight.dtype, uint32_t(in_));
  weights_.dtype = weight.dtype;
  weights_.in = in_;
  weights_.out = out_;
  weights_.panels = static_cast<const uint8_t*>(weight.data) + group * group_bytes;
  weights_.scales = weight.scales ? weight.scales + size_t(group) * group_rows : nullptr;
  weights_.sums = weight.channel_sums ? weight.channel_sums + size_t(group) * group_rows : nullptr;
  weights_.bias = b;
  input_scales_ = weight.dtype == DType::I8 ? weight.input_scales : nullptr;
  if (!LINFER_BARE_METAL && weight.dtype == DType::I8 && weight.f32_input_count) {
    f32_inputs_ = weight.f32_inputs;
    f32_count_ = weight.f32_input_count;
    f32_column_stride_ = weight.shape[0];
    f32_weights_ = weight.f32_input_weights + size_t(group) * group_rows;
    // The f32 part joins the kernel's output before the activation, which then becomes a pass of
    // its own. (Layers with an activation never accumulate: y += act(...) would need a temporary.)
    fused_ = kernels::DenseActivation::None;
  }
  return {};
}

void DenseLayer::quantize(const QuantizedRows& qrows, const float* x, size_t rows, size_t first_row) const {
  if (!kernel_->quantize) return;
  // (A bare-metal reader refuses input scales and f32 input channels.)
  if (!LINFER_BARE_METAL && (input_scales_ || f32_count_)) {
    // Each row staged (times the input scales, if any; the f32 input channels zeroed, so that
    // they do not set its scale: their products are f32, add_f32_inputs) and quantized while the
    // staged row is still in the L1 cache. (Staging all rows first, then quantizing, passed the
    // staged rows through L2: all-MiniLM-L6-v2 int8 at n = 256 spent 1.2% of a run there.)
    for (size_t r = 0; r < rows; ++r) {
      float* staged = qrows.smoothed + (first_row + r) * qrows.smoothed_stride;
      if (input_scales_)
        kernels::mul_channels_f32_hwy(x + r * in_, in_, 1, in_, input_scales_, staged, qrows.smoothed_stride);
      else
        std::memcpy(staged, x + r * in_, in_ * sizeof(float));
      for (uint32_t k = 0; k < f32_count_; ++k) staged[f32_inputs_[k]] = 0.0f;
      kernel_->quantize(staged, qrows.smoothed_stride, 1, in_, qrows.q + (first_row + r) * qrows.stride, qrows.stride,
                        qrows.scales + first_row + r);
    }
    return;
  }
  kernel_->quantize(x, in_, rows, in_, qrows.q + first_row * qrows.stride, qrows.stride, qrows.scales + first_row);
}

void DenseLayer::run_channels(const QuantizedRows& qrows, const float* x, size_t rows, float* y, bool accumulate,
                              size_t first_row, size_t n_begin, size_t n_end) const {
  const kernels::DenseInput input{x, in_, qrows.q ? qrows.q + first_row * qrows.stride : nullptr, qrows.stride,
                                  qrows.scales ? qrows.scales + first_row : nullptr};
  kernel_->run(weights_, input, rows, y, out_, n_begin, n_end, {fused_, accumulate});
  if (!LINFER_BARE_METAL && f32_count_) add_f32_inputs(x, rows, y, n_begin, n_end);
}

void DenseLayer::add_f32_inputs(const float* x, size_t rows, float* y, size_t n_begin, size_t n_end) const {
  // y[r][n] += v[r] * column[n] per kept channel, as rank-1 updates (the vector kernels) over
  // chunks of rows whose channel values v are gathered on the stack.
  constexpr size_t kChunk = 64;
  float v[kChunk];
  for (size_t r0 = 0; r0 < rows; r0 += kChunk) {
    const size_t chunk = std::min(kChunk, rows - r0);
    for (uint32_t k = 0; k < f32_count_; ++k) {
      const uint32_t c = f32_inputs_[k];
      const float s = input_scales_ ? input_scales_[c] : 1.0f;
      for (size_t r = 0; r < chunk; ++r) v[r] = input_scales_ ? x[(r0 + r) * in_ + c] * s : x[(r0 + r) * in_ + c];
      kernels::add_rank1_f32_hwy(y + r0 * out_ + n_begin, out_, chunk, n_end - n_begin, v,
                                 f32_weights_ + k * f32_column_stride_ + n_begin, nullptr);
    }
  }
}

void DenseLayer::observe(const float* x, size_t rows) const {
  // (Calibration is the converter's; bare metal has no converter.)
  if (!LINFER_BARE_METAL && hook_->observe) hook_->observe(hook_->context, source_, x, rows, in_);
}

void DenseLayer::run_rows(const QuantizedRows& qrows, const float* x, size_t rows, float* y, bool accumulate,
                          size_t first_row) const {
  observe(x, rows);
  quantize(qrows, x, rows, first_row);
  run_channels(qrows, x, rows, y, accumulate, first_row, 0, out_);
  if (activation_ != fused_) kernels::activation_f32_hwy(y, rows * out_, activation_);
}

void DenseLayer::activation_pass(const Workers& workers, size_t rows, float* y) const {
  if (activation_ == fused_) return;
  workers.ranges(rows, 1, [&](size_t b, size_t e, size_t) {
    kernels::activation_f32_hwy(y + b * out_, (e - b) * out_, activation_);
  });
}

bool DenseLayer::run(const Workers& workers, const QuantizedRows& qrows, size_t rows, const float* x, float* y,
                     bool accumulate, float* scratch) const {
#if LINFER_WITH_XNNPACK
  if (!kernel_) {
    observe(x, rows);
    // XNNPACK has no accumulate and no GELU: a temporary and passes of their own.
    if (!xnnpack_.run(rows, x, accumulate ? scratch : y, workers.xnn_pool)) return false;
    if (accumulate)
      workers.ranges(rows, 1, [&](size_t b, size_t e, size_t) {
        kernels::add_f32_hwy(y + b * out_, scratch + b * out_, (e - b) * out_);
      });
    activation_pass(workers, rows, y);
    return true;
  }
#endif
  // Layers without a quantizer (f32, f16) split their output channels across the threads, each
  // thread streaming its share of the weights over all rows; int8 layers split the rows, each
  // thread quantizing its own. (M f32, 2 threads, AMD EPYC Zen 4, channels against rows: n = 128
  // 121 against 127 ms, n = 512 430 against 460, n = 2048 1594 against 1625; S and
  // all-MiniLM-L6-v2, whose layers run in the row pipeline but K and V, the same.) A kernel that
  // needs more rows per call than a thread's share would get (AMX) splits the channels too, the
  // rows quantized by all threads first: each thread then streams half the weights instead of all
  // of them for half the rows (M int8, n = 128, 2 threads, operators: 20.5-21.4 ms against 22.7).
  const bool short_shares = LINFER_THREADS && kernel_->min_rows && rows < kernel_->min_rows * workers.threads;
  const bool by_channels = workers.threads > 1 && (!kernel_->quantize || short_shares) && out_ >= 64 * workers.threads;
  if (rows >= 8 * workers.threads && !by_channels) {  // rows split across threads, each quantizing its own (int8)
    // Chunks start at multiples of kRowQuantum, so that every row lands in the same register tile
    // whatever the split: the NEON kernels add the partial sums of a short tile in another order,
    // and outputs must not depend on the number of threads. At least kMinChunkRows rows a chunk.
    workers.balanced_ranges(rows, kRowQuantum, kMinChunkRows / kRowQuantum, [&](size_t b, size_t e, size_t) {
      run_rows(qrows, x + b * in_, e - b, y + b * out_, accumulate, b);
    });
  } else {  // output channels split (too few rows to go round: int8 rows quantized once first)
    observe(x, rows);
    if (short_shares)
      workers.ranges(rows, kRowQuantum, [&](size_t b, size_t e, size_t) { quantize(qrows, x + b * in_, e - b, b); });
    else
      quantize(qrows, x, rows, 0);
    workers.ranges(out_, 64, [&](size_t b, size_t e, size_t) { run_channels(qrows, x, rows, y, accumulate, 0, b, e); });
    activation_pass(workers, rows, y);  // (run_rows applies it to its own rows)
  }
  return true;
}

}  // namespace linfer::rt
