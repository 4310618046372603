// SPDX-License-Identifier: Apache-2.0
#include "thread_pool.h"

#include <new>
#include <system_error>

namespace linfer::rt {
namespace {

// Rounds of spinning before a waiting thread sleeps: with a pause of tens of cycles each, about
// 10-30 ms, as pthreadpool spins (PTHREADPOOL_SPIN_WAIT_ITERATIONS).
constexpr uint32_t kSpinRounds = 1000000;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__) || (defined(__arm__) && __ARM_ARCH >= 7)
  __asm__ volatile("yield");
#else
  std::atomic_signal_fence(std::memory_order_seq_cst);
#endif
}

}  // namespace

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true);
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

Status ThreadPool::start(size_t threads, bool yield) {
  yield_ = yield;
  Status s = allocating("a pool of " + decimal(threads) + " threads",
                        (threads - 1) * sizeof(std::thread), [&] { workers_.reserve(threads - 1); });
  if (!s.ok()) return s;
  try {
    for (size_t i = 0; i + 1 < threads; ++i) workers_.emplace_back(&ThreadPool::work, this, i);
  } catch (const std::system_error& e) {
    return internal_error("could not start a thread of a pool of " + decimal(threads) + ": " + e.what());
  } catch (const std::bad_alloc&) {  // a thread's own state
    return {LINFER_ERROR_OUT_OF_MEMORY, "out of memory starting a thread of a pool of " + decimal(threads)};
  }
  return {};
}

void ThreadPool::run_chunks() {
  for (size_t i = next_.fetch_add(1, std::memory_order_relaxed); i < count_;
       i = next_.fetch_add(1, std::memory_order_relaxed))
    task_(context_, i);
}

void ThreadPool::run(Task task, void* context, size_t count) {
  task_ = task;
  context_ = context;
  count_ = count;
  next_.store(0, std::memory_order_relaxed);
  busy_.store(workers_.size(), std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_seq_cst);  // publishes the region (release)
  // A worker that is about to sleep counts itself in sleepers_ before it reads generation_ again
  // under the mutex (both sequentially consistent): either it sees the new region or we see it.
  if (sleepers_.load(std::memory_order_seq_cst) > 0) {
    { std::lock_guard<std::mutex> lock(mutex_); }
    wake_.notify_all();
  }
  run_chunks();
  for (uint32_t spin = 0; !yield_ && spin < kSpinRounds; ++spin) {
    if (busy_.load(std::memory_order_acquire) == 0) return;
    cpu_relax();
  }
  // The last worker decrements busy_ and then takes the mutex to notify: the check under the
  // mutex and the wait cannot miss it.
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return busy_.load(std::memory_order_acquire) == 0; });
}

void ThreadPool::work(size_t) {
  uint64_t seen = 0;
  for (;;) {
    uint32_t spin = 0;
    if (!yield_)
      while (generation_.load(std::memory_order_acquire) == seen && spin < kSpinRounds &&
             !stop_.load(std::memory_order_relaxed)) {
        cpu_relax();
        ++spin;
      }
    if (generation_.load(std::memory_order_acquire) == seen) {
      std::unique_lock<std::mutex> lock(mutex_);
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      wake_.wait(lock, [&] {
        return generation_.load(std::memory_order_seq_cst) != seen || stop_.load(std::memory_order_relaxed);
      });
      sleepers_.fetch_sub(1, std::memory_order_relaxed);
    }
    if (stop_.load(std::memory_order_relaxed)) return;
    seen = generation_.load(std::memory_order_acquire);
    run_chunks();
    if (busy_.fetch_sub(1, std::memory_order_acq_rel) == 1) {  // the chunks' writes, released to run()
      { std::lock_guard<std::mutex> lock(mutex_); }
      done_.notify_one();
    }
  }
}

}  // namespace linfer::rt
