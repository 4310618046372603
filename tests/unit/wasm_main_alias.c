// SPDX-License-Identifier: Apache-2.0
// clang 16 and later (the relaxed-SIMD wasm build) name main(argc, argv) __main_argc_argv, which
// emscripten 3.1.6's loader does not call: this exports it as "main", the name it calls.
int __main_argc_argv(int argc, char** argv);
__attribute__((export_name("main"))) int linfer_test_main_export(int argc, char** argv) {
  return __main_argc_argv(argc, argv);
}
