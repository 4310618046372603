# SPDX-License-Identifier: Apache-2.0
"""Trains the example model: a byte-level encoder that tells which language a text is written in
(10 classes, data_langid.py), and writes it in every form the examples use.

    /usr/bin/python3 tools/python/langid/train.py                 # installs the packages, trains, converts
    /usr/bin/python3 tools/python/langid/train.py --bench 5       # only times 5 training steps
    /usr/bin/python3 tools/python/langid/train.py ... --out build/langid.safetensors   # train, write only there
    /usr/bin/python3 tools/python/langid/train.py --ship build/langid.safetensors      # ship that, no training

The exact command of the shipped model is in examples/models/langid.train.json ("command"; and
"shipped_by" when it was trained with --out and shipped with --ship). The defaults (a Linformer of
dim 128, 4000 steps) are not the shipped model's: it has sliding-window attention (--attention
sliding_window --window-radius 4, dim 96; docs/accuracy.md says why).

Writes (from the repository root):
    examples/models/langid.safetensors        the checkpoint, linfer layout, config in __metadata__
    examples/models/langid.{f32,f16,int8}.lfm   converted with build/bin/linfer-convert
    examples/models/langid.labels.txt         one label per line, class index order
    examples/models/langid.train.json         config, command, time, validation curve (for docs)
    examples/data/langid_test_pages.txt       the page names of the test split (eval_accuracy.py)
    examples/data/langid_short_test.tsv       the short-input test set (eval_accuracy.py)
    examples/data/langid-{de,fr,ru}.txt       short texts from test-split pages

Resumable: every --checkpoint-minutes (and at the end) the model, the optimizer, the random
generators and the curve go to --work/state.pt (written to a temporary file, then renamed). A run
with the same arguments continues from there; a process that is stopped (SIGSTOP) or killed loses
at most that much work. --fresh ignores a saved state.

The model is tools/python/reference/linfer_ref.py's LinferEncoder. Its forward takes one sequence; for speed
the training runs a batched forward written here (pre-norm, learned positions, projection after
the linears, "kv" or "headwise" sharing, mean or first pooling) on the same parameters. Batches of
sentences of different lengths are padded, and the padding is masked exactly: the padded rows of K
and V are zeroed before the E projection (E[:, :T] K = E[:, :L] K[:L] when rows L..T-1 are zero)
and the mean pooling covers the L real rows only, so each row of a batch is the same function as
LinferEncoder on that row's L bytes. The script checks this (max |diff| < 1e-4 on padded and
unpadded batches) before and after training.

Training data, with --augment full (the shipped model): each step is either a "long" batch
(--batch windows of n = 1024 bytes of the train-split pages, or with probability --mid-fraction
one random length in 128..1023 for the batch, half of those windows ending where a page ends) or,
with probability --short-fraction, a "short" batch of --short-batch inputs of 12-300 bytes:
 - half of them sentences and lines of prose (data_langid.prose_units, 20-300 bytes) of the
   train pages, the same kind of input as the short test set;
 - the other half random windows (log-uniform length 12..300 bytes) that start at a word start
   (80%) or anywhere (20%), line breaks turned into spaces (70%).
Augmentations of the text (short inputs; long windows only case and line breaks):
 - case: 8% all lower case, 4% all upper case, 8% the first letter made upper case (a sentence
   start), 4% every word capitalised;
 - punctuation: 10% the final punctuation removed, 5% a "." "!" or "?" added;
 - line breaks: long windows get their line breaks turned into spaces in 30% of the cases.
Each class is drawn with equal probability (the packages differ up to 20x in size).
--augment none is the previous recipe (70% windows of 1024 bytes, 30% one random length in
64..1023 per batch, half ending where a page ends; no short batches, no text changes), for the
ablation in docs/accuracy.md.
AdamW, warm-up then cosine decay to --min-lr-fraction of the peak; no dropout by default.
"""

import argparse
import hashlib
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
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "reference"))  # linfer_ref
import data_langid as data  # noqa: E402
from linfer_ref import LinferEncoder, load_safetensors, save_safetensors, sinusoidal_positions  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
MODELS = os.path.join(ROOT, "examples", "models")
EXAMPLES_DATA = os.path.join(ROOT, "examples", "data")
SHORT_TEST_SEED = "langid-short-v1"
SHORT_TEST_PER_LANG = 100


def make_config(args):
    config = {
        "vocab_size": 256, "dim": args.dim, "num_layers": args.layers, "num_heads": args.heads,
        "head_dim": args.head_dim, "ff_dim": args.ff_dim, "max_seq_len": args.max_seq_len, "proj_len": args.proj_len,
        "norm_placement": "pre", "final_norm": True, "positions": "learned",
        "projection_placement": "after", "projection_sharing": "kv", "activation": "gelu",
        "head": "classifier", "pooling": "mean", "num_classes": len(data.LABELS),
    }
    if args.attention == "sliding_window":  # Longformer's local attention, no projections
        for key in ("proj_len", "projection_placement", "projection_sharing"):
            del config[key]
        config.update({"attention_kind": "sliding_window", "window_radius": args.window_radius})
    return config


