"""Trains the example model: a byte-level Linformer that tells which language a piece of a manual
page is written in (10 classes, data_langid.py), and writes it in every form the examples use.

    /usr/bin/python3 tools/python/train.py                 # installs the packages, trains, converts
    /usr/bin/python3 tools/python/train.py --bench 5       # only times 5 training steps

Writes (from the repository root):
    examples/models/langid.safetensors        the checkpoint, linfer layout, config in __metadata__
    examples/models/langid.{f32,f16,int8}.lfm   converted with build/bin/linfer-convert
    examples/models/langid.labels.txt         one label per line, class index order
    examples/models/langid.train.json         config, command, time, validation curve (for docs)
    examples/data/langid_test_pages.txt       the page names of the test split (eval_accuracy.py)
    examples/data/langid-{de,fr,ru}.txt       short texts from test-split pages

The model is tools/python/linfer_ref.py's LinferEncoder. Its forward takes one sequence; for speed
the training runs a batched forward written here for the configuration used (pre-norm, learned
positions, projection after the linears, "kv" or "headwise" sharing, mean or first pooling), on
the same parameters; the script checks that it agrees with LinferEncoder before and after training.

Training data: random windows of n = 1024 bytes from the train-split pages, each class drawn with
equal probability (the packages differ up to 20x in size). 30% of the batches are shorter (one
random length in 64..1023 per batch) so that short inputs work too; half of their windows end
where a page ends, like the last pieces of pages in the test split. AdamW, warm-up then cosine
decay; dropout 0.1 on the embeddings and the residual branches during training only (the
checkpoint is the plain LinferEncoder).
"""

import argparse
import json
import math
import os
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # keep the source tree clean

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import data_langid as data  # noqa: E402
from linfer_ref import LinferEncoder, save_safetensors  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODELS = os.path.join(ROOT, "examples", "models")
EXAMPLES_DATA = os.path.join(ROOT, "examples", "data")

CONFIG = {
    "vocab_size": 256, "dim": 64, "num_layers": 2, "num_heads": 4, "head_dim": 16, "ff_dim": 256,
    "max_seq_len": 1024, "proj_len": 128, "norm_placement": "pre", "final_norm": True,
    "positions": "learned", "projection_placement": "after", "projection_sharing": "kv",
    "activation": "gelu", "head": "classifier", "pooling": "mean",
    "num_classes": len(data.LABELS),
}

# the short texts shipped in examples/data (pages of the test split)
SAMPLE_TEXTS = [("de", "rm.1", "BESCHREIBUNG"), ("fr", "uniq.1", "DESCRIPTION"), ("ru", "random.4", "ОПИСАНИЕ")]


# ---------------------------------------------------------------------------------------------
# batched forward on LinferEncoder's parameters


def check_supported(model):
    c = model.cfg
    want = {"norm_placement": "pre", "positions": "learned", "projection_placement": "after",
            "attention_kind": "linformer", "head": "classifier", "embedding_norm": False,
            "position_offset": 0, "embedding_scale": 1.0, "head_transform": False}
    for key, value in want.items():
        if c[key] != value:
            raise SystemExit("train.py's batched forward does not handle %s = %r" % (key, c[key]))
    if c["projection_sharing"] not in ("kv", "headwise") or c["kv_heads"] != c["num_heads"]:
        raise SystemExit("train.py's batched forward handles kv/headwise sharing with kv_heads = heads")


def batched_forward(model, ids, dropout=0.0):
    """ids [B, T] (T <= n) -> class logits [B, C]; the same function as model(ids[b]) per row.
    dropout > 0 (training only) drops out the embeddings and each residual branch's output."""
    c = model.cfg
    B, T = ids.shape
    H, hd = c["num_heads"], c["head_dim"]
    drop = (lambda t: F.dropout(t, dropout, training=True)) if dropout > 0 else (lambda t: t)
    x = drop(model.token_embedding(ids) + model.position_embedding.weight[:T])
    for layer in model.layers:
        a = layer.attention
        h = layer.attention_norm(x)
        E = a.proj_k[:, :T]
        Fp = E if c["projection_sharing"] == "kv" else a.proj_v[:, :T]
        kk = E.shape[0]
        # E [k, T] @ K [B, T, H*hd]: one projection serves every head (kv/headwise sharing)
        kp = torch.matmul(E, a.k(h)).view(B, kk, H, hd).permute(0, 2, 3, 1)  # [B, H, hd, k]
        vp = torch.matmul(Fp, a.v(h)).view(B, kk, H, hd).transpose(1, 2)  # [B, H, k, hd]
        q = (a.q(h) * (1.0 / math.sqrt(hd))).view(B, T, H, hd).transpose(1, 2)  # [B, H, T, hd]
        att = torch.softmax(torch.matmul(q, kp), dim=-1)  # [B, H, T, k]
        o = torch.matmul(att, vp).transpose(1, 2).reshape(B, T, H * hd)
        x = x + drop(a.out(o))
        x = x + drop(layer.feed_forward(layer.feed_forward_norm(x)))
    x = model.final_norm(x) if c["final_norm"] else x
    pooled = x[:, 0] if c["pooling"] == "first" else x.mean(dim=1)
    return model.head.out(pooled)


