# SPDX-License-Identifier: Apache-2.0
# Debian packages (scripts/package.sh, docs/packages.md). With -DLINFER_DEBIAN_PACKAGES=ON the
# install follows Debian's layout and CPack's DEB generator makes one package per install
# component (runtime/CMakeLists.txt, tools/, runtime/python/):
#   liblinfer0      library  liblinfer.so.0 (the name follows the SONAME's major version)
#   liblinfer-dev   dev      headers, liblinfer.so, liblinfer.a, CMake package, pkg-config file
#   linfer-tools    tools    linfer-convert, linfer-run, linfer-bench
#   python3-linfer  python   the ctypes package (Architecture: all; finds liblinfer.so.0 by soname)
# Off (the default), nothing here changes the build.
if(NOT LINFER_DEBIAN_PACKAGES)
  return()
endif()
if(NOT BUILD_SHARED_LIBS OR NOT LINFER_BUILD_TOOLS)
  message(FATAL_ERROR "LINFER_DEBIAN_PACKAGES needs BUILD_SHARED_LIBS and LINFER_BUILD_TOOLS "
                      "(the -dev package adds liblinfer.a itself; linfer-tools)")
endif()
execute_process(COMMAND dpkg-architecture -qDEB_HOST_ARCH -t "${CMAKE_LIBRARY_ARCHITECTURE}"
  OUTPUT_VARIABLE deb_arch OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT CMAKE_LIBRARY_ARCHITECTURE OR NOT deb_arch)
  message(FATAL_ERROR "LINFER_DEBIAN_PACKAGES: no Debian architecture for the target "
                      "'${CMAKE_LIBRARY_ARCHITECTURE}' (dpkg-architecture, from dpkg-dev)")
endif()

# Multiarch library folder (/usr/lib/<triplet>): a normal variable over GNUInstallDirs' cache
# entry, so that configuring the folder with the option off again gives it back its own layout
# (scripts/package.sh packages the suite's build folders and hands them back as they were).
set(CMAKE_INSTALL_LIBDIR lib/${CMAKE_LIBRARY_ARCHITECTURE})

# The project has no mail address: the field names it alone (lintian's malformed-contact and the
# changelog's trailer, accepted by scripts/test-packages.sh only without an address). A
# distributor sets "Name <address>".
set(LINFER_DEB_MAINTAINER "The linfer developers" CACHE STRING
  "The packages' Maintainer field (\"Name <address>\")")
set(deb_version ${PROJECT_VERSION}-1)
set(soname_major ${PROJECT_VERSION_MAJOR})

# What every Debian package carries in /usr/share/doc/<package>: copyright and changelog.Debian.gz
# (gzip -n, dated from SOURCE_DATE_EPOCH when set, for identical rebuilds).
string(TIMESTAMP deb_date "%a, %d %b %Y %H:%M:%S +0000" UTC)
set(doc_dir ${CMAKE_BINARY_DIR}/debian-doc)
file(WRITE ${doc_dir}/changelog.Debian
"linfer (${deb_version}) unstable; urgency=medium

  * Built by scripts/package.sh with CPack (docs/packages.md).

 -- ${LINFER_DEB_MAINTAINER}  ${deb_date}
")
execute_process(COMMAND gzip -9nf ${doc_dir}/changelog.Debian COMMAND_ERROR_IS_FATAL ANY)

set(CPACK_GENERATOR DEB)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL library dev tools python)
set(CPACK_PACKAGE_NAME linfer)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE ${deb_arch})
set(CPACK_PACKAGE_CONTACT "${LINFER_DEB_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_COMPRESSION_TYPE xz)
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGE_DIRECTORY ${CMAKE_BINARY_DIR}/debian-packages)
# Dependencies between the packages: exactly this version (liblinfer0 (= 0.1.0-1)).
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)
# On other libraries: dpkg-shlibdeps where the build is native. A cross build's libraries are not
# installed on this machine, so dpkg-shlibdeps cannot see them; scripts/package.sh passes what
# scripts/deb-depends.sh works out from the same symbols files instead
# (-D CPACK_DEBIAN_<COMPONENT>_PACKAGE_DEPENDS).
if(NOT CMAKE_CROSSCOMPILING)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
  # The tools' liblinfer.so.0: found in the build, left to the dependency on liblinfer0 above.
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${CMAKE_BINARY_DIR}/runtime)
endif()
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)  # for the packages with a shared library: liblinfer0
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")

