"""Re-creation of tatp22/linformer-pytorch 0.19.3 (pip `linformer-pytorch`): LinformerLM.

Only the default structure is reproduced: method="learnable" (E and F are nn.Linear(input_size,
dim_k) WITH bias), dim_d=None (head_dim = channels // nhead), ff_intermediate=None,
w_o_intermediate_dim=None, emb_dim=None (= channels), k_reduce_by_layer=0, include_ff=True,
return_emb=False, decoder_mode=False, causal=False. Other values raise ValueError. Dropout and
checkpoint_level are accepted and ignored (inference only).

Parameter sharing exists ONLY as the same nn.Linear object placed under several names, as upstream
does it; the state_dict repeats the names and torch.save writes one storage per object:
  none      new E and F per head per layer
  headwise  one E and one F per layer, used by every head
  kv        one P per layer, E = F = P
  layerwise one P for the whole model (every layer, every head, E and F)

Upstream asserts n == input_size. `forward` here also accepts n < input_size and then uses the
first n columns of E/F (E.weight[:, :n], bias unchanged): that is linfer's extension, upstream has
no such mode (its Padder pads token id 0 up to input_size instead).
"""

import torch
import torch.nn.functional as F
from torch import nn


def _projection(input_size, dim_k):
    return nn.Linear(input_size, dim_k)  # get_EF(method="learnable"): weight (dim_k, input_size), bias (dim_k,)


def _project_seq(lin, t):
    """t: (b, n, d) -> (b, dim_k, d), i.e. E[:, :n] t + bias broadcast over d."""
    n = t.shape[1]
    return F.linear(t.transpose(1, 2), lin.weight[:, :n], lin.bias).transpose(1, 2)


class PositionalEmbedding(nn.Module):
    """Sinusoids with base 100000 (not 10000): first half sin, second half cos, positions from 0."""

    def __init__(self, channels):
        super().__init__()
        inv_freq = 1.0 / (100000 ** (torch.arange(0, channels, 2).float() / channels))
        self.register_buffer("inv_freq", inv_freq)  # saved in the state_dict (float32)

    def forward(self, x):
        pos = torch.arange(x.shape[1], device=x.device).type(self.inv_freq.type())
        sin_inp = torch.einsum("i,j->ij", pos, self.inv_freq)
        return torch.cat((sin_inp.sin(), sin_inp.cos()), dim=-1)[None]


class LinearAttentionHead(nn.Module):
    def __init__(self, dim, E_proj, F_proj, full_attention=False):
        super().__init__()
        self.E = E_proj
        self.F = F_proj
        self.dim = dim
        self.full_attention = full_attention

    def forward(self, Q, K, V):
        if self.full_attention:  # E and F exist in the state_dict but are unused
            scores, values = Q @ K.transpose(1, 2), V
        else:
            scores, values = Q @ _project_seq(self.E, K).transpose(1, 2), _project_seq(self.F, V)
        P = (scores / self.dim ** 0.5).softmax(dim=-1)
        return P @ values


class MHAttention(nn.Module):
    def __init__(self, input_size, dim, channels, dim_k, nhead, parameter_sharing, E_proj, F_proj,
                 full_attention):
        super().__init__()
        self.heads = nn.ModuleList()
        if parameter_sharing != "layerwise":
            E_proj = _projection(input_size, dim_k)
            F_proj = E_proj if parameter_sharing == "kv" else _projection(input_size, dim_k)
        self.to_q = nn.ModuleList()
        self.to_k = nn.ModuleList()
        self.to_v = nn.ModuleList()
        for _ in range(nhead):
            if parameter_sharing == "none":
                E_proj = _projection(input_size, dim_k)
                F_proj = _projection(input_size, dim_k)
            self.heads.append(LinearAttentionHead(dim, E_proj, F_proj, full_attention))
            self.to_q.append(nn.Linear(channels, dim, bias=False))
            self.to_k.append(nn.Linear(channels, dim, bias=False))
            self.to_v.append(nn.Linear(channels, dim, bias=False))
        self.w_o = nn.Linear(dim * nhead, channels)

    def forward(self, x):
        outs = [head(self.to_q[i](x), self.to_k[i](x), self.to_v[i](x)) for i, head in enumerate(self.heads)]
        return self.w_o(torch.cat(outs, dim=-1))


