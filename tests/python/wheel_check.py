# SPDX-License-Identifier: Apache-2.0
"""Run by scripts/test-wheels.sh with the Python of a venv the wheel was installed into:

    VENV/bin/python tests/python/wheel_check.py SOURCE_DIR VERSION

linfer must come from the venv (its own liblinfer inside the package), the language-ID model must
name the language of the three sample texts, NumPy arrays go in and come out, and the tokenizer of
a model file works. Prints one line per check; any failure raises.
"""
import os
import sys

import numpy as np

import linfer

root, version = sys.argv[1], sys.argv[2]
assert linfer.__version__ == version == linfer.library_version(), \
    (linfer.__version__, version, linfer.library_version())
package_dir = os.path.dirname(os.path.abspath(linfer.__file__))
assert os.sep + "site-packages" + os.sep in package_dir, "linfer imported from %s, not the venv" % package_dir
assert os.path.dirname(os.path.abspath(linfer.library_path)) == package_dir, \
    "liblinfer loaded from %s, not the wheel's" % linfer.library_path
print("linfer %s from %s, library %s (%s)" % (linfer.__version__, package_dir,
                                              os.path.basename(linfer.library_path), linfer.library_version()))

models = os.path.join(root, "examples", "models")
with open(os.path.join(models, "langid.labels.txt")) as f:
    labels = f.read().split()
model = linfer.Model(os.path.join(models, "langid.int8.lfm"))
n = model.info["max_seq_len"]
session = model.session(num_threads=2)
for lang in ("de", "fr", "ru"):
    with open(os.path.join(root, "examples", "data", "langid-%s.txt" % lang), "rb") as f:
        ids = np.frombuffer(f.read()[:n], dtype=np.uint8).astype(np.int32)
    out = session.run(ids)
    assert isinstance(out, np.ndarray) and out.dtype == np.float32 and out.shape == (1, len(labels)), \
        (type(out), getattr(out, "dtype", None), getattr(out, "shape", None))
    got = labels[int(np.argmax(out[0]))]
    assert got == lang, "langid-%s.txt classified as %s" % (lang, got)
    hidden = session.hidden_states()
    assert hidden.dtype == np.float32 and hidden.shape == (ids.size, model.info["dim"]), hidden.shape
print("language ID: de, fr, ru as expected; float32 [1, %d] logits and [T, %d] hidden states"
      % (len(labels), model.info["dim"]))

seeds = os.path.join(root, "tests", "fuzz", "corpus", "fuzz_lfm")
wordpiece = linfer.Model(os.path.join(seeds, "tokenizer_wordpiece_f32.lfm"))
ids = wordpiece.tokenize("Unaffable, Caf\u00e9 [MASK]")
assert ids.dtype == np.int32 and ids.tolist() == [2, 5, 6, 7, 9, 11, 4, 3], ids
assert wordpiece.detokenize([2, 5, 6, 7, 9, 11, 3]) == "unaffable , cafe"
out = wordpiece.session().run(ids)
assert out.dtype == np.float32 and out.shape[0] == ids.size and np.isfinite(out).all()
print("tokenizer: WordPiece ids %s, detokenized, run" % ids.tolist())
