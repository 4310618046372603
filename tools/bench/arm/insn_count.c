// SPDX-License-Identifier: Apache-2.0
/*
 * insn_count: a QEMU TCG plugin that counts the guest instructions a program executes, for
 * linfer's ARM performance proxy (tools/bench/arm/README.md). A dynamic instruction count is a
 * proxy for work, not a timing: it ignores latencies, dual issue, caches and memory bandwidth.
 *
 *   qemu-aarch64 -plugin ./libinsn_count.so[,outfile=PATH][,mode=inline|atomic] PROGRAM ...
 *
 * When a translation block (TB) is translated, the plugin attaches to it an operation that adds
 * the block's instruction count to a counter each time the block starts executing; the total is
 * printed at exit, to stderr ("insn_count: N instructions ...") and, with outfile=PATH, written
 * to PATH as one line holding N.
 *
 * Exactness: a block that leaves early (a fault, or a syscall in user mode ends a block anyway)
 * is still counted whole; in practice the error is a few instructions per such event.
 *   mode=inline (default): QEMU emits the add as generated code (fast). The add is not atomic, so
 *     with more than one guest thread running at a time the count can lose increments; the
 *     plugin warns at exit when the guest had more than one vCPU (thread).
 *   mode=atomic: a callback per executed block adds atomically (slower; exact with threads).
 *
 * Built by build_plugin.sh against qemu_plugin_v1.h (or, with -DINSN_COUNT_QEMU_HEADER, QEMU's
 * own qemu-plugin.h). It speaks plugin API version 1 and refuses to install on any other.
 */
#ifdef INSN_COUNT_QEMU_HEADER
#include <qemu-plugin.h>
#else
#include "qemu_plugin_v1.h"
#endif

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

/* The API level these sources were written and checked for. */
#define INSN_COUNT_API 1
#if QEMU_PLUGIN_VERSION != INSN_COUNT_API
#error "insn_count.c is written for QEMU plugin API version 1 (the header found says otherwise)"
#endif

static uint64_t g_insns; /* the counter (inline adds or atomic callbacks) */
static unsigned g_vcpus; /* vCPUs seen (user mode: guest threads) */
static int g_atomic;     /* mode=atomic */
static char* g_outfile;  /* outfile=PATH, or NULL */

static void on_tb_exec(unsigned int vcpu_index, void* userdata) {
  (void)vcpu_index;
  __atomic_fetch_add(&g_insns, (uint64_t)(uintptr_t)userdata, __ATOMIC_RELAXED);
}

static void on_tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb* tb) {
  (void)id;
  const size_t n = qemu_plugin_tb_n_insns(tb);
  if (g_atomic)
    qemu_plugin_register_vcpu_tb_exec_cb(tb, on_tb_exec, QEMU_PLUGIN_CB_NO_REGS, (void*)(uintptr_t)n);
  else
    qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &g_insns, n);
}

static void on_vcpu_init(qemu_plugin_id_t id, unsigned int vcpu_index) {
  (void)id;
  (void)vcpu_index;
  __atomic_fetch_add(&g_vcpus, 1u, __ATOMIC_RELAXED);
}

static void on_atexit(qemu_plugin_id_t id, void* userdata) {
  (void)id;
  (void)userdata;
  const uint64_t total = __atomic_load_n(&g_insns, __ATOMIC_RELAXED);
  const unsigned vcpus = __atomic_load_n(&g_vcpus, __ATOMIC_RELAXED);
  fprintf(stderr, "insn_count: %" PRIu64 " instructions (%s, %u vCPU%s)\n", total, g_atomic ? "atomic" : "inline",
          vcpus, vcpus == 1 ? "" : "s");
  if (!g_atomic && vcpus > 1)
    fprintf(stderr,
            "insn_count: warning: %u guest threads shared one non-atomic counter; the "
            "count may be low (use mode=atomic)\n",
            vcpus);
  if (g_outfile) {
    FILE* f = fopen(g_outfile, "w");
    if (!f || fprintf(f, "%" PRIu64 "\n", total) < 0 || fclose(f) != 0)
      fprintf(stderr, "insn_count: cannot write %s\n", g_outfile);
  }
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t* info, int argc, char** argv) {
  /* QEMU itself only checks that our level lies within [min, cur]; a QEMU whose current level is
   * newer may have changed what these functions do, so insist on the level we were checked for. */
  if (!info || info->version.cur != INSN_COUNT_API || info->version.min > INSN_COUNT_API) {
    fprintf(stderr,
            "insn_count: refusing to load: this plugin speaks QEMU plugin API version %d, but this "
            "QEMU reports API versions %d..%d; rebuild it for this QEMU (tools/bench/arm/"
            "build_plugin.sh targets Debian bookworm's QEMU 7.2)\n",
            INSN_COUNT_API, info ? info->version.min : -1, info ? info->version.cur : -1);
    return -1;
  }
  for (int i = 0; i < argc; ++i) {
    const char* a = argv[i];
    if (strncmp(a, "outfile=", 8) == 0 && a[8]) {
      free(g_outfile);
      g_outfile = strdup(a + 8);
    } else if (strcmp(a, "mode=inline") == 0) {
      g_atomic = 0;
    } else if (strcmp(a, "mode=atomic") == 0) {
      g_atomic = 1;
    } else {
      fprintf(stderr, "insn_count: unknown argument '%s' (takes outfile=PATH, mode=inline|atomic)\n", a);
      return -1;
    }
  }
  qemu_plugin_register_vcpu_init_cb(id, on_vcpu_init);
  qemu_plugin_register_vcpu_tb_trans_cb(id, on_tb_trans);
  qemu_plugin_register_atexit_cb(id, on_atexit, NULL);
  return 0;
}
