# SPDX-License-Identifier: Apache-2.0
"""Re-creation of fairseq's examples/linformer `linformer_roberta` model and of its checkpoint file.

Module tree (hence state_dict names) and eval-mode forward as fairseq's LinformerModel
(RobertaModel) -> LinformerEncoder (RobertaEncoder) -> LinformerTransformerEncoder
(TransformerEncoder) -> LinformerTransformerEncoderLayer (TransformerEncoderLayer, post-norm)
-> MultiheadLinearAttention, plus RobertaLMHead and RobertaClassificationHead:

  encoder.version                                   int64 () = 2
  encoder.sentence_encoder.version                  float (1,) = [3.]  (follows the model dtype)
  encoder.sentence_encoder.embed_tokens.weight      (V, C)       row 1 (<pad>) zero
  encoder.sentence_encoder.embed_positions.weight   (n + 2, C)   row 1 zero; position t reads row t + 2
  encoder.sentence_encoder.layernorm_embedding.*    (C,)
  encoder.sentence_encoder.layers.{i}.version       int64 () = 2
  encoder.sentence_encoder.layers.{i}.self_attn.{k_proj,v_proj,q_proj,out_proj}.{weight,bias}
  encoder.sentence_encoder.layers.{i}.self_attn.compress_k.weight (k, n)   [+ .bias if layerwise]
  encoder.sentence_encoder.layers.{i}.self_attn.compress_v.weight (k, n)   (absent if shared_kv_compressed)
  encoder.sentence_encoder.layers.{i}.{self_attn_layer_norm,fc1,fc2,final_layer_norm}.*
  encoder.sentence_encoder.compress_layer.{weight,bias}   (shared_layer_kv_compressed only; the same
                                                          module sits under every layer's compress_k/v)
  encoder.lm_head.{weight,bias,dense.*,layer_norm.*}      weight IS embed_tokens.weight unless untied
  classification_heads.<name>.{dense,out_proj}.*

Only the linformer_roberta structure is reproduced: post-norm, learned positions with
padding_idx 1, no embedding scale, no final layer norm, no quant-noise, no layerdrop. Forward takes
token ids without padding (fairseq's Linformer attention ignores key_padding_mask anyway).
GELU and softmax run in the model's dtype (fairseq upcasts both to float32 even for a float64
model; the references here want float64 throughout).
"""

import argparse
import copy

import torch
import torch.nn.functional as F
from torch import nn

PAD = 1  # fairseq Dictionary: <s>=0, <pad>=1, </s>=2, <unk>=3; the dictionary is not in the checkpoint

# roberta base_architecture + linformer base_architecture defaults (linformer_roberta_base)
DEFAULTS = dict(
    encoder_layers=12, encoder_embed_dim=768, encoder_ffn_embed_dim=3072, encoder_attention_heads=12,
    dropout=0.1, attention_dropout=0.1, activation_dropout=0.0, pooler_dropout=0.0,
    no_token_positional_embeddings=False, encoder_learned_pos=True, layernorm_embedding=True,
    no_scale_embedding=True, activation_fn="gelu", encoder_normalize_before=False,
    pooler_activation_fn="tanh", untie_weights_roberta=False, adaptive_input=False,
    encoder_layerdrop=0.0, encoder_layers_to_keep=None, quant_noise_pq=0, quant_noise_pq_block_size=8,
    quant_noise_scalar=0, spectral_norm_classification_head=False,
    compressed=4, shared_kv_compressed=0, shared_layer_kv_compressed=0, freeze_compress=0,
)

# what this re-creation can represent (other values are refused)
_FIXED = dict(no_token_positional_embeddings=False, encoder_learned_pos=True, no_scale_embedding=True,
              encoder_normalize_before=False, pooler_activation_fn="tanh", adaptive_input=False,
              quant_noise_pq=0, encoder_layers_to_keep=None)

_ACT = {"gelu": F.gelu, "relu": F.relu}


