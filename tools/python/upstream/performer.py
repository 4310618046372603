"""Re-creation of lucidrains/performer-pytorch 1.1.4 (pip `performer-pytorch`, HEAD fc8b784):
PerformerLM and Performer, for the options linfer converts.

Same module tree (hence the same state_dict names, the projection updater's second path to every
layer included) and the same eval-mode forward as upstream: pre-LayerNorm layers (PreLayerNorm:
norm, then fn), residual added by the sequence runner (reversible: y1 = x1 + f(x2), y2 = x2 + g(y1),
output y1 + y2), GELU (erf) feed-forward with mult ff_mult behind a Chunk wrapper, FAVOR+ attention
(softmax_kernel: queries stabilised by their own row maximum, keys by the maximum over the head's
rows and features; generalized_kernel: relu(a) + 1e-3), causal through running sums with 1e-6 on the
key sum, rotary positions on q and k (adjacent pairs, FixedPositionalEmbedding buffers) or learned
absolute positions (pos_emb.emb). Dropout is ignored (inference only); the projection matrix is
drawn as upstream draws it (orthogonal blocks, norms of Gaussian rows) and never redrawn.

Not re-created (the converter refuses them): local attention heads, ScaleNorm / ReZero, GLU
feed-forward, token shifting, cross attention, axial positions, no_projection.

Keys (PerformerLM, sequential):
  token_emb.weight, pos_emb.emb (rotary default: [max_seq_len, dim] buffer; absolute:
  pos_emb.emb.weight), layer_pos_emb.emb ([max_seq_len, dim_head], rotary only),
  performer.net.layers.{i}.0.norm.{weight,bias}, performer.net.layers.{i}.0.fn.fast_attention.projection_matrix,
  performer.net.layers.{i}.0.fn.to_{q,k,v}.weight (+ .bias if qkv_bias), ...to_out.weight (+ .bias if attn_out_bias),
  performer.net.layers.{i}.1.norm.*, performer.net.layers.{i}.1.fn.fn.w1.*, ....w2.*,
  performer.proj_updater.instance.<the same keys without performer.net.>, performer.proj_updater.calls_since_last_redraw,
  norm.{weight,bias}, to_out.{weight,bias} (absent with tie_embed).
Reversible: performer.net.blocks.{i}.f.net.* (attention) and .g.net.* (feed-forward).
Performer (no LM): the same without the "performer." prefix and without embeddings, norm, to_out.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn


def gaussian_orthogonal_random_matrix(nb_rows, nb_columns, generator=None):
    blocks = []
    for _ in range(nb_rows // nb_columns + (1 if nb_rows % nb_columns else 0)):
        q, _ = torch.linalg.qr(torch.randn((nb_columns, nb_columns), generator=generator), mode="reduced")
        blocks.append(q.t())
    final = torch.cat(blocks)[:nb_rows]
    multiplier = torch.randn((nb_rows, nb_columns), generator=generator).norm(dim=1)
    return torch.diag(multiplier) @ final


def softmax_kernel(data, projection_matrix, is_query, eps=1e-4):
    """data [b, h, n, d] -> positive features [b, h, n, m]."""
    normalizer = data.shape[-1] ** -0.25
    ratio = projection_matrix.shape[0] ** -0.5
    data_dash = torch.einsum("...id,jd->...ij", normalizer * data, projection_matrix.type_as(data))
    diag = (data ** 2).sum(dim=-1).unsqueeze(-1) / 2.0 * normalizer ** 2
    if is_query:
        stab = data_dash.amax(dim=-1, keepdim=True)
    else:
        stab = data_dash.amax(dim=(-1, -2), keepdim=True)
    return ratio * (torch.exp(data_dash - diag - stab) + eps)


def generalized_kernel(data, projection_matrix, eps=1e-3):
    normalizer = data.shape[-1] ** -0.25
    data_dash = torch.einsum("...id,jd->...ij", normalizer * data, projection_matrix.type_as(data))
    return F.relu(data_dash) + eps


def linear_attention(q, k, v):
    d_inv = 1.0 / torch.einsum("...nd,...d->...n", q, k.sum(dim=-2))
    context = torch.einsum("...nd,...ne->...de", k, v)
    return torch.einsum("...de,...nd,...n->...ne", context, q, d_inv)


def causal_linear_attention(q, k, v, eps=1e-6):
    """Upstream's non-CUDA version (running sums over the rows), in one piece."""
    d_inv = 1.0 / torch.einsum("...nd,...nd->...n", q, k.cumsum(dim=-2) + eps)
    context = torch.einsum("...nd,...ne->...nde", k, v).cumsum(dim=-3)
    return torch.einsum("...nde,...nd,...n->...ne", context, q, d_inv)


