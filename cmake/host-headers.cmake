# SPDX-License-Identifier: Apache-2.0
# linfer_link_host_headers(DIR ...): header-only libraries (Highway, FlatBuffers, doctest) from the
# host's /usr/include for a toolchain with a C library of its own (emscripten's, newlib): the host's
# folder cannot go on the include path whole, its C library headers would shadow the toolchain's,
# so a root of links to those folders alone becomes their include folder, <DIR>_INCLUDE_DIR
# (HWY_INCLUDE_DIR, ...). Used by cmake/toolchains/wasm32-emscripten.cmake and cortex-m.cmake.
function(linfer_link_host_headers)
  set(root ${CMAKE_BINARY_DIR}/host_headers)
  foreach(dir ${ARGN})
    if(EXISTS /usr/include/${dir} AND NOT EXISTS ${root}/${dir})
      file(MAKE_DIRECTORY ${root})
      file(CREATE_LINK /usr/include/${dir} ${root}/${dir} SYMBOLIC)
    endif()
    string(TOUPPER ${dir} name)
    set(${name}_INCLUDE_DIR ${root} CACHE PATH "")
  endforeach()
endfunction()
