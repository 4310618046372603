# SPDX-License-Identifier: Apache-2.0
# WebAssembly build with Debian's emscripten (scripts/test-wasm.sh, docs/web.md): single-threaded,
# SIMD128 as the baseline (every current browser and Node has it; Highway's WASM target and the
# dense_*_wasm_simd128 kernels), no XNNPACK. Tests run under node.
set(LINFER_EMSCRIPTEN_ROOT /usr/share/emscripten CACHE PATH "emscripten's folder (Debian: /usr/share/emscripten)")
include(${LINFER_EMSCRIPTEN_ROOT}/cmake/Modules/Platform/Emscripten.cmake)

# WebAssembly exceptions (native try/catch, no JavaScript glue per call): the runtime catches
# std::bad_alloc from containers and reports it as out of memory (runtime/src/status.h); with
# emscripten's default a throw would abort the module.
set(CMAKE_C_FLAGS_INIT "-msimd128")
set(CMAKE_CXX_FLAGS_INIT "-msimd128 -fwasm-exceptions")
# Binaryen (wasm-opt, run by the link) inlines every function that has one caller, however large,
# by default; the merged functions were too large for V8's register allocator, which then kept
# loop accumulators on the stack (the attention kernel: 15 -> 26 GFLOP/s on S's shapes with a
# limit). Functions of up to 100 of binaryen's size units are still inlined where called once.
set(CMAKE_EXE_LINKER_FLAGS_INIT "-fwasm-exceptions -sBINARYEN_EXTRA_PASSES=-ocimfs=100")

# Highway, FlatBuffers and doctest are header-only and come from the host's /usr/include.
include(${CMAKE_CURRENT_LIST_DIR}/../host-headers.cmake)
linfer_link_host_headers(hwy flatbuffers doctest)

# What a wasm module can be, as defaults: no threads (they need a cross-origin-isolated page), no
# XNNPACK (no wasm package), a static library linked into the module, no command-line tools (the
# JavaScript package, runtime/js, is the interface; tests build without them).
set(LINFER_THREADS OFF CACHE BOOL "")
set(LINFER_WITH_XNNPACK OFF CACHE BOOL "")
set(BUILD_SHARED_LIBS OFF CACHE BOOL "")
set(LINFER_BUILD_TOOLS OFF CACHE BOOL "")
