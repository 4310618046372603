// SPDX-License-Identifier: Apache-2.0
// One version: project(linfer VERSION ...) in CMakeLists.txt is its only literal; the library and
// its header read it from there (LINFER_PROJECT_VERSION is ${PROJECT_VERSION}, given by CMake).
#include <doctest/doctest.h>

#include <string>

#include "linfer/linfer.h"

TEST_CASE("linfer_version() and linfer.h's macros are the CMake project version") {
  CHECK(std::string(linfer_version()) == LINFER_PROJECT_VERSION);
  CHECK(std::string(LINFER_VERSION_STRING) == LINFER_PROJECT_VERSION);
  CHECK(std::to_string(LINFER_VERSION_MAJOR) + "." + std::to_string(LINFER_VERSION_MINOR) + "." +
            std::to_string(LINFER_VERSION_PATCH) ==
        LINFER_PROJECT_VERSION);
}