# the short texts shipped in examples/data (pages of the test split)
SAMPLE_TEXTS = [("de", "rm.1", "BESCHREIBUNG"), ("fr", "uniq.1", "DESCRIPTION"), ("ru", "random.4", "ОПИСАНИЕ")]


# ---------------------------------------------------------------------------------------------
# batched forward on LinferEncoder's parameters


def check_supported(model):
    c = model.cfg
    want = {"norm_placement": "pre", "positions": "learned", "head": "classifier", "embedding_norm": False,
            "position_offset": 0, "embedding_scale": 1.0, "head_transform": False}
    if c["attention_kind"] == "sliding_window":
        want.update({"global_positions": 0})
    else:
        want.update({"attention_kind": "linformer", "projection_placement": "after", "proj_bias": False})
    for key, value in want.items():
        if c[key] != value:
            raise SystemExit("train.py's batched forward does not handle %s = %r" % (key, c[key]))
    if c["kv_heads"] != c["num_heads"] or (c["attention_kind"] == "linformer" and
                                           c["projection_sharing"] not in ("kv", "headwise")):
        raise SystemExit("train.py's batched forward handles kv_heads = heads and kv/headwise sharing only")


def sliding_window_attention(q, k, v, radius, lengths):
    """q, k, v [B, H, T, hd] (q scaled) -> [B, H, T, hd]: row i attends to the keys j with
    |i - j| <= radius and j < its input's length (a padded row, i >= length, to itself only, so
    that it stays finite; it is masked out later). Gathers the 2 radius + 1 keys of each row
    instead of masking a T x T matrix."""
    B, H, T, hd = q.shape
    w = 2 * radius + 1
    kw = F.pad(k, (0, 0, radius, radius)).unfold(2, w, 1)  # [B, H, T, hd, w]
    vw = F.pad(v, (0, 0, radius, radius)).unfold(2, w, 1)
    scores = torch.einsum("bhtd,bhtdw->bhtw", q, kw)
    i = torch.arange(T)[:, None]
    j = i - radius + torch.arange(w)[None, :]  # [T, w]: the key position of each slot
    L = torch.full((B,), T) if lengths is None else lengths
    seen = (j[None] >= 0) & (j[None] < L[:, None, None])
    seen = seen | (j[None] == i[None])  # padded rows: themselves
    scores = scores.masked_fill(~seen[:, None], float("-inf"))
    return torch.einsum("bhtw,bhtdw->bhtd", torch.softmax(scores, dim=-1), vw)


def batched_forward(model, ids, lengths=None, dropout=0.0):
    """ids [B, T] (T <= n), lengths [B] (None: all T) -> class logits [B, C]; row b is the same
    function as model(ids[b, :lengths[b]]). dropout > 0 (training only) drops out the embeddings
    and each residual branch's output."""
    c = model.cfg
    B, T = ids.shape
    H, hd = c["num_heads"], c["head_dim"]
    drop = (lambda t: F.dropout(t, dropout, training=True)) if dropout > 0 else (lambda t: t)
    mask = None
    if lengths is not None:
        mask = (torch.arange(T)[None, :] < lengths[:, None]).to(torch.float32)[:, :, None]  # [B, T, 1]
    x = drop(model.token_embedding(ids) + model.position_embedding.weight[:T])
    for layer in model.layers:
        a = layer.attention
        h = layer.attention_norm(x)
        q = (a.q(h) * (1.0 / math.sqrt(hd))).view(B, T, H, hd).transpose(1, 2)  # [B, H, T, hd]
        if c["attention_kind"] == "sliding_window":
            k, v = (t.view(B, T, H, hd).transpose(1, 2) for t in (a.k(h), a.v(h)))
            o = sliding_window_attention(q, k, v, c["window_radius"], lengths)
        else:
            E = a.proj_k[:, :T]
            Fp = E if c["projection_sharing"] == "kv" else a.proj_v[:, :T]
            kk = E.shape[0]
            k, v = a.k(h), a.v(h)
            if mask is not None:  # padded rows must not enter the projection
                k, v = k * mask, v * mask
            # E [k, T] @ K [B, T, H*hd]: one projection serves every head (kv/headwise sharing)
            kp = torch.matmul(E, k).view(B, kk, H, hd).permute(0, 2, 3, 1)  # [B, H, hd, k]
            vp = torch.matmul(Fp, v).view(B, kk, H, hd).transpose(1, 2)  # [B, H, k, hd]
            o = torch.matmul(torch.softmax(torch.matmul(q, kp), dim=-1), vp)  # [B, H, T, hd]
        x = x + drop(a.out(o.transpose(1, 2).reshape(B, T, H * hd)))
        x = x + drop(layer.feed_forward(layer.feed_forward_norm(x)))
    x = model.final_norm(x) if c["final_norm"] else x
    if c["pooling"] == "first":
        pooled = x[:, 0]
    elif mask is None:
        pooled = x.mean(dim=1)
    else:
        pooled = (x * mask).sum(dim=1) / lengths[:, None].to(x.dtype)
    return model.head.out(pooled)


