"""Re-creation of lucidrains/reformer-pytorch 1.4.4 (@66a19b6, the mirror's HEAD; pip `reformer-pytorch`):
ReformerLM and Reformer, for the options linfer converts.

Same module tree as upstream (hence the same state_dict names: ReversibleSequence keeps every
block under blocks.{i}.{f,g}.net.* (the Deterministic wrappers) and again under irrev_blocks.{i}.{f,g}.*,
the same modules) and the same eval-mode forward for one unpadded sequence: x = token_emb + pos_emb,
Reformer doubles it (x1 = x2 = x), reversible blocks y1 = x1 + f(x2), y2 = x2 + g(y1) with
f = PreNorm(LayerNorm, LSHSelfAttention), g = PreNorm(LayerNorm, Chunk(FeedForward)), output the
MEAN of the halves, then ReformerLM.norm and out (Sequential(Identity, Linear), or
MatrixMultiply(token_emb.weight, transpose, normalize) for weight_tie_embedding). LSHAttention:
hashing by random rotations (argmax over [xR, -xR]), sort by (bucket, position), chunks of
bucket_size attending to themselves and one chunk back, keys normalised, self at -5e4, causal
masking, rounds combined through their log-sum-exps; rotary layer positions (layer_pos_emb,
FixedPositionalEmbedding(dim_head)) applied to qk after hashing (apply_rotary_pos_emb,
rotate_every_two), as upstream.

The one deliberate difference: upstream draws torch.randn rotations at every forward pass; here
they are fixed (a non-persistent buffer, so not in the state_dict), drawn by rotations() below, the
generator linfer-convert uses (tools/convert/layouts.cc reformer_rotations), and for an input of T
rows the first T / (2 bucket_size) columns are used. einops, local_attention,
axial_positional_embedding and product_key_memory are not needed for what is re-created (the
LocalAttention module that LSHSelfAttention always builds has no parameters or buffers without
rel_pos_emb_config / dim: a parameterless stand-in keeps its name).

Not re-created (the converter refuses them): full attention (use_full_attn, full_attn_thres),
memory key-values, local attention heads, product-key memory, GLU feed-forward, ScaleNorm, ReZero,
emb_dim != dim, axial positions, attend_across_buckets / allow_duplicate_attention False, random
rotations per head. Dropout is ignored (inference only).

Keys (ReformerLM): token_emb.weight, pos_emb.emb.weight (absolute_position_emb) or
pos_emb.inv_freq (fixed_position_emb), layer_pos_emb.inv_freq (default: rotary),
reformer.layers.blocks.{i}.f.net.norm.{weight,bias}, ...f.net.fn.toqk.weight, ...f.net.fn.tov.weight,
...f.net.fn.to_out.{weight,bias}, reformer.layers.blocks.{i}.g.net.norm.{weight,bias},
...g.net.fn.fn.w1.{weight,bias}, ...g.net.fn.fn.w2.{weight,bias}, the same under
reformer.layers.irrev_blocks.{i}.{f,g}. (without .net), norm.{weight,bias}, out.1.{weight,bias}
(absent with weight_tie_embedding or return_embeddings). Reformer: layers.* only.
"""

import math
from functools import partial

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from .performer import AbsolutePositionalEmbedding  # noqa: F401 (the same module in both libraries)

TOKEN_SELF_ATTN_VALUE = -5e4


# ------------------------------------------------------------------------------- fixed rotations

_M64 = (1 << 64) - 1


def rotations(seed, layer, shape):
    """float32 array of `shape` (row-major): splitmix64 from state seed * 2^32 + layer, each value
    sqrt(-2 ln u1) cos(2 pi u2), u1 = (a + 1) 2^-53, u2 = b 2^-53 for the top 53 bits a, b of two
    successive outputs (tools/convert/layouts.cc reformer_rotations)."""
    state = ((int(seed) << 32) + int(layer)) & _M64

    def nxt():
        nonlocal state
        state = (state + 0x9E3779B97F4A7C15) & _M64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
        return z ^ (z >> 31)

    out = np.empty(int(np.prod(shape)), dtype=np.float32)
    unit = 1.0 / 9007199254740992.0
    for i in range(out.size):
        u1 = ((nxt() >> 11) + 1) * unit
        u2 = (nxt() >> 11) * unit
        out[i] = math.sqrt(-2.0 * math.log(u1)) * math.cos(6.283185307179586 * u2)
    return out.reshape(shape)


