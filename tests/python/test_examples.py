# SPDX-License-Identifier: Apache-2.0
"""examples/python on the shipped language-ID model: classify.py names the language of every sample
(examples/data/langid-<label>.txt) and prints what the C++ example prints; embed.py gives a text
cosine 1 with itself, less with another, as examples/embed does."""

import glob
import os
import re
import unittest

import support

EXAMPLES = os.path.join(support.SOURCE, "examples", "python")
LABELS = os.path.join(support.MODELS, "langid.labels.txt")


def example(name, args):
    return support.run(support.python() + [os.path.join(EXAMPLES, name)] + args)


class ExamplesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.samples = sorted(glob.glob(os.path.join(support.DATA, "langid-*.txt")))
        assert len(cls.samples) >= 2, "expected sample texts examples/data/langid-*.txt"

    def test_classify(self):
        for sample in self.samples:
            want = re.match(r"langid-(.+)\.txt$", os.path.basename(sample)).group(1)
            for dtype in ("f32", "f16", "int8"):
                with self.subTest(sample=sample, dtype=dtype):
                    model = os.path.join(support.MODELS, "langid.%s.lfm" % dtype)
                    code, out, err = example("classify.py", [model, LABELS, sample])
                    self.assertEqual((code, err), (0, ""))
                    self.assertRegex(out, r"^%s \([0-9.]+%%\)\n  then \S+ \([0-9.]+%%\)\n" % re.escape(want))
                    ccode, cout, _ = support.run(support.command("LINFER_CLASSIFY") + [model, LABELS, sample])
                    self.assertEqual(ccode, 0)
                    self.assertEqual(out, cout)

    def test_classify_errors(self):
        model = os.path.join(support.MODELS, "langid.int8.lfm")
        empty = support.tmp_path("empty.txt")
        open(empty, "w").close()
        for args, code, err in (
                ([model, LABELS], 2, "usage: "),
                ([os.path.join(support.MODELS, "byte-lm.lfm"), LABELS, self.samples[0]], 1,
                 "is not a byte-level classifier"),
                ([model, self.samples[0], self.samples[0]], 1, "labels, the model has 10 classes"),
                ([model, LABELS, empty], 1, "is empty"),
                ([model, LABELS, os.path.join(support.TMP, "missing.txt")], 1, "cannot open")):
            with self.subTest(args=args):
                got_code, out, got_err = example("classify.py", args)
                self.assertEqual(got_code, code)
                self.assertIn(err, got_err)

    def test_embed(self):
        model = os.path.join(support.MODELS, "langid.f32.lfm")
        a, b = self.samples[0], self.samples[1]
        code, same, err = example("embed.py", [model, a, a])
        self.assertEqual((code, err), (0, ""))
        self.assertIn("cosine similarity 1.0000", same)
        code, different, err = example("embed.py", [model, a, b])
        self.assertEqual((code, err), (0, ""))
        m = re.search(r"^vector size (\d+)\ncosine similarity (-?[0-9.]+)\n$", different)
        self.assertIsNotNone(m, different)
        self.assertLess(float(m.group(2)), 0.99)
        # The C++ example on the same texts: the same vector size and, to the printed digits (the
        # sums run in another order), the same similarity.
        ccode, cout, _ = support.run(support.command("LINFER_EMBED") + [model, a, b])
        self.assertEqual(ccode, 0)
        cm = re.search(r"vector size (\d+)\ncosine similarity (-?[0-9.]+)", cout)
        self.assertEqual(m.group(1), cm.group(1))
        self.assertAlmostEqual(float(m.group(2)), float(cm.group(2)), delta=1.5e-4)
        code, _, err = example("embed.py", [model, a, os.path.join(support.TMP, "missing.txt")])
        self.assertEqual((code, err), (1, "cannot read the two texts (missing or empty)\n"))


if __name__ == "__main__":
    unittest.main()
