# SPDX-License-Identifier: Apache-2.0
# Cross build for 64-bit RISC-V Linux (RV64GC) with Debian's g++-riscv64-linux-gnu. The runtime
# needs nothing of the target but its C and C++ libraries, which the cross compiler brings:
# Highway and FlatBuffers are headers (from the host), XNNPACK has no riscv64 package and is left
# out. The kernels are the portable ones (no vector extension is assumed).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR riscv64)
set(CMAKE_C_COMPILER riscv64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER riscv64-linux-gnu-g++)

# Libraries only from the cross toolchain's folder; headers (header-only dependencies) also from
# the host; programs (flatc) from the host.
set(CMAKE_FIND_ROOT_PATH /usr/riscv64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
set(CMAKE_LIBRARY_ARCHITECTURE riscv64-linux-gnu)

# Tests run under qemu-user with the riscv64 C library.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-riscv64;-L;/usr/riscv64-linux-gnu)
