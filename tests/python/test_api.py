# SPDX-License-Identifier: Apache-2.0
"""The Python package against the C API and linfer-run: struct layouts, model info, bit-identical
outputs, input conversions, every error path, closed objects, views and copies, session options."""

import gc
import json
import os
import unittest
import weakref

import numpy as np

import linfer
from linfer import _capi

import support

SHIPPED = [  # (model, text) pairs: every shipped model on a sample it fits
    ("byte-lm.lfm", "sample.txt"),
    ("langid.f32.lfm", "langid-de.txt"),
    ("langid.f16.lfm", "langid-fr.txt"),
    ("langid.int8.lfm", "langid-ru.txt"),
]


def model_path(name):
    return os.path.join(support.MODELS, name)


def linfer_run(args):
    return support.run(support.command("LINFER_RUN") + args)


def dump(model, text, threads=1):
    """linfer-run --dump's output for a model and a text file."""
    out = support.tmp_path("dump-%s-%s-%d.npy" % (model, text, threads))
    code, stdout, stderr = linfer_run([model_path(model), "--text", os.path.join(support.DATA, text),
                                       "--dump", out, "--threads", str(threads)])
    if code != 0:
        raise AssertionError("linfer-run failed: " + stdout + stderr)
    return np.load(out)


class LayoutTest(unittest.TestCase):
    """The ctypes structs against the C compiler's layout for this target (layout_probe.c)."""

    @classmethod
    def setUpClass(cls):
        code, stdout, stderr = support.run(support.command("LINFER_LAYOUT_PROBE"))
        if code != 0:
            raise AssertionError(stderr)
        cls.layout = json.loads(stdout)

    def test_struct_sizes_and_offsets(self):
        for cname, struct in (("linfer_model_info", _capi.ModelInfo),
                              ("linfer_session_options", _capi.SessionOptions),
                              ("linfer_profile", _capi.Profile)):
            self.assertEqual(_capi.ctypes.sizeof(struct), self.layout["sizeof." + cname], cname)
            fields = [k for k in self.layout if k.startswith(cname + ".")]
            self.assertEqual(len(fields), len(struct._fields_), cname)
            for key in fields:
                field = getattr(struct, key.split(".", 1)[1])
                self.assertEqual([field.offset, field.size], self.layout[key], key)

    def test_default_options_match_the_library(self):
        ours = _capi.SessionOptions.default()
        for name, value in self.layout["default"].items():
            if name == "arena_is_null":
                self.assertEqual(ours.arena is None, bool(value))
            else:
                self.assertEqual(getattr(ours, name), value, name)


