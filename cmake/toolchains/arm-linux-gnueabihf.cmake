# SPDX-License-Identifier: Apache-2.0
# Cross build for 32-bit ARM Linux (Raspberry Pi OS 32-bit, Debian armhf) with Debian's
# g++-arm-linux-gnueabihf. LINFER_ARMHF_SYSROOT: for a build with XNNPACK, the folder
# scripts/cross-sysroot.sh armhf filled with the armhf XNNPACK, pthreadpool and cpuinfo packages
# (scripts/test-armhf.sh builds without it and needs none).
#
# The compiler's defaults are Debian's armhf baseline (-march=armv7-a -mfpu=vfpv3-d16
# -mfloat-abi=hard: no NEON, which a Pi 1 / Zero and other armhf boards lack); it is not raised
# here. NEON code (the dense kernels of kernels/dense/*_neonv7.cc, Highway's NEON target) carries
# its own target attributes and is chosen at run time from AT_HWCAP.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR armv7l)
set(CMAKE_C_COMPILER arm-linux-gnueabihf-gcc)
set(CMAKE_CXX_COMPILER arm-linux-gnueabihf-g++)

if(NOT LINFER_ARMHF_SYSROOT)
  set(LINFER_ARMHF_SYSROOT ${CMAKE_CURRENT_LIST_DIR}/../../build-armhf/sysroot)
endif()
get_filename_component(LINFER_ARMHF_SYSROOT ${LINFER_ARMHF_SYSROOT} ABSOLUTE)
set(LINFER_ARMHF_SYSROOT ${LINFER_ARMHF_SYSROOT} CACHE PATH "armhf library sysroot")

# Libraries and headers from the unpacked packages first, then the cross toolchain's own;
# header-only dependencies (FlatBuffers, nlohmann/json, doctest) and programs (flatc) from the host.
set(CMAKE_FIND_ROOT_PATH ${LINFER_ARMHF_SYSROOT} /usr/arm-linux-gnueabihf)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
set(CMAKE_LIBRARY_ARCHITECTURE arm-linux-gnueabihf)
set(armhf_libdir ${LINFER_ARMHF_SYSROOT}/usr/lib/arm-linux-gnueabihf)
set(CMAKE_EXE_LINKER_FLAGS_INIT "-Wl,-rpath-link,${armhf_libdir}")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "-Wl,-rpath-link,${armhf_libdir}")

# Tests run under qemu-user with the armhf C library and the unpacked libraries (the CPU model
# from QEMU_CPU: scripts/test-armhf.sh).
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-arm;-L;/usr/arm-linux-gnueabihf;-E;LD_LIBRARY_PATH=${armhf_libdir})
