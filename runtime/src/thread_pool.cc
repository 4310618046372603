// SPDX-License-Identifier: Apache-2.0
#include "thread_pool.h"

#include <chrono>
#include <new>
#include <system_error>

#if defined(__EMSCRIPTEN_PTHREADS__)
#include <emscripten/emscripten.h>

// The workers loaded with the module and not running a thread (emscripten's pool; read on the
// module's main thread, where sessions are created). EM_ASM, not EM_JS: the relaxed threads
// module's link reads the module's strings in Python (its toolchain file), which finds EM_ASM's
// in a shared memory's passive data segments and not EM_JS's.
static int linfer_free_workers() {
  return EM_ASM_INT({ return PThread.unusedWorkers.length; });
}
#endif

namespace linfer::rt {
namespace {

// How long a waiting thread spins before it sleeps: long enough to catch the next parallel region
// of a run (the serial work between two is a norm or a softmax: microseconds), short enough that a
// thread whose partner was descheduled gives its core back at once. Measured on 2 cores with the
// benchmark suite's S at n = 512 on 2 threads: on an idle machine 50 us is as fast as spinning
// 10-30 ms (int8 3.1-3.2 ms, f32 8.7-8.8 ms; sleeping at once 3.8 and 9.3); beside other jobs'
// builds, 7-22 ms where spinning 10-30 ms took 15-488 ms (sleeping at once 5-14 ms).
constexpr std::chrono::microseconds kSpinTime{50};
// The clock is read once every so many rounds: a pause is tens of cycles, a clock read about as many.
constexpr uint32_t kRoundsPerClockRead = 64;

// True while a wait that started at `start` may go on spinning after `round` rounds.
inline bool keep_spinning(std::chrono::steady_clock::time_point start, uint32_t round) {
  return round % kRoundsPerClockRead != kRoundsPerClockRead - 1 || std::chrono::steady_clock::now() - start < kSpinTime;
}

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
  Status s = allocating(message("a pool of {} threads", kept(threads)), (threads - 1) * sizeof(std::thread),
                        [&] { workers_.reserve(threads - 1); });
  if (!s.ok()) return s;
#if defined(__EMSCRIPTEN_PTHREADS__)
  // emscripten's pthread_create allocates a thread's stack (5 MB) and state before it asks for a
  // worker, and keeps them when none is free: a refused session leaked them. So count first.
  if (const size_t free = size_t(linfer_free_workers()); free < threads - 1)
    return internal_error(
        "could not start a thread of a pool of {}: it needs {} of the module's workers and {} are free (a session on "
        "N threads holds N - 1 until it is disposed)",
        kept(threads), kept(threads - 1), kept(free));
#endif
  try {
    for (size_t i = 1; i < threads; ++i) workers_.emplace_back(&ThreadPool::work, this, i);  // (0: the caller)
  } catch (const std::system_error& e) {
    return internal_error("could not start a thread of a pool of {}: {}", kept(threads), e.what());
  } catch (const std::bad_alloc&) {  // a thread's own state
    return failure(LINFER_ERROR_OUT_OF_MEMORY, "out of memory starting a thread of a pool of {}", kept(threads));
  }
  return {};
}

void ThreadPool::run_chunks(size_t worker) {
  for (size_t i = next_.fetch_add(1, std::memory_order_relaxed); i < count_;
       i = next_.fetch_add(1, std::memory_order_relaxed))
    task_(context_, i, worker);
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
    {
      std::lock_guard<std::mutex> lock(mutex_);
    }
    wake_.notify_all();
  }
  run_chunks(0);
  const auto spin_start = std::chrono::steady_clock::now();
  for (uint32_t spin = 0; !yield_ && keep_spinning(spin_start, spin); ++spin) {
    if (busy_.load(std::memory_order_acquire) == 0) return;
    cpu_relax();
  }
  // The last worker decrements busy_ and then takes the mutex to notify: the check under the
  // mutex and the wait cannot miss it.
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return busy_.load(std::memory_order_acquire) == 0; });
}

void ThreadPool::work(size_t worker) {
  uint64_t seen = 0;
  for (;;) {
    uint32_t spin = 0;
    const auto spin_start = std::chrono::steady_clock::now();
    if (!yield_)
      while (generation_.load(std::memory_order_acquire) == seen && keep_spinning(spin_start, spin) &&
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
    run_chunks(worker);
    if (busy_.fetch_sub(1, std::memory_order_acq_rel) == 1) {  // the chunks' writes, released to run()
      {
        std::lock_guard<std::mutex> lock(mutex_);
      }
      done_.notify_one();
    }
  }
}

}  // namespace linfer::rt
