// SPDX-License-Identifier: Apache-2.0
/*
 * The part of QEMU's TCG plugin API (plugin API version 1) that insn_count.c uses, declared here
 * so that the plugin builds on a plain Debian machine: no Debian binary package ships QEMU's
 * qemu-plugin.h (checked for bookworm's 7.2: qemu-user, qemu-user-static, qemu-system-common and
 * qemu-system-data carry no header), and the API is small enough to state.
 *
 * Written for linfer from QEMU's documented plugin interface ("QEMU TCG Plugins" in QEMU's
 * developer documentation) and checked by hand, name by name and type by type, against
 * include/qemu/qemu-plugin.h of Debian's qemu 1:7.2+dfsg-7+deb12u18 source package (QEMU 7.2.0
 * with Debian's patches, none of which touches that header): QEMU_PLUGIN_VERSION 1,
 * QEMU_PLUGIN_MIN_VERSION 0 (plugins/plugin.h). Later QEMU releases raised the version and changed
 * parts of this interface (the plain inline registration below gave way to per-vCPU variants), so
 * these declarations hold for API version 1 only: insn_count.c refuses to install on a QEMU that
 * reports any other current version (see its qemu_plugin_install).
 *
 * build_plugin.sh --debian-header builds against the real header instead (INSN_COUNT_QEMU_HEADER),
 * as a cross-check of these declarations.
 */
#ifndef LINFER_QEMU_PLUGIN_V1_H
#define LINFER_QEMU_PLUGIN_V1_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define QEMU_PLUGIN_EXPORT __attribute__((visibility("default")))

/* The API level this file describes; the plugin exports it as qemu_plugin_version. */
#define QEMU_PLUGIN_VERSION 1

typedef uint64_t qemu_plugin_id_t;

/* What QEMU tells a plugin when it installs it (only valid during qemu_plugin_install). */
typedef struct qemu_info_t {
  const char* target_name; /* guest architecture, e.g. "aarch64" */
  struct {
    int min; /* oldest plugin API level this QEMU accepts */
    int cur; /* its own plugin API level */
  } version;
  bool system_emulation;
  union {
    struct {
      int smp_vcpus;
      int max_vcpus;
    } system;
  };
} qemu_info_t;

/* Opaque handle of a translation block, valid inside the translation callback only. */
struct qemu_plugin_tb;

enum qemu_plugin_cb_flags {
  QEMU_PLUGIN_CB_NO_REGS, /* the callback neither reads nor writes guest registers */
  QEMU_PLUGIN_CB_R_REGS,
  QEMU_PLUGIN_CB_RW_REGS,
};

/* The one inline operation of API version 1: *ptr += imm, as a 64-bit add (not atomic). */
enum qemu_plugin_op {
  QEMU_PLUGIN_INLINE_ADD_U64,
};

typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void* userdata);
typedef void (*qemu_plugin_vcpu_simple_cb_t)(qemu_plugin_id_t id, unsigned int vcpu_index);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void* userdata);
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb* tb);

/* Exported by the plugin: the API level it was written for (QEMU checks it before install). */
extern QEMU_PLUGIN_EXPORT int qemu_plugin_version;

/* Exported by the plugin, called once at load; argv holds the "name=value" plugin arguments.
 * A non-zero return makes QEMU refuse the plugin. */
QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t* info, int argc, char** argv);

/* Provided by QEMU. */
void qemu_plugin_register_vcpu_init_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_simple_cb_t cb);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb* tb, qemu_plugin_vcpu_udata_cb_t cb,
                                          enum qemu_plugin_cb_flags flags, void* userdata);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb* tb, enum qemu_plugin_op op, void* ptr,
                                              uint64_t imm);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb* tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb* tb); /* guest address of the block */
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void* userdata);

#endif /* LINFER_QEMU_PLUGIN_V1_H */