class FeedForward(nn.Module):
    def __init__(self, channels, ff_dim, activation):
        super().__init__()
        self.w_1 = nn.Linear(channels, ff_dim)
        self.w_2 = nn.Linear(ff_dim, channels)
        self.activation = {"gelu": F.gelu, "relu": F.relu}[activation]

    def forward(self, x):
        return self.w_2(self.activation(self.w_1(x)))


class Residual(nn.Module):
    """Post-norm: norm(x + fn(x)). (Upstream's `resample` exists only with ff_intermediate.)"""

    def __init__(self, fn, channels):
        super().__init__()
        self.fn = fn
        self.norm = nn.LayerNorm(channels)

    def forward(self, x):
        return self.norm(x + self.fn(x))


class Linformer(nn.Module):
    def __init__(self, input_size, channels, dim_k, dim_ff, nhead, depth, activation,
                 parameter_sharing, full_attention):
        super().__init__()
        if activation not in ("gelu", "relu"):
            raise ValueError("activation must be gelu or relu")
        if parameter_sharing not in ("none", "headwise", "kv", "layerwise"):
            raise ValueError("bad parameter_sharing")
        if channels % nhead:
            raise ValueError("channels must be divisible by nhead")
        self.input_size = input_size
        head_dim = channels // nhead
        shared = _projection(input_size, dim_k)  # reachable only through the heads (layerwise)
        self.seq = nn.ModuleList()
        for _ in range(depth):
            attn = MHAttention(input_size, head_dim, channels, dim_k, nhead, parameter_sharing,
                               shared, shared, full_attention)
            self.seq.append(Residual(attn, channels))
            self.seq.append(Residual(FeedForward(channels, dim_ff, activation), channels))

    def forward(self, x, allow_short=False):
        n = x.shape[1]
        if n != self.input_size and not (allow_short and n < self.input_size):
            raise ValueError("upstream requires n == input_size")
        for layer in self.seq:
            x = layer(x)
        return x


_DEFAULT_ONLY = dict(dim_d=None, ff_intermediate=None, k_reduce_by_layer=0, include_ff=True,
                     w_o_intermediate_dim=None, emb_dim=None, return_emb=False, decoder_mode=False,
                     causal=False, method="learnable")


class LinformerLM(nn.Module):
    def __init__(self, num_tokens, input_size, channels, dim_k=64, dim_ff=1024, dim_d=None,
                 dropout_ff=0.1, dropout_tokens=0.1, nhead=4, depth=2, ff_intermediate=None,
                 dropout=0.05, activation="gelu", checkpoint_level="C0", parameter_sharing="layerwise",
                 k_reduce_by_layer=0, full_attention=False, include_ff=True, w_o_intermediate_dim=None,
                 emb_dim=None, return_emb=False, decoder_mode=False, causal=False, method="learnable"):
        super().__init__()
        given = dict(dim_d=dim_d, ff_intermediate=ff_intermediate, k_reduce_by_layer=k_reduce_by_layer,
                     include_ff=include_ff, w_o_intermediate_dim=w_o_intermediate_dim, emb_dim=emb_dim,
                     return_emb=return_emb, decoder_mode=decoder_mode, causal=causal, method=method)
        for name, value in given.items():
            if value != _DEFAULT_ONLY[name] and not (name == "emb_dim" and value == channels):
                raise ValueError("%s=%r is not reproduced (only the default)" % (name, value))
        if channels % 2:
            raise ValueError("upstream's PositionalEmbedding needs an even channel count")
        self.input_size = input_size
        self.to_token_emb = nn.Embedding(num_tokens, channels)
        self.pos_emb = PositionalEmbedding(channels)
        self.linformer = Linformer(input_size, channels, dim_k, dim_ff, nhead, depth, activation,
                                   parameter_sharing, full_attention)
        self.to_logits = nn.Linear(channels, num_tokens)

    def forward(self, ids, allow_short=False):
        x = self.to_token_emb(ids)
        x = self.pos_emb(x).type(x.type()) + x
        return self.to_logits(self.linformer(x, allow_short=allow_short))
