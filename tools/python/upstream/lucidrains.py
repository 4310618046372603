"""Re-creation of lucidrains/linformer 0.2.3 (pip `linformer`): LinformerLM and Linformer.

Same module tree (hence the same state_dict names) and the same eval-mode forward as upstream:
pre-norm layers, residual added by the sequence runner, GELU (erf) feed-forward with mult 4,
Linformer attention with the projection applied after to_k/to_v and sliced to the first n rows
for inputs shorter than seq_len. Dropout is accepted and ignored (inference only).

Keys (non-reversible):  linformer.net.layers.{i}.0.fn.{proj_k, proj_v, to_q, to_k, to_v, to_out}
                        linformer.net.layers.{i}.0.norm, linformer.net.layers.{i}.1.fn.{w1, w2},
                        linformer.net.layers.{i}.1.norm
Keys (reversible):      linformer.net.blocks.{i}.f.net.{fn, norm}, linformer.net.blocks.{i}.g.net.{fn, norm}
"""

import torch
import torch.nn.functional as F
from torch import nn


class LinformerSelfAttention(nn.Module):
    def __init__(self, dim, seq_len, k=256, heads=8, dim_head=None, one_kv_head=False, share_kv=False,
                 dropout=0.0):
        super().__init__()
        assert dim % heads == 0, "upstream asserts dim % heads == 0 even when dim_head is given"
        self.seq_len, self.k, self.heads = seq_len, k, heads
        self.dim_head = dim_head if dim_head is not None else dim // heads
        self.share_kv = share_kv
        kv_dim = self.dim_head if one_kv_head else self.dim_head * heads
        # registration order as upstream: to_q, to_k, proj_k, to_v, proj_v, to_out
        self.to_q = nn.Linear(dim, self.dim_head * heads, bias=False)
        self.to_k = nn.Linear(dim, kv_dim, bias=False)
        self.proj_k = nn.Parameter(torch.zeros(seq_len, k))  # (seq_len, k): E transposed
        if not share_kv:
            self.to_v = nn.Linear(dim, kv_dim, bias=False)
            self.proj_v = nn.Parameter(torch.zeros(seq_len, k))
        self.to_out = nn.Linear(self.dim_head * heads, dim)  # the only bias in the attention

    def forward(self, x):
        b, n, _ = x.shape
        assert n <= self.seq_len
        h, d_h = self.heads, self.dim_head
        keys = self.to_k(x)
        values = keys if self.share_kv else self.to_v(x)
        proj_k = self.proj_k[:n]
        proj_v = proj_k if self.share_kv else self.proj_v[:n]
        keys = torch.einsum("bnd,nk->bkd", keys, proj_k)  # (b, k, kv_dim)
        values = torch.einsum("bnd,nk->bkd", values, proj_v)
        q = self.to_q(x).reshape(b, n, h, d_h).transpose(1, 2)  # (b, h, n, d_h)
        # kv heads: kv_dim / d_h of them (1 with one_kv_head), broadcast to all h query heads
        keys = keys.reshape(b, self.k, -1, d_h).transpose(1, 2).expand(-1, h, -1, -1)
        values = values.reshape(b, self.k, -1, d_h).transpose(1, 2).expand(-1, h, -1, -1)
        attn = (torch.einsum("bhnd,bhkd->bhnk", q, keys) * d_h ** -0.5).softmax(dim=-1)
        out = torch.einsum("bhnk,bhkd->bhnd", attn, values)
        return self.to_out(out.transpose(1, 2).reshape(b, n, h * d_h))


class FeedForward(nn.Module):
    def __init__(self, dim, mult=4):
        super().__init__()
        self.w1 = nn.Linear(dim, dim * mult)
        self.w2 = nn.Linear(dim * mult, dim)

    def forward(self, x):
        return self.w2(F.gelu(self.w1(x)))


class PreNorm(nn.Module):
    def __init__(self, dim, fn):
        super().__init__()
        self.fn = fn  # registered before norm, as upstream
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        return self.fn(self.norm(x))


class SequentialSequence(nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.layers = layers

    def forward(self, x):
        for f, g in self.layers:
            x = x + f(x)
            x = x + g(x)
        return x


class Deterministic(nn.Module):
    """Upstream's RNG-recording wrapper; only its attribute name `net` matters here."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x):
        return self.net(x)


class ReversibleBlock(nn.Module):
    def __init__(self, f, g):
        super().__init__()
        self.f = Deterministic(f)
        self.g = Deterministic(g)

    def forward(self, x):
        x1, x2 = torch.chunk(x, 2, dim=2)
        y1 = x1 + self.f(x2)
        y2 = x2 + self.g(y1)
        return torch.cat([y1, y2], dim=2)


class ReversibleSequence(nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.blocks = nn.ModuleList([ReversibleBlock(f, g) for f, g in layers])

    def forward(self, x):
        x = torch.cat([x, x], dim=-1)  # both halves start as the input
        for block in self.blocks:
            x = block(x)
        return torch.stack(x.chunk(2, dim=-1)).sum(dim=0)  # y1 + y2


class Linformer(nn.Module):
    def __init__(self, dim, seq_len, depth, k=256, heads=8, dim_head=None, one_kv_head=False,
                 share_kv=False, reversible=False, dropout=0.0):
        super().__init__()
        layers = nn.ModuleList()
        for _ in range(depth):
            attn = LinformerSelfAttention(dim, seq_len, k=k, heads=heads, dim_head=dim_head,
                                          one_kv_head=one_kv_head, share_kv=share_kv)
            layers.append(nn.ModuleList([PreNorm(dim, attn), PreNorm(dim, FeedForward(dim))]))
        self.net = (ReversibleSequence if reversible else SequentialSequence)(layers)

    def forward(self, x):
        return self.net(x)


class LinformerLM(nn.Module):
    def __init__(self, num_tokens, dim, seq_len, depth, k=256, heads=8, dim_head=None,
                 one_kv_head=False, share_kv=False, reversible=False, dropout=0.0):
        super().__init__()
        self.token_emb = nn.Embedding(num_tokens, dim)
        self.pos_emb = nn.Embedding(seq_len, dim)  # learned, position t reads row t
        self.linformer = Linformer(dim, seq_len, depth, k=k, heads=heads, dim_head=dim_head,
                                   one_kv_head=one_kv_head, share_kv=share_kv, reversible=reversible)
        self.to_logits = nn.Linear(dim, num_tokens)  # no final LayerNorm before it

    def forward(self, ids):
        x = self.token_emb(ids)
        x = self.pos_emb(torch.arange(ids.shape[1], device=ids.device)) + x
        return self.to_logits(self.linformer(x))
