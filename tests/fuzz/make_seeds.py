# SPDX-License-Identifier: Apache-2.0
"""Writes the seed corpora of the fuzz targets under tests/fuzz/corpus/ (deterministic, small).

    build-upstream/venv/bin/python tests/fuzz/make_seeds.py [CONVERTER]    (default: build/bin/linfer-convert)

Needs the upstream packages (scripts/upstream-venv.sh: the upstream-layout models come from them,
through tools/python/reference/make_layout_golden.py). Tiny models (dim 8, n 8, one or two layers) cover every attention
kind, norm placement, position kind, projection placement and sharing, head and pooling:
  corpus/fuzz_lfm/          .lfm files from the converter (f32, and f16/int8 for some), plus three
                            golden checkpoints converted as they are (about 40-100 KB each)
  corpus/fuzz_safetensors/  linfer-layout safetensors files, and dtype/metadata variants
  corpus/fuzz_torch/        torch.save zip and legacy files of the same models, upstream layouts,
                            and the reader fixtures of tests/readers/
  corpus/fuzz_convert/      [u16 LE config length][config JSON][checkpoint] for every layout
Existing files in those folders are replaced.
"""

import io
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools", "python", "reference"))

import argparse  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

import linfer_ref as lr  # noqa: E402
import make_layout_golden as mlg  # noqa: E402
from upstream import fairseq_linformer as fq  # noqa: E402

BASE = dict(vocab_size=12, dim=8, num_layers=1, num_heads=2, head_dim=4, ff_dim=12, max_seq_len=8,
            proj_len=4)

# name -> changes to BASE (formats: every model is written as safetensors and torch zip).
LINFER_CASES = [
    ("lin_pre_headwise", dict(final_norm=True)),
    ("lin_post_none_before_sinus_lm", dict(norm_placement="post", projection_sharing="none",
                                           projection_placement="before", positions="sinusoidal",
                                           head="lm")),
    ("lin_rev_kv_offset_projbias", dict(norm_placement="reversible", projection_sharing="kv",
                                        position_offset=2, proj_bias=True)),
    ("lin_layerwise_nopos_cls", dict(num_layers=2, projection_sharing="layerwise",
                                     projection_placement="before", positions="none",
                                     head="classifier", num_classes=3, head_transform=True)),
    ("lin_kv1_scale_lm_transform", dict(kv_heads=1, positions="sinusoidal", embedding_scale=2.0,
                                        head="lm", head_transform=True, head_activation="relu")),
    ("lin_post_kv_cls_mean_nobias", dict(norm_placement="post", projection_sharing="kv",
                                         head="classifier", pooling="mean", num_classes=2,
                                         qkv_bias=False, ff_bias=False, activation="relu")),
    ("lin_embnorm_tanh", dict(embedding_norm=True, final_norm=True, activation="gelu_tanh",
                              norm_eps=1e-6)),
    ("full_pre_lm", dict(attention_kind="full", proj_len=0, head="lm")),
    ("full_kv1_rev_sinus", dict(attention_kind="full", proj_len=0, kv_heads=1,
                                norm_placement="reversible", positions="sinusoidal")),
    ("linear_bidir", dict(attention_kind="linear_elu", proj_len=0, final_norm=True)),
    ("linear_causal_lm", dict(attention_kind="linear_elu", proj_len=0, causal=True, head="lm")),
    ("givetake_p2_pre", dict(attention_kind="givetake", proj_len=0, num_global_tokens=2)),
    ("givetake_conv3_kv1_rev_cls", dict(attention_kind="givetake", proj_len=0, num_global_tokens=1,
                                        conv_kernel=3, kv_heads=1, norm_placement="reversible",
                                        head="classifier", pooling="mean", num_classes=2)),
    ("performer_bidir_cls", dict(attention_kind="performer", proj_len=0, num_features=12,
                                 head="classifier", num_classes=2)),
    ("performer_relu_causal_lm", dict(attention_kind="performer", proj_len=0, num_features=9,
                                      feature_map="relu", causal=True, kv_heads=1, head="lm")),
    ("performer_rotary_sequence_lm", dict(attention_kind="performer", proj_len=0, num_features=10,
                                          causal=True, rotary="adjacent_pairs", key_stabiliser="sequence",
                                          head="lm")),
    ("full_rotary_cls", dict(attention_kind="full", proj_len=0, rotary="adjacent_pairs", head="classifier",
                             num_classes=2)),
    ("window_global_proj_cls", dict(attention_kind="sliding_window", proj_len=0, window_radius=2,
                                    global_positions=1, global_projections=True, head="classifier",
                                    num_classes=2)),
    ("window_kv1_post_lm", dict(attention_kind="sliding_window", proj_len=0, window_radius=1, kv_heads=1,
                                norm_placement="post", head="lm")),
    ("bigbird_random_lm", dict(attention_kind="block_sparse", proj_len=0, block_size=1, global_blocks=1,
                               num_random_blocks=1, head="lm")),
    ("bigbird_zeros_kv1_cls", dict(attention_kind="block_sparse", proj_len=0, block_size=1, global_blocks=0,
                                   num_random_blocks=2, random_pattern="zeros", kv_heads=1,
                                   head="classifier", num_classes=2)),
    ("lsh_rotary_lm", dict(attention_kind="lsh", proj_len=0, bucket_size=2, num_hashes=2, positions="none",
                           rotary="adjacent_pairs", head="lm")),
    ("lsh_causal_kv1_cls", dict(attention_kind="lsh", proj_len=0, bucket_size=1, num_hashes=3, causal=True,
                                kv_heads=1, norm_placement="reversible", head="classifier", num_classes=2)),
]
QUANTIZED = {"lin_pre_headwise", "lin_post_none_before_sinus_lm", "lin_layerwise_nopos_cls",
             "full_pre_lm", "givetake_conv3_kv1_rev_cls", "linear_causal_lm",
             "performer_bidir_cls", "performer_rotary_sequence_lm", "window_global_proj_cls",
             "bigbird_random_lm", "lsh_rotary_lm"}