class FastAttention(nn.Module):
    def __init__(self, dim_heads, nb_features=None, causal=False, generalized_attention=False, generator=None):
        super().__init__()
        nb_features = nb_features if nb_features is not None else int(dim_heads * math.log(dim_heads))
        self.register_buffer("projection_matrix", gaussian_orthogonal_random_matrix(nb_features, dim_heads, generator))
        self.causal = causal
        self.generalized_attention = generalized_attention

    def forward(self, q, k, v):
        if self.generalized_attention:
            q, k = generalized_kernel(q, self.projection_matrix), generalized_kernel(k, self.projection_matrix)
        else:
            q = softmax_kernel(q, self.projection_matrix, is_query=True)
            k = softmax_kernel(k, self.projection_matrix, is_query=False)
        return (causal_linear_attention if self.causal else linear_attention)(q, k, v)


def rotate_every_two(x):
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack((-x2, x1), dim=-1).flatten(-2)


def apply_rotary_pos_emb(q, k, sinu_pos):
    """sinu_pos [n, dim_head]: the sines of the pairs' angles, then their cosines."""
    half = sinu_pos.shape[-1] // 2
    sin = sinu_pos[:, :half].repeat_interleave(2, dim=-1)
    cos = sinu_pos[:, half:].repeat_interleave(2, dim=-1)
    return tuple(t * cos + rotate_every_two(t) * sin for t in (q, k))


class FixedPositionalEmbedding(nn.Module):
    def __init__(self, dim, max_seq_len):
        super().__init__()
        inv_freq = 1.0 / (10000 ** (torch.arange(0, dim, 2).float() / dim))
        position = torch.arange(0, max_seq_len, dtype=torch.float)
        sinusoid_inp = torch.einsum("i,j->ij", position, inv_freq)
        self.register_buffer("emb", torch.cat((sinusoid_inp.sin(), sinusoid_inp.cos()), dim=-1))

    def forward(self, x):
        return self.emb[None, : x.shape[1], :].to(x)


class AbsolutePositionalEmbedding(nn.Module):
    def __init__(self, dim, max_seq_len):
        super().__init__()
        self.emb = nn.Embedding(max_seq_len, dim)

    def forward(self, x):
        return self.emb(torch.arange(x.shape[1], device=x.device))


class SelfAttention(nn.Module):
    def __init__(self, dim, causal, heads, dim_head, nb_features, generalized_attention, qkv_bias,
                 attn_out_bias, generator=None):
        super().__init__()
        inner = dim_head * heads
        self.fast_attention = FastAttention(dim_head, nb_features, causal, generalized_attention, generator)
        self.heads = heads
        self.to_q = nn.Linear(dim, inner, bias=qkv_bias)
        self.to_k = nn.Linear(dim, inner, bias=qkv_bias)
        self.to_v = nn.Linear(dim, inner, bias=qkv_bias)
        self.to_out = nn.Linear(inner, dim, bias=attn_out_bias)

    def forward(self, x, pos_emb=None):
        b, n, _ = x.shape
        q, k, v = (t.reshape(b, n, self.heads, -1).transpose(1, 2) for t in (self.to_q(x), self.to_k(x), self.to_v(x)))
        if pos_emb is not None:
            q, k = apply_rotary_pos_emb(q, k, pos_emb[0])
        out = self.fast_attention(q, k, v)
        return self.to_out(out.transpose(1, 2).reshape(b, n, -1))


