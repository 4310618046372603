# SPDX-License-Identifier: Apache-2.0
# Writes the package folder OUT from the linked module (GLUE, WASM) and the sources in SRC
# (runtime/js/CMakeLists.txt). Both entry points are core.js between the loader and a tail.
cmake_minimum_required(VERSION 3.25)
file(MAKE_DIRECTORY ${OUT})
file(READ ${GLUE} glue)
file(READ ${SRC}/lib/core.js core)
# Its whole-line comments stay in the source (every page would download them): the first line, the
# license's, is kept.
string(REGEX REPLACE "\n[ \t]*//[^\n]*" "" core "${core}")
# The relaxed-SIMD module and its loader, when the relaxed build made them (core.js loads it
# where its probe passes); else the package has the SIMD128 module only.
set(glue_relaxed "")
file(REMOVE ${OUT}/linfer-relaxed.wasm)
if(RELAXED_DIR)
  if(NOT EXISTS ${RELAXED_DIR}/glue.js OR NOT EXISTS ${RELAXED_DIR}/linfer-relaxed.wasm)
    message(FATAL_ERROR "LINFER_JS_RELAXED_DIR=${RELAXED_DIR} has no glue.js and linfer-relaxed.wasm: build the relaxed module first")
  endif()
  file(READ ${RELAXED_DIR}/glue.js glue_relaxed)
  file(COPY_FILE ${RELAXED_DIR}/linfer-relaxed.wasm ${OUT}/linfer-relaxed.wasm)
endif()
# The threads module (threads > 1 where SharedArrayBuffer is usable): its loader and worker stay
# files of their own, fetched only by the pages that load it (each worker loads the loader too);
# the loader also names its factory on globalThis, for a browser's import() of it (core.js).
set(threads_built false)
file(REMOVE ${OUT}/linfer-threads.wasm ${OUT}/linfer-threads.js ${OUT}/linfer-threads.worker.js)
if(THREADS_DIR)
  foreach(f glue.js worker.js linfer-threads.wasm)
    if(NOT EXISTS ${THREADS_DIR}/${f})
      message(FATAL_ERROR "LINFER_JS_THREADS_DIR=${THREADS_DIR} has no ${f}: build the threads module first")
    endif()
  endforeach()
  file(READ ${THREADS_DIR}/glue.js glue_threads)
  file(WRITE ${OUT}/linfer-threads.js "${glue_threads}
"
    "if (typeof module !== 'object') globalThis.createLinferWasmThreads = createLinferWasmThreads;
")
  file(COPY_FILE ${THREADS_DIR}/worker.js ${OUT}/linfer-threads.worker.js)
  file(COPY_FILE ${THREADS_DIR}/linfer-threads.wasm ${OUT}/linfer-threads.wasm)
  set(threads_built true)
endif()
file(READ ${SRC}/lib/tail.cjs tail_cjs)
file(READ ${SRC}/lib/tail.mjs tail_mjs)
set(head "// linfer ${VERSION}: generated from runtime/js/lib (core.js) and emscripten's loader.\n")
set(built "const THREADS_MODULE_BUILT = ${threads_built};\n")
file(WRITE ${OUT}/index.cjs "${head}'use strict';\n${glue}\n${glue_relaxed}\n${built}${core}\n${tail_cjs}")
file(WRITE ${OUT}/index.mjs "${head}${glue}\n${glue_relaxed}\n${built}${core}\n${tail_mjs}")
file(COPY_FILE ${WASM} ${OUT}/linfer.wasm)
file(COPY_FILE ${SRC}/lib/index.d.ts ${OUT}/index.d.ts)
configure_file(${SRC}/package.json ${OUT}/package.json @ONLY)
# The license travels with the package (npm always packs LICENSE; NOTICE is in "files").
foreach(f LICENSE NOTICE)
  file(COPY_FILE ${SRC}/../../${f} ${OUT}/${f})
endforeach()
