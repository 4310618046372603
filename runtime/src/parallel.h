// SPDX-License-Identifier: Apache-2.0
// A session's thread pool and how work is split across it. Nothing here allocates.
#pragma once

#include <algorithm>
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

  // Runs fn(chunk) for chunk in [0, chunks), in one parallel region. Each chunk first sets its
  // thread's Highway cap: a worker may last have run another session's chunk.
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
          [](void* p, size_t i) {
            Context& c = *static_cast<Context*>(p);
            kernels::set_hwy_cap(c.isa);
            c.fn(i);
          },
          &ctx, count);
      return;
    }
#endif
#if LINFER_WITH_XNNPACK
    if (xnn_pool && count > 1) {
      struct Synced {
        Context& c;
        RegionSync sync;
      } synced{ctx, {}};
      synced.sync.before();
      pthreadpool_parallelize_1d(
          xnn_pool,
          [](void* p, size_t i) {
            Synced& s = *static_cast<Synced*>(p);
            s.sync.chunk_begin();
            kernels::set_hwy_cap(s.c.isa);
            s.c.fn(i);
            s.sync.chunk_end();
          },
          &synced, count, xnn_flags);
      synced.sync.after();
      return;
    }
#endif
    for (size_t i = 0; i < count; ++i) fn(i);
  }

  // Splits [0, items) into at most `threads` contiguous ranges, multiples of `quantum` where
  // possible, and calls fn(begin, end, chunk) for each, in one parallel region. chunk < threads:
  // it indexes per-thread scratch.
  template <class Fn>
  void ranges(size_t items, size_t quantum, Fn&& fn) const {
    const size_t units = (items + quantum - 1) / quantum;
    const size_t n = units < threads ? (units ? units : 1) : threads;
    auto body = [&](size_t c) {
      const size_t b = std::min(items, c * units / n * quantum);
      const size_t e = std::min(items, (c + 1) * units / n * quantum);
      if (b < e) fn(b, e, c);
    };
    chunks(n, body);
  }
};

}  // namespace linfer::rt
