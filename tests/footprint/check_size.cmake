# SPDX-License-Identifier: Apache-2.0
# The footprint budget (docs/footprint.md): the stripped sizes of liblinfer and of the minimal
# program linked with it statically, for this build's key (architecture and configuration), must
# stay within 10% of the sizes recorded in tests/footprint/sizes.txt and within the budget written
# there, as ONNX Runtime's CI checks its minimal build. Sizes are deterministic for a toolchain:
# after a deliberate change, record the new ones (the message says what to write).
# First the minimal program must work: it loads an int8 Linformer (a golden checkpoint converted
# with --dtype int8) and runs it.
#   -DSTRIP= -DLIB= -DMINIMAL= -DKEY= -DRECORDS= -DTMP= -DCONVERT= -DCHECKPOINT= "-DLAUNCHER="
file(MAKE_DIRECTORY ${TMP})
execute_process(COMMAND ${LAUNCHER} ${CONVERT} ${CHECKPOINT} -o ${TMP}/minimal.int8.lfm --dtype int8
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "linfer-convert failed: ${err}")
endif()
execute_process(COMMAND ${LAUNCHER} ${MINIMAL} ${TMP}/minimal.int8.lfm 5 17 42 3 9 7
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "^[0-9]+\n$")
  message(FATAL_ERROR "the minimal program did not run the int8 model: ${out}${err}")
endif()
function(stripped_size file out)
  get_filename_component(name ${file} NAME)
  execute_process(COMMAND ${STRIP} -o ${TMP}/${name}.stripped ${file} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${STRIP} failed on ${file}")
  endif()
  file(SIZE ${TMP}/${name}.stripped bytes)
  set(${out} ${bytes} PARENT_SCOPE)
endfunction()
stripped_size(${LIB} lib_bytes)
stripped_size(${MINIMAL} minimal_bytes)
message("footprint ${KEY}: liblinfer ${lib_bytes} bytes, minimal program ${minimal_bytes} bytes (stripped)")
file(STRINGS ${RECORDS} lines REGEX "^${KEY} ")
list(LENGTH lines found)
if(NOT found EQUAL 1)
  message(FATAL_ERROR "tests/footprint/sizes.txt has ${found} lines for '${KEY}' (want 1)")
endif()
# KEY LIB_BYTES MINIMAL_BYTES BUDGET_BYTES(- for none)
string(REGEX MATCHALL "[^ \t]+" fields "${lines}")
list(GET fields 1 lib_recorded)
list(GET fields 2 minimal_recorded)
list(GET fields 3 budget)
set(failed "")
foreach(what lib minimal)
  math(EXPR limit "${${what}_recorded} + ${${what}_recorded} / 10")
  if(${what}_bytes GREATER limit)
    string(APPEND failed "${what}: ${${what}_bytes} bytes, more than 10% over the recorded ${${what}_recorded}\n")
  endif()
endforeach()
if(NOT budget STREQUAL "-" AND lib_bytes GREATER budget)
  string(APPEND failed "liblinfer: ${lib_bytes} bytes, over the budget of ${budget}\n")
endif()
if(failed)
  message(FATAL_ERROR "${failed}If the growth is meant, record it in tests/footprint/sizes.txt:\n"
                      "${KEY} ${lib_bytes} ${minimal_bytes} ${budget}")
endif()
