# SPDX-License-Identifier: Apache-2.0
"""attention_kind "block_sparse" (BigBird: window, global and random blocks; semantics in
docs/format.md). Keys: "block_size" (required), "global_blocks" [1] (global blocks at each end),
"num_random_blocks" [0]; and, deciding only the values of each layer's buffer "random_blocks"
[num_heads, ceil(max_seq_len / block_size), num_random_blocks] (block indices, stored as
float32): "random_pattern" ["uniform"] ("uniform": drawn uniformly from all blocks with torch's
generator seeded by "random_seed" [0] + the layer index; "zeros": every random block is block 0,
Hugging Face BigBird's pattern in eval mode)."""

import math

import numpy as np
import torch

import check_common as cc
import linfer_ref as lr

USES = ()


def resolve(config, cfg):
    if "block_size" not in config:
        raise ValueError("config: block_sparse attention needs block_size")
    cfg["block_size"] = config["block_size"]
    cfg["global_blocks"] = config.get("global_blocks", 1)
    cfg["num_random_blocks"] = config.get("num_random_blocks", 0)
    cfg["random_pattern"] = config.get("random_pattern", "uniform")
    cfg["random_seed"] = config.get("random_seed", 0)
    lr.check_non_negative_ints(cfg, ("block_size", "global_blocks", "num_random_blocks", "random_seed"))
    if not 1 <= cfg["block_size"] <= int(config.get("max_seq_len", 0)):
        raise ValueError("config: block_size must be in [1, max_seq_len]")
    if cfg["num_random_blocks"] > 64:
        raise ValueError("config: num_random_blocks must be at most 64")
    if cfg["random_pattern"] not in ("uniform", "zeros"):
        raise ValueError("config: random_pattern must be 'uniform' or 'zeros'")


# ------------------------------------------------------------------------------ PyTorch (linfer_ref.py)


def block_sparse_key_counts(cfg, random_blocks, T):
    """How many times each key j is listed for query row i, a [H, T, T] float64 tensor (0: not
    seen). Blocks of b = block_size rows, nb = ceil(T / b), the last one possibly shorter. An
    input of at most 2 g + 3 + 2 R blocks (g = global_blocks, R = num_random_blocks) is full
    attention (Hugging Face's switch). Otherwise the first and last g query blocks see every key;
    query block i sees the keys of the global blocks and of blocks i - 1, i, i + 1 once, plus block
    random_blocks[h, i, r] once more for every r where it is a block of this input (< nb), even
    when already seen."""
    b, g, R = cfg["block_size"], cfg["global_blocks"], cfg["num_random_blocks"]
    H = cfg["num_heads"]
    nb = -(-T // b)
    counts = torch.zeros(H, T, T, dtype=torch.float64)
    if nb <= 2 * g + 3 + 2 * R:
        return counts + 1.0
    for i in range(nb):
        rows = slice(i * b, min(T, (i + 1) * b))
        if i < g or i >= nb - g:
            counts[:, rows, :] = 1.0
            continue
        seen = torch.zeros(T, dtype=torch.float64)
        for k in list(range(g)) + [i - 1, i, i + 1] + list(range(nb - g, nb)):
            if 0 <= k < nb:
                seen[k * b:(k + 1) * b] = 1.0
        counts[:, rows, :] = seen
        for h in range(H):
            for r in range(R):
                k = int(random_blocks[h, i, r])
                if k < nb:
                    counts[h, rows, k * b:(k + 1) * b] += 1.0
    return counts


class BlockSparseAttention(lr._DenseAttention):
    """BigBird's ITC pattern as Hugging Face's BigBirdBlockSparseAttention computes it: softmax
    over the keys each row sees, a key listed n times (block_sparse_key_counts) weighing n times.
    Written as a dense count matrix: the oracle, not the fast way."""

    def __init__(self, cfg, layer_index=0):
        super().__init__(cfg)
        self.cfg = cfg
        blocks = -(-cfg["max_seq_len"] // cfg["block_size"])
        R = cfg["num_random_blocks"]
        if R:
            shape = (cfg["num_heads"], blocks, R)
            if cfg["random_pattern"] == "zeros":
                table = torch.zeros(shape)
            else:
                gen = torch.Generator().manual_seed(int(cfg["random_seed"]) + layer_index)
                table = torch.randint(0, blocks, shape, generator=gen).to(torch.float32)
            self.register_buffer("random_blocks", table)
        else:
            self.random_blocks = None

    def forward(self, x, model_tensors=None, rot=None):
        T = x.shape[0]
        q = self._heads(self.q(x), self.H)
        k = self._heads(self.k(x), self.kvh)
        v = self._heads(self.v(x), self.kvh)
        counts = block_sparse_key_counts(self.cfg, self.random_blocks, T).to(x.dtype)
        scores = torch.matmul(q, k.transpose(1, 2)) / math.sqrt(self.hd)
        scores = scores.masked_fill(counts == 0, float("-inf"))
        p = torch.softmax(scores, dim=-1) * counts
        p = p / p.sum(-1, keepdim=True)
        return self._merge(torch.matmul(p, v))


def make_attention(cfg, layer_index=0):
    return BlockSparseAttention(cfg, layer_index)


# ------------------------------------------------------------------------------ numpy (check_kinds.py)


def numpy_shapes(cfg, qkv_bias):
    layer = {}
    if cfg.get("num_random_blocks", 0):
        layer["random_blocks"] = (cfg["num_heads"], -(-cfg["max_seq_len"] // cfg["block_size"]), cfg["num_random_blocks"])
    return {}, layer


def numpy_attention(cfg, sd, a, X):
    """Block loop, written from the BigBird structure: blocks of b rows (nb of them, the last one
    shorter when b does not divide T). At most 2 g + 3 + 2 R blocks: every row sees every key.
    Else the first and last g query blocks see every key, and query block i sees the keys of the
    set {global blocks, i - 1, i, i + 1}, followed by the keys of each random block (entries < nb)
    appended to the list as they come, so a key listed twice enters the softmax twice."""
    T, hd = X.shape[0], cfg["head_dim"]
    b, g, R = cfg["block_size"], cfg.get("global_blocks", 1), cfg.get("num_random_blocks", 0)
    nb = (T + b - 1) // b
    rows_of = lambda k: list(range(k * b, min(T, (k + 1) * b)))  # noqa: E731
    heads = []
    for h in range(cfg["num_heads"]):
        Q, K, V = (cc.head_proj(cfg, sd, a, w, X, h) for w in "qkv")
        table = sd[a + "random_blocks"][h] if R else None
        O = np.zeros((T, hd))
        for i in range(nb):
            if nb <= 2 * g + 3 + 2 * R or i < g or i >= nb - g:
                keys = list(range(T))
            else:
                base = sorted({k for k in list(range(g)) + [i - 1, i, i + 1] + list(range(nb - g, nb))})
                keys = [j for k in base for j in rows_of(k)]
                for r in range(R):
                    k = int(table[i, r])
                    assert float(k) == table[i, r] and k >= 0
                    if k < nb:
                        keys += rows_of(k)
            for q in rows_of(i):
                O[q] = cc.softmax_row(np.array([Q[q] @ K[j] for j in keys]) / math.sqrt(hd)) @ V[keys]
        heads.append(O)
    return cc.linear(sd, sd, a + "out", np.concatenate(heads, axis=1))
