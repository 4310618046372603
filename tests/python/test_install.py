# SPDX-License-Identifier: Apache-2.0
"""cmake --install into a temporary prefix, then the package imported from
PREFIX/lib/python3/dist-packages by an interpreter with a clean environment (nothing of the build
tree on any path): it must load PREFIX's liblinfer, give the build tree's outputs, and keep working
when the prefix is moved."""

import json
import os
import shutil
import unittest

import numpy as np

import linfer

import support

SCRIPT = r"""
import json, sys, numpy as np, linfer
m = linfer.Model(sys.argv[1])
ids = np.frombuffer(open(sys.argv[2], "rb").read(), dtype=np.uint8)
print(json.dumps({"file": linfer.__file__, "library": linfer.library_path, "version": linfer.__version__,
                  "output": m.session().run(ids).tolist(), "info": m.info}))
"""


def clean_env(prefix):
    return {"PATH": "/usr/bin:/bin", "PYTHONPATH": os.path.join(prefix, os.environ["LINFER_PYTHON_INSTALL_DIR"])}


def inside(path, folder):
    return os.path.realpath(path).startswith(os.path.realpath(folder) + os.sep)


class InstallTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.prefix = support.tmp_path("prefix")
        shutil.rmtree(cls.prefix, ignore_errors=True)
        code, out, err = support.run([os.environ["LINFER_CMAKE"], "--install", os.environ["LINFER_BUILD_DIR"],
                                      "--prefix", cls.prefix])
        if code != 0:
            raise AssertionError("cmake --install failed: " + out + err)
        cls.work = support.tmp_path("cwd")  # not the build tree, not the source tree
        os.makedirs(cls.work, exist_ok=True)
        cls.model = os.path.join(support.MODELS, "langid.int8.lfm")
        cls.text = os.path.join(support.DATA, "langid-ru.txt")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.prefix, ignore_errors=True)
        shutil.rmtree(cls.prefix + "-moved", ignore_errors=True)

    def installed_run(self, prefix):
        code, out, err = support.run(support.python() + ["-s", "-c", SCRIPT, self.model, self.text],
                                     env=clean_env(prefix), cwd=self.work)
        self.assertEqual(code, 0, err)
        return json.loads(out)

    def test_layout(self):
        pkg = os.path.join(self.prefix, os.environ["LINFER_PYTHON_INSTALL_DIR"], "linfer")
        self.assertEqual(os.environ["LINFER_PYTHON_INSTALL_DIR"], "lib/python3/dist-packages")
        for f in ("__init__.py", "__main__.py", "_capi.py", "_build.py"):
            self.assertTrue(os.path.isfile(os.path.join(pkg, f)), f)
        scope = {}
        exec(open(os.path.join(pkg, "_build.py")).read(), scope)
        self.assertFalse(os.path.isabs(scope["LIBRARY_DIR"]))  # relative: the prefix can move
        lib = os.path.join(pkg, scope["LIBRARY_DIR"], scope["LIBRARY_SONAME"])
        self.assertTrue(os.path.isfile(lib), lib)
        self.assertTrue(inside(lib, self.prefix))

    def test_import_from_the_prefix(self):
        got = self.installed_run(self.prefix)
        self.assertTrue(inside(got["file"], self.prefix), got["file"])
        self.assertTrue(inside(got["library"], self.prefix), got["library"])
        self.assertEqual(got["version"], linfer.__version__)
        ids = support.text_ids(self.text)
        want = linfer.Model(self.model).session().run(ids)
        self.assertEqual(np.array(got["output"], dtype=np.float32).tobytes(), want.tobytes())
        self.assertEqual(got["info"], linfer.Model(self.model).info)

    def test_moved_prefix(self):
        moved = self.prefix + "-moved"
        shutil.rmtree(moved, ignore_errors=True)
        shutil.copytree(self.prefix, moved, symlinks=True)
        got = self.installed_run(moved)
        self.assertTrue(inside(got["library"], moved), got["library"])

    def test_module_command_from_the_prefix(self):
        code, out, err = support.run(support.python() + ["-s", "-m", "linfer", self.model, "--text", self.text],
                                     env=clean_env(self.prefix), cwd=self.work)
        self.assertEqual((code, err), (0, ""))
        self.assertIn("predicted class: 9", out)  # ru, the tenth label
        code, out, err = support.run(support.python() + ["-s", "-m", "linfer", self.model + ".missing",
                                                         "--text", self.text],
                                     env=clean_env(self.prefix), cwd=self.work)
        self.assertEqual(code, 1)
        self.assertEqual(len(err.splitlines()), 1)

    def test_without_the_library(self):
        """A prefix whose library is gone: import fails with ImportError naming what was tried."""
        broken = self.prefix + "-nolib"
        shutil.rmtree(broken, ignore_errors=True)
        shutil.copytree(self.prefix, broken, symlinks=True)
        try:
            for root, _, files in os.walk(broken):
                for f in files:
                    if f.startswith("liblinfer.so"):
                        os.remove(os.path.join(root, f))
            code, out, err = support.run(support.python() + ["-s", "-c", "import ctypes; ctypes.CDLL('liblinfer.so.0')"],
                                         env=clean_env(broken), cwd=self.work)
            if code == 0:
                self.skipTest("a liblinfer.so.0 is installed where the dynamic loader finds it")
            code, out, err = support.run(support.python() + ["-s", "-c", "import linfer"],
                                         env=clean_env(broken), cwd=self.work)
            self.assertNotEqual(code, 0)
            self.assertIn("ImportError: linfer: cannot load the linfer library; tried ", err)
        finally:
            shutil.rmtree(broken, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
