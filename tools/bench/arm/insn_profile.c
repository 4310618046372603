// SPDX-License-Identifier: Apache-2.0
/* insn_profile: a QEMU TCG plugin (API version 1, QEMU 7.2) that counts the instructions executed
 * per translation block start address and writes, at exit, one line per address:
 *   <guest address, hex> <instructions in the block> <times executed>
 * to outfile=PATH. profile.py maps the addresses to functions of a non-PIE guest program (linked
 * statically against linfer) and subtracts two runs, as the insn_count proxy does. A block
 * translated twice (after a flush) shares its address's counter. Single-threaded guests only:
 * the counters are plain inline adds. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qemu_plugin_v1.h"

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

typedef struct Block {
  uint64_t vaddr, n_insns, executed;
  struct Block* next; /* hash chain */
} Block;

enum { kBuckets = 1 << 16 };
static Block* g_table[kBuckets];
static char* g_outfile;

static Block* block_at(uint64_t vaddr, uint64_t n_insns) {
  Block** slot = &g_table[(vaddr >> 2) & (kBuckets - 1)];
  for (Block* b = *slot; b; b = b->next)
    if (b->vaddr == vaddr && b->n_insns == n_insns) return b;
  Block* b = calloc(1, sizeof *b);
  if (!b) abort();
  b->vaddr = vaddr, b->n_insns = n_insns, b->next = *slot;
  *slot = b;
  return b;
}

static void on_tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb* tb) {
  (void)id;
  Block* b = block_at(qemu_plugin_tb_vaddr(tb), qemu_plugin_tb_n_insns(tb));
  qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &b->executed, 1);
}

static void on_atexit(qemu_plugin_id_t id, void* userdata) {
  (void)id, (void)userdata;
  FILE* f = fopen(g_outfile, "w");
  if (!f) {
    fprintf(stderr, "insn_profile: cannot write %s\n", g_outfile);
    return;
  }
  for (int i = 0; i < kBuckets; ++i)
    for (Block* b = g_table[i]; b; b = b->next)
      if (b->executed)
        fprintf(f, "%llx %llu %llu\n", (unsigned long long)b->vaddr, (unsigned long long)b->n_insns,
                (unsigned long long)b->executed);
  fclose(f);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t* info, int argc, char** argv) {
  if (!info || info->version.cur != QEMU_PLUGIN_VERSION || info->version.min > QEMU_PLUGIN_VERSION) {
    fprintf(stderr, "insn_profile: written for QEMU plugin API version %d (QEMU 7.2)\n", QEMU_PLUGIN_VERSION);
    return -1;
  }
  for (int i = 0; i < argc; ++i) {
    if (!strncmp(argv[i], "outfile=", 8))
      g_outfile = strdup(argv[i] + 8);
    else {
      fprintf(stderr, "insn_profile: unknown argument '%s' (takes outfile=PATH)\n", argv[i]);
      return -1;
    }
  }
  if (!g_outfile) {
    fprintf(stderr, "insn_profile: needs outfile=PATH\n");
    return -1;
  }
  qemu_plugin_register_vcpu_tb_trans_cb(id, on_tb_trans);
  qemu_plugin_register_atexit_cb(id, on_atexit, NULL);
  return 0;
}