def pad(texts):
    """[bytes] -> ids [B, max len] (zero padded), lengths [B]."""
    T = max(len(t) for t in texts)
    ids = np.zeros((len(texts), T), dtype=np.int64)
    for b, t in enumerate(texts):
        ids[b, :len(t)] = np.frombuffer(t, dtype=np.uint8)
    return torch.from_numpy(ids), torch.tensor([len(t) for t in texts], dtype=torch.long)


def check_batched(model, texts):
    """Max |batched - LinferEncoder| over some texts, one at a time and as one padded batch (eval
    mode, float32)."""
    model.eval()
    worst = 0.0
    with torch.no_grad():
        ref = [model(torch.tensor(list(t), dtype=torch.long))[0] for t in texts]
        for t, r in zip(texts, ref):
            b = batched_forward(model, torch.tensor(list(t), dtype=torch.long)[None])[0]
            worst = max(worst, float((r - b).abs().max()))
        ids, lengths = pad(texts)
        out = batched_forward(model, ids, lengths)
        for r, b in zip(ref, out):
            worst = max(worst, float((r - b).abs().max()))
    return worst


def init_weights(model, seed, proj_init="random", pos_init="normal"):
    """Token embeddings N(0, 1) (nn.Embedding's default), positions N(0, 0.02), projections E/F
    N(0, 1/sqrt(n)) (LinferEncoder leaves them at zero), linears and norms PyTorch's defaults.
    proj_init "prefix-identity" adds the identity to E/F's first k columns: slot j starts as
    position j (plus the random part), so an input of up to about k bytes starts with attention
    over its positions, not over random mixtures of them, from which a byte-level model cannot
    easily build the local n-grams a language is told by. pos_init "sinusoidal" starts the learned
    positions as the sinusoidal table (amplitude 1, like the token embeddings) instead of N(0, 0.02),
    so that attending to a neighbour (a fixed offset) is a linear function of the positions.
    Neither helped the language-ID model (docs/accuracy.md, "Why the example is not a Linformer")."""
    g = torch.Generator().manual_seed(seed)
    n = model.cfg["max_seq_len"]
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name == "token_embedding.weight":
                p.copy_(torch.randn(p.shape, generator=g))
            elif name == "position_embedding.weight":
                p.copy_(0.02 * torch.randn(p.shape, generator=g))
                if pos_init == "sinusoidal":
                    p.copy_(sinusoidal_positions(torch.arange(p.shape[0]), p.shape[1], 10000.0, dtype=p.dtype))
            elif name.endswith("proj_k") or name.endswith("proj_v"):
                p.copy_(torch.randn(p.shape, generator=g) / math.sqrt(n))
                if proj_init == "prefix-identity":
                    k = p.shape[0]
                    p[:, :k] += torch.eye(k)


# ---------------------------------------------------------------------------------------------
# data


def _char_start(buf, i):
    while i > 0 and (buf[i] & 0xC0) == 0x80:  # start on a character
        i -= 1
    return i


def _valid_prefix(b, n):
    """The first <= n bytes of b, cut at a character boundary when b is UTF-8."""
    if len(b) <= n:
        return b
    i = n
    while i > 0 and (b[i] & 0xC0) == 0x80:
        i -= 1
    return b[:i]


