# SPDX-License-Identifier: Apache-2.0
"""Writes tests/golden_layouts/: checkpoints in the upstream layouts (three Linformer ones,
lucidrains' performer-pytorch and reformer-pytorch, Hugging Face's Longformer and BigBird), with outputs.

    build-upstream/venv/bin/python tools/python/reference/make_layout_golden.py [OUT_DIR]   (default: tests/golden_layouts)
    build-upstream/venv/bin/python tools/python/reference/make_layout_golden.py --check DIR

Models come from the upstream packages themselves, pinned (tools/python/reference/upstream/packages.py;
scripts/upstream-venv.sh makes the venv): linformer 0.2.3, linformer-pytorch 0.19.3,
performer-pytorch 1.1.4, reformer-pytorch 1.4.4 and transformers 4.40.2 (Longformer, BigBird).
fairseq's linformer_roberta comes from the re-creation tools/python/reference/upstream/fairseq_linformer.py
(fairseq does not install beside Debian's torch). --check DIR loads DIR's checkpoints into the
same models and recomputes every output (within 1e-6). For each case:
a checkpoint, config.json for all but fairseq (constructor arguments under the library's own
names, or the Hugging Face config.json; those checkpoints do not carry them), and for each T in {1, 7, n/2+1, n}
(reformer: the case's `lengths`, multiples of 2 bucket_size as upstream requires) the input
(ids_<T>.txt token ids, or emb_<T>.npy float32 [T, dim] for the plain lucidrains Linformer) and
out_<T>.npy (float32, computed in float64 from the weights exactly as saved). cases.tsv lists
case, layout, checkpoint, config ("-" if none), input kind (ids|emb) and output
(lm logits [T, V] | class logits [1, classes] | hidden [T, dim]).

Causal performer cases with softmax features: upstream stabilises the keys by their maximum over
the whole input, so its rows depend on later tokens; linfer reproduces that (key_stabiliser
"sequence") and the outputs here are upstream's whole-input runs.
"""

import argparse
import copy
import io
import json
import math
import os
import pickle
import shutil
import struct
import sys

sys.dont_write_bytecode = True  # keep the source tree clean

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from upstream import fairseq_linformer as fq  # noqa: E402  (fairseq: the re-creation)
from upstream import packages as up  # noqa: E402  (every other layout: the PyPI packages)
from upstream.compare_goldens import load_checkpoint  # noqa: E402
import safetensors_file  # noqa: E402