def check_batched(model, samples):
    """Max |batched - LinferEncoder| over a few samples (eval mode, float32)."""
    model.eval()
    worst = 0.0
    with torch.no_grad():
        for s in samples:
            ids = torch.tensor(list(s), dtype=torch.long)
            a = model(ids)
            b = batched_forward(model, ids[None])
            worst = max(worst, float((a - b).abs().max()))
    return worst


def init_weights(model, seed):
    """Token embeddings N(0, 1) (nn.Embedding's default), positions N(0, 0.02), projections E/F
    N(0, 1/sqrt(n)) (LinferEncoder leaves them at zero), linears and norms PyTorch's defaults."""
    g = torch.Generator().manual_seed(seed)
    n = model.cfg["max_seq_len"]
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name == "token_embedding.weight":
                p.copy_(torch.randn(p.shape, generator=g))
            elif name == "position_embedding.weight":
                p.copy_(0.02 * torch.randn(p.shape, generator=g))
            elif name.endswith("proj_k") or name.endswith("proj_v"):
                p.copy_(torch.randn(p.shape, generator=g) / math.sqrt(n))


# ---------------------------------------------------------------------------------------------
# data


class WindowSampler:
    """Random byte windows from each class's train pages (joined with blank lines). A "tail"
    window ends where a page ends, like the short last pieces of the test split."""

    def __init__(self, docs, seed):
        self.corpora, self.ends = [], []
        for lang in data.LABELS:
            texts = [t for p, t in docs[lang] if data.split_of(p) == "train"]
            text = b"\n\n".join(texts)
            self.corpora.append(np.frombuffer(text, dtype=np.uint8))
            self.ends.append(np.cumsum([len(t) + 2 for t in texts]) - 2)  # end offset of each page
        self.rng = np.random.default_rng(seed)

    def batch(self, B, T, tail_fraction=0.0):
        ids = np.empty((B, T), dtype=np.int64)
        labels = self.rng.integers(0, len(self.corpora), size=B)
        for b, c in enumerate(labels):
            corpus = self.corpora[c]
            if self.rng.random() < tail_fraction:
                i = max(0, int(self.ends[c][self.rng.integers(0, len(self.ends[c]))]) - T)
            else:
                i = int(self.rng.integers(0, len(corpus) - T + 1))
            while i > 0 and (corpus[i] & 0xC0) == 0x80:  # start on a character
                i -= 1
            ids[b] = corpus[i:i + T]
        return torch.from_numpy(ids), torch.from_numpy(labels)


def accuracy(model, samples):
    model.eval()
    right = 0
    with torch.no_grad():
        for ci, _, _, _, text in samples:
            ids = torch.from_numpy(np.frombuffer(text, dtype=np.uint8).astype(np.int64))[None]
            right += int(batched_forward(model, ids).argmax(1).item() == ci)
    return right / max(1, len(samples))


def write_examples(docs, test_pages):
    os.makedirs(EXAMPLES_DATA, exist_ok=True)
    with open(os.path.join(EXAMPLES_DATA, "langid_test_pages.txt"), "w") as f:
        f.write("# test split of tools/python/data_langid.py: pages with sha256(%r + page) %% 100 < %d\n"
                % (data.SPLIT_SALT, data.TEST_BUCKETS))
        f.write("".join(p + "\n" for p in test_pages))
    written = []
    for lang, page, heading in SAMPLE_TEXTS:
        assert page in test_pages, page
        text = dict(docs[lang])[page]
        # from the description heading on, cut at a whitespace before 480 bytes
        body = text[text.index(("\n%s\n" % heading).encode("utf-8")) + 1:]
        cut = body[:480]
        cut = cut[:max(cut.rfind(b" "), cut.rfind(b"\n"))].rstrip() + b"\n"
        path = os.path.join(EXAMPLES_DATA, "langid-%s.txt" % lang)
        with open(path, "wb") as f:
            f.write(cut)
        written.append(os.path.relpath(path, ROOT))
    return written