class InfoTest(unittest.TestCase):
    def test_info_matches_linfer_run_summary(self):
        # The summary is the model's: a short text (under qemu a sample text's run takes seconds).
        text = support.tmp_path("info-text.txt")
        with open(text, "w") as f:
            f.write("Hallo")
        for name, _ in SHIPPED:
            code, stdout, _ = linfer_run([model_path(name), "--text", text])
            self.assertEqual(code, 0)
            i = linfer.Model(model_path(name)).info
            line = stdout.splitlines()[0]
            self.assertEqual(line, "model: %s, %d layers, dim %d, %d heads, n=%d, k=%d, %s weights" % (
                i["attention_kind"], i["num_layers"], i["dim"], i["num_heads"], i["n"], i["k"],
                i["weight_dtype"]))

    def test_info_fields(self):
        labels = open(model_path("langid.labels.txt")).read().split()
        for dtype in ("f32", "f16", "int8"):
            path = model_path("langid.%s.lfm" % dtype)
            i = linfer.Model(path).info
            self.assertEqual(i["file_bytes"], os.path.getsize(path))
            self.assertEqual(i["weight_dtype"], dtype)
            self.assertEqual(i["head"], "classifier")
            self.assertEqual(i["num_classes"], len(labels))
            self.assertEqual(i["output_channels"], len(labels))
            self.assertEqual(i["vocab_size"], 256)
            self.assertEqual(i["head_dim"] * i["num_heads"], i["dim"])
            self.assertIn(i["format_version"], (1, 2, 4))
            self.assertGreater(i["resident_weight_bytes"], 0)
            self.assertLessEqual(i["resident_weight_bytes"], i["file_bytes"])
            self.assertEqual((i["n"], i["k"]), (i["max_seq_len"], i["proj_len"]))
        lm = linfer.Model(model_path("byte-lm.lfm")).info
        self.assertEqual((lm["head"], lm["num_classes"], lm["output_channels"]), ("lm_logits", 0, 256))
        # Weights in their file dtype: the int8 model holds about a quarter of the f32 one's bytes.
        f32 = linfer.Model(model_path("langid.f32.lfm")).info["resident_weight_bytes"]
        int8 = linfer.Model(model_path("langid.int8.lfm")).info["resident_weight_bytes"]
        self.assertLess(int8, f32 / 2)

    def test_info_is_a_copy(self):
        m = linfer.Model(model_path("byte-lm.lfm"))
        m.info["dim"] = -1
        self.assertGreater(m.info["dim"], 0)

    def test_an_older_library_writes_fewer_fields(self):
        """struct_size as a library built before format_version existed would leave it: the
        library writes only what fits, and the package reports only what was written."""
        m = linfer.Model(model_path("langid.int8.lfm"))
        info = _capi.ModelInfo()
        info.struct_size = _capi.ModelInfo.format_version.offset
        info.format_version = 12345
        self.assertEqual(_capi.lib.linfer_model_get_info(m._handle.ptr, _capi.ctypes.byref(info)), 0)
        self.assertEqual(info.struct_size, _capi.ModelInfo.format_version.offset)
        self.assertEqual(info.format_version, 12345)  # not written
        d = linfer._info_dict(info)
        self.assertNotIn("format_version", d)
        self.assertEqual(d["resident_weight_bytes"], m.info["resident_weight_bytes"])
        # Too small a struct is refused with the library's message.
        info.struct_size = 8
        self.assertEqual(_capi.lib.linfer_model_get_info(m._handle.ptr, _capi.ctypes.byref(info)),
                         _capi.INVALID_ARGUMENT)
        self.assertIn("set it to sizeof(linfer_model_info)", _capi.last_error())

    def test_version(self):
        self.assertEqual(linfer.__version__, linfer.library_version())
        self.assertRegex(linfer.__version__, r"^\d+\.\d+\.\d+$")
        if os.environ.get("LINFER_PROJECT_VERSION"):  # CMake's project(VERSION), the one literal
            self.assertEqual(linfer.__version__, os.environ["LINFER_PROJECT_VERSION"])

    def test_flops(self):
        m = linfer.Model(model_path("byte-lm.lfm"))
        self.assertGreater(m.flops(100), 0)
        self.assertGreater(m.flops(200), m.flops(100))


class ParityTest(unittest.TestCase):
    """Outputs bit for bit equal to linfer-run --dump: the same library and kernels, called with the
    same ids and the same options (linfer-run's session: max_seq_len = the input's length, --threads).
    Also the package's default session (max_seq_len = the model's n) against linfer-run with one
    thread. Under an emulator one thread only: the target's outputs across thread counts are
    test_determinism's, num_threads reaching the library test_options_reach_the_library's."""

    def test_shipped_models_bit_identical(self):
        for name, text in SHIPPED:
            ids = support.text_ids(os.path.join(support.DATA, text))
            m = linfer.Model(model_path(name))
            for threads in (1,) if support.EMULATED else (1, 2):
                want = dump(name, text, threads)
                cases = [{"max_seq_len": len(ids), "num_threads": threads}]
                if threads == 1:
                    cases.append({})
                for options in cases:
                    with self.subTest(model=name, options=options):
                        y = m.session(**options).run(ids)
                        self.assertEqual(y.dtype, np.float32)
                        self.assertEqual(y.shape, want.shape)
                        self.assertEqual(y.tobytes(), want.tobytes())

    def test_output_shapes(self):
        ids = support.text_ids(os.path.join(support.DATA, "sample.txt"), 50)
        lm = linfer.Model(model_path("byte-lm.lfm"))
        s = lm.session()
        self.assertEqual(s.run(ids).shape, (50, 256))
        self.assertEqual(s.hidden_states().shape, (50, lm.info["dim"]))
        self.assertEqual(s.output().tobytes(), s.run(ids).tobytes())
        cls = linfer.Model(model_path("langid.f32.lfm"))
        s = cls.session()
        self.assertEqual(s.run(ids).shape, (1, 10))
        self.assertEqual(s.hidden_states().shape, (50, cls.info["dim"]))