# fmt: "zip" torch.save to a path (archive prefix = file stem), "zip_handle" torch.save to an open
# file (prefix "archive/", as fairseq does), "legacy" (_use_new_zipfile_serialization=False),
# "safetensors" (written by hand; only for layouts without aliased tensors).
CASES = [
    # ---------------------------------------------------------------- lucidrains/linformer 0.2.3
    dict(name="lucidrains_lm", layout="lucidrains", cls="LinformerLM", fmt="zip",
         args=dict(num_tokens=64, dim=32, seq_len=32, depth=2, k=8, heads=4)),
    dict(name="lucidrains_share_kv_legacy", layout="lucidrains", cls="LinformerLM", fmt="legacy",
         args=dict(num_tokens=80, dim=24, seq_len=40, depth=2, k=10, heads=3, share_kv=True)),
    dict(name="lucidrains_one_kv_head_safetensors", layout="lucidrains", cls="LinformerLM",
         fmt="safetensors",
         args=dict(num_tokens=50, dim=32, seq_len=48, depth=1, k=16, heads=4, one_kv_head=True)),
    dict(name="lucidrains_dim_head", layout="lucidrains", cls="LinformerLM", fmt="zip",
         args=dict(num_tokens=100, dim=16, seq_len=32, depth=2, k=8, heads=2, dim_head=12)),
    dict(name="lucidrains_reversible", layout="lucidrains", cls="LinformerLM", fmt="zip",
         args=dict(num_tokens=70, dim=32, seq_len=36, depth=2, k=12, heads=4, reversible=True)),
    dict(name="lucidrains_linformer", layout="lucidrains", cls="Linformer", fmt="zip",
         args=dict(dim=32, seq_len=32, depth=2, k=8, heads=4)),
    # ---------------------------------------------------------------- fairseq linformer_roberta
    dict(name="fairseq_default_args", layout="fairseq", vocab=64, style="args", optimizer_state=True,
         args=dict(encoder_layers=2, encoder_embed_dim=32, encoder_ffn_embed_dim=64,
                   encoder_attention_heads=4, max_positions=32, compressed=4)),
    dict(name="fairseq_default_cfg", layout="fairseq", vocab=72, style="cfg",
         args=dict(encoder_layers=2, encoder_embed_dim=24, encoder_ffn_embed_dim=48,
                   encoder_attention_heads=3, tokens_per_sample=48, compressed=3)),
    dict(name="fairseq_shared_kv", layout="fairseq", vocab=50, style="cfg",
         args=dict(encoder_layers=2, encoder_embed_dim=32, encoder_ffn_embed_dim=64,
                   encoder_attention_heads=2, max_positions=40, compressed=4, shared_kv_compressed=1)),
    dict(name="fairseq_layerwise", layout="fairseq", vocab=60, style="args",
         args=dict(encoder_layers=2, encoder_embed_dim=32, encoder_ffn_embed_dim=64,
                   encoder_attention_heads=4, max_positions=32, compressed=2,
                   shared_layer_kv_compressed=1)),
    dict(name="fairseq_layerwise_shared_kv_cfgns", layout="fairseq", vocab=80, style="cfg_ns",
         args=dict(encoder_layers=2, encoder_embed_dim=16, encoder_ffn_embed_dim=32,
                   encoder_attention_heads=2, max_positions=36, compressed=3,
                   shared_layer_kv_compressed=1, shared_kv_compressed=1)),
    dict(name="fairseq_cls", layout="fairseq", vocab=56, style="args",
         cls_head=("sentence_classification_head", 3),
         args=dict(encoder_layers=1, encoder_embed_dim=32, encoder_ffn_embed_dim=64,
                   encoder_attention_heads=4, max_positions=40, compressed=3)),
    dict(name="fairseq_fp16", layout="fairseq", vocab=64, style="args", dtype="float16",
         args=dict(encoder_layers=2, encoder_embed_dim=32, encoder_ffn_embed_dim=64,
                   encoder_attention_heads=4, max_positions=32, compressed=4)),
    dict(name="fairseq_bf16_untied", layout="fairseq", vocab=100, style="cfg", dtype="bfloat16",
         args=dict(encoder_layers=2, encoder_embed_dim=32, encoder_ffn_embed_dim=64,
                   encoder_attention_heads=4, max_positions=48, compressed=4,
                   untie_weights_roberta=True)),
    # ---------------------------------------------------------------- tatp22/linformer-pytorch
    dict(name="tatp22_none_gelu", layout="tatp22", fmt="zip",
         args=dict(num_tokens=64, input_size=32, channels=32, dim_k=8, dim_ff=64, nhead=4, depth=2,
                   activation="gelu", parameter_sharing="none")),
    dict(name="tatp22_headwise_relu", layout="tatp22", fmt="zip",
         args=dict(num_tokens=90, input_size=40, channels=24, dim_k=10, dim_ff=48, nhead=2, depth=2,
                   activation="relu", parameter_sharing="headwise")),
    dict(name="tatp22_kv_gelu", layout="tatp22", fmt="zip",
         args=dict(num_tokens=50, input_size=48, channels=16, dim_k=16, dim_ff=32, nhead=2, depth=2,
                   activation="gelu", parameter_sharing="kv")),
    dict(name="tatp22_layerwise_relu", layout="tatp22", fmt="zip",
         args=dict(num_tokens=100, input_size=32, channels=32, dim_k=12, dim_ff=64, nhead=4, depth=2,
                   activation="relu", parameter_sharing="layerwise")),
    # ---------------------------------------------------------------- performer-pytorch 1.1.4
    # (appended: the cases above keep their seeds)
    dict(name="performer_lm_rotary_causal", layout="performer", cls="PerformerLM", fmt="zip",
         args=dict(num_tokens=64, max_seq_len=32, dim=32, depth=2, heads=2, dim_head=16, causal=True,
                   nb_features=24)),
    # safetensors' save_model keeps one name of each shared tensor: here the projection updater's
    dict(name="performer_lm_relu_reversible_tied", layout="performer", cls="PerformerLM", fmt="safetensors",
         keep="proj_updater",
         args=dict(num_tokens=50, max_seq_len=40, dim=24, depth=2, heads=3, dim_head=8, reversible=True,
                   generalized_attention=True, tie_embed=True, rotary_position_emb=False, qkv_bias=True,
                   attn_out_bias=True, nb_features=16)),
    dict(name="performer_bare", layout="performer", cls="Performer", fmt="legacy", n=36,
         args=dict(dim=24, depth=2, heads=3, dim_head=8, nb_features=12)),
    # ---------------------------------------------------------------- Hugging Face Longformer
    # (appended). Windows of 8 and 6 keys (radius 4, 3) over 40- and 30-token inputs, so that rows
    # see a fraction of the keys; HF config.json style (with keys the converter does not read).
    dict(name="longformer_mlm", layout="longformer", cls="LongformerForMaskedLM", fmt="zip", global_positions=0,
         args=dict(vocab_size=60, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                   intermediate_size=64, max_position_embeddings=42, type_vocab_size=1, layer_norm_eps=1e-5,
                   attention_window=[8, 8], pad_token_id=1, model_type="longformer",
                   architectures=["LongformerForMaskedLM"], hidden_dropout_prob=0.1)),
    dict(name="longformer_cls_global2_safetensors", layout="longformer", cls="LongformerForSequenceClassification",
         fmt="safetensors", global_positions=2, num_labels=3,
         args=dict(vocab_size=50, hidden_size=24, num_hidden_layers=2, num_attention_heads=3,
                   intermediate_size=48, max_position_embeddings=34, type_vocab_size=2, layer_norm_eps=1e-5,
                   attention_window=6, hidden_act="gelu_new", global_positions=2)),
    dict(name="longformer_model_pooler", layout="longformer", cls="LongformerModel", fmt="zip", global_positions=0,
         args=dict(vocab_size=40, hidden_size=24, num_hidden_layers=1, num_attention_heads=2,
                   intermediate_size=40, max_position_embeddings=36, type_vocab_size=1, layer_norm_eps=1e-12,
                   attention_window=4, hidden_act="relu")),
    # ---------------------------------------------------------------- Hugging Face BigBird
    # (appended). Positions from 0, so n = max_position_embeddings. Blocks of 2 and 3 rows, so that a
    # sparse input of n rows has 17 and 14 blocks; HF switches to full attention at T <= (5 + 2R) b:
    # bigbird_mlm's T = 18 is that bound (full), its T = 34 sparse with R = 2 random blocks (block
    # 0 counted three times); bigbird_model_pooler_safetensors' T = 22 is sparse and padded to 24
    # (its last block has one real row), T = 42 sparse. bigbird_mlm_full_safetensors is
    # attention_type "original_full", saved as save_pretrained does (without the tied
    # cls.predictions.decoder.*). bigbird_mlm keeps the position_ids buffer older versions saved.
    dict(name="bigbird_mlm", layout="bigbird", cls="BigBirdForMaskedLM", fmt="zip", position_ids=True,
         args=dict(vocab_size=60, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                   intermediate_size=64, max_position_embeddings=34, type_vocab_size=2, layer_norm_eps=1e-12,
                   attention_type="block_sparse", block_size=2, num_random_blocks=2, pad_token_id=0,
                   model_type="big_bird", architectures=["BigBirdForMaskedLM"], hidden_dropout_prob=0.1,
                   position_embedding_type="absolute")),
    dict(name="bigbird_model_pooler_safetensors", layout="bigbird", cls="BigBirdModel", fmt="safetensors",
         args=dict(vocab_size=40, hidden_size=24, num_hidden_layers=2, num_attention_heads=3,
                   intermediate_size=40, max_position_embeddings=42, type_vocab_size=1, layer_norm_eps=1e-5,
                   block_size=3, num_random_blocks=1, hidden_act="relu", use_bias=False, model_type="big_bird")),
    dict(name="bigbird_mlm_full_safetensors", layout="bigbird", cls="BigBirdForMaskedLM", fmt="safetensors",
         drop=("cls.predictions.decoder.weight", "cls.predictions.decoder.bias"),
         args=dict(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                   intermediate_size=32, max_position_embeddings=32, type_vocab_size=2, layer_norm_eps=1e-6,
                   attention_type="original_full", hidden_act="gelu", rescale_embeddings=True,
                   model_type="big_bird")),
    # (appended) BigBirdForSequenceClassification: first token, classifier.dense, hidden_act (not
    # tanh), out_proj. bigbird_cls: gelu_new (the default), blocks of 3 rows with one random block,
    # so T = 25 and 48 are sparse (T <= 21 full); bigbird_cls_relu_safetensors: relu, original_full.
    dict(name="bigbird_cls", layout="bigbird", cls="BigBirdForSequenceClassification", fmt="zip", num_labels=3,
         args=dict(vocab_size=50, hidden_size=24, num_hidden_layers=2, num_attention_heads=2,
                   intermediate_size=48, max_position_embeddings=48, type_vocab_size=2, layer_norm_eps=1e-12,
                   attention_type="block_sparse", block_size=3, num_random_blocks=1, model_type="big_bird",
                   architectures=["BigBirdForSequenceClassification"], num_labels=3)),
    dict(name="bigbird_cls_relu_safetensors", layout="bigbird", cls="BigBirdForSequenceClassification",
         fmt="safetensors", num_labels=2,
         args=dict(vocab_size=40, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                   intermediate_size=32, max_position_embeddings=24, type_vocab_size=1, layer_norm_eps=1e-6,
                   attention_type="original_full", hidden_act="relu", model_type="big_bird")),
    # ---------------------------------------------------------------- reformer-pytorch (appended)
    # Lengths are multiples of 2 bucket_size (upstream asserts it); rotation_seed (not upstream's)
    # seeds the rotations fixed at conversion, chosen so that no row is near a bucket tie.
    dict(name="reformer_lm_rotary", layout="reformer", cls="ReformerLM", fmt="zip", lengths=[8, 16, 24, 32],
         args=dict(num_tokens=40, dim=32, depth=2, max_seq_len=32, heads=2, dim_head=16, bucket_size=4,
                   n_hashes=3, ff_mult=2, rotation_seed=1)),
    # safetensors keeps one name of each block tensor: here the irrev_blocks one
    dict(name="reformer_lm_lsh_causal_abs_safetensors", layout="reformer", cls="ReformerLM", fmt="safetensors",
         keep="irrev_blocks", lengths=[8, 16, 24, 32],
         args=dict(num_tokens=30, dim=24, depth=2, max_seq_len=32, heads=3, dim_head=8, bucket_size=4,
                   n_hashes=2, causal=True, absolute_position_emb=True, one_value_head=True, ff_mult=2,
                   rotation_seed=2)),
    dict(name="reformer_lm_tied_fixed_relu", layout="reformer", cls="ReformerLM", fmt="zip", lengths=[4, 8, 12, 16],
         args=dict(num_tokens=24, dim=16, depth=3, max_seq_len=16, heads=2, dim_head=8, bucket_size=2,
                   n_hashes=4, weight_tie=True, weight_tie_embedding=True, fixed_position_emb=True,
                   ff_activation="relu", rotation_seed=3)),
    # Reformer takes embeddings; max_seq_len (not upstream's) bounds the fixed rotations' width
    dict(name="reformer_bare", layout="reformer", cls="Reformer", fmt="zip", lengths=[8, 16, 24, 32],
         args=dict(dim=24, depth=2, heads=3, bucket_size=4, n_hashes=2, ff_mult=2, max_seq_len=32, rotation_seed=4)),
]


