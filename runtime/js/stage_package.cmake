# SPDX-License-Identifier: Apache-2.0
# Writes the package folder OUT from the linked SIMD128 module (GLUE, WASM), the other builds'
# modules (RELAXED_DIR, THREADS_DIR, RELAXED_THREADS_DIR, each optional) and the sources in SRC
# (runtime/js/CMakeLists.txt). Both entry points are core.js before a tail; each module's loader
# is a file of its own, fetched only by the pages that load that module.
cmake_minimum_required(VERSION 3.25)
file(MAKE_DIRECTORY ${OUT})
file(READ ${SRC}/lib/core.js core)
# Its whole-line comments stay in the source (every page would download them): the first line, the
# license's, is kept.
string(REGEX REPLACE "\n[ \t]*//[^\n]*" "" core "${core}")

# A module's loader as BASE.js: emscripten's, which exports its factory to CommonJS (Node's
# require) and, imported by a browser, names it on globalThis.
function(write_loader glue base factory)
  file(READ ${glue} text)
  file(WRITE ${OUT}/${base}.js "${text}
if (typeof module !== 'object') globalThis.${factory} = ${factory};
")
endfunction()

write_loader(${GLUE} linfer createLinferWasm)
file(COPY_FILE ${WASM} ${OUT}/linfer.wasm)
# The optional modules: relaxed SIMD (core.js loads it where its probes pass) and the threads
# modules (threads > 1 where SharedArrayBuffer is usable), with their workers' script.
set(built "")
# variant, its folder's variable, core.js's key in BUILT, the loader's factory
set(optional relaxed RELAXED_DIR relaxed createLinferWasmRelaxed
  threads THREADS_DIR threads createLinferWasmThreads
  relaxed-threads RELAXED_THREADS_DIR relaxedThreads createLinferWasmRelaxedThreads)
while(optional)
  list(POP_FRONT optional variant var key factory)
  set(base linfer-${variant})
  file(REMOVE ${OUT}/${base}.wasm ${OUT}/${base}.js ${OUT}/${base}.worker.js)
  set(dir "${${var}}")
  if(dir)
    set(files glue.js ${base}.wasm)
    if(variant MATCHES threads)
      list(APPEND files worker.js)
    endif()
    foreach(f ${files})
      if(NOT EXISTS ${dir}/${f})
        message(FATAL_ERROR "LINFER_JS_${var}=${dir} has no ${f}: build the ${variant} module first")
      endif()
    endforeach()
    write_loader(${dir}/glue.js ${base} ${factory})
    file(COPY_FILE ${dir}/${base}.wasm ${OUT}/${base}.wasm)
    if(variant MATCHES threads)
      file(COPY_FILE ${dir}/worker.js ${OUT}/${base}.worker.js)
    endif()
    string(APPEND built " ${key}: true,")
  else()
    string(APPEND built " ${key}: false,")
  endif()
endwhile()
file(READ ${SRC}/lib/tail.cjs tail_cjs)
file(READ ${SRC}/lib/tail.mjs tail_mjs)
set(head "// linfer ${VERSION}: generated from runtime/js/lib (core.js).\n")
set(built "const BUILT = {${built} };\n")
file(WRITE ${OUT}/index.cjs "${head}'use strict';\n${built}${core}\n${tail_cjs}")
file(WRITE ${OUT}/index.mjs "${head}${built}${core}\n${tail_mjs}")
file(COPY_FILE ${SRC}/lib/index.d.ts ${OUT}/index.d.ts)
configure_file(${SRC}/package.json ${OUT}/package.json @ONLY)
# The license travels with the package (npm always packs LICENSE; NOTICE is in "files").
foreach(f LICENSE NOTICE)
  file(COPY_FILE ${SRC}/../../${f} ${OUT}/${f})
endforeach()