set(CPACK_DEBIAN_LIBRARY_PACKAGE_NAME liblinfer${soname_major})
set(CPACK_DEBIAN_LIBRARY_PACKAGE_SECTION libs)
# ldconfig runs from dpkg's trigger (CPack 3.25 also writes postinst/postrm calling it: harmless).
set(CPACK_DEBIAN_LIBRARY_PACKAGE_CONTROL_EXTRA ${CMAKE_CURRENT_LIST_DIR}/debian/triggers)
set(CPACK_COMPONENT_LIBRARY_DESCRIPTION "inference runtime for Linformer transformer encoders
linfer runs Linformer encoders (and full, linear, GiveTake, Performer,
sliding-window, block-sparse and LSH attention) on CPUs: it maps one model
file, plans a session's memory once and then runs with no heap allocation;
f16 and int8 weights stay f16 and int8. This package holds the library.")

set(CPACK_DEBIAN_DEV_PACKAGE_NAME liblinfer-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_COMPONENT_DEV_DEPENDS library)
if(LINFER_WITH_XNNPACK)
  set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "libxnnpack-dev, libpthreadpool-dev")  # what liblinfer.a links
endif()
set(CPACK_COMPONENT_DEV_DESCRIPTION "inference runtime for Linformer encoders - development files
The C API (linfer/linfer.h) and the C++ wrapper (linfer/linfer.hpp), the
static library, and the files find_package(linfer) and pkg-config use.")

set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME linfer-tools)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION science)
set(CPACK_COMPONENT_TOOLS_DEPENDS library)
set(CPACK_COMPONENT_TOOLS_DESCRIPTION "inference runtime for Linformer encoders - command-line tools
linfer-convert turns PyTorch, safetensors and fairseq checkpoints into
linfer's model files (executing nothing in them), linfer-run runs a model on
token ids or text, and linfer-bench measures latency and memory.")

set(CPACK_DEBIAN_PYTHON_PACKAGE_NAME python3-linfer)
set(CPACK_DEBIAN_PYTHON_PACKAGE_SECTION python)
set(CPACK_DEBIAN_PYTHON_PACKAGE_ARCHITECTURE all)
set(CPACK_COMPONENT_PYTHON_DEPENDS library)
set(CPACK_DEBIAN_PYTHON_PACKAGE_DEPENDS "python3, python3-numpy")
set(CPACK_DEBIAN_PYTHON_PACKAGE_CONTROL_EXTRA  # byte-compiled at install, cleaned at removal
  ${CMAKE_CURRENT_LIST_DIR}/debian/python/postinst ${CMAKE_CURRENT_LIST_DIR}/debian/python/prerm)
set(CPACK_COMPONENT_PYTHON_DESCRIPTION "inference runtime for Linformer encoders - Python 3 package
A ctypes package over linfer's C API: models, sessions and runs on numpy
arrays, with the GIL released while a model runs.")

foreach(component ${CPACK_COMPONENTS_ALL})
  string(TOUPPER ${component} c)
  install(FILES ${CMAKE_CURRENT_LIST_DIR}/debian/copyright ${doc_dir}/changelog.Debian.gz
    DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/${CPACK_DEBIAN_${c}_PACKAGE_NAME} COMPONENT ${component})
endforeach()
# The tools' manual pages (docs/man), compressed as Debian ships them.
foreach(tool linfer-convert linfer-run linfer-bench linfer-tokenize linfer-embed)
  configure_file(${PROJECT_SOURCE_DIR}/docs/man/${tool}.1 ${doc_dir}/${tool}.1 @ONLY)
  execute_process(COMMAND gzip -9nf ${doc_dir}/${tool}.1 COMMAND_ERROR_IS_FATAL ANY)
  install(FILES ${doc_dir}/${tool}.1.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT tools)
endforeach()
include(CPack)
