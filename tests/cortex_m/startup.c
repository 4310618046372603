// SPDX-License-Identifier: Apache-2.0
// The test firmware's start: the vector table (initial stack, reset, and faults that report and
// exit instead of hanging), the FPU (and Helium) switched on, .data copied from flash, .bss zeroed,
// C++ constructors, main, and the exit code through semihosting (platform.c).
#include <stdint.h>
#include <string.h>

extern uint32_t __data_load[], __data_start[], __data_end[], __bss_start[], __bss_end[], __stack_top[];
extern void __libc_init_array(void);
extern int main(void);
void linfer_cm_puts(const char* s);
void linfer_cm_exit(int code) __attribute__((noreturn));

void Reset_Handler(void) {
  // CPACR: full access to coprocessors 10 and 11 (the FPU, and MVE on a Cortex-M55) before the
  // first floating-point instruction.
  *(volatile uint32_t*)0xE000ED88 |= 0xFu << 20;
  __asm volatile("dsb\n\tisb" ::: "memory");
  memcpy(__data_start, __data_load, (size_t)((char*)__data_end - (char*)__data_start));
  memset(__bss_start, 0, (size_t)((char*)__bss_end - (char*)__bss_start));
  __libc_init_array();
  linfer_cm_exit(main());
}

// Any fault ends the run with a message and exit code 99: the tests count it as a failure.
static void Fault_Handler(void) {
  linfer_cm_puts("cortex-m: FAULT (hard fault, bus, memory or usage fault)\n");
  linfer_cm_exit(99);
}

__attribute__((section(".vectors"), used)) void* const linfer_cm_vectors[16] = {__stack_top,
                                                                                (void*)Reset_Handler,
                                                                                (void*)Fault_Handler,
                                                                                (void*)Fault_Handler,
                                                                                (void*)Fault_Handler,
                                                                                (void*)Fault_Handler,
                                                                                (void*)Fault_Handler,
                                                                                0,
                                                                                0,
                                                                                0,
                                                                                0,
                                                                                (void*)Fault_Handler,
                                                                                (void*)Fault_Handler,
                                                                                0,
                                                                                (void*)Fault_Handler,
                                                                                (void*)Fault_Handler};

// Without the C runtime's start files (-nostartfiles): the hooks __libc_init_array calls around
// the constructors, and the handle C++ registers static destructors with.
void _init(void) {}
void _fini(void) {}
void* __dso_handle = 0;
