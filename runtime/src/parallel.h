// SPDX-License-Identifier: Apache-2.0
// A session's thread pool and how work is split across it. Nothing here allocates.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "kernels.h"
#if LINFER_THREADS
#include "thread_pool.h"
#endif
#if LINFER_WITH_XNNPACK
#include <pthreadpool.h>
#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#endif
#endif

namespace linfer::rt {

#if LINFER_WITH_XNNPACK
// ThreadSanitizer cannot see the synchronisation inside libpthreadpool (not instrumented), so
// in TSan builds a region on it states the ordering the pool guarantees: everything before the
// region happens before every chunk (start), every chunk before everything after it (done).
// Two addresses, so that no chunk is ordered after another: races between chunks stay visible.
#if defined(__SANITIZE_THREAD__)
struct RegionSync {
  char start, done;
  void before() { __tsan_release(&start); }
  void chunk_begin() { __tsan_acquire(&start); }
  void chunk_end() { __tsan_release(&done); }
  void after() { __tsan_acquire(&done); }
};
#else
struct RegionSync {
  void before() {}
  void chunk_begin() {}
  void chunk_end() {}
  void after() {}
};
#endif
#endif

// The threads a session's parallel regions run on: linfer's own pool or, in sessions whose dense
// layers run on XNNPACK, XNNPACK's pthreadpool for everything (two pools would spin against each
// other); neither: the calling thread alone.
struct Workers {
#if LINFER_THREADS
  ThreadPool* pool = nullptr;
#endif
#if LINFER_WITH_XNNPACK
  pthreadpool_t xnn_pool = nullptr;
  uint32_t xnn_flags = 0;  // PTHREADPOOL_FLAG_YIELD_WORKERS when threads sleep between regions
#endif
  size_t threads = 1;
  kernels::Isa isa = kernels::Isa::Generic;  // the session's cap, for the Highway kernels

  // Runs fn(chunk, worker) for chunk in [0, count), in one parallel region, each thread taking
  // the next chunk as it finishes one. worker < threads indexes per-thread scratch: no two chunks
  // that run at the same time have the same one. Each chunk first sets its thread's Highway cap:
  // a worker may last have run another session's chunk.
  template <class Fn>
  void chunks(size_t count, Fn& fn) const {
    struct Context {
      Fn& fn;
      kernels::Isa isa;
    };
    [[maybe_unused]] Context ctx{fn, isa};
#if LINFER_THREADS
    if (pool && count > 1) {
      pool->run(
          [](void* p, size_t i, size_t worker) {
            Context& c = *static_cast<Context*>(p);
            kernels::set_hwy_cap(c.isa);
            c.fn(i, worker);
          },
          &ctx, count);
      return;
    }
#endif
#if LINFER_WITH_XNNPACK
    if (xnn_pool && count > 1) {
      // This pthreadpool tells a task no thread index: it runs one task per slot (at most
      // `threads`, one call each, so no two running at once share a slot), and each slot's task
      // takes the chunks as linfer's pool does.
      struct Synced {
        Context& c;
        RegionSync sync;
        std::atomic<size_t> next;
        size_t count;
      } synced{ctx, {}, {0}, count};
      synced.sync.before();
      pthreadpool_parallelize_1d(
          xnn_pool,
          [](void* p, size_t slot) {
            Synced& s = *static_cast<Synced*>(p);
            s.sync.chunk_begin();
            kernels::set_hwy_cap(s.c.isa);
            for (size_t i = s.next.fetch_add(1, std::memory_order_relaxed); i < s.count;
                 i = s.next.fetch_add(1, std::memory_order_relaxed))
              s.c.fn(i, slot);
            s.sync.chunk_end();
          },
          &synced, std::min(count, threads), xnn_flags);
      synced.sync.after();
      return;
    }
#endif
    for (size_t i = 0; i < count; ++i) fn(i, size_t(0));
  }

  // Splits [0, items) into at most `threads` contiguous ranges, multiples of `quantum` where
  // possible, and calls fn(begin, end, worker) for each, in one parallel region: for passes too
  // short to gain from a finer split (norms, adds).
  template <class Fn>
  void ranges(size_t items, size_t quantum, Fn&& fn) const {
    const size_t units = (items + quantum - 1) / quantum;
    split(items, quantum, units, std::min(units, threads), fn);
  }

  // The fewest values of a light pass (a norm, an add: about a nanosecond a value) worth a
  // parallel region: below it the region's start and end cost more than the other threads save
  // (S f32 at n = 128, 2 threads, AMD EPYC Zen 4: the layer norms, 128 rows of 256, took 0.166 ms
  // a run as regions against 0.084 on one thread).
  static constexpr size_t kLightPassValues = size_t(1) << 16;

  // ranges(items, 1, fn) for a light pass over items of `width` values each, or fn(0, items, 0)
  // on the calling thread when the pass has fewer than kLightPassValues values.
  template <class Fn>
  void light_ranges(size_t items, size_t width, Fn&& fn) const {
    if (items * width < kLightPassValues) {
      fn(size_t(0), items, size_t(0));
      return;
    }
    ranges(items, 1, fn);
  }

  // As ranges, but in up to kChunksPerThread ranges per thread, each of at least min_units
  // quanta where there are enough (never fewer ranges than ranges() makes): for the regions that
  // are most of a run's time (dense layers' rows, attention's items), so that a thread that
  // starts late or loses its core for a while is made up for by the others taking its chunks.
  // The number of chunks is a multiple of the threads: 5 chunks of M's 512 rows on 2 threads left
  // one thread a third chunk while the other waited (M f32 at n = 512, 2 threads, AMD EPYC Zen 4:
  // 498 -> 462 ms with 4).
  template <class Fn>
  void balanced_ranges(size_t items, size_t quantum, size_t min_units, Fn&& fn) const {
    const size_t units = (items + quantum - 1) / quantum;
    const size_t most = threads > 1 ? std::min(threads * kChunksPerThread, units / min_units) / threads * threads : 1;
    split(items, quantum, units, std::max(most, std::min(units, threads)), fn);
  }

  // Chunks per thread of balanced_ranges: a thread's delay costs the region at most about a
  // quarter of a share once the others have taken its chunks, where one range per thread made
  // every region wait for all of it. More chunks would cost more than they save: a dense kernel
  // passes its weights once per chunk, which min_units bounds from below.
  static constexpr size_t kChunksPerThread = 4;

 private:
  template <class Fn>
  void split(size_t items, size_t quantum, size_t units, size_t n, Fn& fn) const {
    if (n == 0) n = 1;
    auto body = [&](size_t c, size_t worker) {
      const size_t b = std::min(items, c * units / n * quantum);
      const size_t e = std::min(items, (c + 1) * units / n * quantum);
      if (b < e) fn(b, e, worker);
    };
    chunks(n, body);
  }
};

}  // namespace linfer::rt
