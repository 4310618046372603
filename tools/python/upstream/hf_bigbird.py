"""Re-creation of Hugging Face transformers' BigBird (models/big_bird/modeling_big_bird.py, read at
transformers main of 2025, commit 48c8c8d): BigBirdModel, BigBirdForMaskedLM and
BigBirdForSequenceClassification, their module tree (hence state_dict names) and eval-mode forward
for one sequence:

  [bert.]embeddings.word_embeddings.weight          (V, C)      row pad_token_id zero
  [bert.]embeddings.position_embeddings.weight      (P, C)      position t reads row t (from 0)
  [bert.]embeddings.token_type_embeddings.weight    (types, C)  row 0 added to every position
  [bert.]embeddings.LayerNorm.{weight,bias}
  [bert.]embeddings.position_ids                    (1, P)      a persistent buffer before 4.31
  [bert.]encoder.layer.{i}.attention.self.{query,key,value}.weight [.bias: use_bias]
  [bert.]encoder.layer.{i}.attention.output.{dense,LayerNorm}.*
  [bert.]encoder.layer.{i}.intermediate.dense.*
  [bert.]encoder.layer.{i}.output.{dense,LayerNorm}.*
  [bert.]pooler.{weight,bias}                       an nn.Linear (add_pooling_layer, True in all
                                                    three models; never part of their outputs here)
  cls.predictions.bias, cls.predictions.transform.{dense,LayerNorm}.*,
  cls.predictions.decoder.weight (tied to word_embeddings), cls.predictions.decoder.bias
                                                    (= cls.predictions.bias)  BigBirdForMaskedLM
  classifier.{dense,out_proj}.*                     BigBirdForSequenceClassification

Eval-mode forward, as BigBirdModel.forward computes it for one sequence of T tokens without
padding: if attention_type is "block_sparse" and T <= (5 + 2 R) b (b block_size, R
num_random_blocks), the model switches to "original_full" first (HF makes that switch sticky for
later calls; here every call decides afresh, as a freshly loaded model does). Block-sparse: the
input is padded with pad_token_id to a multiple of b (the pad rows get positions too and are
masked as keys with HF's additive -10000), cut into nb blocks, and each query block attends to the
key list HF's five parts build, as explicit per-block key lists here (not HF's shifted band
matrices, not a dense mask): block 0 and block nb-1 to every key; block 1 to blocks 0, 1, 2, nb-1
and its random blocks; blocks 2..nb-3 to blocks 0, i-1, i, i+1, the random blocks and nb-1; block
nb-2 to blocks 0, nb-3, nb-2, nb-1 and its random blocks. A key listed twice counts twice in the
softmax. The random blocks are `_bigbird_block_rand_mask_with_head`'s (and for T in {1024, 3072,
4096} `_bigbird_block_rand_mask`'s) output, which in eval mode (transformers >= 4.30, pull request
23056) is all zeros: every random block is block 0. BigBirdForMaskedLM's head transform and
BigBirdClassificationHead both apply hidden_act (not a fixed gelu or tanh). Not re-created:
dropout, padding masks, token types other than 0, head masks, decoders and cross attention,
training-mode random blocks.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

from upstream.hf_longformer import ACT, Encoder  # BERT's layers in both

# BigBirdConfig's defaults that the converter reads
DEFAULTS = dict(vocab_size=50358, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                intermediate_size=3072, hidden_act="gelu_new", max_position_embeddings=4096, type_vocab_size=2,
                layer_norm_eps=1e-12, pad_token_id=0, attention_type="block_sparse", use_bias=True,
                rescale_embeddings=False, block_size=64, num_random_blocks=3)

PENALTY = -10000.0  # HF's attn_mask_penalty for padded keys


class SelfAttention(nn.Module):
    """BigBirdSelfAttention and BigBirdBlockSparseAttention: the same query/key/value linears; which
    computation runs is decided per call (BigBirdModel's switch)."""

    def __init__(self, c):
        super().__init__()
        C = c["hidden_size"]
        self.H = c["num_attention_heads"]
        self.hd = C // self.H
        self.b, self.R = c["block_size"], c["num_random_blocks"]
        for name in ("query", "key", "value"):
            setattr(self, name, nn.Linear(C, C, bias=c["use_bias"]))

    def forward(self, x, real, sparse):
        """x: (L, C), rows >= real are padding; sparse: block-sparse (L a multiple of b) or full."""
        L = x.shape[0]
        q, k, v = (getattr(self, n)(x).view(L, self.H, self.hd).transpose(0, 1) for n in ("query", "key", "value"))
        out = torch.zeros(self.H, L, self.hd, dtype=x.dtype)
        if not sparse:
            p = torch.softmax(torch.matmul(q, k.transpose(1, 2)) / math.sqrt(self.hd), -1)
            return torch.matmul(p, v).transpose(0, 1).reshape(L, -1)
        b, nb = self.b, L // self.b
        rand = torch.zeros(self.H, nb - 2, self.R, dtype=torch.long)  # eval mode: no randomness

        def rows(*blocks):
            return [j for blk in blocks for j in range(blk * b, (blk + 1) * b)]

        for h in range(self.H):
            for i in range(nb):
                if i in (0, nb - 1):  # parts 1 and 5: global query blocks
                    keys = list(range(L))
                elif i == 1:  # part 2
                    keys = rows(0, 1, 2, nb - 1) + rows(*rand[h, 0].tolist())
                elif i == nb - 2:  # part 4
                    keys = rows(0, nb - 3, nb - 2, nb - 1) + rows(*rand[h, -1].tolist())
                else:  # part 3: first, sliding, random, last
                    keys = rows(0, i - 1, i, i + 1) + rows(*rand[h, i - 1].tolist()) + rows(nb - 1)
                s = q[h, i * b:(i + 1) * b] @ k[h, keys].T / math.sqrt(self.hd)
                s = s + torch.tensor([PENALTY if j >= real else 0.0 for j in keys], dtype=x.dtype)
                out[h, i * b:(i + 1) * b] = torch.softmax(s, -1) @ v[h, keys]
        return out.transpose(0, 1).reshape(L, -1)


class Embeddings(nn.Module):
    def __init__(self, c, position_ids_buffer):
        super().__init__()
        C, P = c["hidden_size"], c["max_position_embeddings"]
        self.word_embeddings = nn.Embedding(c["vocab_size"], C, padding_idx=c["pad_token_id"])
        self.position_embeddings = nn.Embedding(P, C)
        self.token_type_embeddings = nn.Embedding(c["type_vocab_size"], C)
        self.LayerNorm = nn.LayerNorm(C, eps=c["layer_norm_eps"])
        self.register_buffer("position_ids", torch.arange(P).expand((1, -1)), persistent=position_ids_buffer)
        self.scale = C ** 0.5 if c["rescale_embeddings"] else None

    def forward(self, ids):
        e = self.word_embeddings(ids)
        if self.scale is not None:
            e = e * self.scale
        e = e + self.token_type_embeddings.weight[0] + self.position_embeddings(self.position_ids[0, :len(ids)])
        return self.LayerNorm(e)


class BigBirdModel(nn.Module):
    def __init__(self, cfg, add_pooling_layer=True, position_ids_buffer=False):
        super().__init__()
        self.config = c = dict(DEFAULTS, **cfg)
        assert c["attention_type"] in ("block_sparse", "original_full")
        self.embeddings = Embeddings(c, position_ids_buffer)
        self.encoder = Encoder(c, lambda i: SelfAttention(c))
        if add_pooling_layer:
            self.pooler = nn.Linear(c["hidden_size"], c["hidden_size"])

    def forward(self, ids):
        c, T = self.config, ids.shape[0]
        b = c["block_size"]
        sparse = c["attention_type"] == "block_sparse" and T > (5 + 2 * c["num_random_blocks"]) * b
        L = (T + b - 1) // b * b if sparse else T  # _pad_to_block_size
        padded = torch.cat([ids, torch.full((L - T,), c["pad_token_id"], dtype=ids.dtype)])
        x = self.embeddings(padded)
        for layer in self.encoder.layer:
            x = layer(x, T, sparse)
        return x[:T]


def _act(c):
    return ACT[c["hidden_act"]]


class BigBirdForMaskedLM(nn.Module):
    def __init__(self, cfg, position_ids_buffer=False):
        super().__init__()
        self.bert = BigBirdModel(cfg, position_ids_buffer=position_ids_buffer)
        c = self.bert.config
        C, V = c["hidden_size"], c["vocab_size"]
        self.cls = nn.Module()
        self.cls.predictions = p = nn.Module()
        p.bias = nn.Parameter(torch.zeros(V))  # registered before the submodules, as upstream
        p.transform = nn.Module()
        p.transform.dense = nn.Linear(C, C)
        p.transform.LayerNorm = nn.LayerNorm(C, eps=c["layer_norm_eps"])
        p.decoder = nn.Linear(C, V, bias=False)
        p.decoder.bias = p.bias
        p.decoder.weight = self.bert.embeddings.word_embeddings.weight  # tie_word_embeddings

    def forward(self, ids):
        p = self.cls.predictions
        h = p.transform.LayerNorm(_act(self.bert.config)(p.transform.dense(self.bert(ids))))
        return p.decoder(h)


class BigBirdForSequenceClassification(nn.Module):
    def __init__(self, cfg, num_labels):
        super().__init__()
        self.bert = BigBirdModel(cfg)
        C = self.bert.config["hidden_size"]
        self.classifier = nn.Module()
        self.classifier.dense = nn.Linear(C, C)
        self.classifier.out_proj = nn.Linear(C, num_labels)

    def forward(self, ids):  # BigBirdClassificationHead: first token, dense, hidden_act, out_proj
        h = _act(self.bert.config)(self.classifier.dense(self.bert(ids)[0]))
        return self.classifier.out_proj(h)[None]
