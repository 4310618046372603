# SPDX-License-Identifier: Apache-2.0
# The relaxed-SIMD threads WebAssembly module (docs/web.md): the relaxed module's build
# (wasm32-emscripten-relaxed.cmake: clang-16, npm's wasm-opt) with wasm threads, as
# wasm32-emscripten-threads.cmake adds them to the SIMD128 build.
include(${CMAKE_CURRENT_LIST_DIR}/wasm32-emscripten-relaxed.cmake)
set(CMAKE_C_FLAGS_INIT "${CMAKE_C_FLAGS_INIT} -pthread")
set(CMAKE_CXX_FLAGS_INIT "${CMAKE_CXX_FLAGS_INIT} -pthread")
set(CMAKE_EXE_LINKER_FLAGS_INIT "${CMAKE_EXE_LINKER_FLAGS_INIT} -pthread")
set(LINFER_THREADS ON CACHE BOOL "" FORCE)