class Sampler:
    """Training inputs from each class's train pages. Long windows: random byte windows of the
    pages joined with blank lines ("tail" windows end where a page ends). Short inputs: prose units
    (sentences and lines) and short windows, with the augmentations of the module docstring."""

    def __init__(self, docs, seed, extra=None, extra_fraction=0.0):
        self.corpora, self.ends, self.units = [], [], []
        self.extra_corpora, self.extra_units = [], []
        self.extra_fraction = extra_fraction
        for lang in data.LABELS:
            texts = [t for p, t in docs[lang] if data.split_of(p) == "train"]
            text = b"\n\n".join(texts)
            self.corpora.append(np.frombuffer(text, dtype=np.uint8))
            self.ends.append(np.cumsum([len(t) + 2 for t in texts]) - 2)  # end offset of each page
            self.units.append([u for t in texts for u in data.prose_units(t, lang, 20, 300)])
            # extra training text (--extra-text): only for the short inputs
            et = (extra or {}).get(lang, b"")
            self.extra_corpora.append(np.frombuffer(et, dtype=np.uint8) if len(et) > 1000 else None)
            self.extra_units.append(data.prose_units(et, lang, 20, 300) if et else [])
        self.rng = np.random.default_rng(seed)

    def _window(self, c, T, tail):
        corpus = self.corpora[c]
        if tail:
            i = max(0, int(self.ends[c][self.rng.integers(0, len(self.ends[c]))]) - T)
        else:
            i = int(self.rng.integers(0, len(corpus) - T + 1))
        return _char_start(corpus, i)

    def long_batch(self, B, T, tail_fraction=0.0, augment=False):
        ids = np.empty((B, T), dtype=np.int64)
        labels = self.rng.integers(0, len(self.corpora), size=B)
        for b, c in enumerate(labels):
            corpus = self.corpora[c]
            i = self._window(c, T, self.rng.random() < tail_fraction)
            raw = corpus[i:i + T]
            if augment:
                text = corpus[i:i + T + 64].tobytes()
                new = self.augment(text, long=True)
                if len(new) >= T:
                    raw = np.frombuffer(new[:T], dtype=np.uint8)
            ids[b] = raw
        return torch.from_numpy(ids), torch.from_numpy(labels)

    def short_text(self, c):
        rng = self.rng
        corpus, units = self.corpora[c], self.units[c]
        if self.extra_fraction > 0 and self.extra_corpora[c] is not None and rng.random() < self.extra_fraction:
            corpus, units = self.extra_corpora[c], self.extra_units[c]  # a unit or window of the extra text
        if rng.random() < 0.5 and units:
            return units[int(rng.integers(0, len(units)))]
        L = int(round(math.exp(rng.uniform(math.log(12), math.log(300)))))
        i = int(rng.integers(0, len(corpus) - L - 1))
        if rng.random() < 0.8:  # a word start
            j = i
            while j < len(corpus) - L - 1 and corpus[j] not in (0x20, 0x0A):
                j += 1
            i = j + 1 if j - i < 40 else i
        i = _char_start(corpus, i)
        text = corpus[i:i + L + 8].tobytes().decode("utf-8", errors="ignore")
        if rng.random() < 0.7:
            text = " ".join(text.split())
        b = text.strip().encode("utf-8")
        return _valid_prefix(b, L) or corpus[i:i + L].tobytes()

    def augment(self, text, long=False):
        """Case and punctuation changes of a text (bytes); long windows: case and line breaks."""
        rng = self.rng
        s = text.decode("utf-8", errors="ignore")
        r = rng.random()
        if r < 0.08:
            s = s.lower()
        elif r < 0.12:
            s = s.upper()
        elif r < 0.20 and not long:
            s = s[:1].upper() + s[1:]
        elif r < 0.24:
            s = " ".join(w[:1].upper() + w[1:] for w in s.split(" "))
        if long:
            if rng.random() < 0.3:
                s = s.replace("\n", " ")
            return s.encode("utf-8")
        r = rng.random()
        if r < 0.10:
            s = s.rstrip(".!?:;,")
        elif r < 0.15:
            s = s + ".!?"[int(rng.integers(0, 3))]
        return s.encode("utf-8")

    def short_batch(self, B, max_len=300, chunks=4):
        """B short inputs as `chunks` padded sub-batches of similar lengths (little padding):
        [(ids, lengths, labels)]."""
        labels = self.rng.integers(0, len(self.corpora), size=B)
        texts = []
        for c in labels:
            t = _valid_prefix(self.augment(self.short_text(int(c))), max_len)
            texts.append(t if t else b".")
        order = sorted(range(B), key=lambda i: len(texts[i]))
        out = []
        for part in np.array_split(np.array(order), chunks):
            ids, lengths = pad([texts[i] for i in part])
            out.append((ids, lengths, torch.from_numpy(labels[part])))
        return out


def predict(model, texts, batch_tokens=16384):
    """argmax class of each text (bytes), batched by similar lengths; a text longer than the
    model's n is cut to its first n bytes (at a character boundary), as an application would."""
    model.eval()
    texts = [_valid_prefix(t, model.cfg["max_seq_len"]) for t in texts]
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    out = [0] * len(texts)
    with torch.no_grad():
        i = 0
        while i < len(order):
            T = len(texts[order[i]])
            j = i
            while j < len(order) and (j - i + 1) * len(texts[order[j]]) <= max(batch_tokens, T):
                j += 1
            j = max(j, i + 1)
            chunk = order[i:j]
            ids, lengths = pad([texts[k] for k in chunk])
            pred = batched_forward(model, ids, lengths).argmax(1)
            for k, p in zip(chunk, pred.tolist()):
                out[k] = p
            i = j
    return out


def accuracy(model, samples):
    pred = predict(model, [s[4] for s in samples])
    return sum(int(p == s[0]) for p, s in zip(pred, samples)) / max(1, len(samples))


