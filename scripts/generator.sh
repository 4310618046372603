# SPDX-License-Identifier: Apache-2.0
# Sourced by the build scripts: Ninja when it is installed (the suite's builds take about 15% less
# time than with make). CMake reads CMAKE_GENERATOR only when it creates a build folder, so a
# folder made earlier with another generator keeps it.
if [ -z "${CMAKE_GENERATOR:-}" ] && command -v ninja > /dev/null; then
  export CMAKE_GENERATOR=Ninja
fi