class PreLayerNorm(nn.Module):
    def __init__(self, dim, fn):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fn = fn

    def forward(self, x, **kwargs):
        return self.fn(self.norm(x), **kwargs)


class Chunk(nn.Module):
    """Upstream splits the rows into ff_chunks pieces; the feed-forward is row-wise, so one piece."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x, **kwargs):
        return self.fn(x, **kwargs)


class FeedForward(nn.Module):
    def __init__(self, dim, mult=4):
        super().__init__()
        self.w1 = nn.Linear(dim, dim * mult)
        self.w2 = nn.Linear(dim * mult, dim)

    def forward(self, x, **kwargs):
        return self.w2(F.gelu(self.w1(x)))


class SequentialSequence(nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.layers = layers

    def forward(self, x, pos_emb=None):
        for f, g in self.layers:
            x = x + f(x, pos_emb=pos_emb)
            x = x + g(x)
        return x


class Deterministic(nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x, **kwargs):
        return self.net(x, **kwargs)


class ReversibleBlock(nn.Module):
    def __init__(self, f, g):
        super().__init__()
        self.f = Deterministic(f)
        self.g = Deterministic(g)


class ReversibleSequence(nn.Module):
    def __init__(self, blocks):
        super().__init__()
        self.blocks = nn.ModuleList([ReversibleBlock(f, g) for f, g in blocks])

    def forward(self, x, pos_emb=None):
        x1 = x2 = x
        for block in self.blocks:
            x1 = x1 + block.f(x2, pos_emb=pos_emb)
            x2 = x2 + block.g(x1)
        return x1 + x2


class ProjectionUpdater(nn.Module):
    def __init__(self, instance):
        super().__init__()
        self.instance = instance
        self.register_buffer("calls_since_last_redraw", torch.tensor(0))


class Performer(nn.Module):
    def __init__(self, dim, depth, heads, dim_head, causal=False, ff_mult=4, nb_features=None,
                 reversible=False, generalized_attention=False, qkv_bias=True, attn_out_bias=True, seed=0):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        layers = nn.ModuleList()
        for _ in range(depth):
            attn = SelfAttention(dim, causal, heads, dim_head, nb_features, generalized_attention, qkv_bias,
                                 attn_out_bias, g)
            ff = Chunk(FeedForward(dim, ff_mult))
            layers.append(nn.ModuleList([PreLayerNorm(dim, attn), PreLayerNorm(dim, ff)]))
        self.net = (ReversibleSequence if reversible else SequentialSequence)(layers)
        self.proj_updater = ProjectionUpdater(self.net)

    def forward(self, x, pos_emb=None):
        return self.net(x, pos_emb=pos_emb)


class PerformerLM(nn.Module):
    def __init__(self, *, num_tokens, max_seq_len, dim, depth, heads, dim_head=64, causal=False, ff_mult=4,
                 nb_features=None, reversible=False, generalized_attention=False, tie_embed=False,
                 rotary_position_emb=True, qkv_bias=False, attn_out_bias=False, seed=0):
        super().__init__()
        self.token_emb = nn.Embedding(num_tokens, dim)
        if rotary_position_emb:
            self.pos_emb = FixedPositionalEmbedding(dim, max_seq_len)
            self.layer_pos_emb = FixedPositionalEmbedding(dim_head, max_seq_len)
        else:
            self.pos_emb = AbsolutePositionalEmbedding(dim, max_seq_len)
            self.layer_pos_emb = None
        self.performer = Performer(dim, depth, heads, dim_head, causal, ff_mult, nb_features, reversible,
                                   generalized_attention, qkv_bias, attn_out_bias, seed)
        self.norm = nn.LayerNorm(dim)
        self.to_out = nn.Linear(dim, num_tokens) if not tie_embed else None

    def forward(self, ids):
        x = self.token_emb(ids)
        x = x + self.pos_emb(x)
        pos = self.layer_pos_emb(x) if self.layer_pos_emb is not None else None
        x = self.norm(self.performer(x, pos_emb=pos))
        return self.to_out(x) if self.to_out is not None else x @ self.token_emb.weight.t()
