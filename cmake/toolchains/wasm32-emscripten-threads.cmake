# SPDX-License-Identifier: Apache-2.0
# The threads WebAssembly module (docs/web.md): the SIMD128 build (wasm32-emscripten.cmake) with
# wasm threads: -pthread (atomics, bulk memory, a shared memory) and LINFER_THREADS=ON, so that a
# session's num_threads > 1 runs its parallel regions on Web Workers. It needs SharedArrayBuffer:
# a cross-origin-isolated page, or Node. The JavaScript package loads it only when asked for more
# than one thread; its workers are started when it loads (runtime/js/CMakeLists.txt), so that no
# thread is ever created by waiting on the event loop.
include(${CMAKE_CURRENT_LIST_DIR}/wasm32-emscripten.cmake)
set(CMAKE_C_FLAGS_INIT "${CMAKE_C_FLAGS_INIT} -pthread")
set(CMAKE_CXX_FLAGS_INIT "${CMAKE_CXX_FLAGS_INIT} -pthread")
set(CMAKE_EXE_LINKER_FLAGS_INIT "${CMAKE_EXE_LINKER_FLAGS_INIT} -pthread")
set(LINFER_THREADS ON CACHE BOOL "" FORCE)