def write_examples(docs, test_pages):
    os.makedirs(EXAMPLES_DATA, exist_ok=True)
    with open(os.path.join(EXAMPLES_DATA, "langid_test_pages.txt"), "w") as f:
        f.write("# test split of tools/python/langid/data_langid.py: pages with sha256(%r + page) %% 100 < %d\n"
                % (data.SPLIT_SALT, data.TEST_BUCKETS))
        f.write("".join(p + "\n" for p in test_pages))
    write_short_test(docs, test_pages)
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


def short_test_lines(docs, test_pages):
    """The lines of examples/data/langid_short_test.tsv (without the header)."""
    samples = data.make_short_samples(docs, test_pages, per_lang=SHORT_TEST_PER_LANG, seed=SHORT_TEST_SEED)
    lines = []
    for ci, lang, page, j, text in samples:
        s = text.decode("utf-8")
        assert "\t" not in s and "\n" not in s, s
        lines.append("%s\t%s\t%d\t%s\n" % (lang, page, j, s))
    return lines


def write_short_test(docs, test_pages):
    with open(os.path.join(EXAMPLES_DATA, "langid_short_test.tsv"), "w", encoding="utf-8") as f:
        f.write("# language\tpage\tunit index\ttext: data_langid.make_short_samples(test pages, per_lang=%d, "
                "seed=%r); written by tools/python/langid/train.py\n" % (SHORT_TEST_PER_LANG, SHORT_TEST_SEED))
        f.writelines(short_test_lines(docs, test_pages))


# ---------------------------------------------------------------------------------------------
# checkpoints


def save_state(path, model, opt, step, sampler, len_rng, curve, train_seconds, fingerprint):
    tmp = path + ".tmp"
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step,
                "sampler_rng": sampler.rng.bit_generator.state, "len_rng": len_rng.bit_generator.state,
                "torch_rng": torch.get_rng_state(), "curve": curve, "train_seconds": train_seconds,
                "fingerprint": fingerprint}, tmp)
    os.replace(tmp, path)


# ---------------------------------------------------------------------------------------------


def write_models(ckpt, docs, test_pages, convert, summary):
    """Everything a finished run writes besides the checkpoint examples/models/langid.safetensors:
    the labels, the .lfm files (converted by linfer-convert, the format version it writes by
    default), the test-split files of examples/data, the sample texts and langid.train.json."""
    with open(os.path.join(MODELS, "langid.labels.txt"), "w") as f:
        f.write("".join(l + "\n" for l in data.LABELS))
    for dtype in ("f32", "f16", "int8"):
        subprocess.run([convert, ckpt, "-o", os.path.join(MODELS, "langid.%s.lfm" % dtype),
                        "--dtype", dtype], check=True)
    summary["sample_texts"] = write_examples(docs, test_pages)
    with open(os.path.join(MODELS, "langid.train.json"), "w") as f:
        json.dump(summary, f, indent=1)
        f.write("\n")


