# SPDX-License-Identifier: Apache-2.0
"""Accuracy of language-ID models on the short test set with every input cut to its first N bytes
(at a character boundary), as a model with n = N sees it (docs/accuracy.md, the microcontroller
model):

    /usr/bin/python3 tools/python/langid/eval_short.py --max-len 128 MODEL.lfm [MODEL.lfm ...]

Runs each model with the host build's Python package (build/runtime/linfer) on
examples/data/langid_short_test.tsv (1,000 sentences, 100 per language); prints the accuracy per
model and per language."""

import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def cut(b, n):
    if len(b) <= n:
        return b
    while n > 0 and (b[n] & 0xC0) == 0x80:
        n -= 1
    return b[:n]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("models", nargs="+")
    ap.add_argument("--max-len", type=int, default=128)
    ap.add_argument("--package", default=os.path.join(ROOT, "build", "runtime"))
    args = ap.parse_args()
    sys.path.insert(0, args.package)
    import linfer

    labels = open(os.path.join(ROOT, "examples", "models", "langid.labels.txt")).read().split()
    rows = []
    with open(os.path.join(ROOT, "examples", "data", "langid_short_test.tsv"), encoding="utf-8") as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            lang, _page, _unit, text = line.rstrip("\n").split("\t", 3)
            rows.append((lang, cut(text.encode("utf-8"), args.max_len)))
    for path in args.models:
        model = linfer.Model(path)
        session = linfer.Session(model, max_seq_len=args.max_len)
        right, per = 0, {}
        for lang, text in rows:
            ok = labels[int(session.run(list(text)).reshape(-1).argmax())] == lang
            right += ok
            r, t = per.get(lang, (0, 0))
            per[lang] = (r + ok, t + 1)
        print("%s: %.1f%% of %d (inputs cut to %d bytes); %s" % (
            os.path.relpath(path, ROOT), 100.0 * right / len(rows), len(rows), args.max_len,
            ", ".join("%s %d%%" % (l, round(100.0 * r / t)) for l, (r, t) in sorted(per.items()))))


if __name__ == "__main__":
    main()
