# Writes the package folder OUT from the linked module (GLUE, WASM) and the sources in SRC
# (runtime/js/CMakeLists.txt). Both entry points are core.js between the loader and a tail.
cmake_minimum_required(VERSION 3.25)
file(READ ${GLUE} glue)
file(READ ${SRC}/lib/core.js core)
file(READ ${SRC}/lib/tail.cjs tail_cjs)
file(READ ${SRC}/lib/tail.mjs tail_mjs)
set(head "// linfer ${VERSION}: generated from runtime/js/lib (core.js) and emscripten's loader.\n")
file(WRITE ${OUT}/index.cjs "${head}'use strict';\n${glue}\n${core}\n${tail_cjs}")
file(WRITE ${OUT}/index.mjs "${head}${glue}\n${core}\n${tail_mjs}")
file(COPY_FILE ${WASM} ${OUT}/linfer.wasm)
file(COPY_FILE ${SRC}/lib/index.d.ts ${OUT}/index.d.ts)
configure_file(${SRC}/package.json ${OUT}/package.json @ONLY)
# The license travels with the package (npm always packs LICENSE; NOTICE is in "files").
foreach(f LICENSE NOTICE)
  file(COPY_FILE ${SRC}/../../${f} ${OUT}/${f})
endforeach()