def ship(args):
    """--ship CKPT: a checkpoint trained with --out becomes the shipped model, without training.
    Its training record (CKPT.json, written by --out) becomes langid.train.json, whose "command" is
    the training command as it was run (with its --out); "shipped_by" is this command."""
    import shutil
    record_path = args.ship + ".json"
    if not os.path.exists(record_path):
        raise SystemExit("%s has no training record %s (written by train.py --out)" % (args.ship, record_path))
    with open(record_path) as f:
        summary = json.load(f)
    tensors, meta = load_safetensors(args.ship)
    config = json.loads(meta["linfer_config"])
    if config != summary["config"]:
        raise SystemExit("%s's configuration differs from its record %s" % (args.ship, record_path))
    model = LinferEncoder(config)
    model.load_state_dict(tensors)  # refuses a checkpoint that does not fit the configuration
    versions = data.ensure_packages()
    if versions != summary["packages"]:
        raise SystemExit("the manual-page packages differ from the training run's (%s, now %s): the test-split "
                         "files would not describe its data" % (summary["packages"], versions))
    docs = data.load_documents()
    test_pages = sorted({p for lang in data.LABELS for p, _ in docs[lang] if data.split_of(p) == "test"})
    os.makedirs(MODELS, exist_ok=True)
    ckpt = os.path.join(MODELS, "langid.safetensors")
    if os.path.abspath(args.ship) != os.path.abspath(ckpt):
        shutil.copyfile(args.ship, ckpt)
    with open(ckpt, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    summary["shipped_by"] = "/usr/bin/python3 tools/python/langid/train.py" + "".join(" " + a for a in sys.argv[1:])
    summary["safetensors_sha256"] = sha
    write_models(ckpt, docs, test_pages, args.convert, summary)
    print("shipped %s (sha256 %s) as %s" % (args.ship, sha, os.path.relpath(ckpt, ROOT)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--layers", type=int, default=3)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--head-dim", type=int, default=32)
    ap.add_argument("--ff-dim", type=int, default=512)
    ap.add_argument("--max-seq-len", type=int, default=1024,
                    help="n: the longest input (a microcontroller model: 128); longer inputs are cut")
    ap.add_argument("--proj-len", type=int, default=64)
    ap.add_argument("--attention", choices=("linformer", "sliding_window"), default="linformer",
                    help="sliding_window: Longformer's local attention (--window-radius) instead of Linformer's")
    ap.add_argument("--window-radius", type=int, default=4, help="sliding_window: row i sees keys |i - j| <= this")
    ap.add_argument("--steps", type=int, default=4000)
    ap.add_argument("--batch", type=int, default=8, help="long windows per long batch")
    ap.add_argument("--short-batch", type=int, default=64, help="inputs per short batch")
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--min-lr-fraction", type=float, default=0.05)
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--weight-decay", type=float, default=0.01)
    ap.add_argument("--dropout", type=float, default=0.0, help="training only (not in linfer_ref)")
    ap.add_argument("--augment", choices=("full", "none"), default="full")
    ap.add_argument("--short-fraction", type=float, default=0.4,
                    help="full: share of short batches; none: share of batches of one random length")
    ap.add_argument("--mid-fraction", type=float, default=0.5,
                    help="full: share of the long batches of one random length in 128..1023")
    ap.add_argument("--tail-fraction", type=float, default=0.5, help="of the random-length windows: page ends")
    ap.add_argument("--extra-text", choices=("none", "ddtp"), default="none",
                    help="ddtp: Debian's package-description translations (data_langid.ddtp_text) as extra "
                    "training text for the short inputs (never validation or test)")
    ap.add_argument("--extra-fraction", type=float, default=0.4,
                    help="with --extra-text: share of the short inputs (sentences and windows) drawn from it")
    ap.add_argument("--proj-init", choices=("random", "prefix-identity"), default="random",
                    help="initial projections E/F: random N(0, 1/sqrt(n)), or that plus the identity on the "
                    "first k positions (init_weights)")
    ap.add_argument("--pos-init", choices=("normal", "sinusoidal"), default="normal",
                    help="initial learned positions: N(0, 0.02), or the sinusoidal table (init_weights)")
    ap.add_argument("--seed", type=int, default=20260501)
    ap.add_argument("--eval-every", type=int, default=250)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "langid-train"),
                    help="directory of the resumable state")
    ap.add_argument("--checkpoint-minutes", type=float, default=5.0)
    ap.add_argument("--fresh", action="store_true", help="ignore a saved state")
    ap.add_argument("--stop-after", type=int, default=0, help="stop (saving the state) after this step")
    ap.add_argument("--bench", type=int, default=0, help="only time this many steps")
    ap.add_argument("--no-write", action="store_true", help="train and evaluate, write nothing in examples/")
    ap.add_argument("--out", default=None, help="write the checkpoint here instead (implies --no-write), and "
                    "its training record beside it (OUT.json)")
    ap.add_argument("--init", default=None, help="start from the weights of this checkpoint (same configuration; "
                    "a new optimizer and schedule), e.g. a first stage written with --out")
    ap.add_argument("--ship", default=None, metavar="CKPT",
                    help="train nothing: write CKPT (a checkpoint written with --out, its record CKPT.json beside "
                    "it) to examples/models as the shipped model, with everything a training run writes there")
    ap.add_argument("--convert", default=os.path.join(ROOT, "build", "bin", "linfer-convert"))
    args = ap.parse_args()
    if args.ship:
        return ship(args)

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    config = make_config(args)
    versions = data.ensure_packages()
    t_data = time.time()
    docs = data.load_documents()
    test_pages = sorted({p for lang in data.LABELS for p, _ in docs[lang] if data.split_of(p) == "test"})
    val_pages = sorted({p for lang in data.LABELS for p, _ in docs[lang] if data.split_of(p) == "val"})
    val = data.make_samples(docs, val_pages, per_lang=30, seed=args.seed)
    val_short = data.make_short_samples(docs, val_pages, per_lang=50, seed=args.seed)
    extra, extra_stats = None, None
    if args.extra_text == "ddtp":
        t_extra = time.time()
        extra, extra_stats = data.ddtp_text(docs, os.path.join(EXAMPLES_DATA, "langid_short_test.tsv"))
        print("extra text (ddtp, %.0f s): %s; sentences dropped as in the test sets: %d (%s)" % (
            time.time() - t_extra,
            ", ".join("%s %d KB" % (l, st["bytes"] // 1000) for l, st in extra_stats.items()),
            sum(st["dropped_test_sentences"] for st in extra_stats.values()),
            ", ".join("%s %d" % (l, st["dropped_test_sentences"]) for l, st in extra_stats.items())), flush=True)
    sampler = Sampler(docs, args.seed, extra, args.extra_fraction if extra else 0.0)
    if extra:
        print("extra units: %s" % ", ".join("%s %d" % (l, len(u)) for l, u in zip(data.LABELS, sampler.extra_units)),
              flush=True)
    print("data: %s; %d val samples, %d short val samples; %.1f s" % (
        ", ".join("%s %d KB/%d units" % (l, len(c) // 1000, len(u))
                  for l, c, u in zip(data.LABELS, sampler.corpora, sampler.units)),
        len(val), len(val_short), time.time() - t_data), flush=True)

    model = LinferEncoder(config)
    check_supported(model)
    init_weights(model, args.seed, args.proj_init, args.pos_init)
    init_info = None
    if args.init:
        tensors, meta = load_safetensors(args.init)
        if json.loads(meta["linfer_config"]) != json.loads(json.dumps(config)):
            raise SystemExit("%s has another configuration: %s" % (args.init, meta["linfer_config"]))
        model.load_state_dict(tensors)
        with open(args.init, "rb") as f:
            init_info = {"path": os.path.relpath(os.path.abspath(args.init), ROOT),
                         "sha256": hashlib.sha256(f.read()).hexdigest()}
        record = args.init + ".json"
        if os.path.exists(record):
            with open(record) as f:
                init_info["run"] = json.load(f)
        print("initialised from %s (sha256 %s)" % (args.init, init_info["sha256"]), flush=True)
    nparams = sum(p.numel() for p in model.parameters())
    print("model: %d parameters (%.2f MB f32)" % (nparams, nparams * 4 / 1e6), flush=True)
    check_texts = [_valid_prefix(s[4], config["max_seq_len"]) for s in val[:2] + val_short[:3]]
    diff = check_batched(model, check_texts)
    assert diff < 1e-4, "batched forward differs from LinferEncoder by %g" % diff

    decay = [p for n, p in model.named_parameters() if p.dim() >= 2 and "norm" not in n]
    no_decay = [p for n, p in model.named_parameters() if not (p.dim() >= 2 and "norm" not in n)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=args.lr)
    steps = args.bench or args.steps

    def lr_at(s):
        warm = min(1.0, (s + 1) / args.warmup)
        cos = 0.5 * (1 + math.cos(math.pi * min(1.0, s / steps)))
        return args.lr * warm * (args.min_lr_fraction + (1 - args.min_lr_fraction) * cos)

    n = config["max_seq_len"]
    len_rng = np.random.default_rng(args.seed + 1)
    curve = []
    start, train_seconds = 0, 0.0
    keys = ("dim", "layers", "heads", "head_dim", "ff_dim", "proj_len", "steps", "batch", "short_batch",
            "lr", "min_lr_fraction", "warmup", "weight_decay", "dropout", "augment", "short_fraction",
            "mid_fraction", "tail_fraction", "seed")
    fingerprint = {k: getattr(args, k) for k in keys}
    if init_info:
        fingerprint["init_sha256"] = init_info["sha256"]
    if args.attention != "linformer":
        fingerprint["attention"] = args.attention
        fingerprint["window_radius"] = args.window_radius
    if args.max_seq_len != 1024:
        fingerprint["max_seq_len"] = args.max_seq_len
    if args.proj_init != "random":
        fingerprint["proj_init"] = args.proj_init
    if args.pos_init != "normal":
        fingerprint["pos_init"] = args.pos_init
    if args.extra_text != "none":
        fingerprint["extra_text"] = args.extra_text
        fingerprint["extra_fraction"] = args.extra_fraction
    state_path = os.path.join(args.work, "state.pt")
    if not args.bench:
        os.makedirs(args.work, exist_ok=True)
        if os.path.exists(state_path) and not args.fresh:
            st = torch.load(state_path)
            if st["fingerprint"] != fingerprint:
                raise SystemExit("%s was saved by a run with other arguments (%s); use --fresh or another "
                                 "--work" % (state_path, st["fingerprint"]))
            model.load_state_dict(st["model"])
            opt.load_state_dict(st["opt"])
            sampler.rng.bit_generator.state = st["sampler_rng"]
            len_rng.bit_generator.state = st["len_rng"]
            torch.set_rng_state(st["torch_rng"])
            start, curve, train_seconds = st["step"], st["curve"], st["train_seconds"]
            print("resumed from %s at step %d (%.0f s of training so far)" % (state_path, start, train_seconds),
                  flush=True)
    t0 = time.time()
    t_seg = time.time()
    last_save = time.time()
    loss_avg = curve[-1]["loss"] if curve else 0.0
    right, seen = 0, 0
    step = start
    for step in range(start, steps):
        model.train()
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        r = len_rng.random()
        if args.augment == "full" and r < args.short_fraction:
            parts = sampler.short_batch(args.short_batch, max_len=min(300, n))
            kind = "short"
        else:
            B = args.batch
            if args.augment == "full":
                mid = len_rng.random() < args.mid_fraction
                T = int(len_rng.integers(min(128, n // 2), n)) if mid else n
                B = min(8 * args.batch, max(args.batch, round(args.batch * n / T)))  # about B * n bytes
            else:
                mid = r < args.short_fraction
                T = int(len_rng.integers(64, n)) if mid else n
            ids, labels = sampler.long_batch(B, T, tail_fraction=args.tail_fraction if mid else 0.0,
                                             augment=args.augment == "full")
            parts = [(ids, None, labels)]
            kind = "%dxT=%d" % (B, T)
        opt.zero_grad(set_to_none=True)
        total = sum(len(p[2]) for p in parts)
        step_loss = 0.0
        for ids, lengths, labels in parts:  # gradient accumulation over the sub-batches
            logits = batched_forward(model, ids, lengths, dropout=args.dropout)
            loss = F.cross_entropy(logits, labels) * (len(labels) / total)
            loss.backward()
            step_loss += float(loss)
            right += int((logits.argmax(1) == labels).sum())
            seen += len(labels)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        loss_avg = 0.98 * loss_avg + 0.02 * step_loss if step else step_loss
        if args.bench:
            print("step %d: %s, %.3f s/step so far" % (step, kind, (time.time() - t0) / (step + 1)), flush=True)
            continue
        done = step + 1
        if done % args.eval_every == 0 or done == steps:
            vacc = accuracy(model, val)
            vshort = accuracy(model, val_short)
            train_seconds += time.time() - t_seg
            t_seg = time.time()
            curve.append({"step": done, "seconds": round(train_seconds, 1), "loss": round(loss_avg, 4),
                          "train_acc": round(right / max(1, seen), 4), "val_acc": round(vacc, 4),
                          "val_short_acc": round(vshort, 4)})
            print("step %d/%d: loss %.4f, train acc %.3f, val acc %.3f, short val acc %.3f, lr %.2e, %.0f s" % (
                done, steps, loss_avg, right / max(1, seen), vacc, vshort, lr_at(step), train_seconds), flush=True)
            right, seen = 0, 0
        stop = args.stop_after and done >= args.stop_after
        if time.time() - last_save > 60 * args.checkpoint_minutes or done == steps or stop:
            save_state(state_path, model, opt, done, sampler, len_rng, curve,
                       train_seconds + time.time() - t_seg, fingerprint)
            last_save = time.time()
            print("saved %s at step %d" % (state_path, done), flush=True)
        if stop:
            return
    train_seconds += time.time() - t_seg
    if args.bench:
        return

    diff = check_batched(model, check_texts)
    assert diff < 1e-4, "batched forward differs from LinferEncoder by %g" % diff
    summary = {
        # (the niceness it ran at: a training run is usually niced, not always)
        "command": ("nice -n %d " % os.nice(0) if os.nice(0) else "") + "/usr/bin/python3 tools/python/langid/train.py"
                   + "".join(" " + a for a in sys.argv[1:]),
        "config": config, "parameters": nparams, "packages": versions,
        "steps": steps, "batch": args.batch, "short_batch": args.short_batch, "lr": args.lr,
        "min_lr_fraction": args.min_lr_fraction, "warmup": args.warmup,
        "weight_decay": args.weight_decay, "dropout": args.dropout, "augment": args.augment,
        "short_fraction": args.short_fraction, "mid_fraction": args.mid_fraction,
        "tail_fraction": args.tail_fraction, "seed": args.seed, "proj_init": args.proj_init,
        "pos_init": args.pos_init,
        "threads": args.threads, "train_seconds": round(train_seconds, 1),
        "train_bytes": {l: int(len(c)) for l, c in zip(data.LABELS, sampler.corpora)},
        "train_units": {l: len(u) for l, u in zip(data.LABELS, sampler.units)},
        "val_samples": len(val), "val_short_samples": len(val_short), "curve": curve,
        "torch": torch.__version__, "batched_vs_reference_max_abs_diff": diff,
    }
    if init_info:
        summary["init"] = init_info
    if extra:
        summary["extra_text"] = {
            "source": args.extra_text, "fraction_of_short_inputs": args.extra_fraction,
            "note": "Debian's package-description translations (apt Translation-XX indexes), training only",
            "stats": extra_stats, "units": {l: len(u) for l, u in zip(data.LABELS, sampler.extra_units)}}
    if args.out:
        save_safetensors(model, config, args.out)
        with open(args.out + ".json", "w") as f:
            json.dump(summary, f, indent=1)
            f.write("\n")
        print("wrote %s and %s.json" % (args.out, args.out))
        return
    if args.no_write:
        return
    os.makedirs(MODELS, exist_ok=True)
    ckpt = os.path.join(MODELS, "langid.safetensors")
    save_safetensors(model, config, ckpt)
    write_models(ckpt, docs, test_pages, args.convert, summary)
    print("trained %d steps in %.0f s; wrote %s" % (steps, train_seconds, os.path.relpath(ckpt, ROOT)))


if __name__ == "__main__":
    main()
