# SPDX-License-Identifier: Apache-2.0
"""Test-split accuracy of the language-ID example model, in PyTorch and in linfer (f32, f16, int8),
on the 1 KB pieces of the test pages and on the short-input test set.

    /usr/bin/python3 tools/python/langid/eval_accuracy.py          # from the repository root

Reads examples/data/langid_test_pages.txt (written by train.py), cuts those pages of the manual
page packages into pieces of up to 1024 bytes (data_langid.py; the packages are installed if
missing) and takes a fixed, seeded, class-balanced set of them (the "1 KB set"). Reads the short
test set examples/data/langid_short_test.tsv (single sentences and lines of 40-200 bytes of the
same pages, data_langid.make_short_samples) and checks that cutting the pages again gives exactly
that file. Runs every sample of both sets through
  - the checkpoint examples/models/langid.safetensors in tools/python/reference/linfer_ref.py (float32),
  - build/bin/linfer-run examples/models/langid.{f32,f16,int8}.lfm --text SAMPLE --dump OUT.npy,
  - the baseline: the first example model (examples/models/langid.safetensors at git revision
    --baseline, default fa577d3) in PyTorch, and converted with build/bin/linfer-convert --dtype
    int8 through linfer-run,
and replaces the generated part of docs/accuracy.md (between the eval_accuracy markers) with the
tables: accuracy, agreement of the linfer variants with f32, per-language accuracy, confusion
matrices; the confusion matrices of linfer int8 are also drawn in docs/langid_confusion.png
(matplotlib). --no-docs only prints.
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
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "reference"))  # linfer_ref
import data_langid as data  # noqa: E402
from linfer_ref import LinferEncoder, load_safetensors  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
TEST_SEED = "langid-test-v1"
PER_LANG = 50
SHORT_SEED = "langid-short-v1"
SHORT_PER_LANG = 100
BASELINE_REV = "fa577d3"
BEGIN = "<!-- eval_accuracy.py: begin (generated, do not edit) -->"
END = "<!-- eval_accuracy.py: end -->"


def read_pages(path):
    with open(path) as f:
        return [l.strip() for l in f if l.strip() and not l.startswith("#")]


def read_short(path):
    """[(label index, lang, page, unit index, bytes)] from langid_short_test.tsv."""
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            lang, page, j, text = line.rstrip("\n").split("\t")
            out.append((data.LABELS.index(lang), lang, page, int(j), text.encode("utf-8")))
    return out


def read_everyday(path):
    """[(label index, lang, "everyday", line index, bytes)] from langid_everyday.tsv."""
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            lang, text = line.rstrip("\n").split("\t")
            out.append((data.LABELS.index(lang), lang, "everyday", len(out), text.encode("utf-8")))
    return out


def test_sets(docs, pages_path, short_path, everyday_path, per_lang=PER_LANG):
    """{"1 KB", "short", "everyday": samples}: the 1 KB pieces of the listed test pages (checked to
    be test-split pages), the stored short set (checked against the pages cut again) and the
    everyday sentences."""
    pages = read_pages(pages_path)
    stray = [p for p in pages if data.split_of(p) != "test"]
    if stray:
        raise SystemExit("%s lists pages outside the test split: %s" % (pages_path, " ".join(stray[:5])))
    short = read_short(short_path)
    again = data.make_short_samples(docs, pages, per_lang=SHORT_PER_LANG, seed=SHORT_SEED)
    if [s[1:] for s in short] != [s[1:] for s in again]:
        raise SystemExit("%s differs from the set cut from the test pages now (data_langid.make_short_samples, "
                         "seed %r): other package versions or another cutting rule" % (short_path, SHORT_SEED))
    return {"1 KB": data.make_samples(docs, pages, per_lang=per_lang, seed=TEST_SEED), "short": short,
            "everyday": read_everyday(everyday_path)}


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


def linfer_logits(run, model, samples, tmp, tag):
    out = []
    for i, s in enumerate(samples):
        txt = os.path.join(tmp, "%s%d.txt" % (tag, i))
        npy = os.path.join(tmp, "out.npy")
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


def confusion(labels, pred, n):
    conf = np.zeros((n, n), dtype=int)
    for t, p in zip(labels, pred):
        conf[t, p] += 1
    return conf


def draw_confusions(path, names, panels):
    """panels: [(title, confusion matrix)] side by side, row-normalised colours, counts written."""
    try:
        import matplotlib
    except ImportError:  # Debian's package, like the manual pages (data_langid.ensure_packages)
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        subprocess.run(["apt-get", "install", "-y", "--no-install-recommends", "python3-matplotlib"], env=env,
                       check=True)
        import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    matplotlib.rcParams["svg.hashsalt"] = "linfer"
    fig, axes = plt.subplots(1, len(panels), figsize=(6.2 * len(panels), 5.6))
    for ax, (title, conf) in zip(np.atleast_1d(axes), panels):
        rates = conf / np.maximum(conf.sum(1, keepdims=True), 1)
        ax.imshow(rates, cmap="Blues", vmin=0, vmax=1)
        for i in range(len(names)):
            for j in range(len(names)):
                if conf[i, j]:
                    ax.text(j, i, str(conf[i, j]), ha="center", va="center", fontsize=8,
                            color="white" if rates[i, j] > 0.5 else "black")
        ax.set_xticks(range(len(names)), names, rotation=45)
        ax.set_yticks(range(len(names)), names)
        ax.set_xlabel("predicted")
        ax.set_ylabel("true language")
        ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100, metadata={"Software": None})
    plt.close(fig)


def evaluate_set(results, labels, names):
    """rows [(key, accuracy, per-language accuracy, argmax agreement, mean cosine, max diff)]."""
    preds = {k: v.argmax(1) for k, v in results.items()}
    rows = []
    for key, logits in results.items():
        acc = float((preds[key] == labels).mean())
        per = [float((preds[key][labels == i] == i).mean()) for i in range(len(names))]
        if key.startswith("linfer") or key == "pytorch":
            ref = results["linfer f32"] if key != "linfer f32" else results["pytorch"]
        else:  # baseline int8 against baseline pytorch
            ref = results["baseline pytorch"] if key != "baseline pytorch" else logits
        agree = float((preds[key] == ref.argmax(1)).mean())
        cos = float(cosine(logits, ref).mean())
        maxdiff = float(np.abs(logits - ref).max())
        rows.append((key, acc, per, agree, cos, maxdiff))
    return rows, preds


DESCRIBE = {
    "pytorch": "PyTorch (langid.safetensors, linfer_ref.py, float32)",
    "linfer f32": "linfer f32 (langid.f32.lfm)",
    "linfer f16": "linfer f16 (langid.f16.lfm)",
    "linfer int8": "linfer int8 (langid.int8.lfm)",
    "baseline pytorch": "baseline: first model, PyTorch float32",
    "baseline int8": "baseline: first model, linfer int8",
}
REF = {"pytorch": "linfer f32", "linfer f32": "PyTorch", "linfer f16": "linfer f32", "linfer int8": "linfer f32",
       "baseline pytorch": "-", "baseline int8": "baseline PyTorch"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default=os.path.join(ROOT, "examples", "models"))
    ap.add_argument("--run", default=os.path.join(ROOT, "build", "bin", "linfer-run"))
    ap.add_argument("--convert", default=os.path.join(ROOT, "build", "bin", "linfer-convert"))
    ap.add_argument("--pages", default=os.path.join(ROOT, "examples", "data", "langid_test_pages.txt"))
    ap.add_argument("--short", default=os.path.join(ROOT, "examples", "data", "langid_short_test.tsv"))
    ap.add_argument("--everyday", default=os.path.join(ROOT, "examples", "data", "langid_everyday.tsv"))
    ap.add_argument("--per-lang", type=int, default=PER_LANG)
    ap.add_argument("--baseline", default=BASELINE_REV, help="git revision of the baseline model ('' for none)")
    ap.add_argument("--docs", default=os.path.join(ROOT, "docs", "accuracy.md"))
    ap.add_argument("--png", default=os.path.join(ROOT, "docs", "langid_confusion.png"))
    ap.add_argument("--no-docs", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(1)

    versions = data.ensure_packages()
    docs = data.load_documents()
    sets = test_sets(docs, args.pages, args.short, args.everyday, args.per_lang)
    with open(os.path.join(args.models, "langid.labels.txt")) as f:
        names = [l.strip() for l in f if l.strip()]
    assert names == data.LABELS, names

    baseline_ckpt = None
    tmp_dir = tempfile.TemporaryDirectory()
    tmp = tmp_dir.name
    if args.baseline:
        baseline_ckpt = os.path.join(tmp, "baseline.safetensors")
        with open(baseline_ckpt, "wb") as f:
            subprocess.run(["git", "-C", ROOT, "show", "%s:examples/models/langid.safetensors" % args.baseline],
                           stdout=f, check=True)
        subprocess.run([args.convert, baseline_ckpt, "-o", os.path.join(tmp, "baseline.int8.lfm"), "--dtype",
                        "int8"], check=True, stdout=subprocess.DEVNULL)

    all_results = {}
    for set_name, samples in sets.items():
        results = {}
        t0 = time.time()
        results["pytorch"], config = torch_logits(os.path.join(args.models, "langid.safetensors"), samples)
        print("%s, pytorch: %.1f s" % (set_name, time.time() - t0), flush=True)
        tag = {"1 KB": "k", "short": "s", "everyday": "e"}[set_name]
        for dtype in ("f32", "f16", "int8"):
            t0 = time.time()
            model = os.path.join(args.models, "langid.%s.lfm" % dtype)
            results["linfer " + dtype] = linfer_logits(args.run, model, samples, tmp, tag)
            print("%s, linfer %s: %.1f s" % (set_name, dtype, time.time() - t0), flush=True)
        if baseline_ckpt:
            results["baseline pytorch"], _ = torch_logits(baseline_ckpt, samples)
            results["baseline int8"] = linfer_logits(args.run, os.path.join(tmp, "baseline.int8.lfm"), samples,
                                                     tmp, tag)
        all_results[set_name] = results
    tmp_dir.cleanup()

    lines = [BEGIN, ""]
    info_path = os.path.join(args.models, "langid.train.json")
    if os.path.exists(info_path):
        with open(info_path) as f:
            info = json.load(f)
        last = info["curve"][-1] if info.get("curve") else {}
        lines.append("Training run (from `examples/models/langid.train.json`): `%s`, %d steps, "
                     "%.1f minutes of training time (%d torch threads) on a 2-core machine shared with other jobs; "
                     "%d parameters; final validation accuracy %.1f%% on %d 1 KB pieces and %.1f%% on %d short "
                     "inputs of the validation pages. Train-split text per class (KB): %s." % (
                         info["command"], info["steps"], info["train_seconds"] / 60.0,
                         info["threads"], info["parameters"], 100 * last.get("val_acc", float("nan")),
                         info["val_samples"], 100 * last.get("val_short_acc", float("nan")),
                         info.get("val_short_samples", 0),
                         ", ".join("%s %d" % (k, v // 1000) for k, v in info["train_bytes"].items())))
        lines.append("")
    for set_name, samples in sets.items():
        labels = np.array([s[0] for s in samples])
        counts = {lang: int((labels == i).sum()) for i, lang in enumerate(names)}
        lengths = np.array([len(s[4]) for s in samples])
        if set_name == "1 KB":
            lines.append("**1 KB set**: %d samples (%s) from %d test pages; %d of them are 1000-1024 bytes long, the "
                         "rest are the shorter last pieces of pages (%d-%d bytes). Sample seed `%s`." % (
                             len(samples), ", ".join("%s %d" % kv for kv in counts.items()),
                             len({s[2] for s in samples}), int((lengths >= 1000).sum()),
                             int(lengths.min()), int(lengths.max()), TEST_SEED))
        elif set_name == "short":
            lines.append("**Short set** (`examples/data/langid_short_test.tsv`): %d single sentences or lines "
                         "(%s) from %d test pages, %d-%d bytes (median %d). Seed `%s`." % (
                             len(samples), ", ".join("%s %d" % kv for kv in counts.items()),
                             len({s[2] for s in samples}), int(lengths.min()), int(lengths.max()),
                             int(np.median(lengths)), SHORT_SEED))
        else:
            continue
        lines.append("")
    lines.append("**Everyday set** (`examples/data/langid_everyday.tsv`): the same 5 everyday sentences "
                 "(shopping, a late train, a phone call, a move, concert tickets) written in each of the 10 "
                 "languages for this evaluation, 85-175 bytes; not from manual pages, so a check of the issue's "
                 "complaint, too small for fine figures (one sentence is 2 points of the whole, 20 of a language).")
    lines.append("")
    lines.append("| model | 1 KB set | short set | everyday set | agreement with | argmax agreement (1 KB / short) "
                 "| mean cosine of logits (1 KB / short) | max abs logit diff (1 KB / short) |")
    lines.append("|---|---|---|---|---|---|---|---|")
    evaluated = {}
    for set_name, samples in sets.items():
        labels = np.array([s[0] for s in samples])
        evaluated[set_name] = evaluate_set(all_results[set_name], labels, names)
    rows_k, preds_k = evaluated["1 KB"]
    rows_s, preds_s = evaluated["short"]
    rows_e, preds_e = evaluated["everyday"]
    for rk, rs, re_ in zip(rows_k, rows_s, rows_e):
        key = rk[0]
        if key == "baseline pytorch":
            lines.append("| %s | %.2f%% | %.2f%% | %.0f%% | - | - | - | - |" % (
                DESCRIBE[key], 100 * rk[1], 100 * rs[1], 100 * re_[1]))
            continue
        lines.append("| %s | %.2f%% | %.2f%% | %.0f%% | %s | %.2f%% / %.2f%% | %.6f / %.6f | %.2e / %.2e |" % (
            DESCRIBE[key], 100 * rk[1], 100 * rs[1], 100 * re_[1], REF[key], 100 * rk[3], 100 * rs[3], rk[4], rs[4],
            rk[5], rs[5]))
    lines.append("")
    labels_k = np.array([s[0] for s in sets["1 KB"]])
    lengths_k = np.array([len(s[4]) for s in sets["1 KB"]])
    long_ = lengths_k >= 1000
    lines.append("1 KB set by length: " + "; ".join(
        "%s %.2f%% on the %d pieces of 1000+ bytes, %.2f%% on the %d shorter ones" % (
            key, 100 * float((preds_k[key][long_] == labels_k[long_]).mean()), int(long_.sum()),
            100 * float((preds_k[key][~long_] == labels_k[~long_]).mean()), int((~long_).sum()))
        for key in ("linfer int8", "baseline pytorch") if key in preds_k) + ".")
    labels_s = np.array([s[0] for s in sets["short"]])
    lengths_s = np.array([len(s[4]) for s in sets["short"]])
    bins = [(40, 79), (80, 119), (120, 200)]
    lines.append("")
    lines.append("Short set by length (linfer int8 / baseline int8): " + "; ".join(
        "%d-%d bytes (%d inputs) %s" % (lo, hi, int(((lengths_s >= lo) & (lengths_s <= hi)).sum()), " / ".join(
            "%.1f%%" % (100 * float((preds_s[key][m] == labels_s[m]).mean())) for key in ("linfer int8", "baseline int8")
            if key in preds_s for m in [(lengths_s >= lo) & (lengths_s <= hi)]))
        for lo, hi in bins) + ".")
    lines.append("")
    for set_name, (rows, _) in (("1 KB set", evaluated["1 KB"]), ("short set", evaluated["short"]),
                                ("everyday set (5 sentences per language)", evaluated["everyday"])):
        lines.append("Per-language accuracy, %s:" % set_name)
        lines.append("")
        lines.append("| model | " + " | ".join(names) + " |")
        lines.append("|---|" + "---|" * len(names))
        for key, acc, per, agree, cos, maxdiff in rows:
            lines.append("| %s | " % key + " | ".join("%.0f%%" % (100 * p) for p in per) + " |")
        lines.append("")
    confs = {}
    for set_name, title in (("1 KB", "1 KB set"), ("short", "short set")):
        labels = np.array([s[0] for s in sets[set_name]])
        preds = evaluated[set_name][1]
        conf = confusion(labels, preds["linfer int8"], len(names))
        confs[set_name] = conf
        lines.append("Confusion matrix of linfer int8 on the %s (rows: true language, columns: predicted):" % title)
        lines.append("")
        lines.append("| | " + " | ".join(names) + " |")
        lines.append("|---|" + "---|" * len(names))
        for i, n in enumerate(names):
            lines.append("| **%s** | " % n + " | ".join(str(v) if v else "." for v in conf[i]) + " |")
        lines.append("")
    lines.append("![confusion matrices of linfer int8](langid_confusion.png)")
    lines.append("")
    for set_name, what in (("1 KB", "1 KB set (language, page, piece index, predicted)"),
                           ("short", "short set (language, page, unit index, predicted: text)"),
                           ("everyday", "everyday set (language, -, line, predicted: text)")):
        preds = evaluated[set_name][1]
        wrong = [s for s, p in zip(sets[set_name], preds["pytorch"]) if p != s[0]]
        if set_name == "1 KB":
            items = ["%s %s #%d -> %s" % (s[1], s[2], s[3], names[p])
                     for s, p in zip(sets[set_name], preds["pytorch"]) if p != s[0]]
        else:
            items = ["%s %s #%d -> %s: \"%s\"" % (s[1], s[2], s[3], names[p], s[4].decode("utf-8"))
                     for s, p in zip(sets[set_name], preds["pytorch"]) if p != s[0]]
        lines.append("PyTorch's mistakes on the %s: %s." % (what, "; ".join(items) if wrong else "none"))
        lines.append("")
    lines.append("Packages read: " + ", ".join("%s %s" % kv for kv in versions.items()) + "; torch %s." % torch.__version__)
    lines.append("")
    lines.append(END)
    block = "\n".join(lines)
    print(block)
    if args.no_docs:
        return
    draw_confusions(args.png, names, [
        ("linfer int8, 1 KB set (%d samples, %.1f%% right)" % (
            confs["1 KB"].sum(), 100 * np.trace(confs["1 KB"]) / confs["1 KB"].sum()), confs["1 KB"]),
        ("linfer int8, short set (%d samples, %.1f%% right)" % (
            confs["short"].sum(), 100 * np.trace(confs["short"]) / confs["short"].sum()), confs["short"])])
    text = open(args.docs).read() if os.path.exists(args.docs) else "# Accuracy\n\n"
    if BEGIN in text and END in text:
        text = text[:text.index(BEGIN)] + block + text[text.index(END) + len(END):]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    with open(args.docs, "w") as f:
        f.write(text)
    print("wrote %s and %s" % (os.path.relpath(args.docs, ROOT), os.path.relpath(args.png, ROOT)))


if __name__ == "__main__":
    main()
