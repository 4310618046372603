# SPDX-License-Identifier: Apache-2.0
"""A byte n-gram naive Bayes classifier on the language-ID data: the reference point the
example model is measured against (docs/accuracy.md, "Why the example is not a Linformer").

    /usr/bin/python3 tools/python/langid/ngram_baseline.py          # from the repository root, ~1 minute

It counts the byte n-grams (1 to N, the text padded with a space at both ends) of the train split's
text (data_langid: the same cleaned pages, the same page-name split as train.py), hashed into B
buckets per class; a text's class is the argmax of the sum of log((count + 0.1) / (total + 0.1 V))
over its n-grams (V: the buckets any class's text uses, plus one; equal priors, as train.py draws
the classes with equal probability). With B = 2^16 a table holds 10 x 65,536 = 655,360 numbers,
about the 656,170 parameters of the Linformer model that was the example until 2026-11-25. It
reads the three test sets as eval_accuracy.py does (the short set is checked against the pages
again) and prints a Markdown table; nothing is written.

    /usr/bin/python3 tools/python/langid/ngram_baseline.py --fit-check examples/models/langid.safetensors

adds a second table: short inputs cut the same way as the short test set (make_short_samples, 200
per language where the pages allow, seed "fit-check") from the train, validation and test pages,
for each checkpoint given (in PyTorch) and for the 1..3-gram counts: a model that is right on the
test pages as often as on its own training pages does not overfit; one that is wrong on its
training pages underfits.
"""

import argparse

import os
import sys

sys.dont_write_bytecode = True  # keep the source tree clean

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "reference"))  # linfer_ref
import data_langid as data  # noqa: E402
import eval_accuracy as ev  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
ALPHA = 0.1  # additive smoothing
_PRIME = 4294967291  # < 2^32, so the rolling hash stays within int64


def ngram_buckets(text, max_n, buckets):
    """Bucket index of every byte n-gram of text (n = 1..max_n), the text padded with a space."""
    a = np.frombuffer(b" " + text + b" ", dtype=np.uint8).astype(np.int64)
    out = []
    for n in range(1, max_n + 1):
        if len(a) < n:
            break
        h = np.zeros(len(a) - n + 1, dtype=np.int64)
        for j in range(n):
            h = (h * 1000003 + a[j:len(a) - n + 1 + j] + 1) % _PRIME
        out.append((h * 7 + n) % buckets)  # n in the hash: "ab" as a bigram is not "ab" as a 3-gram prefix
    return np.concatenate(out)


class NgramNaiveBayes:
    def __init__(self, docs, max_n, buckets):
        self.max_n, self.buckets = max_n, buckets
        counts = []
        for lang in data.LABELS:
            text = b"\n".join(t for page, t in docs[lang] if data.split_of(page) == "train")
            counts.append(np.bincount(ngram_buckets(text, max_n, buckets), minlength=buckets).astype(np.float64))
        counts = np.stack(counts)
        # the smoothing mass is spread over the buckets the training text uses, not over all of them:
        # with more buckets than n-grams, a mass per bucket would favour the classes with little text
        used = int((counts.sum(axis=0) > 0).sum()) + 1
        self.log_p = np.log((counts + ALPHA) / (counts.sum(axis=1, keepdims=True) + ALPHA * used))

    def predict(self, text):
        return int(np.argmax(self.log_p[:, ngram_buckets(text, self.max_n, self.buckets)].sum(axis=1)))


def fit_check(docs, checkpoints):
    import json
    import torch
    import train
    from linfer_ref import LinferEncoder, load_safetensors
    torch.set_num_threads(2)
    splits = {}
    for split in ("train", "val", "test"):
        pages = {p for lang in data.LABELS for p, _ in docs[lang] if data.split_of(p) == split}
        splits[split] = data.make_short_samples(docs, pages, per_lang=200, seed="fit-check")
    print("\n| short inputs of the pages of | " + " | ".join("%s (%d)" % kv for kv in
                                                       ((k, len(v)) for k, v in splits.items())) + " |")
    print("|---|" + "---|" * len(splits))
    counts = NgramNaiveBayes(docs, 3, 1 << 16)
    rows = [("byte 1..3-gram counts, 2^16 buckets", lambda texts: [counts.predict(t) for t in texts])]
    for path in checkpoints:
        tensors, meta = load_safetensors(path)
        model = LinferEncoder(json.loads(meta["linfer_config"]))
        model.load_state_dict(tensors)
        rows.append(("`%s`" % path, lambda texts, m=model: train.predict(m, texts)))
    for name, predict in rows:
        cells = []
        for samples in splits.values():
            pred = predict([s[4] for s in samples])
            cells.append("%.1f%%" % (100.0 * sum(p == s[0] for p, s in zip(pred, samples)) / len(samples)))
        print("| %s | %s |" % (name, " | ".join(cells)), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fit-check", nargs="*", default=[], metavar="CKPT",
                    help="also the short inputs of the train, validation and test pages for these checkpoints")
    args = ap.parse_args()
    versions = data.ensure_packages()
    docs = data.load_documents()
    data_dir = os.path.join(ROOT, "examples", "data")
    test = ev.test_sets(docs, os.path.join(data_dir, "langid_test_pages.txt"),
                        os.path.join(data_dir, "langid_short_test.tsv"), os.path.join(data_dir, "langid_everyday.tsv"))
    sets = [("1 KB set", test["1 KB"]), ("short set", test["short"]),
            ("short, 40-79 bytes", [s for s in test["short"] if len(s[4]) < 80]),
            ("everyday set", test["everyday"])]
    print("| byte n-gram naive Bayes | numbers | " + " | ".join("%s (%d)" % (n, len(s)) for n, s in sets) + " |")
    print("|---|---|" + "---|" * len(sets))
    for log2_buckets in (16, 22):
        for max_n in (1, 2, 3, 4):
            model = NgramNaiveBayes(docs, max_n, 1 << log2_buckets)
            cells = []
            for _, samples in sets:
                right = sum(model.predict(s[4]) == s[0] for s in samples)
                cells.append("%.2f%%" % (100.0 * right / len(samples)))
            print("| n = 1..%d, 2^%d buckets | %s | %s |" % (max_n, log2_buckets, format(10 << log2_buckets, ","),
                                                         " | ".join(cells)), flush=True)
    if args.fit_check:
        fit_check(docs, args.fit_check)
    print("\npackages: " + ", ".join("%s %s" % kv for kv in sorted(versions.items())))


if __name__ == "__main__":
    main()
