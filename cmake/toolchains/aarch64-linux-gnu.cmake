# SPDX-License-Identifier: Apache-2.0
# Cross build for 64-bit ARM Linux (Raspberry Pi 4/5 with a 64-bit OS) with Debian's
# g++-aarch64-linux-gnu. LINFER_ARM64_SYSROOT: the folder scripts/cross-sysroot.sh arm64 filled
# with the arm64 XNNPACK, pthreadpool and cpuinfo packages (Highway's headers come from the host).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

if(NOT LINFER_ARM64_SYSROOT)
  set(LINFER_ARM64_SYSROOT ${CMAKE_CURRENT_LIST_DIR}/../../build-arm64/sysroot)
endif()
get_filename_component(LINFER_ARM64_SYSROOT ${LINFER_ARM64_SYSROOT} ABSOLUTE)
set(LINFER_ARM64_SYSROOT ${LINFER_ARM64_SYSROOT} CACHE PATH "arm64 library sysroot")

# Libraries and headers from the unpacked packages first, then the cross toolchain's own;
# header-only dependencies (FlatBuffers, nlohmann/json, doctest) and programs (flatc) from the host.
set(CMAKE_FIND_ROOT_PATH ${LINFER_ARM64_SYSROOT} /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(arm64_libdir ${LINFER_ARM64_SYSROOT}/usr/lib/aarch64-linux-gnu)
set(CMAKE_EXE_LINKER_FLAGS_INIT "-Wl,-rpath-link,${arm64_libdir}")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "-Wl,-rpath-link,${arm64_libdir}")

# Tests run under qemu-user with the arm64 C library and the unpacked libraries.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64;-L;/usr/aarch64-linux-gnu;-E;LD_LIBRARY_PATH=${arm64_libdir})
