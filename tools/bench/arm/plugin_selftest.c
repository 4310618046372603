// SPDX-License-Identifier: Apache-2.0
/*
 * plugin_selftest PLUGIN.so: checks insn_count's install logic without QEMU. This program plays
 * QEMU's side of the plugin API (it defines, and exports with -rdynamic, the functions the plugin
 * calls), loads the plugin and installs it under several reported API versions: it must accept
 * version 1 only and refuse unknown arguments. Prints "N passed, M failed"; exit status 0 when all
 * passed. build_plugin.sh runs it after each build.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "qemu_plugin_v1.h"

static int g_registered; /* registrations seen since the last reset */

void qemu_plugin_register_vcpu_init_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_simple_cb_t cb) {
  (void)id;
  (void)cb;
  ++g_registered;
}
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb) {
  (void)id;
  (void)cb;
  ++g_registered;
}
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb* tb, qemu_plugin_vcpu_udata_cb_t cb,
                                          enum qemu_plugin_cb_flags flags, void* userdata) {
  (void)tb;
  (void)cb;
  (void)flags;
  (void)userdata;
}
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb* tb, enum qemu_plugin_op op, void* ptr,
                                              uint64_t imm) {
  (void)tb;
  (void)op;
  (void)ptr;
  (void)imm;
}
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb* tb) {
  (void)tb;
  return 0;
}
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void* userdata) {
  (void)id;
  (void)cb;
  (void)userdata;
  ++g_registered;
}

typedef int (*install_fn)(qemu_plugin_id_t, const qemu_info_t*, int, char**);

static int g_passed, g_failed;

static void check(int ok, const char* what) {
  if (ok) {
    ++g_passed;
  } else {
    ++g_failed;
    fprintf(stderr, "plugin_selftest: FAILED: %s\n", what);
  }
}

static int install(install_fn fn, int min, int cur, int argc, char** argv) {
  qemu_info_t info;
  memset(&info, 0, sizeof info);
  info.target_name = "aarch64";
  info.version.min = min;
  info.version.cur = cur;
  g_registered = 0;
  return fn(1, &info, argc, argv);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: plugin_selftest PLUGIN.so\n");
    return 2;
  }
  void* h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "plugin_selftest: %s\n", dlerror());
    return 1;
  }
  const int* version = (const int*)dlsym(h, "qemu_plugin_version");
  install_fn fn = (install_fn)dlsym(h, "qemu_plugin_install");
  check(version && *version == 1, "the plugin exports qemu_plugin_version = 1");
  check(fn != NULL, "the plugin exports qemu_plugin_install");
  if (!fn) return 1;

  char out[] = "outfile=/dev/null", atomic[] = "mode=atomic", bad[] = "colour=blue";
  char* good_args[] = {out, atomic};
  char* bad_args[] = {bad};
  fprintf(stderr, "plugin_selftest: the refusals below are expected\n");
  check(install(fn, 0, 1, 0, NULL) == 0 && g_registered == 3, "installs on API 0..1 (QEMU 7.2)");
  check(install(fn, 0, 1, 2, good_args) == 0, "accepts outfile= and mode=");
  check(install(fn, 0, 2, 0, NULL) != 0 && g_registered == 0, "refuses API 0..2");
  check(install(fn, 2, 3, 0, NULL) != 0 && g_registered == 0, "refuses API 2..3");
  check(install(fn, 0, 0, 0, NULL) != 0 && g_registered == 0, "refuses API 0..0");
  check(install(fn, 0, 1, 1, bad_args) != 0, "refuses an unknown argument");
  printf("plugin_selftest: %d passed, %d failed\n", g_passed, g_failed);
  return g_failed ? 1 : 0;
}