def base_architecture(args):
    """Fills missing fields like fairseq's base_architecture; max_positions from tokens_per_sample."""
    for k, v in DEFAULTS.items():
        if not hasattr(args, k):
            setattr(args, k, v)
    if not hasattr(args, "max_positions"):
        args.max_positions = args.tokens_per_sample
    args.max_source_positions = args.max_positions
    for k, v in _FIXED.items():
        if getattr(args, k) != v:
            raise ValueError("%s=%r is not reproduced" % (k, getattr(args, k)))
    if args.activation_fn not in _ACT:
        raise ValueError("activation_fn must be gelu or relu")
    return args


class MultiheadLinearAttention(nn.Module):
    def __init__(self, embed_dim, num_heads, compressed, max_seq_len, shared_kv_compressed,
                 shared_compress_layer):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        assert self.head_dim * num_heads == embed_dim
        self.k_proj = nn.Linear(embed_dim, embed_dim)
        self.v_proj = nn.Linear(embed_dim, embed_dim)
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        if shared_compress_layer is None:
            k = max_seq_len // compressed
            self.compress_k = nn.Linear(max_seq_len, k, bias=False)
            if shared_kv_compressed == 0:
                self.compress_v = nn.Linear(max_seq_len, k, bias=False)
        else:  # the encoder's compress_layer (has a bias, which forward never reads)
            self.compress_k = shared_compress_layer
            if shared_kv_compressed == 0:
                self.compress_v = shared_compress_layer
        self.shared_kv_compressed = shared_kv_compressed
        self.out_proj = nn.Linear(embed_dim, embed_dim)

    def forward(self, x):
        """x: (T, B, C) -> (T, B, C)."""
        T, B, C = x.shape
        H, hd = self.num_heads, self.head_dim
        q = self.q_proj(x) * hd ** -0.5  # bias included, then scaled
        comp_v = self.compress_k if self.shared_kv_compressed else self.compress_v
        x_bct = x.permute(1, 2, 0)  # compress the sequence axis BEFORE k_proj / v_proj, weight only
        k = self.k_proj(F.linear(x_bct, self.compress_k.weight[:, :T]).permute(2, 0, 1))  # (k, B, C)
        v = self.v_proj(F.linear(x_bct, comp_v.weight[:, :T]).permute(2, 0, 1))
        q = q.reshape(T, B * H, hd).transpose(0, 1)
        k = k.reshape(-1, B * H, hd).transpose(0, 1)
        v = v.reshape(-1, B * H, hd).transpose(0, 1)
        attn = torch.bmm(q, k.transpose(1, 2)).softmax(dim=-1)
        out = torch.bmm(attn, v).transpose(0, 1).reshape(T, B, C)
        return self.out_proj(out)


class LinformerTransformerEncoderLayer(nn.Module):
    def __init__(self, args, shared_compress_layer):
        super().__init__()
        self.shared_compress_layer = [shared_compress_layer]  # a list: not registered here
        C = args.encoder_embed_dim
        self.self_attn = MultiheadLinearAttention(C, args.encoder_attention_heads, args.compressed,
                                                  args.max_positions, args.shared_kv_compressed,
                                                  shared_compress_layer)
        self.self_attn_layer_norm = nn.LayerNorm(C)
        self.activation_fn = _ACT[args.activation_fn]
        self.fc1 = nn.Linear(C, args.encoder_ffn_embed_dim)
        self.fc2 = nn.Linear(args.encoder_ffn_embed_dim, C)
        self.final_layer_norm = nn.LayerNorm(C)
        self.register_buffer("version", torch.tensor(2))

    def forward(self, x):  # post-norm
        x = self.self_attn_layer_norm(x + self.self_attn(x))
        return self.final_layer_norm(x + self.fc2(self.activation_fn(self.fc1(x))))