class InputTest(unittest.TestCase):
    """Every accepted form of token ids gives the int32 array's output; the rest is refused."""

    @classmethod
    def setUpClass(cls):
        cls.model = linfer.Model(model_path("byte-lm.lfm"))
        cls.session = cls.model.session(max_seq_len=64)
        cls.ids = support.text_ids(os.path.join(support.DATA, "sample.txt"), 40)
        cls.want = cls.session.run(cls.ids)

    def check_same(self, ids):
        self.assertEqual(self.session.run(ids).tobytes(), self.want.tobytes())

    def test_accepted_forms(self):
        ids = self.ids
        self.check_same(list(ids))
        self.check_same([int(v) for v in ids])
        self.check_same(tuple(int(v) for v in ids))
        self.check_same(ids.astype(np.int64))
        self.check_same(ids.astype(np.uint8))
        self.check_same(ids.astype(np.uint16))
        self.check_same(ids.astype(np.uint32))
        self.check_same(ids.astype(">i4"))  # big-endian
        self.check_same(bytes(ids.astype(np.uint8)))
        self.check_same(bytearray(ids.astype(np.uint8)))
        strided = np.zeros(80, dtype=np.int32)
        strided[::2] = ids
        self.assertFalse(strided[::2].flags.c_contiguous)
        self.check_same(strided[::2])
        self.check_same(np.array(ids[::-1])[::-1])

    def test_refused_forms(self):
        s = self.session
        cases = [
            (None, "token ids must be a 1-D sequence of integers, got None"),
            ("hello", "token ids must be a 1-D sequence of integers, got a str (encode it first)"),
            (np.array([1.0, 2.0]), "token ids must be integers, got an array of float64"),
            ([1.0, 2.0], "token ids must be integers, got an array of float64"),
            ([1, 2.5], "token ids must be integers, got an array of float64"),
            (np.array([1, 2], dtype=np.float32), "token ids must be integers, got an array of float32"),
            ([True, False], "token ids must be integers, got an array of bool"),
            (np.array([[1, 2], [3, 4]], dtype=np.int32), "token ids must be 1-D, got an array of shape (2, 2)"),
            (np.int32(5), "token ids must be 1-D, got an array of shape ()"),
            (7, "token ids must be 1-D, got an array of shape ()"),
            # numpy sizes the string type by its default integer: <U21 on 64 bits, <U11 on 32.
            ([1, "a"], "token ids must be integers, got an array of %s" % np.asarray([1, "a"]).dtype),
            ([2 ** 40], "token id 1099511627776 at position 0 is outside the vocabulary [0, 256)"),
            (np.array([3, 2 ** 31], dtype=np.uint32),
             "token id 2147483648 at position 1 is outside the vocabulary [0, 256)"),
            (np.array([-2 ** 33], dtype=np.int64),
             "token id -8589934592 at position 0 is outside the vocabulary [0, 256)"),
        ]
        for ids, message in cases:
            with self.subTest(ids=ids):
                with self.assertRaises(linfer.InvalidArgumentError) as cm:
                    s.run(ids)
                self.assertEqual(str(cm.exception), message)
                self.assertEqual(cm.exception.status, _capi.INVALID_ARGUMENT)
        # The session still works after all of that.
        self.check_same(self.ids)

    def test_c_api_messages(self):
        """Refused by the library: the exception carries linfer_last_error() verbatim."""
        s = self.session
        s.run(self.ids)
        cases = [
            ([1, 256], "token id 256 at position 1 is outside the vocabulary [0, 256)"),
            (np.array([5, -1], dtype=np.int32), "token id -1 at position 1 is outside the vocabulary [0, 256)"),
            (np.zeros(65, dtype=np.int32), "input length 65 is outside [1, 64]"),
            ([], "input length 0 is outside [1, 64]"),
            (np.zeros(0, dtype=np.int64), "input length 0 is outside [1, 64]"),
        ]
        for ids, message in cases:
            with self.subTest(ids=ids):
                with self.assertRaises(linfer.InvalidArgumentError) as cm:
                    s.run(ids)
                self.assertEqual(str(cm.exception), message)
                self.assertEqual(cm.exception.status_name, "invalid argument")
        # Refused before any computation: the last run's output is still there.
        self.assertEqual(s.output().tobytes(), self.want.tobytes())

    def test_caller_array_not_read_during_run(self):
        """ids are copied into the session before the library runs: changing the caller's array
        afterwards changes nothing, and the caller's array is never written."""
        ids = self.ids.copy()
        before = ids.copy()
        self.assertEqual(self.session.run(ids).tobytes(), self.want.tobytes())
        np.testing.assert_array_equal(ids, before)

    def test_embeddings(self):
        m = linfer.Model(model_path("langid.f32.lfm"))
        s = m.session(max_seq_len=32)
        dim = m.info["dim"]
        x = np.random.default_rng(1).standard_normal((20, dim)).astype(np.float32)
        y = s.run_embeddings(x)
        self.assertEqual(y.shape, (1, 10))
        self.assertEqual(s.run_embeddings(x.astype(np.float64)).tobytes(), y.tobytes())
        self.assertEqual(s.run_embeddings(np.asfortranarray(x)).tobytes(), y.tobytes())
        self.assertNotEqual(s.run_embeddings(x[::-1].copy()).tobytes(), y.tobytes())
        self.assertEqual(s.hidden_states().shape, (20, dim))
        for bad, message in ((x[:, :-1], "embeddings must be [T, %d], got an array of shape (20, %d)" % (dim, dim - 1)),
                             (x[0], "embeddings must be [T, %d], got an array of shape (%d,)" % (dim, dim)),
                             (x.astype(np.int32), "embeddings must be floating point, got an array of int32"),
                             (None, "embeddings must be a 2-D float array [T, %d], got None" % dim),
                             (np.zeros((33, dim), np.float32), "input length 33 is outside [1, 32]"),
                             (np.zeros((0, dim), np.float32), "input length 0 is outside [1, 32]")):
            with self.subTest(message=message):
                with self.assertRaises(linfer.InvalidArgumentError) as cm:
                    s.run_embeddings(bad)
                self.assertEqual(str(cm.exception), message)