def half_buckets(n, bucket_size):
    return -(-n // (2 * bucket_size))


# ------------------------------------------------------------------------------- helpers


def exists(val):
    return val is not None


def default(val, default_val):
    return default_val if val is None else val


def cache_fn(f):
    cache = None

    def cached_fn(*args, **kwargs):
        nonlocal cache
        if cache is not None:
            return cache
        cache = f(*args, **kwargs)
        return cache
    return cached_fn


def sort_key_val(t1, t2, dim=-1):
    values, indices = t1.sort(dim=dim)
    t2 = t2.expand_as(t1)
    return values, t2.gather(dim, indices)


def batched_index_select(values, indices):
    last_dim = values.shape[-1]
    return values.gather(1, indices[:, :, None].expand(-1, -1, last_dim))


def process_inputs_chunk(fn, chunks=1, dim=0):
    def inner_fn(*args, **kwargs):
        keys, values, len_args = kwargs.keys(), kwargs.values(), len(args)
        chunked_args = list(zip(*map(lambda x: x.chunk(chunks, dim=dim), list(args) + list(values))))
        all_args = map(lambda x: (x[:len_args], dict(zip(keys, x[len_args:]))), chunked_args)
        outputs = [fn(*c_args, **c_kwargs) for c_args, c_kwargs in all_args]
        return tuple(map(lambda x: torch.cat(x, dim=dim), zip(*outputs)))
    return inner_fn


def merge_dims(ind_from, ind_to, tensor):
    shape = list(tensor.shape)
    arr_slice = slice(ind_from, ind_to + 1)
    shape[arr_slice] = [math.prod(shape[arr_slice])]
    return tensor.reshape(*shape)


def split_at_index(dim, index, t):
    pre_slices = (slice(None),) * dim
    return t[(*pre_slices, slice(None, index))], t[(*pre_slices, slice(index, None))]


def max_neg_value(tensor):
    return -torch.finfo(tensor.dtype).max


class Always(nn.Module):
    def __init__(self, val):
        super().__init__()
        self.val = val

    def forward(self, *args, **kwargs):
        return self.val


class MatrixMultiply(nn.Module):
    def __init__(self, tensor, transpose=False, normalize=False):
        super().__init__()
        self.tensor = tensor  # a plain attribute (the embedding's Parameter): no state_dict key
        self.transpose = transpose
        self.normalize = normalize

    def forward(self, x):
        tensor = self.tensor
        if self.normalize:
            tensor = F.normalize(tensor, dim=-1)
        if self.transpose:
            tensor = tensor.t()
        return x @ tensor


class PreNorm(nn.Module):
    def __init__(self, norm_class, dim, fn):
        super().__init__()
        self.norm = norm_class(dim)
        self.fn = fn

    def forward(self, x, **kwargs):
        return self.fn(self.norm(x), **kwargs)


class Chunk(nn.Module):
    def __init__(self, chunks, fn, along_dim=-1):
        super().__init__()
        self.dim = along_dim
        self.chunks = chunks
        self.fn = fn

    def forward(self, x, **kwargs):
        if self.chunks == 1:
            return self.fn(x, **kwargs)
        chunks = x.chunk(self.chunks, dim=self.dim)
        return torch.cat([self.fn(c, **kwargs) for c in chunks], dim=self.dim)


# ------------------------------------------------------------------------------- LSH attention


class LSHAttention(nn.Module):
    def __init__(self, dropout=0., bucket_size=64, n_hashes=8, causal=False, allow_duplicate_attention=True,
                 attend_across_buckets=True, rehash_each_round=True, drop_for_hash_rate=0.0,
                 random_rotations_per_head=False, return_attn=False):
        super().__init__()
        assert allow_duplicate_attention and attend_across_buckets and rehash_each_round
        assert not random_rotations_per_head and not return_attn
        self.causal = causal
        self.bucket_size = bucket_size
        self.n_hashes = n_hashes
        self.fixed_rotations = None  # [depth, n_hashes, dim_head, half] (set_rotations)

    def hash_vectors(self, n_buckets, vecs, depth):
        assert n_buckets % 2 == 0
        rot = self.fixed_rotations[depth][:, :, : n_buckets // 2]  # [n_hashes, f, i]
        # upstream: torch.randn((1, f, n_hashes, n_buckets // 2)).expand(batch, ...)
        random_rotations = rot.permute(1, 0, 2)[None].to(vecs.dtype).expand(vecs.shape[0], -1, -1, -1)
        rotated_vecs = torch.einsum("btf,bfhi->bhti", vecs, random_rotations)
        rotated_vecs = torch.cat([rotated_vecs, -rotated_vecs], dim=-1)
        buckets = torch.argmax(rotated_vecs, dim=-1)
        offsets = torch.arange(self.n_hashes)
        offsets = torch.reshape(offsets * n_buckets, (1, -1, 1))
        return torch.reshape(buckets + offsets, (vecs.shape[0], -1,))

    def forward(self, qk, v, query_len=None, pos_emb=None, **kwargs):
        batch_size, seqlen, dim = qk.shape
        query_len = default(query_len, seqlen)
        kwargs.pop("_reverse", False)
        depth = kwargs.pop("_depth", None)
        assert seqlen % (self.bucket_size * 2) == 0, \
            "Sequence length (%d) needs to be divisible by target bucket size  x 2 - %d" % (seqlen, self.bucket_size * 2)
        n_buckets = seqlen // self.bucket_size
        buckets = self.hash_vectors(n_buckets, qk, depth)
        assert int(buckets.shape[1]) == self.n_hashes * seqlen
        total_hashes = self.n_hashes

        ticker = torch.arange(total_hashes * seqlen).unsqueeze(0).expand_as(buckets)
        buckets_and_t = seqlen * buckets + (ticker % seqlen)
        sbuckets_and_t, sticker = sort_key_val(buckets_and_t, ticker, dim=-1)
        _, undo_sort = sticker.sort(dim=-1)

        if exists(pos_emb):
            qk = apply_rotary_pos_emb(qk, pos_emb)

        st = (sticker % seqlen)
        sqk = batched_index_select(qk, st)
        sv = batched_index_select(v, st)

        chunk_size = total_hashes * n_buckets
        bq_t = bkv_t = torch.reshape(st, (batch_size, chunk_size, -1))
        bqk = torch.reshape(sqk, (batch_size, chunk_size, -1, dim))
        bv = torch.reshape(sv, (batch_size, chunk_size, -1, dim))

        bq = bqk
        bk = F.normalize(bqk, p=2, dim=-1).type_as(bq)

        def look_one_back(x):
            x_extra = torch.cat([x[:, -1:, ...], x[:, :-1, ...]], dim=1)
            return torch.cat([x, x_extra], dim=2)

        bk = look_one_back(bk)
        bv = look_one_back(bv)
        bkv_t = look_one_back(bkv_t)

        dots = torch.einsum("bhie,bhje->bhij", bq, bk) * (dim ** -0.5)
        masked_value = max_neg_value(dots)
        if self.causal:
            mask = bq_t[:, :, :, None] < bkv_t[:, :, None, :]
            dots.masked_fill_(mask, masked_value)
        self_mask = bq_t[:, :, :, None] == bkv_t[:, :, None, :]
        dots.masked_fill_(self_mask, TOKEN_SELF_ATTN_VALUE)

        dots_logsumexp = torch.logsumexp(dots, dim=-1, keepdim=True)
        dots = torch.exp(dots - dots_logsumexp).type_as(dots)
        bo = torch.einsum("buij,buje->buie", dots, bv)
        so = torch.reshape(bo, (batch_size, -1, dim))
        slogits = torch.reshape(dots_logsumexp, (batch_size, -1,))

        o = batched_index_select(so, undo_sort)
        logits = slogits.gather(1, undo_sort)
        o = torch.reshape(o, (batch_size, total_hashes, seqlen, dim))
        logits = torch.reshape(logits, (batch_size, total_hashes, seqlen, 1))
        probs = torch.exp(logits - torch.logsumexp(logits, dim=1, keepdim=True))
        out = torch.sum(o * probs, dim=1)
        return out, torch.empty(0), buckets


class FullQKAttention(nn.Module):  # built by LSHSelfAttention, unused (use_full_attn is refused)
    def __init__(self, causal=False, dropout=0.):
        super().__init__()
        self.causal = causal


class LocalAttentionStandIn(nn.Module):  # local_attention.LocalAttention without dim: no parameters
    pass


class LSHSelfAttention(nn.Module):
    def __init__(self, dim, heads=8, bucket_size=64, n_hashes=8, causal=False, dim_head=None, attn_chunks=1,
                 random_rotations_per_head=False, attend_across_buckets=True, allow_duplicate_attention=True,
                 num_mem_kv=0, one_value_head=False, use_full_attn=False, full_attn_thres=None, return_attn=False,
                 post_attn_dropout=0., dropout=0., n_local_attn_heads=0, **kwargs):
        super().__init__()
        assert dim_head or (dim % heads) == 0
        assert num_mem_kv == 0 and n_local_attn_heads == 0 and not use_full_attn
        dim_head = default(dim_head, dim // heads)
        dim_heads = dim_head * heads
        self.dim, self.heads, self.dim_head = dim, heads, dim_head
        self.attn_chunks = default(attn_chunks, 1)
        self.v_head_repeats = (heads if one_value_head else 1)
        v_dim = dim_heads // self.v_head_repeats
        self.toqk = nn.Linear(dim, dim_heads, bias=False)
        self.tov = nn.Linear(dim, v_dim, bias=False)
        self.to_out = nn.Linear(dim_heads, dim)
        self.bucket_size = bucket_size
        self.lsh_attn = LSHAttention(bucket_size=bucket_size, n_hashes=n_hashes, causal=causal,
                                     random_rotations_per_head=random_rotations_per_head,
                                     attend_across_buckets=attend_across_buckets,
                                     allow_duplicate_attention=allow_duplicate_attention, **kwargs)
        self.full_attn = FullQKAttention(causal=causal, dropout=dropout)
        self.use_full_attn = use_full_attn
        self.full_attn_thres = default(full_attn_thres, bucket_size)
        assert self.full_attn_thres == 0, "full attention for short inputs is not re-created"
        self.num_mem_kv = num_mem_kv
        self.mem_kv = None
        self.n_local_attn_heads = n_local_attn_heads
        self.local_attn = LocalAttentionStandIn()

    def forward(self, x, pos_emb=None, **kwargs):
        b, t, e, h = *x.shape, self.heads
        kv_len = t
        qk = self.toqk(x)
        v = self.tov(x)
        v = v.repeat(1, 1, self.v_head_repeats)

        def merge_heads(v):
            return v.view(b, kv_len, h, -1).transpose(1, 2)

        def split_heads(v):
            return v.view(b, h, t, -1).transpose(1, 2).contiguous()

        merge_batch_and_heads = partial(merge_dims, 0, 1)
        qk, v = map(merge_heads, (qk, v))
        split_index_fn = partial(split_at_index, 1, 0)
        (lqk, qk), (lv, v) = map(split_index_fn, (qk, v))
        lqk, qk, lv, v = map(merge_batch_and_heads, (lqk, qk, lv, v))
        partial_attn_fn = partial(self.lsh_attn, query_len=t, pos_emb=pos_emb, **kwargs)
        attn_fn_in_chunks = process_inputs_chunk(partial_attn_fn, chunks=self.attn_chunks)
        out, attn, buckets = attn_fn_in_chunks(qk, v)
        out = split_heads(out).view(b, t, -1)
        return self.to_out(out)


class FeedForward(nn.Module):
    def __init__(self, dim, mult=4, dropout=0., activation=None, glu=False):
        super().__init__()
        assert not glu
        activation = default(activation, nn.GELU)
        self.glu = glu
        self.w1 = nn.Linear(dim, dim * mult)
        self.act = activation()
        self.w2 = nn.Linear(dim * mult, dim)

    def forward(self, x, **kwargs):
        return self.w2(self.act(self.w1(x)))


class FixedPositionalEmbedding(nn.Module):
    def __init__(self, dim):
        super().__init__()
        inv_freq = 1. / (10000 ** (torch.arange(0, dim, 2).float() / dim))
        self.register_buffer("inv_freq", inv_freq)

    def forward(self, x, seq_dim=1):
        t = torch.arange(x.shape[seq_dim], device=x.device).type_as(self.inv_freq)
        sinusoid_inp = torch.einsum("i , j -> i j", t, self.inv_freq)
        emb = torch.cat((sinusoid_inp.sin(), sinusoid_inp.cos()), dim=-1)
        return emb[None, :, :].type_as(x)


def rotate_every_two(x):
    x = x.reshape(*x.shape[:-1], -1, 2)  # '... (d j) -> ... d j', j = 2
    x1, x2 = x.unbind(dim=-1)
    x = torch.stack((-x2, x1), dim=-1)
    return x.flatten(-2)


def apply_rotary_pos_emb(qk, sinu_pos):
    sinu_pos = sinu_pos.type(qk.dtype)
    sinu_pos = sinu_pos[0].reshape(sinu_pos.shape[1], 2, -1)  # '() n (j d) -> n j d', j = 2
    sin, cos = sinu_pos.unbind(dim=-2)
    sin, cos = map(lambda t: t.repeat_interleave(2, dim=-1), (sin, cos))  # 'n d -> n (d j)', j = 2
    seq_len = sin.shape[0]
    qk, qk_pass = qk[:, :seq_len], qk[:, seq_len:]
    qk = (qk * cos) + (rotate_every_two(qk) * sin)
    return torch.cat((qk, qk_pass), dim=1)


# ------------------------------------------------------------------------------- reversible


class Deterministic(nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, *args, **kwargs):
        return self.net(*args, **kwargs)


class ReversibleBlock(nn.Module):
    def __init__(self, f, g, depth=None, send_signal=False):
        super().__init__()
        self.f = Deterministic(f)
        self.g = Deterministic(g)
        self.depth = depth
        self.send_signal = send_signal

    def forward(self, x, f_args={}, g_args={}):
        x1, x2 = torch.chunk(x, 2, dim=2)
        if self.send_signal:
            f_args["_reverse"] = g_args["_reverse"] = False
            f_args["_depth"] = g_args["_depth"] = self.depth
        y1 = x1 + self.f(x2, **f_args)
        y2 = x2 + self.g(y1, **g_args)
        return torch.cat([y1, y2], dim=2)


class IrreversibleBlock(nn.Module):
    def __init__(self, f, g):
        super().__init__()
        self.f = f
        self.g = g


class ReversibleSequence(nn.Module):
    def __init__(self, blocks, layer_dropout=0., reverse_thres=0, send_signal=False):
        super().__init__()
        self.blocks = nn.ModuleList([ReversibleBlock(f, g, depth, send_signal) for depth, (f, g) in enumerate(blocks)])
        self.irrev_blocks = nn.ModuleList([IrreversibleBlock(f=f, g=g) for f, g in blocks])

    def forward(self, x, arg_route=(True, False), **kwargs):
        # eval, reverse_thres 0: the reversible path (_ReversibleFunction runs the blocks in order)
        f_args, g_args = map(lambda route: dict(kwargs) if route else {}, arg_route)
        for block in self.blocks:
            x = block(x, f_args=f_args, g_args=g_args)
        return x


# ------------------------------------------------------------------------------- models

ACTIVATIONS = {None: None, "gelu": nn.GELU, "relu": nn.ReLU}


class Reformer(nn.Module):
    def __init__(self, dim, depth, heads=8, dim_head=None, bucket_size=64, n_hashes=8, ff_chunks=100, attn_chunks=None,
                 causal=False, weight_tie=False, lsh_dropout=0., ff_dropout=0., ff_activation=None, ff_mult=4,
                 ff_glu=False, post_attn_dropout=0., layer_dropout=0., lsh_attend_across_buckets=True,
                 lsh_allow_duplicate_attention=True, random_rotations_per_head=False, use_scale_norm=False,
                 use_rezero=False, use_full_attn=False, full_attn_thres=0, reverse_thres=0, num_mem_kv=0,
                 one_value_head=False, n_local_attn_heads=0, pkm_layers=tuple(), pkm_num_keys=128,
                 max_seq_len=None, rotation_seed=0):
        """max_seq_len and rotation_seed are not upstream's: the fixed rotations' extent and seed."""
        super().__init__()
        assert not (use_scale_norm or use_rezero or ff_glu or tuple(pkm_layers))
        self.dim, self.depth, self.bucket_size = dim, depth, bucket_size
        act = ACTIVATIONS[ff_activation]
        get_attn = lambda: LSHSelfAttention(dim, heads, bucket_size, n_hashes, causal=causal, dim_head=dim_head,
                                            attn_chunks=attn_chunks,
                                            allow_duplicate_attention=lsh_allow_duplicate_attention,
                                            attend_across_buckets=lsh_attend_across_buckets,
                                            random_rotations_per_head=random_rotations_per_head,
                                            num_mem_kv=num_mem_kv, use_full_attn=use_full_attn,
                                            full_attn_thres=full_attn_thres, one_value_head=one_value_head,
                                            n_local_attn_heads=n_local_attn_heads)
        get_ff = lambda: Chunk(ff_chunks, FeedForward(dim, activation=act, mult=ff_mult), along_dim=-2)
        if weight_tie:
            get_attn, get_ff = map(cache_fn, (get_attn, get_ff))
        blocks = []
        residual_fn_wrapper = partial(PreNorm, nn.LayerNorm, dim)
        for _ in range(depth):
            blocks.append(nn.ModuleList([residual_fn_wrapper(get_attn()), residual_fn_wrapper(get_ff())]))
        self.layers = ReversibleSequence(nn.ModuleList(blocks), layer_dropout=layer_dropout,
                                         reverse_thres=reverse_thres, send_signal=True)
        if max_seq_len is not None:
            dh = default(dim_head, dim // heads)
            half = half_buckets(max_seq_len, bucket_size)
            rot = torch.from_numpy(np.stack([rotations(rotation_seed, i, (n_hashes, dh, half)) for i in range(depth)]))
            for f, _ in blocks:  # (shared by all layers with weight_tie: indexed by _depth)
                f.fn.lsh_attn.fixed_rotations = rot

    def forward(self, x, **kwargs):
        x = torch.cat([x, x], dim=-1)
        x = self.layers(x, **kwargs)
        return torch.stack(x.chunk(2, dim=-1)).mean(dim=0)


class ReformerLM(nn.Module):
    def __init__(self, num_tokens, dim, depth, max_seq_len, heads=8, dim_head=64, bucket_size=64, n_hashes=4,
                 ff_chunks=100, attn_chunks=1, causal=False, weight_tie=False, lsh_dropout=0., ff_dropout=0.,
                 ff_mult=4, ff_activation=None, ff_glu=False, post_attn_dropout=0., layer_dropout=0.,
                 random_rotations_per_head=False, use_scale_norm=False, use_rezero=False, use_full_attn=False,
                 full_attn_thres=0, reverse_thres=0, num_mem_kv=0, one_value_head=False, emb_dim=None,
                 return_embeddings=False, weight_tie_embedding=False, fixed_position_emb=False,
                 absolute_position_emb=False, axial_position_emb=False, axial_position_shape=None,
                 n_local_attn_heads=0, pkm_layers=tuple(), pkm_num_keys=128, rotation_seed=0):
        """rotation_seed is not upstream's: the fixed rotations' seed."""
        super().__init__()
        emb_dim = default(emb_dim, dim)
        assert emb_dim == dim and not axial_position_emb
        self.max_seq_len = max_seq_len
        self.token_emb = nn.Embedding(num_tokens, emb_dim)
        self.to_model_dim = nn.Identity()
        self.pos_emb = Always(0)
        self.layer_pos_emb = Always(None)
        if absolute_position_emb:
            self.pos_emb = AbsolutePositionalEmbedding(emb_dim, max_seq_len)
        elif fixed_position_emb:
            self.pos_emb = FixedPositionalEmbedding(emb_dim)
        else:
            self.layer_pos_emb = FixedPositionalEmbedding(dim_head)
        self.reformer = Reformer(dim, depth, heads=heads, dim_head=dim_head, bucket_size=bucket_size, n_hashes=n_hashes,
                                 ff_chunks=ff_chunks, attn_chunks=attn_chunks, causal=causal, weight_tie=weight_tie,
                                 ff_mult=ff_mult, ff_activation=ff_activation, ff_glu=ff_glu,
                                 random_rotations_per_head=random_rotations_per_head, use_scale_norm=use_scale_norm,
                                 use_rezero=use_rezero, use_full_attn=use_full_attn, full_attn_thres=full_attn_thres,
                                 reverse_thres=reverse_thres, num_mem_kv=num_mem_kv, one_value_head=one_value_head,
                                 n_local_attn_heads=n_local_attn_heads, pkm_layers=pkm_layers,
                                 pkm_num_keys=pkm_num_keys, max_seq_len=max_seq_len, rotation_seed=rotation_seed)
        self.norm = nn.LayerNorm(dim)
        if return_embeddings:
            self.out = nn.Identity()
            return
        self.out = nn.Sequential(
            nn.Identity(),
            nn.Linear(emb_dim, num_tokens) if not weight_tie_embedding else
            MatrixMultiply(self.token_emb.weight, transpose=True, normalize=True))

    def forward(self, x, **kwargs):
        x = self.token_emb(x)
        x = x + self.pos_emb(x)
        layer_pos_emb = self.layer_pos_emb(x)
        x = self.to_model_dim(x)
        x = self.reformer(x, pos_emb=layer_pos_emb, **kwargs)
        x = self.norm(x)
        return self.out(x)
