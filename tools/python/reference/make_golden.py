# SPDX-License-Identifier: Apache-2.0
"""Writes the golden parity fixtures under tests/golden/ (deterministic, a few seconds).

    /usr/bin/python3 tools/python/reference/make_golden.py [OUT_DIR]      (default: tests/golden)

For each case: tests/golden/<case>/checkpoint.{safetensors,pt}, config.json and, for each T in
{1, 7, n/2+1, n}, ids_<T>.txt (token ids) and out_<T>.npy (float32 [T, C] or [1, num_classes],
computed in float64). tests/golden/cases.txt lists "<case>\t<checkpoint file>" per line.
"""

import json
import os
import shutil
import sys

sys.dont_write_bytecode = True  # keep the source tree clean

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import linfer_ref as lr  # noqa: E402

# format: "safetensors", "torch" (dict with linfer_config) or "bare" (state_dict only, --config).
# "explicit": write every key (defaults resolved) instead of only the keys given.
CASES = [
    dict(
        name="c01_pre_headwise_after",
        format="safetensors",
        config=dict(vocab_size=64, dim=32, num_layers=2, num_heads=4, head_dim=8, ff_dim=64,
                    max_seq_len=32, proj_len=8),
    ),
    dict(
        name="c02_post_none_before_sinus_lm",
        format="torch",
        explicit=True,
        config=dict(vocab_size=80, dim=24, num_layers=2, num_heads=3, head_dim=8, ff_dim=48,
                    max_seq_len=32, proj_len=12, norm_placement="post", projection_sharing="none",
                    projection_placement="before", positions="sinusoidal", embedding_norm=True,
                    activation="relu", head="lm", proj_bias=True),
    ),
    dict(
        name="c03_rev_kv_offset_projbias",
        format="safetensors",
        config=dict(vocab_size=120, dim=32, num_layers=2, num_heads=2, head_dim=16, ff_dim=96,
                    max_seq_len=48, proj_len=16, norm_placement="reversible",
                    projection_sharing="kv", position_offset=2, final_norm=True,
                    activation="gelu_tanh", proj_bias=True),
    ),
    dict(
        name="c04_layerwise_before_nopos_cls_first",
        format="torch",
        config=dict(vocab_size=50, dim=16, num_layers=2, num_heads=2, head_dim=8, ff_dim=32,
                    max_seq_len=32, proj_len=8, projection_sharing="layerwise",
                    projection_placement="before", positions="none", final_norm=True,
                    head="classifier", pooling="first", num_classes=5, head_transform=True),
    ),
    dict(
        name="c05_kv1_sinus_scale_lm_transform",
        format="safetensors",
        config=dict(vocab_size=260, dim=24, num_layers=1, num_heads=2, head_dim=16, kv_heads=1,
                    ff_dim=64, max_seq_len=32, proj_len=10, positions="sinusoidal",
                    sinusoidal_base=100.0, embedding_scale=2.5, final_norm=True, head="lm",
                    head_transform=True, head_activation="gelu_tanh"),
    ),
    dict(
        name="c06_post_kv_before_cls_mean_nobias",
        format="torch",
        config=dict(vocab_size=90, dim=32, num_layers=2, num_heads=4, head_dim=8, ff_dim=64,
                    max_seq_len=48, proj_len=12, norm_placement="post", projection_sharing="kv",
                    projection_placement="before", embedding_norm=True, activation="relu",
                    head="classifier", pooling="mean", num_classes=3, qkv_bias=False),
    ),
    dict(
        name="c07_bare_state_dict_none",
        format="bare",
        config=dict(vocab_size=70, dim=20, num_layers=2, num_heads=2, head_dim=12, ff_dim=40,
                    max_seq_len=32, proj_len=8, projection_sharing="none", position_offset=1),
    ),
    dict(
        name="c08_rev_layerwise_projbias_lm_eps",
        format="safetensors",
        config=dict(vocab_size=100, dim=32, num_layers=2, num_heads=4, head_dim=8, ff_dim=64,
                    max_seq_len=32, proj_len=8, norm_placement="reversible",
                    projection_sharing="layerwise", positions="sinusoidal", embedding_norm=True,
                    activation="gelu_tanh", head="lm", proj_bias=True, norm_eps=0.1),
    ),
    dict(
        name="c09_post_headwise_before_kv1_lm_transform",
        format="torch",
        config=dict(vocab_size=60, dim=48, num_layers=1, num_heads=4, head_dim=12, kv_heads=1,
                    ff_dim=96, max_seq_len=48, proj_len=16, norm_placement="post",
                    projection_placement="before", proj_bias=True, head="lm",
                    head_transform=True, head_activation="relu"),
    ),
    dict(
        name="c10_rev_none_before_nopos_cls_mean",
        format="safetensors",
        config=dict(vocab_size=55, dim=16, num_layers=2, num_heads=3, head_dim=8, ff_dim=48,
                    max_seq_len=32, proj_len=8, norm_placement="reversible",
                    projection_sharing="none", projection_placement="before", positions="none",
                    embedding_scale=0.5, final_norm=True, qkv_bias=False, head="classifier",
                    pooling="mean", num_classes=2, head_transform=True),
    ),
]

CHECKPOINT_NAME = {"safetensors": "checkpoint.safetensors", "torch": "checkpoint.pt", "bare": "checkpoint.pt"}


def lengths(n):
    return sorted({1, 7, n // 2 + 1, n})


def write_case(root, index, case):
    name = case["name"]
    config = case["config"]
    if case.get("explicit"):
        config = dict(lr.resolve_config(config))
    out_dir = os.path.join(root, name)
    os.makedirs(out_dir, exist_ok=True)  # tests/golden_kinds' case folders hold their case.json
    seed = 1000 + 17 * index
    torch.manual_seed(seed)
    model = lr.LinferEncoder(config)
    lr.init_random(model, seed=seed)
    ckpt = CHECKPOINT_NAME[case["format"]]
    path = os.path.join(out_dir, ckpt)
    if case["format"] == "safetensors":
        lr.save_safetensors(model, config, path)
    elif case["format"] == "torch":
        lr.save_torch(model, config, path)
    else:
        lr.save_state_dict(model, path)
    with open(os.path.join(out_dir, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    cfg = model.cfg
    rng = np.random.RandomState(seed)
    ts = lengths(cfg["max_seq_len"])
    ids_list = [rng.randint(0, cfg["vocab_size"], size=t) for t in ts]
    outs = lr.reference_outputs(model, ids_list)
    for t, ids, out in zip(ts, ids_list, outs):
        with open(os.path.join(out_dir, "ids_%d.txt" % t), "w") as f:
            f.write(" ".join(str(int(i)) for i in ids) + "\n")
        np.save(os.path.join(out_dir, "out_%d.npy" % t), out)
    return ckpt


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "..", "..", "tests", "golden")
    root = os.path.abspath(root)
    os.makedirs(root, exist_ok=True)
    for case in CASES:
        d = os.path.join(root, case["name"])
        if os.path.isdir(d):
            shutil.rmtree(d)
    lines = []
    for index, case in enumerate(CASES):
        ckpt = write_case(root, index, case)
        lines.append("%s\t%s" % (case["name"], ckpt))
        print("wrote", case["name"], ckpt)
    with open(os.path.join(root, "cases.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
