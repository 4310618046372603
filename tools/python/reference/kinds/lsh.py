# SPDX-License-Identifier: Apache-2.0
"""attention_kind "lsh" (Reformer: LSH attention with shared queries and keys; semantics in
docs/format.md, as lucidrains' reformer-pytorch LSHAttention computes them); rotary positions
apply. Keys: "bucket_size" (required: rows per chunk), "num_hashes" [4] (hashing rounds),
"causal" [false]; and, deciding only the values of each layer's buffer "rotations" [num_hashes,
head_dim, ceil(max_seq_len / (2 bucket_size))], "rotation_seed" [0] (standard normal, torch's
generator seeded by rotation_seed + the layer index). The layers have no k linear: the queries
are the keys."""

import math

import numpy as np
import torch
import torch.nn.functional as F

import check_common as cc
import linfer_ref as lr

USES = ("causal", "rotary")
KEY_LINEAR = False
CAUSAL_PREFIX = False  # a causal row still depends on later rows through their buckets


def resolve(config, cfg):
    if "bucket_size" not in config:
        raise ValueError("config: lsh attention needs bucket_size")
    cfg["bucket_size"] = config["bucket_size"]
    cfg["num_hashes"] = config.get("num_hashes", 4)
    cfg["rotation_seed"] = config.get("rotation_seed", 0)
    lr.check_non_negative_ints(cfg, ("bucket_size", "num_hashes", "rotation_seed"))
    if not 1 <= cfg["bucket_size"] <= 256:
        raise ValueError("config: bucket_size must be in [1, 256]")
    if not 1 <= cfg["num_hashes"] <= 16:
        raise ValueError("config: num_hashes must be in [1, 16]")
    lr.check_bool(cfg, "causal")


# ------------------------------------------------------------------------------ PyTorch (linfer_ref.py)

LSH_SELF_SCORE = -5e4  # reformer-pytorch's TOKEN_SELF_ATTN_VALUE


