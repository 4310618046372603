// SPDX-License-Identifier: Apache-2.0
/* The threads module only (runtime/js/CMakeLists.txt). emscripten 3.1.6's dispatcher of calls
 * proxied between threads (library_pthread.c's _do_call) names two functions for the proxied
 * WebGL and canvas calls, which linfer never makes; left undefined, they would be imported from
 * JavaScript, and with them emscripten's WebGL, canvas and HTML5 event code: 13 KB of the loader,
 * linfer-threads.js. Defined here, they are never called; each answers as a build without a
 * canvas would. */
#include <emscripten/html5.h>

EMSCRIPTEN_RESULT emscripten_set_canvas_element_size(const char* target, int width, int height) {
  (void)target;
  (void)width;
  (void)height;
  return EMSCRIPTEN_RESULT_NOT_SUPPORTED;
}

EMSCRIPTEN_WEBGL_CONTEXT_HANDLE emscripten_webgl_create_context(const char* target,
                                                                const EmscriptenWebGLContextAttributes* attributes) {
  (void)target;
  (void)attributes;
  return 0;  // no context
}
