// SPDX-License-Identifier: Apache-2.0
// Dense layers through XNNPACK's f32 fully connected operator (kernels.h: XnnpackDense). The
// operator packs its own copy of the weights when it is created; run() only sets the row count
// and pointers, which allocates nothing in this XNNPACK version.
#include <xnnpack.h>

#include "kernels.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace linfer::kernels {
namespace {

// XNNPACK allocations go through here so that an operator's packed bytes can be reported: counted
// per thread (an operator is created, and its weights packed, on the calling thread), so sessions
// created at the same time on other threads do not mix into the figure. Each block carries its
// size in a 64-byte header so that reallocate and deallocate can account for it.
thread_local long long g_xnn_bytes = 0;
thread_local size_t g_xnn_failed_bytes = 0;  // the size of the last allocation that failed
constexpr size_t kHeader = 64;

void* xnn_alloc(void*, size_t size) {
  void* p = nullptr;
  if (size > SIZE_MAX - kHeader || posix_memalign(&p, kHeader, size + kHeader) != 0) {
    g_xnn_failed_bytes = size;
    return nullptr;
  }
  *static_cast<size_t*>(p) = size;
  g_xnn_bytes += size;
  return static_cast<char*>(p) + kHeader;
}
void xnn_free(void*, void* ptr) {
  if (!ptr) return;
  char* base = static_cast<char*>(ptr) - kHeader;
  g_xnn_bytes -= *reinterpret_cast<size_t*>(base);
  free(base);
}
void* xnn_realloc(void* ctx, void* ptr, size_t size) {
  void* fresh = xnn_alloc(ctx, size);
  if (!fresh || !ptr) return fresh;
  const size_t old = *reinterpret_cast<size_t*>(static_cast<char*>(ptr) - kHeader);
  std::memcpy(fresh, ptr, old < size ? old : size);
  xnn_free(ctx, ptr);
  return fresh;
}
void* xnn_aligned_alloc(void*, size_t alignment, size_t size) {
  if (alignment < kHeader) alignment = kHeader;
  void* p = nullptr;
  if (size > SIZE_MAX - alignment || posix_memalign(&p, alignment, size + alignment) != 0) {
    g_xnn_failed_bytes = size;
    return nullptr;
  }
  char* user = static_cast<char*>(p) + alignment;
  *reinterpret_cast<size_t*>(user - kHeader) = size;
  *reinterpret_cast<size_t*>(user - kHeader + sizeof(size_t)) = alignment;
  g_xnn_bytes += size;
  return user;
}
void xnn_aligned_free(void*, void* ptr) {
  if (!ptr) return;
  char* user = static_cast<char*>(ptr);
  const size_t size = *reinterpret_cast<size_t*>(user - kHeader);
  const size_t alignment = *reinterpret_cast<size_t*>(user - kHeader + sizeof(size_t));
  g_xnn_bytes -= size;
  free(user - alignment);
}

const xnn_allocator kCountingAllocator = {nullptr,  xnn_alloc,         xnn_realloc,
                                          xnn_free, xnn_aligned_alloc, xnn_aligned_free};
}  // namespace

err::Status initialize_xnnpack() {
  static std::once_flag once;
  static xnn_status status = xnn_status_uninitialized;
  std::call_once(once, [] { status = xnn_initialize(&kCountingAllocator); });
  if (status != xnn_status_success)
    return err::failure(LINFER_ERROR_UNSUPPORTED,
                        "XNNPACK failed to initialise (status {}): this CPU may be unsupported", int(status));
  return {};
}

XnnpackDense& XnnpackDense::operator=(XnnpackDense&& other) noexcept {
  if (this != &other) {
    if (op_) xnn_delete_operator(op_);
    op_ = other.op_;
    in_ = other.in_;
    out_ = other.out_;
    other.op_ = nullptr;
  }
  return *this;
}

XnnpackDense::~XnnpackDense() {
  if (op_) xnn_delete_operator(op_);
}

err::Status XnnpackDense::create(size_t in, size_t out, const float* weight, const float* bias, bool relu,
                                 bool yield_workers, size_t* packed_bytes) {
  if (op_) xnn_delete_operator(op_);
  op_ = nullptr;
  in_ = in;
  out_ = out;
  const long long before = g_xnn_bytes;
  g_xnn_failed_bytes = 0;
  const xnn_status s = xnn_create_fully_connected_nc_f32(in, out, in, out, weight, bias, relu ? 0.0f : -INFINITY,
                                                         INFINITY, yield_workers ? XNN_FLAG_YIELD_WORKERS : 0, &op_);
  *packed_bytes = g_xnn_bytes > before ? size_t(g_xnn_bytes - before) : 0;
  if (s != xnn_status_success) {
    op_ = nullptr;
    if (s == xnn_status_out_of_memory)
      return err::failure(LINFER_ERROR_OUT_OF_MEMORY,
                          "out of memory allocating {} bytes in XNNPACK for a {}x{} fully connected operator",
                          g_xnn_failed_bytes, in, out);
    return err::failure(LINFER_ERROR_INTERNAL, "XNNPACK could not create a {}x{} fully connected operator (status {})",
                        in, out, int(s));
  }
  return {};
}

bool XnnpackDense::run(size_t rows, const float* x, float* y, pthreadpool_t pool) const {
  if (xnn_setup_fully_connected_nc_f32(op_, rows, x, y, pool) != xnn_status_success) return false;
  return xnn_run_operator(op_, pool) == xnn_status_success;
}

}  // namespace linfer::kernels
