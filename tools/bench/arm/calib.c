// SPDX-License-Identifier: Apache-2.0
/*
 * calib N: an aarch64 program that runs a loop of exactly two instructions (subs, b.ne) N times.
 * The instruction counts of "calib 2M" and "calib M" must differ by exactly 2M: build_plugin.sh
 * and run_proxy.sh use it to check the counting plugin and the (N=2) - (N=1) difference method.
 */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 0;
  if (n == 0) {
    fprintf(stderr, "usage: calib N (N >= 1)\n");
    return 2;
  }
#if defined(__aarch64__)
  __asm__ volatile(
      "1:\n\t"
      "subs %0, %0, #1\n\t"
      "b.ne 1b\n"
      : "+r"(n)
      :
      : "cc");
#else
#error "calib.c is an aarch64 program"
#endif
  return 0;
}
