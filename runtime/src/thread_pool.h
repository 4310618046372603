// SPDX-License-Identifier: Apache-2.0
// A session's worker threads (LINFER_THREADS builds): the calling thread and threads - 1 workers
// run the chunks of one parallel region at a time. Everything is allocated when the pool starts;
// a region allocates nothing. Between regions the workers spin for up to 50 us (the next region of
// a run follows within microseconds, and waking a sleeping thread costs tens of them) and then
// sleep on a condition variable; with `yield` they sleep at once, for more threads than free cores.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "status.h"

namespace linfer::rt {

class ThreadPool {
 public:
  // chunk: which of the region's chunks; worker: which of the pool's threads runs it, from 0 (the
  // caller of run()) to threads() - 1, the same thread for the same index in every region: what
  // indexes per-thread scratch, so that a region may have more chunks than threads.
  using Task = void (*)(void* context, size_t chunk, size_t worker);

  ThreadPool() = default;
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;
  ~ThreadPool();

  // Starts threads - 1 workers (threads >= 2): out of memory, or internal when the system
  // refuses a thread.
  Status start(size_t threads, bool yield);
  size_t threads() const { return workers_.size() + 1; }

  // Runs task(context, i, worker) for every i in [0, count) on the calling thread (worker 0) and
  // the workers (1 .. threads() - 1), each taking the next chunk as it finishes one, and returns
  // when all have finished. Everything written before the call is visible to the chunks,
  // and everything the chunks wrote is visible after it.
  void run(Task task, void* context, size_t count);

 private:
  void work(size_t worker);
  void run_chunks(size_t worker);

  std::vector<std::thread> workers_;
  bool yield_ = false;
  // The current region: its task, written before `generation_` moves on.
  Task task_ = nullptr;
  void* context_ = nullptr;
  size_t count_ = 0;
  std::atomic<size_t> next_{0};          // the next chunk to take
  std::atomic<size_t> busy_{0};          // workers not yet done with the current region
  std::atomic<uint64_t> generation_{0};  // one more per region; workers wait for it to change
  std::atomic<size_t> sleepers_{0};      // workers that may be asleep on wake_
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::condition_variable wake_;  // workers: a new region (or stop)
  std::condition_variable done_;  // the caller: the last worker finished the region
};

}  // namespace linfer::rt
