# SPDX-License-Identifier: Apache-2.0
# Bare-metal Cortex-M build with Debian's gcc-arm-none-eabi and newlib (scripts/test-cortex-m.sh,
# docs/microcontrollers.md): no operating system, no files, no threads, no exceptions or RTTI; the
# model is a const array in flash read in place (linfer_model_load_in_place) and the arena a static
# array (linfer_session_options.arena). The runtime is a static library; the firmware links it with
# its own startup code (tests/cortex_m/ has the one the tests use).
#
#   cmake -S . -B build-cm4 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/cortex-m.cmake -DLINFER_CORTEX_M_CPU=cortex-m4
#
# LINFER_CORTEX_M_CPU: cortex-m4 (DSP extension, single-precision FPU; also right for the M7 in
# single precision) or cortex-m55 (Helium/MVE with floating point).
set(CMAKE_SYSTEM_NAME Generic)
set(LINFER_CORTEX_M_CPU cortex-m4 CACHE STRING "cortex-m4 or cortex-m55")
set(CMAKE_SYSTEM_PROCESSOR ${LINFER_CORTEX_M_CPU})
set(LINFER_CORTEX_M ON)
set(CMAKE_C_COMPILER arm-none-eabi-gcc)
set(CMAKE_CXX_COMPILER arm-none-eabi-g++)
set(CMAKE_ASM_COMPILER arm-none-eabi-gcc)
# No startup code or semihosting yet when CMake tries the compiler: a library, not a program.
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)

if(LINFER_CORTEX_M_CPU STREQUAL "cortex-m4")
  set(linfer_cpu_flags "-mcpu=cortex-m4 -mthumb -mfpu=fpv4-sp-d16 -mfloat-abi=hard")
elseif(LINFER_CORTEX_M_CPU STREQUAL "cortex-m55")
  set(linfer_cpu_flags "-mcpu=cortex-m55 -mthumb -mfloat-abi=hard")
else()
  message(FATAL_ERROR "LINFER_CORTEX_M_CPU: '${LINFER_CORTEX_M_CPU}' is not one of cortex-m4, cortex-m55")
endif()
# newlib-nano: the small C library; the firmware's syscalls (tests/cortex_m/platform.c) stand in
# for an operating system.
set(CMAKE_C_FLAGS_INIT "${linfer_cpu_flags} --specs=nano.specs")
# (-Wno-psabi: GCC notes that a parameter ABI changed in GCC 7.1, which concerns no one here.
# -fno-devirtualize-speculatively: GCC would inline a base class's virtual function beside each
# virtual call "in case" the object is of that class, linking code no object of the build runs:
# the softmax kinds' f32 attention kernel, 5.6 KB, under the Linformer's int8 attention.)
set(CMAKE_CXX_FLAGS_INIT "${linfer_cpu_flags} --specs=nano.specs -fno-exceptions -fno-rtti -fno-threadsafe-statics -fno-devirtualize-speculatively -Wno-psabi")
set(CMAKE_ASM_FLAGS_INIT "${linfer_cpu_flags}")
set(CMAKE_EXE_LINKER_FLAGS_INIT "-Wl,--gc-sections")
# Release: -O2, and -Os for what runs once (linfer_cold_sources), -O3 for the kernels on the
# inference path (kernels/CMakeLists.txt). Set as the cache entries, not as ..._RELEASE_INIT, to
# which CMake appends its own -O3. (Measured on size_probe with GCC 12: -O2 is smaller than -Os
# here, which took 6% (M4) and 13% (M55) more instructions per inference; -O3 everywhere 0.8 KB
# (M4) and 1.1 KB (M55) more than this, for no fewer instructions.)
set(CMAKE_C_FLAGS_RELEASE "-O2 -DNDEBUG" CACHE STRING "")
set(CMAKE_CXX_FLAGS_RELEASE "-O2 -DNDEBUG" CACHE STRING "")

# Highway and FlatBuffers are header-only and come from the host's /usr/include.
include(${CMAKE_CURRENT_LIST_DIR}/../host-headers.cmake)
linfer_link_host_headers(hwy flatbuffers)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)

# What a microcontroller build is: no threads, no XNNPACK, a static library, no tools or host tests
# (the firmware tests are tests/cortex_m), and only the Linformer unless asked otherwise.
set(LINFER_THREADS OFF CACHE BOOL "")
set(LINFER_WITH_XNNPACK OFF CACHE BOOL "")
set(BUILD_SHARED_LIBS OFF CACHE BOOL "")
set(LINFER_BUILD_TOOLS OFF CACHE BOOL "")
set(LINFER_BUILD_TESTS OFF CACHE BOOL "")
set(LINFER_ATTENTION_KINDS linformer CACHE STRING "")
set(LINFER_TOKENIZERS OFF CACHE BOOL "")  # text goes in as ids on a microcontroller (flash)
set(LINFER_DTYPES int8 CACHE STRING "")  # int8 dense layers: the f32 and f16 kernels are not linked
# The model options its model needs none of (CMakeLists.txt LINFER_MODEL_OPTIONS): no f32 compression
# or attention, no per-head projections, sinusoids, rotary positions, post or reversible norms,
# GELU's tanh approximation or tanh.
set(LINFER_MODEL_OPTIONS none CACHE STRING "")
