# SPDX-License-Identifier: Apache-2.0
# Code that runs once per model or session (parsing and validating the file, planning, the C API's
# checks) is compiled for size in optimized builds: it is most of the library's bytes and none of
# its run time. linfer_cold_sources(FILE ...) marks such files; the kernels and the layer loop keep -O3.
# Included by the top level and by the Arm proxy's harness (tools/bench/arm/CMakeLists.txt).
function(linfer_cold_sources)
  set_source_files_properties(${ARGN} PROPERTIES COMPILE_OPTIONS "$<$<CONFIG:Release,RelWithDebInfo>:-Os>")
endfunction()
