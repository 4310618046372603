"""Test-split accuracy of the language-ID example model, in PyTorch and in linfer (f32, f16, int8).

    /usr/bin/python3 tools/python/eval_accuracy.py          # from the repository root

Reads examples/data/langid_test_pages.txt (written by train.py), cuts those pages of the manual
page packages into pieces of up to 1024 bytes (data_langid.py; the packages are installed if
missing) and takes a fixed, seeded, class-balanced set of them. Runs every sample through
  - the checkpoint examples/models/langid.safetensors in tools/python/linfer_ref.py (float32),
  - build/bin/linfer-run examples/models/langid.{f32,f16,int8}.lfm --text SAMPLE --dump OUT.npy,
and replaces the generated part of docs/accuracy.md (between the eval_accuracy markers) with the
accuracy table, the agreement between the linfer variants and the cosine similarity of their
logits. --no-docs only prints.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # keep the source tree clean

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import data_langid as data  # noqa: E402
from linfer_ref import LinferEncoder, load_safetensors  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TEST_SEED = "langid-test-v1"
PER_LANG = 50
BEGIN = "<!-- eval_accuracy.py: begin (generated, do not edit) -->"
END = "<!-- eval_accuracy.py: end -->"


def read_pages(path):
    with open(path) as f:
        return [l.strip() for l in f if l.strip() and not l.startswith("#")]


def torch_logits(ckpt, samples):
    tensors, meta = load_safetensors(ckpt)
    config = json.loads(meta["linfer_config"])
    model = LinferEncoder(config)
    model.load_state_dict(tensors)
    model.eval()
    out = []
    with torch.no_grad():
        for s in samples:
            ids = torch.from_numpy(np.frombuffer(s[4], dtype=np.uint8).astype(np.int64))
            out.append(model(ids)[0].numpy())
    return np.stack(out), config


def linfer_logits(run, model, samples, tmp):
    out = []
    for i, s in enumerate(samples):
        txt = os.path.join(tmp, "s%d.txt" % i)
        npy = os.path.join(tmp, "s%d.npy" % i)
        if not os.path.exists(txt):
            with open(txt, "wb") as f:
                f.write(s[4])
        r = subprocess.run([run, model, "--text", txt, "--dump", npy], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            raise SystemExit("linfer-run failed on sample %d: %s" % (i, r.stderr.strip()))
        out.append(np.load(npy).reshape(-1))
    return np.stack(out)


def cosine(a, b):
    num = (a * b).sum(1)
    den = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    return num / np.maximum(den, 1e-30)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default=os.path.join(ROOT, "examples", "models"))
    ap.add_argument("--run", default=os.path.join(ROOT, "build", "bin", "linfer-run"))
    ap.add_argument("--pages", default=os.path.join(ROOT, "examples", "data", "langid_test_pages.txt"))
    ap.add_argument("--per-lang", type=int, default=PER_LANG)
    ap.add_argument("--docs", default=os.path.join(ROOT, "docs", "accuracy.md"))
    ap.add_argument("--no-docs", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(1)

    versions = data.ensure_packages()
    docs = data.load_documents()
    pages = read_pages(args.pages)
    stray = [p for p in pages if data.split_of(p) != "test"]
    if stray:
        raise SystemExit("%s lists pages outside the test split: %s" % (args.pages, " ".join(stray[:5])))
    samples = data.make_samples(docs, pages, per_lang=args.per_lang, seed=TEST_SEED)
    labels = np.array([s[0] for s in samples])
    with open(os.path.join(args.models, "langid.labels.txt")) as f:
        names = [l.strip() for l in f if l.strip()]
    assert names == data.LABELS, names
    counts = {lang: int((labels == i).sum()) for i, lang in enumerate(names)}
    lengths = np.array([len(s[4]) for s in samples])
    print("%d test samples from %d pages: %s; %d at 1000+ bytes" % (
        len(samples), len({s[2] for s in samples}), counts, int((lengths >= 1000).sum())), flush=True)

    results = {}
    t0 = time.time()
    results["pytorch"], config = torch_logits(os.path.join(args.models, "langid.safetensors"), samples)
    print("pytorch: %.1f s" % (time.time() - t0), flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for dtype in ("f32", "f16", "int8"):
            t0 = time.time()
            model = os.path.join(args.models, "langid.%s.lfm" % dtype)
            results["linfer " + dtype] = linfer_logits(args.run, model, samples, tmp)
            print("linfer %s: %.1f s" % (dtype, time.time() - t0), flush=True)

    preds = {k: v.argmax(1) for k, v in results.items()}
    rows = []
    for key, logits in results.items():
        acc = float((preds[key] == labels).mean())
        per = [float((preds[key][labels == i] == i).mean()) for i in range(len(names))]
        ref = results["linfer f32"] if key != "linfer f32" else results["pytorch"]
        agree = float((preds[key] == ref.argmax(1)).mean())
        cos = float(cosine(logits, ref).mean())
        maxdiff = float(np.abs(logits - ref).max())
        rows.append((key, acc, per, agree, cos, maxdiff))
        print("%-12s accuracy %.4f | %s" % (key, acc, " ".join("%s %.2f" % (n, p) for n, p in zip(names, per))))
    # confusion matrix of linfer int8 (rows: true class)
    conf = np.zeros((len(names), len(names)), dtype=int)
    for t, p in zip(labels, preds["linfer int8"]):
        conf[t, p] += 1
    wrong = [(s[1], s[2], s[3], names[p]) for s, p in zip(samples, preds["pytorch"]) if p != s[0]]

    lines = [BEGIN, ""]
    info_path = os.path.join(args.models, "langid.train.json")
    if os.path.exists(info_path):
        with open(info_path) as f:
            info = json.load(f)
        last = info["curve"][-1] if info.get("curve") else {}
        lines.append("Training run (from `examples/models/langid.train.json`): `%s`, %d steps of batch %d, "
                     "%.1f minutes of wall time with %d threads on a 2-core machine shared with other jobs; "
                     "%d parameters; final validation accuracy %.1f%% (%d samples of the validation pages). "
                     "Train-split text per class (KB): %s." % (
                         info["command"], info["steps"], info["batch"], info["train_seconds"] / 60.0,
                         info["threads"], info["parameters"], 100 * last.get("val_acc", float("nan")),
                         info["val_samples"],
                         ", ".join("%s %d" % (k, v // 1000) for k, v in info["train_bytes"].items())))
        lines.append("")
    lines.append("Test split: %d samples (%s) from %d pages; %d of them are 1000-1024 bytes long, the "
                 "rest are the shorter last pieces of pages (%d-%d bytes). Sample seed `%s`." % (
                     len(samples), ", ".join("%s %d" % kv for kv in counts.items()),
                     len({s[2] for s in samples}), int((lengths >= 1000).sum()),
                     int(lengths.min()), int(lengths.max()), TEST_SEED))
    lines.append("")
    lines.append("| model | accuracy | agreement with | argmax agreement | mean cosine of logits | max abs logit diff |")
    lines.append("|---|---|---|---|---|---|")
    for key, acc, per, agree, cos, maxdiff in rows:
        ref = "PyTorch" if key == "linfer f32" else "linfer f32"
        if key == "pytorch":
            lines.append("| PyTorch (langid.safetensors, linfer_ref.py, float32) | %.2f%% | linfer f32 | %.2f%% | %.6f | %.2e |"
                         % (100 * acc, 100 * agree, cos, maxdiff))
        else:
            lines.append("| %s (langid.%s.lfm) | %.2f%% | %s | %.2f%% | %.6f | %.2e |" % (
                key, key.split()[1], 100 * acc, ref, 100 * agree, cos, maxdiff))
    long_ = lengths >= 1000
    lines.append("")
    lines.append("By length: " + "; ".join("%s %.2f%% on the %d pieces of 1000+ bytes, %.2f%% on the %d shorter ones" % (
        key, 100 * float((preds[key][long_] == labels[long_]).mean()), int(long_.sum()),
        100 * float((preds[key][~long_] == labels[~long_]).mean()), int((~long_).sum()))
        for key in ("pytorch", "linfer int8")) + ".")
    lines.append("")
    lines.append("Per-language accuracy:")
    lines.append("")
    lines.append("| model | " + " | ".join(names) + " |")
    lines.append("|---|" + "---|" * len(names))
    for key, acc, per, agree, cos, maxdiff in rows:
        lines.append("| %s | " % key + " | ".join("%.0f%%" % (100 * p) for p in per) + " |")
    lines.append("")
    lines.append("Confusion matrix of linfer int8 (rows: true language, columns: predicted):")
    lines.append("")
    lines.append("| | " + " | ".join(names) + " |")
    lines.append("|---|" + "---|" * len(names))
    for i, n in enumerate(names):
        lines.append("| **%s** | " % n + " | ".join(str(v) if v else "." for v in conf[i]) + " |")
    lines.append("")
    lines.append("PyTorch's mistakes (language, page, piece index, predicted): " + (
        "; ".join("%s %s #%d -> %s" % w for w in wrong) if wrong else "none") + ".")
    lines.append("")
    lines.append("Packages read: " + ", ".join("%s %s" % kv for kv in versions.items()) + "; torch %s." % torch.__version__)
    lines.append("")
    lines.append(END)
    block = "\n".join(lines)
    print(block)
    if args.no_docs:
        return
    text = open(args.docs).read() if os.path.exists(args.docs) else "# Accuracy\n\n"
    if BEGIN in text and END in text:
        text = text[:text.index(BEGIN)] + block + text[text.index(END) + len(END):]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    with open(args.docs, "w") as f:
        f.write(text)
    print("wrote %s" % os.path.relpath(args.docs, ROOT))


if __name__ == "__main__":
    main()