LEGACY = {"lin_pre_headwise", "lin_layerwise_nopos_cls", "givetake_p2_pre"}

UPSTREAM_CASES = [
    dict(name="lucidrains_lm", layout="lucidrains", cls="LinformerLM", fmt="zip",
         args=dict(num_tokens=12, dim=8, seq_len=8, depth=1, k=4, heads=2)),
    dict(name="lucidrains_share_kv_legacy", layout="lucidrains", cls="LinformerLM", fmt="legacy",
         args=dict(num_tokens=12, dim=8, seq_len=8, depth=1, k=4, heads=2, share_kv=True,
                   one_kv_head=True)),
    dict(name="lucidrains_linformer_rev", layout="lucidrains", cls="Linformer", fmt="zip",
         args=dict(dim=8, seq_len=8, depth=1, k=4, heads=2, reversible=True)),
    dict(name="tatp22_headwise", layout="tatp22", fmt="zip",
         args=dict(num_tokens=12, input_size=8, channels=8, dim_k=4, dim_ff=12, nhead=2, depth=1,
                   activation="relu", parameter_sharing="headwise")),
    dict(name="tatp22_layerwise", layout="tatp22", fmt="zip",
         args=dict(num_tokens=12, input_size=8, channels=8, dim_k=4, dim_ff=12, nhead=2, depth=2,
                   activation="gelu", parameter_sharing="layerwise")),
    dict(name="fairseq_args", layout="fairseq", vocab=12, style="args",
         args=dict(encoder_layers=1, encoder_embed_dim=8, encoder_ffn_embed_dim=12,
                   encoder_attention_heads=2, max_positions=8, compressed=2)),
    dict(name="fairseq_cfg_layerwise_cls", layout="fairseq", vocab=12, style="cfg_ns",
         cls_head=("sentence_classification_head", 2),
         args=dict(encoder_layers=2, encoder_embed_dim=8, encoder_ffn_embed_dim=12,
                   encoder_attention_heads=2, max_positions=8, compressed=2,
                   shared_layer_kv_compressed=1, shared_kv_compressed=1)),
    dict(name="performer_lm_rotary_causal", layout="performer", cls="PerformerLM", fmt="zip",
         args=dict(num_tokens=12, max_seq_len=8, dim=8, depth=1, heads=2, dim_head=4, causal=True,
                   nb_features=6)),
    dict(name="performer_bare_reversible_relu", layout="performer", cls="Performer", fmt="legacy", n=8,
         args=dict(dim=8, depth=2, heads=2, dim_head=4, nb_features=5, reversible=True,
                   generalized_attention=True)),
    dict(name="longformer_cls_global", layout="longformer", cls="LongformerForSequenceClassification", fmt="zip",
         num_labels=2, global_positions=1,
         args=dict(vocab_size=12, hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=12,
                   max_position_embeddings=10, type_vocab_size=1, layer_norm_eps=1e-5, attention_window=4)),
    dict(name="bigbird_mlm_sparse", layout="bigbird", cls="BigBirdForMaskedLM", fmt="zip", position_ids=True,
         args=dict(vocab_size=12, hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=12,
                   max_position_embeddings=10, type_vocab_size=2, block_size=1, num_random_blocks=1)),
    dict(name="bigbird_cls_sparse", layout="bigbird", cls="BigBirdForSequenceClassification", fmt="zip",
         num_labels=3,
         args=dict(vocab_size=12, hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=12,
                   max_position_embeddings=10, type_vocab_size=2, block_size=1, num_random_blocks=1)),
    dict(name="reformer_lm_rotary_tied", layout="reformer", cls="ReformerLM", fmt="zip",
         args=dict(num_tokens=12, dim=8, depth=1, max_seq_len=8, heads=2, dim_head=4, bucket_size=2, n_hashes=2,
                   weight_tie_embedding=True)),
]