def lsh_buckets(qk, rotations, T, b):
    """[H, num_hashes, T] bucket of each row in each round: argmax over [x R, -x R] with the
    first ceil(T / 2b) columns of the round's rotations (the first of equal maxima)."""
    half = -(-T // (2 * b))
    y = torch.einsum("htf,rfi->hrti", qk, rotations[:, :, :half].to(qk.dtype))
    return torch.argmax(torch.cat([y, -y], dim=-1), dim=-1)


def lsh_chunk_rows(buckets_h, T, b):
    """The chunks of one head, in order (round-major): each a LongTensor of its sorted rows (rows
    sorted by (bucket, position) within a round, cut into pieces of b)."""
    chunks = []
    pos = torch.arange(T)
    for r in range(buckets_h.shape[0]):
        order = torch.argsort(buckets_h[r] * T + pos)
        chunks += [order[c:c + b] for c in range(0, T, b)]
    return chunks


class LshAttention(lr._DenseAttention):
    """lucidrains' reformer-pytorch LSHAttention in eval mode, its random rotations fixed in the
    buffer "rotations": the queries are the keys (no k linear).
    Per round: buckets (lsh_buckets, on the rows before rotary positions), rows sorted by (bucket,
    position) and cut into chunks of bucket_size; a chunk's rows attend to its own and the
    previous chunk's rows (cyclic over all rounds' chunks) with scores q . k / |k| / sqrt(hd),
    -max where causal and the key comes later, LSH_SELF_SCORE for the row itself. The rounds'
    outputs are weighed by softmax over the rounds of their log-sum-exps. Written with loops over
    the chunks: the oracle, not the fast way."""

    def __init__(self, cfg, layer_index=0):
        super().__init__(cfg)
        del self.k
        self.cfg = cfg
        half = -(-cfg["max_seq_len"] // (2 * cfg["bucket_size"]))
        gen = torch.Generator().manual_seed(int(cfg["rotation_seed"]) + layer_index)
        self.register_buffer("rotations", torch.randn(cfg["num_hashes"], self.hd, half, generator=gen))

    def forward(self, x, model_tensors=None, rot=None):
        T, b, rounds = x.shape[0], self.cfg["bucket_size"], self.cfg["num_hashes"]
        qk = self._heads(self.q(x), self.H)
        v = self._heads(self.v(x), self.kvh)
        buckets = lsh_buckets(qk, self.rotations, T, b)
        qk = lr.rotate_pairs(qk, rot)
        keys = F.normalize(qk, p=2, dim=-1)
        out = torch.zeros_like(qk)
        for h in range(self.H):
            chunks = lsh_chunk_rows(buckets[h], T, b)
            per_round = -(-T // b)
            o = torch.zeros(rounds, T, self.hd, dtype=x.dtype)
            lse = torch.zeros(rounds, T, dtype=x.dtype)
            for g, rows in enumerate(chunks):
                kv = torch.cat([rows, chunks[g - 1]])  # (chunks[-1] for the first: cyclic)
                dots = torch.matmul(qk[h, rows], keys[h, kv].t()) * self.hd ** -0.5
                if self.cfg.get("causal", False):
                    dots = dots.masked_fill(kv[None, :] > rows[:, None], -torch.finfo(dots.dtype).max)
                dots = dots.masked_fill(kv[None, :] == rows[:, None], LSH_SELF_SCORE)
                s = torch.logsumexp(dots, dim=-1)
                o[g // per_round, rows] = torch.matmul(torch.exp(dots - s[:, None]), v[h, kv])
                lse[g // per_round, rows] = s
            out[h] = (o * torch.softmax(lse, dim=0)[..., None]).sum(0)
        return self._merge(out)


def make_attention(cfg, layer_index=0):
    return LshAttention(cfg, layer_index)


# ------------------------------------------------------------------------------ numpy (check_kinds.py)


class HashMargin:
    smallest = float("inf")  # over a case's runs, rounds, heads and rows: (top - second) / max |y|


def numpy_case_start():
    HashMargin.smallest = float("inf")


def numpy_case_verdict():
    """A bucket decided by a near-tie could come out differently in float32: the fixture would
    test rounding, not the semantics (make_kinds_golden picks seeds with room)."""
    return HashMargin.smallest >= 1e-4, " hash margin %.1e" % HashMargin.smallest


def numpy_shapes(cfg, qkv_bias):
    return {}, {"rotations": (cfg.get("num_hashes", 4), cfg["head_dim"], -(-cfg["max_seq_len"] // (2 * cfg["bucket_size"])))}


def numpy_attention(cfg, sd, a, X):
    """Written from the Reformer structure by ranks: in round r a row's slot is its rank among the
    rows ordered by (bucket, position), its chunk r * ceil(T / b) + slot // b; query t of round r
    sees, with multiplicity, every (round, row) whose chunk is its own or the one before it
    (cyclic over all rounds' chunks). Buckets: argmax over [y, -y], y = the row's un-rotated
    projection times the round's first ceil(T / 2b) rotation columns. Scores q . k / |k| /
    sqrt(hd) with q, k rotated; a later key (causal) drops out, the row itself scores -5e4. The
    rounds' outputs weigh by softmax over their log-sum-exps."""
    T, hd, b, rounds = X.shape[0], cfg["head_dim"], cfg["bucket_size"], cfg.get("num_hashes", 4)
    half = -(-T // (2 * b))
    per_round = -(-T // b)
    heads = []
    for h in range(cfg["num_heads"]):
        W = sd[a + "q.weight"][h * hd : (h + 1) * hd]
        raw = X @ W.T + (sd[a + "q.bias"][h * hd : (h + 1) * hd] if a + "q.bias" in sd else 0.0)
        Q = cc.head_proj(cfg, sd, a, "q", X, h)
        V = cc.head_proj(cfg, sd, a, "v", X, h)
        K = Q / np.maximum(np.linalg.norm(Q, axis=1, keepdims=True), 1e-12)
        chunk_of = {}  # (round, row) -> global chunk
        for r in range(rounds):
            y = raw @ sd[a + "rotations"][r][:, :half]
            full = np.concatenate([y, -y], axis=1)
            bucket = full.argmax(axis=1)
            top2 = np.sort(full, axis=1)[:, -2:] if full.shape[1] > 1 else None
            if top2 is not None:
                gap = (top2[:, 1] - top2[:, 0]) / max(np.abs(full).max(), 1e-30)
                HashMargin.smallest = min(HashMargin.smallest, float(gap.min()))
            order = sorted(range(T), key=lambda t: (bucket[t], t))
            for slot, t in enumerate(order):
                chunk_of[(r, t)] = r * per_round + slot // b
        chunks = rounds * per_round
        O = np.zeros((T, hd))
        for t in range(T):
            outs, lses = [], []
            for r in range(rounds):
                mine = chunk_of[(r, t)]
                seen = [j for (rr, j), g in chunk_of.items() if g in (mine, (mine - 1) % chunks)]
                if chunks == 1:  # the chunk before is the chunk itself: its rows twice
                    seen = seen + seen
                s = np.array([Q[t] @ K[j] / math.sqrt(hd) for j in seen])
                for n, j in enumerate(seen):
                    if cfg["causal"] and j > t:
                        s[n] = -np.finfo(np.float64).max
                    if j == t:
                        s[n] = -5e4
                m = s.max()
                lse = m + math.log(np.exp(s - m).sum())
                outs.append(cc.softmax_row(s) @ V[seen])
                lses.append(lse)
            w = np.exp(np.array(lses) - max(lses))
            O[t] = sum(wi * o for wi, o in zip(w / w.sum(), outs))
        heads.append(O)
    return cc.linear(sd, sd, a + "out", np.concatenate(heads, axis=1))
