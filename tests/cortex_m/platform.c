// SPDX-License-Identifier: Apache-2.0
// What the C library asks of an operating system, for the test firmware on QEMU's MPS2/MPS3
// boards: output and exit through Arm semihosting (BKPT 0xAB), a heap between two linker symbols
// with its high-water mark kept, and abort() that says so and exits.
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum { kSysWrite0 = 0x04, kSysGetCmdline = 0x15, kSysExitExtended = 0x20 };
enum { kApplicationExit = 0x20026 };

static int semihost(int op, void* arg) {
  register int r0 __asm__("r0") = op;
  register void* r1 __asm__("r1") = arg;
  __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
  return r0;
}

void linfer_cm_puts(const char* s) { semihost(kSysWrite0, (void*)s); }

__attribute__((noreturn)) void linfer_cm_exit(int code) {
  uint32_t block[2] = {kApplicationExit, (uint32_t)code};
  semihost(kSysExitExtended, block);
  for (;;) {
  }
}

// The command line QEMU passes (-semihosting-config arg=...), or "" without one.
const char* linfer_cm_cmdline(void) {
  static char line[128];
  struct {
    char* buf;
    int len;
  } block = {line, (int)sizeof line - 1};
  if (semihost(kSysGetCmdline, &block) != 0) line[0] = 0;
  return line;
}

int _write(int fd, const char* buf, int len) {
  (void)fd;
  char chunk[65];
  for (int done = 0; done < len;) {
    int n = len - done < 64 ? len - done : 64;
    memcpy(chunk, buf + done, (size_t)n);
    chunk[n] = 0;
    linfer_cm_puts(chunk);
    done += n;
  }
  return len;
}

void _exit(int code) { linfer_cm_exit(code); }

extern char __heap_start[], __heap_end[];
static char* heap_break = __heap_start;
static char* heap_high = __heap_start;

void* _sbrk(ptrdiff_t increment) {
  if (increment > __heap_end - heap_break || increment < __heap_start - heap_break) {
    errno = ENOMEM;
    return (void*)-1;
  }
  char* old = heap_break;
  heap_break += increment;
  if (heap_break > heap_high) heap_high = heap_break;
  return old;
}

size_t linfer_cm_heap_used(void) { return (size_t)(heap_high - __heap_start); }
size_t linfer_cm_heap_size(void) { return (size_t)(__heap_end - __heap_start); }

// Reached when an allocation fails outside the checks the runtime makes first (no exceptions in
// this build: libstdc++ then ends in std::terminate), or on an internal error.
void abort(void) {
  linfer_cm_puts("cortex-m: abort() (heap exhausted or an internal error)\n");
  linfer_cm_exit(134);
}