# Converted as they are (the brief's "real" models): checkpoint, --dtype.
GOLDEN_LFM = [
    ("tests/golden/c01_pre_headwise_after/checkpoint.safetensors", "f32"),
    ("tests/golden/c01_pre_headwise_after/checkpoint.safetensors", "int8"),
    ("tests/golden_kinds/k05_linear_causal_lm/checkpoint.safetensors", "f16"),
]


def reset(path):
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def convert_seed(config_json, checkpoint):
    c = config_json.encode("utf-8") if config_json else b""
    return struct.pack("<H", len(c)) + c + checkpoint


def torch_bytes(obj, name):
    """torch.save to a file named `name` (the archive folder is the file stem)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, name)
        torch.save(obj, path)
        with open(path, "rb") as f:
            return f.read()


def legacy_bytes(sd):
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "legacy.pt")
        mlg.save_legacy(sd, path)
        with open(path, "rb") as f:
            return f.read()


def convert(converter, src, dst, dtype, config_path=None, layout=None):
    cmd = [converter, src, "-o", dst, "--dtype", dtype]
    if config_path:
        cmd += ["--config", config_path]
    if layout:
        cmd += ["--layout", layout]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def safetensors_variants():
    """Hand-made safetensors files: every dtype the reader knows, metadata, a 0-d and an empty
    tensor."""
    out = {}
    arrays = [("f32", "F32", np.arange(6, dtype="<f4").reshape(2, 3)),
              ("f16", "F16", np.arange(4, dtype="<f2")),
              ("bf16", "BF16", (np.arange(4, dtype="<f4").view("<u4") >> 16).astype("<u2")),
              ("f64", "F64", np.array([1.5, -2.0], dtype="<f8")),
              ("i64", "I64", np.array([1, 2], dtype="<i8")),
              ("u8", "U8", np.array([1, 2, 3], dtype="u1")),
              ("bool", "BOOL", np.array([1, 0], dtype="u1")),
              ("scalar", "F32", np.array(3.0, dtype="<f4")),
              ("empty", "F32", np.zeros((0, 4), dtype="<f4"))]
    header, blobs, offset = {}, [], 0
    for name, dt, a in arrays:
        b = a.tobytes()
        header[name] = {"dtype": dt, "shape": list(a.shape), "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    header["__metadata__"] = {"format": "pt", "note": "fuzz seed \u00e9"}
    h = json.dumps(header).encode("utf-8")
    out["dtypes.safetensors"] = struct.pack("<Q", len(h)) + h + b"".join(blobs)
    h = b"{}"
    out["empty_header.safetensors"] = struct.pack("<Q", len(h)) + h
    return out


def main():
    converter = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "bin", "linfer-convert"))
    corpus = os.path.join(HERE, "corpus")
    dirs = {t: os.path.join(corpus, t) for t in ("fuzz_lfm", "fuzz_safetensors", "fuzz_torch", "fuzz_convert")}
    for d in dirs.values():
        reset(d)
    with tempfile.TemporaryDirectory() as tmp:
        for index, (name, changes) in enumerate(LINFER_CASES):
            config = dict(BASE, **changes)
            torch.manual_seed(3000 + index)
            model = lr.LinferEncoder(config)
            lr.init_random(model, seed=3000 + index)
            st = os.path.join(tmp, name + ".safetensors")
            lr.save_safetensors(model, config, st)
            with open(st, "rb") as f:
                st_bytes = f.read()
            write(os.path.join(dirs["fuzz_safetensors"], name + ".safetensors"), st_bytes)
            write(os.path.join(dirs["fuzz_convert"], name + ".safetensors.seed"), convert_seed("", st_bytes))
            cfg_json = lr._config_json(config)
            zip_bytes = torch_bytes({"linfer_config": cfg_json, "state_dict": model.state_dict()}, name + ".pt")
            write(os.path.join(dirs["fuzz_torch"], name + ".pt"), zip_bytes)
            if name in LEGACY:
                sd = lr._f32_state_dict(model)
                leg = legacy_bytes(sd)
                write(os.path.join(dirs["fuzz_torch"], name + "_legacy.pt"), leg)
                write(os.path.join(dirs["fuzz_convert"], name + "_legacy_bare.seed"), convert_seed(cfg_json, leg))
            for dtype in ("f32", "f16", "int8") if name in QUANTIZED else ("f32",):
                convert(converter, st, os.path.join(dirs["fuzz_lfm"], "%s_%s.lfm" % (name, dtype)), dtype)

        for index, case in enumerate(UPSTREAM_CASES):
            seed = 4000 + 31 * index
            torch.manual_seed(seed)
            model, config, _, _, _ = mlg.build(case)
            mlg.init_random(model, seed)
            name = case["name"]
            if case["layout"] == "fairseq":
                if "cls_head" in case:
                    model.register_classification_head(*case["cls_head"])
                    mlg.init_random(model, seed)
                state = fq.checkpoint_dict(model, style=case["style"])
                buf = io.BytesIO()
                torch.save(state, buf)  # fairseq saves through a file object ("archive/" folder)
                ck = buf.getvalue()
                cfg_json = ""
            else:
                sd = model.state_dict()
                ck = legacy_bytes(sd) if case["fmt"] == "legacy" else torch_bytes(sd, name + ".pt")
                cfg_json = json.dumps(config)
            write(os.path.join(dirs["fuzz_torch"], name + ".pt"), ck)
            write(os.path.join(dirs["fuzz_convert"], name + ".seed"), convert_seed(cfg_json, ck))
            src = os.path.join(tmp, name + ".pt")
            write(src, ck)
            cfg_path = None
            if cfg_json:
                cfg_path = os.path.join(tmp, name + ".json")
                with open(cfg_path, "w") as f:
                    f.write(cfg_json)
            convert(converter, src, os.path.join(dirs["fuzz_lfm"], name + "_f32.lfm"), "f32", cfg_path,
                    case["layout"])

    for rel, dtype in GOLDEN_LFM:
        case = os.path.basename(os.path.dirname(rel))
        convert(converter, os.path.join(ROOT, rel), os.path.join(dirs["fuzz_lfm"], "golden_%s_%s.lfm" % (case, dtype)),
                dtype)
    for name, data in safetensors_variants().items():
        write(os.path.join(dirs["fuzz_safetensors"], name), data)
    readers = os.path.join(ROOT, "tests", "readers")
    for name in sorted(os.listdir(readers)):
        if name.endswith(".pt"):
            shutil.copy(os.path.join(readers, name), os.path.join(dirs["fuzz_torch"], "readers_" + name))

    total = 0
    for d in dirs.values():
        size = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d))
        total += size
        print("%-40s %3d files %8d bytes" % (os.path.relpath(d, ROOT), len(os.listdir(d)), size))
    print("total %d bytes" % total)


if __name__ == "__main__":
    main()
