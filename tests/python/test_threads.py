# SPDX-License-Identifier: Apache-2.0
"""Threads: sessions on one shared model in several Python threads give the outputs of one session
bit for bit; the GIL is released while the library runs; a session shared by threads is serialized;
a caller changing its ids array during a run cannot make the library read outside the vocabulary."""

import ctypes
import os
import sys
import threading
import time
import unittest

import numpy as np

import linfer
from linfer import _capi

import support


def inputs(count, vocab, n):
    rng = np.random.default_rng(7)
    return [rng.integers(0, vocab, size=int(rng.integers(1, n + 1)), dtype=np.int32) for _ in range(count)]


class ThreadsTest(unittest.TestCase):
    def check_model(self, name, n_threads=4, runs=6, **options):
        m = linfer.Model(os.path.join(support.MODELS, name))
        n = min(m.info["n"], 200)
        work = inputs(n_threads * runs, m.info["vocab_size"], n)
        one = m.session(max_seq_len=n, **options)
        want = [one.run(ids) for ids in work]
        got = [None] * len(work)
        errors = []
        start = threading.Barrier(n_threads)

        def worker(t):
            try:
                s = m.session(max_seq_len=n, **options)
                start.wait()
                for r in range(runs):
                    got[t * runs + r] = s.run(work[t * runs + r])
            except Exception as e:  # reported below: a thread's exception does not fail the test
                errors.append(e)

        threads = [threading.Thread(target=worker, args=(t,)) for t in range(n_threads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        for i, (g, w) in enumerate(zip(got, want)):
            self.assertEqual(g.tobytes(), w.tobytes(), "input %d" % i)

    def test_sessions_in_threads_equal_one_session(self):
        self.check_model("byte-lm.lfm")
        self.check_model("langid.int8.lfm")
        self.check_model("langid.f16.lfm", n_threads=3)

    def test_sessions_with_their_own_worker_threads(self):
        self.check_model("langid.f32.lfm", n_threads=2, runs=3, num_threads=2, thread_wait="yield")

    def test_one_session_shared_by_threads(self):
        """Two threads calling one session take turns (its lock): each gets the output of its own
        input, never the other thread's."""
        m = linfer.Model(os.path.join(support.MODELS, "langid.int8.lfm"))
        s = m.session(max_seq_len=300)
        work = inputs(2, 256, 300)
        want = [s.run(ids) for ids in work]
        errors = []

        def worker(i):
            for _ in range(40):
                y = s.run(work[i])
                if y.tobytes() != want[i].tobytes():
                    errors.append(i)

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])

    def test_ids_changed_during_a_run(self):
        """Another thread rewrites the ids array, between valid ids and ids far outside the
        vocabulary, while runs go on. The library checks the ids, then reads them again for the
        embedding lookup; the package gives it its own copy, so every run either succeeds or is
        refused with the library's message. (Handing the library the caller's array instead
        crashes this test with a segmentation fault within a few hundred runs.)"""
        m = linfer.Model(os.path.join(support.MODELS, "byte-lm.lfm"))
        s = m.session()
        arr = np.ones(m.info["n"], dtype=np.int32)
        stop = threading.Event()

        def mutate():
            while not stop.is_set():
                arr[:] = 1
                for _ in range(20):
                    pass
                arr[:] = 1 << 30

        t = threading.Thread(target=mutate)
        t.start()
        outcomes = {"ok": 0, "refused": 0}
        deadline = time.monotonic() + 20  # 2000 runs take about a second natively, far longer under qemu
        try:
            while sum(outcomes.values()) < 2000 and (sum(outcomes.values()) < 200 or time.monotonic() < deadline):
                try:
                    s.run(arr)
                    outcomes["ok"] += 1
                except linfer.InvalidArgumentError as e:
                    self.assertRegex(str(e), r"^token id 1073741824 at position \d+ is outside the vocabulary \[0, 256\)$")
                    outcomes["refused"] += 1
        finally:
            stop.set()
            t.join()
        self.assertGreaterEqual(sum(outcomes.values()), 200)
        self.assertGreater(outcomes["refused"], 0)  # the other thread did change the array


class GilTest(unittest.TestCase):
    """While one thread is inside a run, another thread executes Python code. A worker thread runs
    the model while the main thread records time stamps as fast as it can; a run that kept the GIL
    leaves a gap in the stamps as long as the run itself, most of the interval the worker measured
    around the call (the rest is handing the GIL over, before and after). A control through a
    ctypes.PyDLL handle, which keeps the GIL during the call, shows that the measurement sees the
    difference."""

    def blocked_runs(self, call, runs):
        """How many of `runs` calls left the main thread without a stamp for half of the call."""
        intervals = []

        def worker():
            for _ in range(runs):
                t0 = time.perf_counter()
                call()
                intervals.append((t0, time.perf_counter()))

        stamps = []
        t = threading.Thread(target=worker)
        t.start()
        while t.is_alive():
            stamps.append(time.perf_counter())
        t.join()
        stamps = np.array(stamps)
        blocked = 0
        for t0, t1 in intervals:
            points = np.concatenate([[t0], stamps[(stamps > t0) & (stamps < t1)], [t1]])
            if np.diff(points).max() >= 0.5 * (t1 - t0):
                blocked += 1
        return blocked

    def test_gil_released_during_runs(self):
        # Runs long enough (>= 100 ms) that scheduling noise is small against them: the portable
        # kernels, on as many tokens as that takes.
        m = linfer.Model(os.path.join(support.MODELS, "langid.f32.lfm"))
        T = 64
        while True:
            s = m.session(max_seq_len=T, max_isa="generic")
            ids = np.arange(T, dtype=np.int32) % 256
            t0 = time.perf_counter()
            s.run(ids)
            if time.perf_counter() - t0 >= 0.1 or T == m.info["n"]:
                break
            T = min(2 * T, m.info["n"])
        runs = 8
        old = sys.getswitchinterval()
        sys.setswitchinterval(0.0005)
        try:
            released = self.blocked_runs(lambda: s.run(ids), runs)
            held = ctypes.PyDLL(_capi.library_path)
            held.linfer_session_run.argtypes = _capi.lib.linfer_session_run.argtypes
            held.linfer_session_run.restype = ctypes.c_int
            ptr = s._handle.ptr
            data = ids.ctypes.data_as(ctypes.POINTER(ctypes.c_int32))
            self.assertEqual(held.linfer_session_run(ptr, data, ids.size), 0)
            kept = self.blocked_runs(lambda: held.linfer_session_run(ptr, data, ids.size), runs)
        finally:
            sys.setswitchinterval(old)
        self.assertLessEqual(released, runs // 2, "the main thread was stopped during %d of %d runs (%d "
                             "tokens)" % (released, runs, T))
        self.assertGreaterEqual(kept, runs - 1, "control: the main thread was stopped during "
                                "only %d of %d runs that held the GIL" % (kept, runs))


if __name__ == "__main__":
    unittest.main()
