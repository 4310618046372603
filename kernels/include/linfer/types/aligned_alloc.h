// SPDX-License-Identifier: Apache-2.0
// The heap as every platform has it: an aligned block released with free() (posix_memalign where
// the C library has it: glibc, musl, emscripten; newlib's memalign on bare metal, as newlib-nano
// declares posix_memalign but does not define it), and whether a block of a size fits now
// (heap_has_room: builds without exceptions ask it before they allocate).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#if LINFER_BARE_METAL
#include <malloc.h>
#endif

namespace linfer {

inline void* aligned_block(size_t alignment, size_t bytes) {
#if LINFER_BARE_METAL
  return memalign(alignment, bytes ? bytes : 1);
#else
  void* p = nullptr;
  return posix_memalign(&p, alignment, bytes ? bytes : 1) == 0 ? p : nullptr;
#endif
}

// Whether the heap has a free block of `bytes` (and some room beside it) now: asked, without
// exceptions, before a container of a size read from a model is allocated. One thread of control
// (bare metal), so the block taken and given back here is there for the allocation that follows.
inline bool heap_has_room(uint64_t bytes) {
  constexpr uint64_t kSlack = 1024;  // the small allocations that come with it (names, messages)
  if (bytes > uint64_t(PTRDIFF_MAX) - kSlack) return false;
  void* p = std::malloc(size_t(bytes + kSlack));
  std::free(p);
  return p != nullptr;
}

}  // namespace linfer
