// A session's thread pool and how work is split across it. Nothing here allocates.
#pragma once

#include <pthreadpool.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#endif

namespace linfer::rt {

// ThreadSanitizer cannot see the synchronisation inside libpthreadpool (not instrumented), so
// in TSan builds a parallel region states the ordering the pool guarantees: everything before the
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

struct Workers {
  pthreadpool_t pool = nullptr;  // null: everything runs on the calling thread
  uint32_t flags = 0;            // PTHREADPOOL_FLAG_YIELD_WORKERS when threads sleep between regions
  size_t threads = 1;

  // Runs fn(chunk) for chunk in [0, chunks), in one parallel region.
  template <class Fn>
  void chunks(size_t count, Fn& fn) const {
    if (!pool || count <= 1) {
      for (size_t i = 0; i < count; ++i) fn(i);
      return;
    }
    struct Context {
      Fn& fn;
      RegionSync sync;
    } ctx{fn, {}};
    ctx.sync.before();
    pthreadpool_parallelize_1d(
        pool,
        [](void* p, size_t i) {
          Context& c = *static_cast<Context*>(p);
          c.sync.chunk_begin();
          c.fn(i);
          c.sync.chunk_end();
        },
        &ctx, count, flags);
    ctx.sync.after();
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
