"""Re-creation of Hugging Face transformers' Longformer (models/longformer/modeling_longformer.py):
LongformerModel, LongformerForMaskedLM and LongformerForSequenceClassification, their module tree
(hence state_dict names) and eval-mode forward for one unpadded sequence:

  [longformer.]embeddings.word_embeddings.weight          (V, C)      row pad_token_id zero
  [longformer.]embeddings.position_embeddings.weight      (P, C)      position t reads row t + pad + 1
  [longformer.]embeddings.token_type_embeddings.weight    (types, C)  row 0 added to every position
  [longformer.]embeddings.LayerNorm.{weight,bias}
  [longformer.]encoder.layer.{i}.attention.self.{query,key,value,query_global,key_global,value_global}.*
  [longformer.]encoder.layer.{i}.attention.output.{dense,LayerNorm}.*
  [longformer.]encoder.layer.{i}.intermediate.dense.*
  [longformer.]encoder.layer.{i}.output.{dense,LayerNorm}.*
  pooler.dense.*                                          (LongformerModel, add_pooling_layer)
  lm_head.{dense,layer_norm}.*, lm_head.decoder.weight (tied to word_embeddings), lm_head.bias
                                                          (= lm_head.decoder.bias)
  classifier.{dense,out_proj}.*                           (LongformerForSequenceClassification)

The attention is computed the way HF's LongformerSelfAttention does it, as far as it matters for
one sequence: the input is padded to a multiple of attention_window with pad tokens (masked keys),
every row sees the keys within attention_window / 2 on each side that are neither padding nor
global, plus the global rows' keys (from `key`/`value`); a global row attends to every real row
through query_global / key_global / value_global, and its output replaces the local one. Written
with per-row loops over explicit key lists (not a dense mask, not HF's banded chunks), so that it
is a second implementation beside linfer_ref's. Global rows: global_attention_mask given per call
in HF; here the first `global_positions` rows, and LongformerForSequenceClassification's default
(the first token) when it is not given. Not re-created: dropout, padding inputs, token types
other than 0, head masks, position_embedding_type other than "absolute".
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

# LongformerConfig's defaults that the converter reads
DEFAULTS = dict(vocab_size=30522, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                intermediate_size=3072, hidden_act="gelu", max_position_embeddings=512, type_vocab_size=2,
                layer_norm_eps=1e-12, pad_token_id=1, attention_window=512)


def gelu_tanh(x):
    return F.gelu(x, approximate="tanh")


# ACT2FN's names the converter maps (gelu_new and gelu_pytorch_tanh: the tanh approximation)
ACT = {"gelu": F.gelu, "relu": F.relu, "gelu_new": gelu_tanh, "gelu_pytorch_tanh": gelu_tanh}


def full_config(cfg):
    c = dict(DEFAULTS, **cfg)
    w = c["attention_window"]
    c["attention_window"] = list(w) if isinstance(w, (list, tuple)) else [w] * c["num_hidden_layers"]
    return c


class SelfAttention(nn.Module):
    def __init__(self, c, layer_id):
        super().__init__()
        C = c["hidden_size"]
        self.H = c["num_attention_heads"]
        self.hd = C // self.H
        for name in ("query", "key", "value", "query_global", "key_global", "value_global"):
            setattr(self, name, nn.Linear(C, C))
        self.w = c["attention_window"][layer_id]
        self.r = self.w // 2

    def heads(self, x):
        return x.view(x.shape[0], self.H, self.hd).transpose(0, 1)  # (H, L, hd)

    def forward(self, x, real, g):
        """x: (L, C) padded to a multiple of the window; real: number of real rows; g: global rows."""
        L = x.shape[0]
        q = self.heads(self.query(x) / math.sqrt(self.hd))
        k, v = self.heads(self.key(x)), self.heads(self.value(x))
        out = torch.zeros(self.H, L, self.hd, dtype=x.dtype)
        for i in range(real):
            window = [j for j in range(max(0, i - self.r), min(L, i + self.r + 1)) if g <= j < real]
            keys = list(range(g)) + window
            s = torch.einsum("hd,hkd->hk", q[:, i], k[:, keys])
            out[:, i] = torch.einsum("hk,hkd->hd", torch.softmax(s, -1), v[:, keys])
        if g:
            qg = self.heads(self.query_global(x[:g]) / math.sqrt(self.hd))
            kg, vg = self.heads(self.key_global(x[:real])), self.heads(self.value_global(x[:real]))
            p = torch.softmax(torch.matmul(qg, kg.transpose(1, 2)), -1)
            out[:, :g] = torch.matmul(p, vg)
        return out.transpose(0, 1).reshape(L, -1)


class DenseNorm(nn.Module):  # BERT's, as LongformerSelfOutput / LongformerOutput: LayerNorm(dense(h) + input)
    def __init__(self, fan_in, C, eps):
        super().__init__()
        self.dense = nn.Linear(fan_in, C)
        self.LayerNorm = nn.LayerNorm(C, eps=eps)

    def forward(self, h, x):
        return self.LayerNorm(self.dense(h) + x)


class Intermediate(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c["hidden_size"], c["intermediate_size"])
        self.act = ACT[c["hidden_act"]]

    def forward(self, x):
        return self.act(self.dense(x))


class Layer(nn.Module):
    """BERT's layer (LongformerLayer, BigBirdLayer): attention.{self, output}, intermediate, output,
    post-norm; the self-attention module is the model's own and gets forward's extra arguments."""

    def __init__(self, c, self_attention):
        super().__init__()
        self.attention = nn.Module()
        self.attention.self = self_attention
        self.attention.output = DenseNorm(c["hidden_size"], c["hidden_size"], c["layer_norm_eps"])
        self.intermediate = Intermediate(c)
        self.output = DenseNorm(c["intermediate_size"], c["hidden_size"], c["layer_norm_eps"])

    def forward(self, x, *attention_args):
        a = self.attention.output(self.attention.self(x, *attention_args), x)
        return self.output(self.intermediate(a), a)


class Encoder(nn.Module):
    def __init__(self, c, self_attention):  # self_attention(i): layer i's self-attention module
        super().__init__()
        self.layer = nn.ModuleList([Layer(c, self_attention(i)) for i in range(c["num_hidden_layers"])])


class Embeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        C, pad = c["hidden_size"], c["pad_token_id"]
        self.word_embeddings = nn.Embedding(c["vocab_size"], C, padding_idx=pad)
        self.position_embeddings = nn.Embedding(c["max_position_embeddings"], C, padding_idx=pad)
        self.token_type_embeddings = nn.Embedding(c["type_vocab_size"], C)
        self.LayerNorm = nn.LayerNorm(C, eps=c["layer_norm_eps"])
        self.pad = pad

    def forward(self, ids):
        real = ids != self.pad  # create_position_ids_from_input_ids: pad + cumsum over real tokens
        pos = torch.cumsum(real.long(), 0) * real.long() + self.pad
        e = self.word_embeddings(ids) + self.position_embeddings(pos) + self.token_type_embeddings.weight[0]
        return self.LayerNorm(e)


class LongformerModel(nn.Module):
    def __init__(self, cfg, add_pooling_layer=True):
        super().__init__()
        self.config = c = full_config(cfg)
        self.embeddings = Embeddings(c)
        self.encoder = Encoder(c, lambda i: SelfAttention(c, i))
        if add_pooling_layer:
            self.pooler = nn.Module()
            self.pooler.dense = nn.Linear(c["hidden_size"], c["hidden_size"])

    def forward(self, ids, global_positions=0):
        T = ids.shape[0]
        w = max(self.config["attention_window"])
        L = (T + w - 1) // w * w  # LongformerModel._pad_to_window_size
        padded = torch.cat([ids, torch.full((L - T,), self.config["pad_token_id"], dtype=ids.dtype)])
        x = self.embeddings(padded)
        g = min(global_positions, T)
        for layer in self.encoder.layer:
            x = layer(x, T, g)
        return x[:T]


class LongformerForMaskedLM(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.longformer = LongformerModel(cfg, add_pooling_layer=False)
        c = self.longformer.config
        C, V = c["hidden_size"], c["vocab_size"]
        self.lm_head = nn.Module()
        self.lm_head.dense = nn.Linear(C, C)
        self.lm_head.layer_norm = nn.LayerNorm(C, eps=c["layer_norm_eps"])
        self.lm_head.decoder = nn.Linear(C, V)
        self.lm_head.bias = nn.Parameter(torch.zeros(V))
        self.lm_head.decoder.bias = self.lm_head.bias
        self.lm_head.decoder.weight = self.longformer.embeddings.word_embeddings.weight  # tie_word_embeddings

    def forward(self, ids, global_positions=0):
        h = self.longformer(ids, global_positions)
        h = self.lm_head.layer_norm(F.gelu(self.lm_head.dense(h)))  # LongformerLMHead: gelu, not hidden_act
        return self.lm_head.decoder(h)


class LongformerForSequenceClassification(nn.Module):
    def __init__(self, cfg, num_labels):
        super().__init__()
        self.longformer = LongformerModel(cfg, add_pooling_layer=False)
        C = self.longformer.config["hidden_size"]
        self.classifier = nn.Module()
        self.classifier.dense = nn.Linear(C, C)
        self.classifier.out_proj = nn.Linear(C, num_labels)

    def forward(self, ids, global_positions=1):  # HF: global attention on the first token by default
        h = self.longformer(ids, global_positions)[0]
        return self.classifier.out_proj(torch.tanh(self.classifier.dense(h)))[None]
