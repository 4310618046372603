// Dense (fully connected) layers through XNNPACK: y[rows x out] = x[rows x in] W^T + b.
// The operator is created (and its weights packed) once, at session creation; run() only sets the
// row count and pointers, which allocates nothing in this XNNPACK version.
#pragma once

#include <pthreadpool.h>
#include <xnnpack.h>

#include <cstddef>
#include <string>
#include <utility>

namespace linfer::kernels {

class DenseLayer {
 public:
  DenseLayer() = default;
  DenseLayer(const DenseLayer&) = delete;
  DenseLayer& operator=(const DenseLayer&) = delete;
  DenseLayer(DenseLayer&& other) noexcept { *this = std::move(other); }
  DenseLayer& operator=(DenseLayer&& other) noexcept;
  ~DenseLayer();

  // weight [out x in] row-major, bias [out] or null. relu fuses max(0, .) into the output;
  // yield_workers lets the pool's threads sleep after each run instead of spinning.
  // Returns "" or a message.
  std::string create(size_t in, size_t out, size_t in_stride, size_t out_stride,
                     const float* weight, const float* bias, bool relu, bool yield_workers);
  // Must only be called on a created layer with rows >= 1.
  bool run(size_t rows, const float* x, float* y, pthreadpool_t pool) const;

  size_t inputs() const { return in_; }
  size_t outputs() const { return out_; }

 private:
  xnn_operator_t op_ = nullptr;
  size_t in_ = 0, out_ = 0;
};

// Initialises XNNPACK once per process with an allocator that counts live bytes.
// Returns "" or a message.
std::string initialize_xnnpack();
size_t xnnpack_allocated_bytes();

}  // namespace linfer::kernels