def lengths(n):
    return sorted({1, 7, n // 2 + 1, n})


# --------------------------------------------------------------------------------- models


def build(case):
    """Returns (model, config dict or None, max_len n, vocab size or None, output kind)."""
    if case["layout"] != "fairseq":
        return up.build(case)
    model = fq.LinformerModel(argparse.Namespace(**case["args"]), case["vocab"])
    out = "lm logits"
    if "cls_head" in case:
        model.register_classification_head(*case["cls_head"])
        out = "class logits"
    return model, None, model.args.max_positions, case["vocab"], out


SEQ_PROJ = (".proj_k", ".proj_v", ".compress_", ".E.", ".F.")  # lucidrains, fairseq, tatp22


def init_random(model, seed):
    """Deterministic non-trivial values for every (unique) parameter. Sequence projections (E/F
    in any layout): normal, std 0.3; other Linear weights: normal, std clamp(1/sqrt(fan_in), 0.1,
    0.3); embeddings N(0, 1) (positions 0.5), padding rows zero; LayerNorm weight 1 + 0.1 N; every
    bias 0.1 N (including the fairseq compress_layer bias, which the forward must ignore)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():  # shared parameters are listed once
            noise = torch.randn(p.shape, generator=g, dtype=torch.float64)
            parent, _, leaf = name.rpartition(".")
            owner = model.get_submodule(parent) if parent else model
            if isinstance(owner, nn.LayerNorm):
                val = 1.0 + 0.1 * noise if leaf == "weight" else 0.1 * noise
            elif isinstance(owner, nn.Embedding):
                val = noise * (0.5 if "pos" in parent else 1.0)
                if owner.padding_idx is not None:
                    val[owner.padding_idx] = 0.0
            elif leaf == "bias":
                val = 0.1 * noise
            elif any(tag in name for tag in SEQ_PROJ):  # sequence projections E/F
                val = 0.3 * noise
            else:  # Linear weights (out, in)
                fan_in = p.shape[1]
                val = min(max(1.0 / math.sqrt(fan_in), 0.1), 0.3) * noise
            p.copy_(val.to(p.dtype))


def reference(model, case, config, inp):
    """Float64 forward of a copy of model; returns a float32 numpy array without the batch axis."""
    m = copy.deepcopy(model).double().eval()
    if case["layout"] == "tatp22":  # exact inv_freq (the saved float32 buffer is rounded)
        C = case["args"]["channels"]
        m.pos_emb.inv_freq = 1.0 / (100000.0 ** (torch.arange(0, C, 2, dtype=torch.float64) / C))
    if case["layout"] == "fairseq":
        head = case["cls_head"][0] if "cls_head" in case else None
        with torch.no_grad():
            out = m(torch.as_tensor(inp)[None], classification_head_name=head)
    else:
        x = torch.from_numpy(inp).double() if inp.dtype == np.float32 else inp
        out = up.forward(m, case, config, x)
    out = out.numpy()
    return (out if out.ndim == 2 else out[0]).astype(np.float32)


# --------------------------------------------------------------------------------- files


def save_safetensors(sd, path):
    """8-byte LE header length, JSON header (dtype/shape/data_offsets), contiguous data. F32 (and
    I64 for integer buffers such as performer-pytorch's redraw counter)."""
    assert all(t.dtype in (torch.float32, torch.int64) for t in sd.values())
    safetensors_file.write_safetensors(path, {name: t.contiguous().numpy() for name, t in sd.items()}, {"format": "pt"})


class _LegacyKeys:
    """A pickle_module for torch.save(_use_new_zipfile_serialization=False) that makes its output
    reproducible. torch names each storage str(storage._cdata), a heap address, and writes the
    data records in the string order of those names. Here the persistent ids get address-like
    names fixed by first appearance (through a fixed permutation, so that the record order still
    differs from the pickle order as in real files), and the key list and records are rewritten
    in the order of the new names. Everything else is torch's own output."""

    __name__ = "pickle"  # torch.save checks pickle_module.__name__

    def __init__(self, n_storages):
        perm = np.random.RandomState(7).permutation(n_storages)
        self.names = [str(94000000000000 + 4096 * int(i)) for i in perm]
        self.rename, self.elsize, self.span = {}, {}, None

    def Pickler(self, f, protocol):
        module = self

        class P(pickle._Pickler):  # the pure-Python pickler calls self.persistent_id(obj)
            def __setattr__(self, name, value):
                if name == "persistent_id":
                    value = module._wrap(value)
                super().__setattr__(name, value)

        return P(f, protocol)

    def _wrap(self, fn):
        def persistent_id(obj):
            pid = fn(obj)
            if pid is None or pid[0] != "storage":
                return pid
            key = pid[2]
            if key not in self.rename:
                self.rename[key] = self.names[len(self.rename)]
                self.elsize[key] = torch._utils._element_size(pid[1].dtype)
            return pid[:2] + (self.rename[key],) + pid[3:]

        return persistent_id

    def dump(self, obj, f, protocol):
        start = f.tell()
        pickle.dump(obj, f, protocol=protocol)
        if isinstance(obj, list):  # the storage key list (original names, sorted)
            self.span = (start, f.tell(), list(obj))


def save_legacy(obj, path):
    """torch.save(obj, _use_new_zipfile_serialization=False), made reproducible (see _LegacyKeys)."""
    n = len({t.storage()._cdata for t in obj.values()})
    mod = _LegacyKeys(n)
    buf = io.BytesIO()
    torch.save(obj, buf, pickle_module=mod, _use_new_zipfile_serialization=False)
    raw = buf.getvalue()
    start, end, keys = mod.span
    records, pos = {}, end
    for key in keys:  # per storage: int64 element count, then the raw bytes
        (numel,) = struct.unpack("<q", raw[pos : pos + 8])
        size = 8 + numel * mod.elsize[key]
        records[mod.rename[key]] = raw[pos : pos + size]
        pos += size
    assert pos == len(raw) and len(records) == n
    order = sorted(records)
    with open(path, "wb") as f:
        f.write(raw[:start])
        f.write(pickle.dumps(order, protocol=2))
        for name in order:
            f.write(records[name])
    back = torch.load(path)
    assert list(back) == list(obj) and all(torch.equal(back[k], v) for k, v in obj.items())


def write_case(root, index, case):
    seed = 2000 + 31 * index
    torch.manual_seed(seed)
    model, config, n, vocab, out_kind = build(case)
    init_random(model, seed)
    model.eval()
    d = os.path.join(root, case["name"])
    os.makedirs(d)
    if case["layout"] == "fairseq":
        dtype = case.get("dtype", "float32")
        if dtype != "float32":
            model = model.to(getattr(torch, dtype))  # trainer: model.half() / .to(torch.bfloat16)
        ckpt = "checkpoint.pt"
        state = fq.checkpoint_dict(model, style=case["style"], fp16=dtype == "float16",
                                   bf16=dtype == "bfloat16", optimizer_state=case.get("optimizer_state", False))
        with open(os.path.join(d, ckpt), "wb") as f:  # fairseq saves through a file object
            torch.save(state, f)
        cfg_name = "-"
    else:
        sd = model.state_dict()
        if case.get("keep") == "proj_updater":  # drop the other name of each shared tensor
            sd = {k: v for k, v in sd.items() if not k.startswith("performer.net.")}
        if case.get("keep") == "irrev_blocks":
            sd = {k: v for k, v in sd.items() if not k.startswith("reformer.layers.blocks.")}
        if "drop" in case:  # tied names, as save_pretrained leaves them out
            sd = {k: v for k, v in sd.items() if k not in case["drop"]}
        fmt = case["fmt"]
        ckpt = "checkpoint.safetensors" if fmt == "safetensors" else "checkpoint.pt"
        path = os.path.join(d, ckpt)
        if fmt == "safetensors":
            save_safetensors(sd, path)
        elif fmt == "legacy":
            save_legacy(sd, path)
        else:
            torch.save(sd, path)
        cfg_name = "config.json"
        with open(os.path.join(d, cfg_name), "w") as f:
            json.dump(config, f, indent=2)
            f.write("\n")
    rng = np.random.RandomState(seed)
    emb_input = vocab is None
    for t in case.get("lengths", lengths(n)):
        if emb_input:
            inp = rng.standard_normal((t, case["args"]["dim"])).astype(np.float32)
            np.save(os.path.join(d, "emb_%d.npy" % t), inp)
        else:
            inp = rng.randint(0, vocab, size=t)
            if case["layout"] in ("fairseq", "longformer"):  # never the padding id 1
                inp = np.where(inp == fq.PAD, 0, inp)
            with open(os.path.join(d, "ids_%d.txt" % t), "w") as f:
                f.write(" ".join(str(int(i)) for i in inp) + "\n")
        np.save(os.path.join(d, "out_%d.npy" % t), reference(model, case, config, inp))
    return [case["name"], case["layout"], ckpt, cfg_name, "emb" if emb_input else "ids", out_kind]


def check_case(root, index, case):
    """Loads the case's checkpoint under root into the upstream package's model (fairseq: the
    re-creation) and recomputes every out_<T>.npy. Returns the largest scaled difference
    max |out - file| / max(1, max |file|) over the case's lengths."""
    torch.manual_seed(2000 + 31 * index)
    model, config, n, vocab, _ = build(case)
    d = os.path.join(root, case["name"])
    ckpt = [f for f in os.listdir(d) if f.startswith("checkpoint")][0]
    sd = load_checkpoint(os.path.join(d, ckpt))
    if case["layout"] == "fairseq":
        sd = {k: v for k, v in sd.items() if not k.endswith("version")}
        model = model.to(next(iter(sd.values())).dtype)
    missing, unexpected = model.load_state_dict(sd, strict=False)
    assert not unexpected, unexpected
    # a name the file leaves out must be an alias of a tensor it holds (tied or shared weights)
    held = {t.data_ptr() for k, t in model.state_dict().items() if k in sd}
    bad = [k for k in missing if model.state_dict()[k].data_ptr() not in held and not k.endswith("version")]
    assert not bad, "checkpoint lacks %s" % bad
    model.eval()
    worst = 0.0
    for t in case.get("lengths", lengths(n)):
        if vocab is None:
            inp = np.load(os.path.join(d, "emb_%d.npy" % t))
        else:
            inp = np.array([int(x) for x in open(os.path.join(d, "ids_%d.txt" % t)).read().split()])
        want = np.load(os.path.join(d, "out_%d.npy" % t))
        got = reference(model, case, config, inp)
        worst = max(worst, float(np.abs(got.astype(np.float64) - want).max()) / max(1.0, float(np.abs(want).max())))
    return worst


def main():
    up.check_versions()
    parser = argparse.ArgumentParser()
    parser.add_argument("out_dir", nargs="?", help="default: tests/golden_layouts")
    parser.add_argument("--check", metavar="DIR", help="recompute DIR's outputs from its checkpoints with the "
                        "upstream packages instead of writing (exit 1 beyond 1e-6)")
    args = parser.parse_args()
    if args.check:
        failed = 0
        for index, case in enumerate(CASES):
            worst = check_case(args.check, index, case)
            ok = worst <= 1e-6
            failed += not ok
            print("%-40s %s  %s, outputs within %.1e" % (case["name"], "ok" if ok else "FAIL",
                  "fairseq re-creation" if case["layout"] == "fairseq" else "upstream package", worst))
        sys.exit(1 if failed else 0)
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.abspath(args.out_dir or os.path.join(here, "..", "..", "..", "tests", "golden_layouts"))
    os.makedirs(root, exist_ok=True)
    for case in CASES:
        if os.path.isdir(os.path.join(root, case["name"])):
            shutil.rmtree(os.path.join(root, case["name"]))
    rows = [["case", "layout", "checkpoint", "config", "input", "output"]]
    for index, case in enumerate(CASES):
        rows.append(write_case(root, index, case))
        print("wrote", "\t".join(rows[-1]))
    with open(os.path.join(root, "cases.tsv"), "w") as f:
        f.write("".join("\t".join(r) + "\n" for r in rows))


if __name__ == "__main__":
    main()
