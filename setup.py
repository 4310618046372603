# SPDX-License-Identifier: Apache-2.0
"""The Python package's wheel and sdist (docs/python.md, "pip"; pyproject.toml has the metadata).

The package is runtime/python/linfer (ctypes over the C API) with liblinfer.so.0 inside it. Two
ways to get the library:
  - from source (an sdist, or this tree): CMake builds the library alone (no tests, no tools) in
    the build folder and the wheel takes it. Needs CMake 3.25 or later, a C++17 compiler, and
    Highway and FlatBuffers (Debian: cmake g++ libhwy-dev libflatbuffers-dev flatbuffers-compiler).
  - prebuilt (scripts/wheels.sh): LINFER_WHEEL_LIBRARY names a liblinfer.so.0 that a build of the
    project made, for any architecture; LINFER_WHEEL_PLATFORM is the wheel's platform tag.
Either way the wheel is py3-none-<platform>: no Python extension, so one wheel serves every
Python 3 of that platform.
"""
import os
import re
import shutil
import subprocess
import sys
import sysconfig

from setuptools import setup
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

ROOT = os.path.dirname(os.path.abspath(__file__))
SONAME = "liblinfer.so.0"


def project_version():
    """The version of CMakeLists.txt's project(): the one place it is written."""
    with open(os.path.join(ROOT, "CMakeLists.txt"), encoding="utf-8") as f:
        m = re.search(r"project\(linfer VERSION ([0-9]+\.[0-9]+\.[0-9]+)", f.read())
    if not m:
        sys.exit("linfer: CMakeLists.txt has no project(linfer VERSION x.y.z)")
    return m.group(1)


def fail(message):
    """One line on stderr and a non-zero exit: what is missing and how to get it."""
    print("linfer: " + message, file=sys.stderr)
    sys.exit(1)


def cmake_build(build_temp):
    """Builds liblinfer.so.0 from source with CMake; the path of the library."""
    cmake = shutil.which("cmake")
    if not cmake:
        fail("building from source needs CMake 3.25 or later on PATH (Debian: apt install cmake); "
             "none found")
    out = subprocess.run([cmake, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"version ([0-9]+)\.([0-9]+)", out)
    if not m or (int(m.group(1)), int(m.group(2))) < (3, 25):
        fail("building from source needs CMake 3.25 or later; %s is %s"
             % (cmake, m.group(0) if m else "of unknown version"))
    cxx = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")
    if not cxx:
        fail("building from source needs a C++17 compiler (Debian: apt install g++); none found "
             "(c++, g++, clang++ or $CXX)")
    build = os.path.join(build_temp, "cmake")
    log = os.path.join(build_temp, "cmake.log")
    os.makedirs(build, exist_ok=True)
    with open(log, "w") as f:
        for cmd in ([cmake, "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release", "-DLINFER_BUILD_TESTS=OFF",
                     "-DLINFER_BUILD_TOOLS=OFF", "-DLINFER_WITH_XNNPACK=OFF"],
                    [cmake, "--build", build, "--target", "linfer", "-j%d" % min(os.cpu_count() or 1, 4)]):
            f.write("$ %s\n" % " ".join(cmd))
            f.flush()
            if subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT).returncode != 0:
                with open(log) as r:
                    errors = [line.strip() for line in r if "Error" in line or "error:" in line]
                first = errors[0] if errors else "see the log"
                fail("the CMake build of liblinfer failed (%s; whole log: %s)" % (first, log))
    lib = os.path.join(build, "runtime", SONAME)
    if not os.path.exists(lib):
        fail("the CMake build made no %s (log: %s)" % (lib, log))
    return lib


class BuildPy(build_py):
    """Copies the package and adds liblinfer.so.0 and _build.py beside it."""

    def run(self):
        super().run()
        lib = os.environ.get("LINFER_WHEEL_LIBRARY") or cmake_build(os.path.abspath(self.build_temp))
        if not os.path.isfile(lib):
            fail("LINFER_WHEEL_LIBRARY: no such file %s" % lib)
        pkg = os.path.join(self.build_lib, "linfer")
        shutil.copyfile(lib, os.path.join(pkg, SONAME))
        # The licenses of the libraries auditwheel will copy in beside it (scripts/wheels.sh).
        licenses = os.environ.get("LINFER_WHEEL_LICENSES")
        if licenses:
            dest = os.path.join(pkg, "third_party_licenses")
            os.makedirs(dest, exist_ok=True)
            for name in sorted(os.listdir(licenses)):
                shutil.copyfile(os.path.join(licenses, name), os.path.join(dest, name))
        with open(os.path.join(pkg, "_build.py"), "w") as f:
            f.write('# Written by setup.py for the wheel: the library is in the package folder.\n'
                    'VERSION = "%s"\nLIBRARY_DIR = "."  # relative to this folder\n'
                    'LIBRARY_SONAME = "%s"\n' % (project_version(), SONAME))

    @property
    def build_temp(self):
        return self.get_finalized_command("build").build_temp


class BinaryDistribution(Distribution):
    """A platform wheel (it holds a shared library), though no Python extension is built."""

    def has_ext_modules(self):
        return True


class BdistWheel(bdist_wheel):
    """py3-none-<platform>: ctypes, so any Python 3; the platform from LINFER_WHEEL_PLATFORM (a
    prebuilt library's) or this machine's."""

    def get_tag(self):
        plat = os.environ.get("LINFER_WHEEL_PLATFORM") or sysconfig.get_platform().replace("-", "_").replace(".", "_")
        return "py3", "none", plat


BUILD_BASE = os.environ.get("LINFER_WHEEL_BUILD_BASE", "build-python")
os.makedirs(BUILD_BASE, exist_ok=True)

setup(
    version=project_version(),
    packages=["linfer"],
    package_dir={"": "runtime/python"},
    distclass=BinaryDistribution,
    cmdclass={"build_py": BuildPy, "bdist_wheel": BdistWheel},
    options={"build": {"build_base": BUILD_BASE}, "egg_info": {"egg_base": BUILD_BASE}},
    zip_safe=False,
)