class LinformerTransformerEncoder(nn.Module):
    """fairseq's `sentence_encoder`."""

    def __init__(self, args, vocab_size):
        super().__init__()
        self.args = args
        self.register_buffer("version", torch.Tensor([3]))
        C = args.encoder_embed_dim
        self.embed_tokens = nn.Embedding(vocab_size, C, PAD)
        # PositionalEmbedding(learned=True): max_positions + padding_idx + 1 rows
        self.embed_positions = nn.Embedding(args.max_positions + PAD + 1, C, PAD)
        self.layernorm_embedding = nn.LayerNorm(C) if args.layernorm_embedding else None
        self.layers = nn.ModuleList()
        self.compress_layer = None
        for _ in range(args.encoder_layers):
            self.layers.append(self.build_encoder_layer(args))

    def build_encoder_layer(self, args):
        if args.shared_layer_kv_compressed == 1 and self.compress_layer is None:
            # registered as a child here, i.e. after `layers` (nn.Linear default: with bias)
            self.compress_layer = nn.Linear(args.max_positions, args.max_positions // args.compressed)
        return LinformerTransformerEncoderLayer(args, self.compress_layer)

    def forward(self, tokens):
        """tokens: (B, T) without padding -> features (T, B, C)."""
        assert not bool((tokens == PAD).any()), "padding is not reproduced"
        mask = tokens.ne(PAD).int()
        positions = (torch.cumsum(mask, dim=1) * mask).long() + PAD  # make_positions: 2, 3, ...
        x = self.embed_tokens(tokens) + self.embed_positions(positions)
        if self.layernorm_embedding is not None:
            x = self.layernorm_embedding(x)
        x = x.transpose(0, 1)
        for layer in self.layers:
            x = layer(x)
        return x


class RobertaLMHead(nn.Module):
    def __init__(self, embed_dim, output_dim, activation_fn, weight=None):
        super().__init__()
        self.dense = nn.Linear(embed_dim, embed_dim)
        self.activation_fn = _ACT[activation_fn]
        self.layer_norm = nn.LayerNorm(embed_dim)
        if weight is None:
            weight = nn.Linear(embed_dim, output_dim, bias=False).weight
        self.weight = weight
        self.bias = nn.Parameter(torch.zeros(output_dim))

    def forward(self, features):
        x = self.layer_norm(self.activation_fn(self.dense(features)))
        return F.linear(x, self.weight) + self.bias


class RobertaClassificationHead(nn.Module):
    def __init__(self, input_dim, inner_dim, num_classes):
        super().__init__()
        self.dense = nn.Linear(input_dim, inner_dim)
        self.out_proj = nn.Linear(inner_dim, num_classes)

    def forward(self, features):
        x = features[:, 0, :]  # <s> token
        return self.out_proj(torch.tanh(self.dense(x)))


class LinformerEncoder(nn.Module):
    def __init__(self, args, vocab_size):
        super().__init__()
        self.sentence_encoder = LinformerTransformerEncoder(args, vocab_size)
        tied = None if args.untie_weights_roberta else self.sentence_encoder.embed_tokens.weight
        self.lm_head = RobertaLMHead(args.encoder_embed_dim, vocab_size, args.activation_fn, tied)
        self.register_buffer("version", torch.tensor(2))

    def forward(self, tokens, features_only=False):
        features = self.sentence_encoder(tokens).transpose(0, 1)  # (B, T, C)
        return features if features_only else self.lm_head(features)


class LinformerModel(nn.Module):
    def __init__(self, args, vocab_size):
        super().__init__()
        self.args = base_architecture(args)
        self.encoder = LinformerEncoder(args, vocab_size)
        self.classification_heads = nn.ModuleDict()

    def register_classification_head(self, name, num_classes, inner_dim=None):
        C = self.args.encoder_embed_dim
        self.classification_heads[name] = RobertaClassificationHead(C, inner_dim or C, num_classes)

    def forward(self, tokens, classification_head_name=None):
        """tokens (B, T) -> LM logits (B, T, V), or class logits (B, num_classes) from the head."""
        if classification_head_name is None:
            return self.encoder(tokens)
        return self.classification_heads[classification_head_name](self.encoder(tokens, features_only=True))


# ---------------------------------------------------------------------------------------------
# checkpoint files as fairseq's Trainer.state_dict / checkpoint_utils.save_state write them


def _args_namespace(args, arch):
    """A flat argparse.Namespace like fairseq <= 0.10 stored under "args" (a representative subset
    of the training flags besides the model's)."""
    ns = argparse.Namespace(**vars(copy.deepcopy(args)))
    extra = dict(arch=arch, task="masked_lm", criterion="masked_lm", optimizer="adam",
                 adam_betas="(0.9,0.98)", adam_eps=1e-06, weight_decay=0.01, clip_norm=0.0,
                 lr=[0.0005], lr_scheduler="polynomial_decay", warmup_updates=10000,
                 total_num_update=125000, max_update=125000, update_freq=[16], seed=1,
                 sample_break_mode="complete", mask_prob=0.15, fp16=False, bf16=False,
                 data="data-bin/wikitext-103", save_dir="checkpoints", no_epoch_checkpoints=False,
                 log_format="simple", num_workers=1, max_tokens=None, batch_size=16)
    for k, v in extra.items():
        if not hasattr(ns, k):
            setattr(ns, k, v)
    return ns


def checkpoint_dict(model, style="args", arch="linformer_roberta_base", fp16=False, bf16=False,
                    optimizer_state=False):
    """style: "args"    {"args": Namespace, ...}                      (fairseq <= 0.10)
              "cfg"     {"args": None, "cfg": {"model": {...}, ...}} (hydra dataclass models)
              "cfg_ns"  {"args": None, "cfg": {"model": Namespace}}  (current fairseq for a legacy
                        add_args model such as linformer_roberta: cfg.model stays a Namespace)"""
    ns = _args_namespace(model.args, arch)
    ns.fp16, ns.bf16 = fp16, bf16
    state = {"args": None}
    if style == "args":
        state["args"] = ns
    else:
        model_cfg = dict(vars(ns), _name=arch)
        for k in ("task", "criterion", "optimizer", "lr_scheduler", "lr", "adam_betas", "adam_eps",
                  "weight_decay", "data", "save_dir", "seed", "fp16", "bf16", "update_freq"):
            model_cfg.pop(k, None)
        state["cfg"] = {
            "_name": None,
            "common": {"_name": None, "fp16": fp16, "bf16": bf16, "seed": 1, "log_format": "simple",
                       "fp16_init_scale": 128, "memory_efficient_fp16": False},
            "model": argparse.Namespace(**model_cfg) if style == "cfg_ns" else model_cfg,
            "task": {"_name": "masked_lm", "data": "data-bin/wikitext-103", "sample_break_mode": "complete",
                     "tokens_per_sample": model.args.max_positions, "mask_prob": 0.15},
            "criterion": {"_name": "masked_lm", "tpu": False},
            "optimizer": {"_name": "adam", "adam_betas": "(0.9,0.98)", "adam_eps": 1e-06,
                          "weight_decay": 0.01, "lr": [0.0005]},
            "lr_scheduler": {"_name": "polynomial_decay", "warmup_updates": 10000, "end_learning_rate": 0.0,
                             "total_num_update": 125000.0, "lr": [0.0005]},
            "checkpoint": {"_name": None, "save_dir": "checkpoints", "no_epoch_checkpoints": False},
        }
    state["model"] = model.state_dict()
    state["criterion"] = None
    state["optimizer_history"] = [{"criterion_name": "MaskedLmLoss", "optimizer_name": "FairseqAdam",
                                   "lr_scheduler_state": {"best": 2.3}, "num_updates": 2000}]
    state["task_state"] = {}
    state["extra_state"] = {"metrics": {}, "previous_training_time": 1234.5,
                            "train_iterator": {"version": 2, "epoch": 3, "iterations_in_epoch": 0,
                                               "shuffle": True},
                            "val_loss": 2.3}
    if optimizer_state:  # Adam moments: float tensors that are NOT model weights
        params = [p for p in model.parameters()]
        state["last_optimizer_state"] = {
            "state": {i: {"step": 2000, "exp_avg": torch.full_like(p, 1e-3),
                          "exp_avg_sq": torch.full_like(p, 1e-6)} for i, p in enumerate(params)},
            "param_groups": [{"lr": 0.0005, "betas": (0.9, 0.98), "eps": 1e-06, "weight_decay": 0.01,
                              "params": list(range(len(params)))}],
        }
    return state