class FileErrorTest(unittest.TestCase):
    """Bad files: the exception's message is the C API's, the one linfer-run prints after the path."""

    def check(self, path, cls):
        with self.assertRaises(cls) as cm:
            linfer.Model(path)
        code, _, stderr = linfer_run([path, "--text", os.path.join(support.DATA, "sample.txt")])
        self.assertEqual(code, 1)
        self.assertEqual(stderr, "linfer-run: %s: %s\n" % (path, cm.exception))
        return cm.exception

    def test_bad_files(self):
        missing = os.path.join(support.TMP, "no-such-model.lfm")
        e = self.check(missing, linfer.FileError)
        self.assertIsInstance(e, OSError)
        self.assertEqual(e.status_name, "i/o error")
        self.assertIn("No such file", str(e))
        self.check(support.TMP, linfer.FileError)  # a folder
        empty = support.tmp_path("empty.lfm")
        open(empty, "wb").close()
        e = self.check(empty, linfer.InvalidModelError)
        self.assertEqual(str(e), "file is too small to be a linfer model (0 bytes)")
        truncated = support.tmp_path("truncated.lfm")
        with open(model_path("langid.int8.lfm"), "rb") as f:
            data = f.read()
        with open(truncated, "wb") as f:
            f.write(data[: len(data) // 2])
        e = self.check(truncated, linfer.InvalidModelError)
        self.assertEqual(e.status, _capi.INVALID_MODEL)
        garbage = support.tmp_path("garbage.lfm")
        with open(garbage, "wb") as f:
            f.write(bytes(range(256)) * 8)
        self.check(garbage, linfer.InvalidModelError)

    def test_bad_paths(self):
        for path, message in ((None, "the model path must be a str, bytes or os.PathLike, got None"),
                              (3, "the model path must be a str, bytes or os.PathLike, got 3"),
                              ("a\0b", "the model path contains a NUL character")):
            with self.assertRaises(linfer.InvalidArgumentError) as cm:
                linfer.Model(path)
            self.assertEqual(str(cm.exception), message)

    def test_path_types_and_bytes(self):
        import pathlib
        path = model_path("langid.int8.lfm")
        want = linfer.Model(path).info
        self.assertEqual(linfer.Model(pathlib.Path(path)).info, want)
        self.assertEqual(linfer.Model(os.fsencode(path)).info, want)
        with open(path, "rb") as f:
            data = f.read()
        m = linfer.Model.from_bytes(data)
        self.assertEqual(m.info, want)
        ids = support.text_ids(os.path.join(support.DATA, "langid-de.txt"))
        self.assertEqual(m.session().run(ids).tobytes(), linfer.Model(path).session().run(ids).tobytes())
        self.assertEqual(linfer.Model.from_bytes(bytearray(data)).info, want)
        with self.assertRaises(linfer.InvalidModelError) as cm:
            linfer.Model.from_bytes(data[:100])
        self.assertEqual(str(cm.exception), "model file is corrupt: the FlatBuffers verifier rejected it (truncated or damaged)")
        with self.assertRaises(linfer.InvalidArgumentError):
            linfer.Model.from_bytes(None)


class ClosedTest(unittest.TestCase):
    def test_closed_session(self):
        m = linfer.Model(model_path("byte-lm.lfm"))
        s = m.session()
        s.run([1, 2, 3])
        s.close()
        self.assertTrue(s.closed)
        for call in (lambda: s.run([1, 2, 3]), lambda: s.step(1), lambda: s.output(),
                     lambda: s.hidden_states(), lambda: s.describe(), lambda: s.memory(),
                     lambda: s.reset_state(), lambda: s.profile(), lambda: s.profile_reset(),
                     lambda: s.run_embeddings(np.zeros((1, m.info["dim"]), np.float32))):
            with self.assertRaises(linfer.InvalidArgumentError) as cm:
                call()
            self.assertEqual(str(cm.exception), "the session is closed")
        s.close()  # twice is fine
        with m.session() as s2:
            s2.run([1])
        self.assertTrue(s2.closed)

    def test_closed_model(self):
        m = linfer.Model(model_path("byte-lm.lfm"))
        s = m.session()
        want = s.run([5, 6, 7])
        m.close()
        self.assertTrue(m.closed)
        for call in (lambda: m.info, lambda: m.session(), lambda: m.flops(3), lambda: linfer.Session(m)):
            with self.assertRaises(linfer.InvalidArgumentError) as cm:
                call()
            self.assertEqual(str(cm.exception), "the model is closed")
        # A session made before keeps the model's memory alive and still runs.
        self.assertEqual(s.run([5, 6, 7]).tobytes(), want.tobytes())
        with linfer.Model(model_path("byte-lm.lfm")) as m2:
            pass
        self.assertTrue(m2.closed)

    def test_not_a_model(self):
        for bad in (None, "model.lfm"):
            with self.assertRaises(linfer.InvalidArgumentError):
                linfer.Session(bad)

    def test_native_memory_goes_with_the_last_reference(self):
        """close() drops the owner's reference; the model outlives its sessions, a session its
        views. Followed through the native frees (recorded) and weak references to the handles."""
        freed = []

        def record(handle, what):
            free = handle._free
            handle._free = lambda ptr: (freed.append(what), free(ptr))

        m = linfer.Model(model_path("langid.int8.lfm"))
        record(m._handle, "model")
        model_handle = weakref.ref(m._handle)
        s = m.session()
        record(s._handle, "session")
        session_handle = weakref.ref(s._handle)
        view = s.run([1, 2, 3], copy=False)
        snapshot = view.copy()
        m.close()
        s.close()
        del s
        gc.collect()
        self.assertEqual(freed, [])  # the view holds the session, which holds the model
        self.assertIsNotNone(session_handle())
        self.assertIsNotNone(model_handle())
        np.testing.assert_array_equal(view, snapshot)  # still the session's memory
        derived = view[0, :3]
        del view
        gc.collect()
        self.assertEqual(freed, [])  # a slice of a view is a view too
        del derived
        gc.collect()
        self.assertEqual(freed, ["session", "model"])
        self.assertIsNone(session_handle())
        self.assertIsNone(model_handle())
        # Without views: close() frees the session at once; the model goes with its last session.
        freed.clear()
        m = linfer.Model(model_path("langid.int8.lfm"))
        record(m._handle, "model")
        s = m.session()
        record(s._handle, "session")
        s.run([1, 2, 3])
        m.close()
        self.assertEqual(freed, [])
        s.close()
        self.assertEqual(freed, ["session", "model"])


class ViewTest(unittest.TestCase):
    def setUp(self):
        self.model = linfer.Model(model_path("langid.int8.lfm"))
        self.s = self.model.session()
        self.a = support.text_ids(os.path.join(support.DATA, "langid-de.txt"))
        self.b = support.text_ids(os.path.join(support.DATA, "langid-ru.txt"))

    def test_copies_are_the_callers(self):
        ya = self.s.run(self.a)
        ha = self.s.hidden_states()
        self.assertTrue(ya.flags.writeable and ya.flags.owndata)
        yb = self.s.run(self.b)
        self.assertFalse(np.array_equal(ya, yb))
        self.assertEqual(ya.tobytes(), self.s.run(self.a).tobytes())
        self.assertEqual(ha.shape[0], len(self.a))
        ya[0, 0] = 1e9  # it is the caller's to change
        self.assertNotEqual(self.s.output()[0, 0], 1e9)

    def test_views_are_overwritten_by_the_next_run(self):
        va = self.s.run(self.a, copy=False)
        want_a = va.copy()
        self.assertFalse(va.flags.writeable)
        with self.assertRaises(ValueError):
            va[0, 0] = 1.0
        self.assertEqual(self.s.output(copy=False).__array_interface__["data"][0],
                         va.__array_interface__["data"][0])  # the same memory: no copy
        yb = self.s.run(self.b)
        self.assertEqual(va.tobytes(), yb.tobytes())  # the documented hazard of copy=False
        self.assertNotEqual(va.tobytes(), want_a.tobytes())
        hv = self.s.hidden_states(copy=False)
        self.assertEqual(hv.shape, (len(self.b), self.model.info["dim"]))
        self.assertFalse(hv.flags.writeable)


class OptionsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.model = linfer.Model(model_path("langid.f32.lfm"))
        # Under an emulator the first 64 ids: still 8 blocks of 8 rows and rows for 2 threads, at an
        # eighth of the runs' time.
        cls.ids = support.text_ids(os.path.join(support.DATA, "langid-fr.txt"),
                                   64 if support.EMULATED else None)
        cls.want = cls.model.session().run(cls.ids)

    def close_to(self, y):
        scale = float(np.abs(self.want).max())
        self.assertLessEqual(float(np.abs(y - self.want).max()), 1e-4 * scale)

    def test_options_reach_the_library(self):
        m = self.model
        # CMake tells which build this is: XNNPACK's path runs there and is refused elsewhere.
        with_xnnpack = os.environ.get("LINFER_BUILT_WITH_XNNPACK", "1") == "1"
        if with_xnnpack:
            s = m.session(dense_path="xnnpack")
            self.assertIn("xnnpack", s.describe())
            self.assertGreater(s.memory()["packed_weight_bytes"], 0)
            self.close_to(s.run(self.ids))
        else:
            for options in ({"dense_path": "xnnpack"}, {"dense_path": 1}):
                with self.assertRaises(linfer.UnsupportedError) as cm:
                    m.session(**options)
                self.assertEqual(str(cm.exception), "dense_path LINFER_DENSE_XNNPACK: this build has no "
                                 "XNNPACK (configure with -DLINFER_WITH_XNNPACK=ON)")
        s = m.session(dense_path="auto")
        self.assertNotIn("xnnpack", s.describe())
        self.assertEqual(s.memory()["packed_weight_bytes"], 0)
        s = m.session(row_pipeline="off")
        self.assertIn("row pipeline: off", s.describe())
        self.close_to(s.run(self.ids))
        s = m.session(row_pipeline="on", pipeline_block_rows=8)
        self.assertIn("row pipeline: on, 8 rows", s.describe())
        self.close_to(s.run(self.ids))
        s = m.session(num_threads=2, thread_wait="yield")
        self.assertIn("threads: 2 (yielding)", s.describe())
        self.close_to(s.run(self.ids))
        s = m.session(num_threads=2, thread_wait="spin")
        self.assertIn("threads: 2", s.describe())
        self.assertNotIn("yielding", s.describe())
        s = m.session(max_isa="generic")
        self.assertIn("generic", s.describe())
        self.close_to(s.run(self.ids))
        # fp16_arithmetic concerns f16 layers on CPUs with fp16 arithmetic: this f32 model's
        # session is the same with it (kernels and bits).
        s = m.session(fp16_arithmetic=True)
        self.assertEqual(s.describe(), m.session().describe())
        np.testing.assert_array_equal(s.run(self.ids), m.session().run(self.ids))
        s = m.session(dense_path=0, row_pipeline=1, num_threads=2, thread_wait=2, max_isa=1)  # C enum values
        self.assertIn("row pipeline: off", s.describe())
        self.assertIn("yielding", s.describe())
        self.assertIn("generic", s.describe())
        if with_xnnpack:
            self.assertIn("xnnpack", m.session(dense_path=1).describe())

    def test_memory(self):
        small = self.model.session(max_seq_len=16).memory()
        large = self.model.session().memory()
        self.assertGreater(small["arena_bytes"], 0)
        self.assertGreater(large["arena_bytes"], small["arena_bytes"])
        self.assertEqual(self.model.session(max_seq_len=16).max_seq_len, 16)
        self.assertEqual(self.model.session().max_seq_len, self.model.info["n"])

    def test_profile(self):
        s = self.model.session(profiling=True)
        for _ in range(3):
            s.run(self.ids)
        p = s.profile()
        self.assertEqual(p["runs"], 3)
        self.assertGreater(p["dense"], 0.0)
        self.assertEqual(set(p), {"embedding", "norm", "dense", "compress", "attention", "activation",
                                  "elementwise", "runs"})
        s.profile_reset()
        self.assertEqual(s.profile()["runs"], 0)
        off = self.model.session()
        off.run(self.ids)
        self.assertEqual(off.profile()["dense"], 0.0)

    def test_refused_options(self):
        m = self.model
        n = m.info["n"]
        cases = [  # Python's checks, then the library's messages
            ({"num_threads": -1}, "num_threads must be in [0, 4294967295], got -1"),
            ({"num_threads": 1.5}, "num_threads must be an integer, got 1.5"),
            ({"num_threads": None}, "num_threads must be an integer, got None"),
            ({"max_seq_len": -3}, "max_seq_len must be in [0, 4294967295], got -3"),
            ({"dense_path": "fast"}, "dense_path must be one of 'auto', 'xnnpack', got 'fast'"),
            ({"row_pipeline": None}, "row_pipeline must be one of 'auto', 'off', 'on', got None"),
            ({"max_isa": "sse"}, "max_isa must be one of 'auto', 'generic', 'avx2', 'avxvnni', "
                                 "'avx512', 'avx512_vnni', 'neon', 'neon_dot', 'sse4', 'neon_i8mm', "
                                 "'amx', 'avx512_bf16', got 'sse'"),
            ({"num_threads": 1000}, "num_threads 1000 exceeds 256"),
            ({"max_seq_len": n + 1}, "max_seq_len %d exceeds the model's n = %d" % (n + 1, n)),
            ({"dense_path": 7}, "dense_path 7 is not a linfer_dense_path"),
            ({"row_pipeline": 9}, "row_pipeline 9 is not a linfer_row_pipeline"),
            ({"thread_wait": 5}, "thread_wait 5 is not a linfer_thread_wait"),
            ({"max_isa": 99}, "max_isa 99 is not a linfer_isa"),
            ({"pipeline_block_rows": 5000}, "pipeline_block_rows 5000 exceeds 4096"),
        ]
        for options, message in cases:
            with self.subTest(options=options):
                with self.assertRaises(linfer.InvalidArgumentError) as cm:
                    m.session(**options)
                self.assertEqual(str(cm.exception), message)
        with self.assertRaises(TypeError):
            m.session(arena=bytearray(100))  # not exposed

    def test_step_refused_on_other_models(self):
        s = self.model.session()
        with self.assertRaises(linfer.InvalidArgumentError) as cm:
            s.step(1)
        self.assertEqual(str(cm.exception), "token-by-token runs need a causal model of linear_elu or performer attention")

    def test_nothing_before_the_first_run(self):
        s = self.model.session()
        for call in (s.output, s.hidden_states):
            with self.assertRaises(linfer.InvalidArgumentError) as cm:
                call()
            self.assertEqual(str(cm.exception), "the session has not run yet")


class TokenizerTest(unittest.TestCase):
    """Model.tokenize, detokenize and Session.run_text on the fuzz corpus's models with a
    tokenizer; linfer-run --text through the tokenizer gives the same output."""

    SEEDS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fuzz", "corpus", "fuzz_lfm")

    def test_wordpiece(self):
        m = linfer.Model(os.path.join(self.SEEDS, "tokenizer_wordpiece_f32.lfm"))
        self.assertTrue(m.has_tokenizer)
        self.assertEqual(m.tokenize("Unaffable, Caf\u00e9 [MASK]").tolist(), [2, 5, 6, 7, 9, 11, 4, 3])
        self.assertEqual(m.detokenize([2, 5, 6, 7, 9, 11, 3]), "unaffable , cafe")
        with self.assertRaises(linfer.InvalidArgumentError):
            m.tokenize(5)
        text = "hello, cafe!"
        out = m.session().run_text(text)
        path = support.tmp_path("tokenizer-text.txt")
        with open(path, "w") as f:
            f.write(text)
        dumped = support.tmp_path("tokenizer-text.npy")
        code, stdout, stderr = linfer_run([os.path.join(self.SEEDS, "tokenizer_wordpiece_f32.lfm"), "--text", path,
                                           "--dump", dumped])
        self.assertEqual(code, 0, stdout + stderr)
        np.testing.assert_array_equal(np.load(dumped), out)

    def test_byte_bpe_and_no_tokenizer(self):
        m = linfer.Model(os.path.join(self.SEEDS, "tokenizer_byte_bpe_f32.lfm"))
        self.assertEqual(m.tokenize(b"hello world\xff").tolist(), [259, 260, 111, 114, 108, 100, 239, 191, 189])
        plain = linfer.Model(model_path("byte-lm.lfm"))
        self.assertFalse(plain.has_tokenizer)
        with self.assertRaises(linfer.UnsupportedError):
            plain.tokenize("a")


if __name__ == "__main__":
    unittest.main()
