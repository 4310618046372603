# SPDX-License-Identifier: Apache-2.0
"""Session.step on a causal linear-attention model (tests/golden_kinds/k05_linear_causal_lm,
converted with linfer-convert): token by token equals the whole-sequence run and PyTorch's output."""

import os
import unittest

import numpy as np

import linfer

import support

CASE = os.path.join(support.SOURCE, "tests", "golden_kinds", "k05_linear_causal_lm")


class StepTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.model = linfer.Model(support.causal_model())
        cls.lengths = sorted(int(f[4:-4]) for f in os.listdir(CASE) if f.startswith("ids_"))

    def ids(self, T):
        return support.read_ids(os.path.join(CASE, "ids_%d.txt" % T))

    def test_steps_equal_the_whole_run(self):
        """Each step's row against row t of one run over the whole sequence, within 1e-5 of the
        output's scale: bit for bit on amd64, but not promised (arm64's NEON f32 kernels sum a
        one-row product in another order than a whole run's tiles); and both within 1e-4 of
        PyTorch (out_T.npy), as the C++ golden test holds the run to."""
        T = self.lengths[-1]
        ids = self.ids(T)
        s = self.model.session()
        whole = s.run(ids)
        hidden = s.hidden_states()
        torch_out = np.load(os.path.join(CASE, "out_%d.npy" % T))
        scale = float(np.abs(whole).max())
        s.reset_state()
        rows, hidden_rows = [], []
        for t in range(T):
            row = s.step(int(ids[t]))
            self.assertEqual(row.shape, (1, whole.shape[1]))
            rows.append(row[0])
            h = s.hidden_states()
            self.assertEqual(h.shape, (1, self.model.info["dim"]))
            hidden_rows.append(h[0])
        stepped = np.stack(rows)
        self.assertLessEqual(float(np.abs(stepped - whole).max()), 1e-5 * scale)
        self.assertLessEqual(float(np.abs(np.stack(hidden_rows) - hidden).max()),
                             1e-5 * float(np.abs(hidden).max()))
        self.assertLessEqual(float(np.abs(stepped - torch_out).max()), 1e-4 * float(np.abs(torch_out).max()))
        self.assertLessEqual(float(np.abs(whole - torch_out).max()), 1e-4 * float(np.abs(torch_out).max()))
        # Not a constant: rows differ from each other.
        self.assertGreater(float(np.abs(stepped[0] - stepped[-1]).max()), 0.0)

    def test_every_golden_length(self):
        s = self.model.session()
        for T in self.lengths:
            ids = self.ids(T)
            torch_out = np.load(os.path.join(CASE, "out_%d.npy" % T))
            s.reset_state()
            stepped = np.concatenate([s.step(int(i)) for i in ids])
            self.assertEqual(stepped.shape, torch_out.shape)
            self.assertLessEqual(float(np.abs(stepped - torch_out).max()), 1e-4 * float(np.abs(torch_out).max()))

    def test_state_starts_over(self):
        ids = self.ids(self.lengths[-1])[:10]
        s = self.model.session(max_seq_len=10)
        first = np.concatenate([s.step(int(i)) for i in ids])
        # Past max_seq_len tokens: the library's message.
        with self.assertRaises(linfer.InvalidArgumentError) as cm:
            s.step(int(ids[0]))
        self.assertEqual(str(cm.exception), "the session has taken 10 tokens, its maximum length; "
                                            "reset the state to start over")
        s.reset_state()
        again = np.concatenate([s.step(int(i)) for i in ids])
        self.assertEqual(again.tobytes(), first.tobytes())
        # A whole run starts a new sequence too, from a full state and from a partial one.
        s.run(ids[:3])
        third = np.concatenate([s.step(int(i)) for i in ids])
        self.assertEqual(third.tobytes(), first.tobytes())
        s.reset_state()
        for i in ids[:4]:
            s.step(int(i))
        s.run(ids[:3])
        fourth = np.concatenate([s.step(int(i)) for i in ids])
        self.assertEqual(fourth.tobytes(), first.tobytes())

    def test_step_inputs(self):
        s = self.model.session()
        vocab = self.model.info["vocab_size"]
        want = s.step(3)
        for token in (np.int64(3), np.int32(3), np.uint8(3), np.array(3)):
            s.reset_state()
            self.assertEqual(s.step(token).tobytes(), want.tobytes())
        cases = [
            (vocab, "token id %d at position 0 is outside the vocabulary [0, %d)" % (vocab, vocab)),
            (-1, "token id -1 at position 0 is outside the vocabulary [0, %d)" % vocab),
            (2 ** 35, "token id %d at position 0 is outside the vocabulary [0, %d)" % (2 ** 35, vocab)),
            (3.0, "a token id must be an integer, got 3.0"),
            (True, "a token id must be an integer, got True"),
            (None, "a token id must be an integer, got None"),
            ([3], "a token id must be an integer, got [3]"),
        ]
        for token, message in cases:
            with self.subTest(token=token):
                with self.assertRaises(linfer.InvalidArgumentError) as cm:
                    s.step(token)
                self.assertEqual(str(cm.exception), message)

    def test_view_of_a_step(self):
        s = self.model.session()
        v = s.step(1, copy=False)
        c = v.copy()
        s.step(2)
        self.assertFalse(v.flags.writeable)
        self.assertNotEqual(v.tobytes(), c.tobytes())  # overwritten by the next step, as documented


if __name__ == "__main__":
    unittest.main()