# ---------------------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--weight-decay", type=float, default=0.01)
    ap.add_argument("--dropout", type=float, default=0.1, help="training only (not in linfer_ref)")
    ap.add_argument("--short-fraction", type=float, default=0.3)
    ap.add_argument("--tail-fraction", type=float, default=0.5, help="of the short windows: page ends")
    ap.add_argument("--seed", type=int, default=20260501)
    ap.add_argument("--eval-every", type=int, default=50)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--bench", type=int, default=0, help="only time this many steps")
    ap.add_argument("--no-write", action="store_true", help="train and evaluate, write nothing")
    ap.add_argument("--convert", default=os.path.join(ROOT, "build", "bin", "linfer-convert"))
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    versions = data.ensure_packages()
    t_data = time.time()
    docs = data.load_documents()
    test_pages = sorted({p for lang in data.LABELS for p, _ in docs[lang] if data.split_of(p) == "test"})
    val_pages = sorted({p for lang in data.LABELS for p, _ in docs[lang] if data.split_of(p) == "val"})
    val = data.make_samples(docs, val_pages, per_lang=30, seed=args.seed)
    sampler = WindowSampler(docs, args.seed)
    print("data: %s; %d val samples; %.1f s" % (
        ", ".join("%s %d KB" % (l, len(c) // 1000) for l, c in zip(data.LABELS, sampler.corpora)),
        len(val), time.time() - t_data), flush=True)

    model = LinferEncoder(CONFIG)
    check_supported(model)
    init_weights(model, args.seed)
    nparams = sum(p.numel() for p in model.parameters())
    print("model: %d parameters (%.2f MB f32)" % (nparams, nparams * 4 / 1e6), flush=True)
    diff = check_batched(model, [s[4] for s in val[:3]])
    assert diff < 1e-4, "batched forward differs from LinferEncoder by %g" % diff

    decay = [p for n, p in model.named_parameters() if p.dim() >= 2 and "norm" not in n]
    no_decay = [p for n, p in model.named_parameters() if not (p.dim() >= 2 and "norm" not in n)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=args.lr)
    steps = args.bench or args.steps
    lr_at = lambda s: args.lr * min(1.0, (s + 1) / args.warmup) * 0.5 * (1 + math.cos(math.pi * s / steps))  # noqa
    n = CONFIG["max_seq_len"]
    len_rng = np.random.default_rng(args.seed + 1)
    curve = []
    t0 = time.time()
    loss_avg, right, seen = 0.0, 0, 0
    for step in range(steps):
        model.train()
        short = len_rng.random() < args.short_fraction
        T = int(len_rng.integers(64, n)) if short else n
        ids, labels = sampler.batch(args.batch, T, tail_fraction=args.tail_fraction if short else 0.0)
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        logits = batched_forward(model, ids, dropout=args.dropout)
        loss = F.cross_entropy(logits, labels)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        loss_avg = 0.98 * loss_avg + 0.02 * float(loss) if step else float(loss)
        right += int((logits.argmax(1) == labels).sum())
        seen += len(labels)
        if args.bench:
            print("step %d: T %d, %.3f s/step so far" % (step, T, (time.time() - t0) / (step + 1)), flush=True)
            continue
        if (step + 1) % args.eval_every == 0 or step + 1 == steps:
            vacc = accuracy(model, val)
            el = time.time() - t0
            curve.append({"step": step + 1, "seconds": round(el, 1), "loss": round(loss_avg, 4),
                          "train_acc": round(right / seen, 4), "val_acc": round(vacc, 4)})
            print("step %d/%d: loss %.4f, train acc %.3f, val acc %.3f, %.0f s (%.2f s/step)" % (
                step + 1, steps, loss_avg, right / seen, vacc, el, el / (step + 1)), flush=True)
            right, seen = 0, 0
    train_seconds = time.time() - t0
    if args.bench or args.no_write:
        return

    diff = check_batched(model, [s[4] for s in val[:3]])
    assert diff < 1e-4, "batched forward differs from LinferEncoder by %g" % diff
    os.makedirs(MODELS, exist_ok=True)
    ckpt = os.path.join(MODELS, "langid.safetensors")
    save_safetensors(model, CONFIG, ckpt)
    with open(os.path.join(MODELS, "langid.labels.txt"), "w") as f:
        f.write("".join(l + "\n" for l in data.LABELS))
    for dtype in ("f32", "f16", "int8"):
        subprocess.run([args.convert, ckpt, "-o", os.path.join(MODELS, "langid.%s.lfm" % dtype),
                        "--dtype", dtype], check=True)
    samples = write_examples(docs, test_pages)
    summary = {
        "command": "/usr/bin/python3 tools/python/train.py" + "".join(" " + a for a in sys.argv[1:]),
        "config": CONFIG, "parameters": nparams, "packages": versions,
        "steps": steps, "batch": args.batch, "lr": args.lr, "warmup": args.warmup,
        "weight_decay": args.weight_decay, "dropout": args.dropout, "short_fraction": args.short_fraction,
        "tail_fraction": args.tail_fraction, "seed": args.seed,
        "threads": args.threads, "train_seconds": round(train_seconds, 1),
        "train_bytes": {l: int(len(c)) for l, c in zip(data.LABELS, sampler.corpora)},
        "val_samples": len(val), "curve": curve, "sample_texts": samples,
        "torch": torch.__version__, "batched_vs_reference_max_abs_diff": diff,
    }
    with open(os.path.join(MODELS, "langid.train.json"), "w") as f:
        json.dump(summary, f, indent=1)
        f.write("\n")
    print("trained %d steps in %.0f s; wrote %s" % (steps, train_seconds, os.path.relpath(ckpt, ROOT)))


if __name__ == "__main__":
    main()
