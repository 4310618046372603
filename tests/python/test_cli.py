# SPDX-License-Identifier: Apache-2.0
"""python3 -m linfer against linfer-run: the same summary lines and dumps, one line and a non-zero
exit on bad input."""

import os
import unittest

import numpy as np

import support

DATA = support.DATA


def model(name):
    return os.path.join(support.MODELS, name)


def cli(args):
    return support.run(support.python() + ["-m", "linfer"] + args)


def linfer_run(args):
    return support.run(support.command("LINFER_RUN") + args)


class CliTest(unittest.TestCase):
    def test_summary_like_linfer_run(self):
        for name, args in (("langid.int8.lfm", ["--text", os.path.join(DATA, "langid-fr.txt")]),
                           ("langid.f16.lfm", ["--text", os.path.join(DATA, "langid-de.txt"), "--threads", "2"]),
                           ("byte-lm.lfm", ["--text", os.path.join(DATA, "sample.txt")])):
            with self.subTest(model=name):
                code, out, err = cli([model(name)] + args)
                self.assertEqual((code, err), (0, ""))
                rcode, rout, _ = linfer_run([model(name)] + args)
                self.assertEqual(rcode, 0)
                ours, theirs = out.splitlines(), rout.splitlines()
                self.assertEqual(len(ours), len(theirs))
                self.assertEqual(ours[0], theirs[0])  # model: ...
                # input: N tokens; output: KIND [R, C]; then the time, which differs
                self.assertEqual(ours[1].split(";")[:2], theirs[1].split(";")[:2])
                self.assertRegex(ours[1], r"; [0-9.]+ ms with \d+ threads? ")
                self.assertEqual(ours[2:], theirs[2:])  # predicted class, first row: same digits

    def test_ids_input_and_dump(self):
        causal = support.causal_model()
        ids = os.path.join(support.SOURCE, "tests", "golden_kinds", "k05_linear_causal_lm", "ids_25.txt")
        ours, theirs = support.tmp_path("cli.npy"), support.tmp_path("run.npy")
        code, out, err = cli([causal, "--ids", ids, "--dump", ours])
        self.assertEqual((code, out, err), (0, "", ""))
        self.assertEqual(linfer_run([causal, "--ids", ids, "--dump", theirs])[0], 0)
        a, b = np.load(ours), np.load(theirs)
        self.assertEqual(a.shape, (25, 80))
        self.assertEqual(a.dtype, np.float32)
        self.assertEqual(a.tobytes(), b.tobytes())
        code, out, _ = cli([causal, "--ids", ids])
        self.assertEqual(code, 0)
        self.assertIn("input: 25 tokens; output: logits [25, 80]", out)

    def test_help(self):
        code, out, err = cli(["--help"])
        self.assertEqual(code, 0)
        self.assertTrue(out.startswith("usage: python3 -m linfer MODEL.lfm"))

    def test_bad_input(self):
        """Each: the exit code, and the single line on stderr (nothing on stdout)."""
        good = model("langid.int8.lfm")
        text = os.path.join(DATA, "langid-fr.txt")
        empty = support.tmp_path("empty.txt")
        open(empty, "w").close()
        bad_ids = support.tmp_path("bad-ids.txt")
        with open(bad_ids, "w") as f:
            f.write("1 2 x3 4\n")
        big_ids = support.tmp_path("big-ids.txt")
        with open(big_ids, "w") as f:
            f.write("1 99999999999\n")
        vocab_ids = support.tmp_path("vocab-ids.txt")
        with open(vocab_ids, "w") as f:
            f.write("1 2 256\n")
        long_text = support.tmp_path("long.txt")
        with open(long_text, "w") as f:
            f.write("a" * 1025)
        bad_model = support.tmp_path("bad.lfm")
        with open(bad_model, "wb") as f:
            f.write(b"not a model")
        missing = os.path.join(support.TMP, "missing.lfm")
        cases = [
            ([], 2, "linfer: no model given (usage: python3 -m linfer MODEL.lfm (--ids FILE | --text FILE) "
                    "[--dump OUT.npy] [--threads N])"),
            ([good], 2, "linfer: give exactly one of --ids and --text"),
            ([good, "--text", text, "--ids", vocab_ids], 2, "linfer: give exactly one of --ids and --text"),
            ([good, "--text"], 2, "linfer: --text needs a value"),
            ([good, "--text", text, "--frobnicate"], 2, "linfer: unknown option '--frobnicate'"),
            ([good, good, "--text", text], 2, "linfer: unexpected argument '%s'" % good),
            ([good, "--text", text, "--threads", "0"], 2, "linfer: --threads must be an integer in [1, 256], got '0'"),
            ([good, "--text", text, "--threads", "x"], 2, "linfer: --threads must be an integer in [1, 256], got 'x'"),
            ([good, "--text", text, "--threads", "\u00b2"], 2, "linfer: --threads must be an integer in [1, 256], got '\u00b2'"),
            ([good, "--text", text, "--threads", "-1"], 2, "linfer: --threads must be an integer in [1, 256], got '-1'"),
            ([good, "--text", text, "--threads", "257"], 2, "linfer: --threads must be an integer in [1, 256], got '257'"),
            ([missing, "--text", text], 1, "linfer: %s: cannot open '%s': No such file or directory" % (missing, missing)),
            ([bad_model, "--text", text], 1, "linfer: %s: not a linfer model: file identifier is 'a mo', expected 'LFM1'" % bad_model),
            ([good, "--text", missing], 1, "linfer: cannot open '%s': No such file or directory" % missing),
            ([good, "--text", empty], 1, "linfer: the input has no tokens"),
            ([good, "--text", long_text], 1, "linfer: the input has 1025 tokens; the model accepts at most 1024"),
            ([good, "--ids", bad_ids], 1, "linfer: '%s': token 2 ('x3') is not an integer id" % bad_ids),
            ([good, "--ids", big_ids], 1, "linfer: '%s': token 1 ('99999999999') is not an integer id" % big_ids),
            ([good, "--ids", vocab_ids], 1, "linfer: token id 256 at position 2 is outside the vocabulary [0, 256)"),
        ]
        for args, want_code, want_err in cases:
            with self.subTest(args=args):
                code, out, err = cli(args)
                self.assertEqual(code, want_code)
                self.assertEqual(out, "")
                self.assertEqual(err, want_err + "\n")
        # The messages linfer-run gives for the same files, after its own prefix.
        for args in ([good, "--ids", bad_ids], [missing, "--text", text], [good, "--text", long_text]):
            code, _, err = linfer_run(args)
            self.assertEqual(code, 1)
            self.assertEqual(err.replace("linfer-run: ", "linfer: ", 1), cli(args)[2])


if __name__ == "__main__":
    unittest.main()
