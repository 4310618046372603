# SPDX-License-Identifier: Apache-2.0
"""Validation-split ablation of the language-ID training recipe: checkpoints trained with and without
train.py's augmentation (--augment full / none, same configuration and steps) on the validation
pages, as they are and changed the ways inputs that are not manual pages differ.

    /usr/bin/python3 tools/python/langid/ablation_langid.py NAME=CKPT.safetensors ... [--docs docs/accuracy.md]

Sets (all from the validation split's pages, never seen in training; seeded):
  - 1 KB: data_langid.make_samples(val pages, 50 per language, seed "langid-val-v1");
  - short: data_langid.make_short_samples(val pages, 100 per language, seed "langid-val-short-v1");
  - short, lower case / UPPER CASE / without its final punctuation: the same sentences changed so;
  - word windows: per language 100 windows of 40-120 bytes (uniform) of the val pages, starting
    at a word start, line breaks turned into spaces, cut at a character boundary (seed
    "langid-val-windows-v1"): pieces that are not whole sentences.
The checkpoints run in train.py's batched forward (checked against linfer_ref.LinferEncoder by
train.py). With --docs the table replaces the part between the ablation markers.
"""

import argparse
import json
import os
import random
import sys

sys.dont_write_bytecode = True

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "reference"))  # linfer_ref
import data_langid as data  # noqa: E402
import train  # noqa: E402
from linfer_ref import LinferEncoder, load_safetensors  # noqa: E402

BEGIN = "<!-- ablation_langid.py: begin (generated, do not edit) -->"
END = "<!-- ablation_langid.py: end -->"


def word_windows(docs, pages, per_lang, seed):
    pages = set(pages)
    out = []
    for ci, lang in enumerate(data.LABELS):
        rng = random.Random("%s:%s" % (seed, lang))
        texts = [(p, t) for p, t in docs[lang] if p in pages]
        for j in range(per_lang):
            page, t = texts[rng.randrange(len(texts))]
            s = " ".join(t.decode("utf-8", errors="replace").split())
            L = rng.randint(40, 120)
            if len(s.encode("utf-8")) <= L + 1:
                b = s.encode("utf-8")
            else:
                i = rng.randrange(0, max(1, len(s) - L))
                while i > 0 and not s[i - 1].isspace():
                    i -= 1
                b = train._valid_prefix(s[i:].encode("utf-8"), L)
            out.append((ci, lang, page, j, b))
    return out


def changed(samples, fn):
    return [(c, l, p, j, fn(t.decode("utf-8")).encode("utf-8")) for c, l, p, j, t in samples]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("models", nargs="+", help="NAME=CHECKPOINT.safetensors")
    ap.add_argument("--docs", default=None)
    args = ap.parse_args()
    torch.set_num_threads(2)
    data.ensure_packages()
    docs = data.load_documents()
    val_pages = sorted({p for lang in data.LABELS for p, _ in docs[lang] if data.split_of(p) == "val"})
    short = data.make_short_samples(docs, val_pages, per_lang=100, seed="langid-val-short-v1")
    sets = [
        ("1 KB pieces", data.make_samples(docs, val_pages, per_lang=50, seed="langid-val-v1")),
        ("sentences", short),
        ("sentences, lower case", changed(short, str.lower)),
        ("sentences, UPPER CASE", changed(short, str.upper)),
        ("sentences, no final punctuation", changed(short, lambda s: s.rstrip(".!?:;,") or s)),
        ("word windows 40-120 bytes", word_windows(docs, val_pages, 100, "langid-val-windows-v1")),
    ]
    results = {}
    for spec in args.models:
        name, path = spec.split("=", 1)
        tensors, meta = load_safetensors(path)
        model = LinferEncoder(json.loads(meta["linfer_config"]))
        model.load_state_dict(tensors)
        results[name] = []
        for set_name, samples in sets:
            acc = train.accuracy(model, samples)
            results[name].append(acc)
            print("%s: %s %.4f" % (name, set_name, acc), flush=True)
    lines = [BEGIN, "", "| validation set (inputs) | " + " | ".join(results) + " |",
             "|---|" + "---|" * len(results)]
    for i, (set_name, samples) in enumerate(sets):
        lines.append("| %s (%d) | " % (set_name, len(samples)) + " | ".join(
            "%.1f%%" % (100 * results[n][i]) for n in results) + " |")
    lines += ["", END]
    block = "\n".join(lines)
    print(block)
    if args.docs:
        text = open(args.docs).read()
        if BEGIN in text and END in text:
            text = text[:text.index(BEGIN)] + block + text[text.index(END) + len(END):]
        else:
            text = text.rstrip("\n") + "\n\n" + block + "\n"
        with open(args.docs, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
