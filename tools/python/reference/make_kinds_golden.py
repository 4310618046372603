# SPDX-License-Identifier: Apache-2.0
"""Writes the golden fixtures of the non-linformer attention kinds (full, linear_elu, givetake,
performer, sliding_window, block_sparse, lsh) under tests/golden_kinds/
(deterministic, about two seconds).

    /usr/bin/python3 tools/python/reference/make_kinds_golden.py [OUT_DIR]      (default: tests/golden_kinds)

Same format as tests/golden (tools/python/reference/make_golden.py, whose write_case it uses): for each case
<case>/checkpoint.{safetensors,pt}, config.json and, for each T in {1, 7, n/2+1, n}, ids_<T>.txt
and out_<T>.npy (float32, computed in float64). cases.txt lists "<case>\t<checkpoint file>".
The kinds' semantics are in docs/converter.md ("Semantics"); tools/python/reference/check_kinds.py checks
every case against an independent numpy forward.
"""

import os
import shutil
import sys

sys.dont_write_bytecode = True  # keep the source tree clean

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_golden  # noqa: E402

# format: "safetensors" or "torch" ({"linfer_config": json, "state_dict": sd}); "explicit": write
# every key (defaults resolved, proj_len 0 included) instead of only the keys given.
CASES = [
    dict(
        name="k01_full_pre_lm",
        format="safetensors",
        config=dict(vocab_size=64, dim=32, num_layers=2, num_heads=4, head_dim=8, ff_dim=64,
                    max_seq_len=32, attention_kind="full", head="lm"),
    ),
    dict(
        name="k02_full_post_cls_mean",
        format="torch",
        config=dict(vocab_size=50, dim=24, num_layers=2, num_heads=3, head_dim=8, ff_dim=48,
                    max_seq_len=40, attention_kind="full", norm_placement="post",
                    embedding_norm=True, activation="relu", head="classifier", pooling="mean",
                    num_classes=3, head_transform=True),
    ),
    dict(
        name="k03_full_kv1_rev_sinus",
        format="safetensors",
        config=dict(vocab_size=70, dim=24, num_layers=2, num_heads=2, head_dim=16, kv_heads=1,
                    ff_dim=64, max_seq_len=48, attention_kind="full", norm_placement="reversible",
                    positions="sinusoidal", final_norm=True, activation="gelu_tanh"),
    ),
    dict(
        name="k04_linear_bidir_explicit",
        format="torch",
        explicit=True,
        config=dict(vocab_size=60, dim=32, num_layers=2, num_heads=4, head_dim=8, ff_dim=64,
                    max_seq_len=32, attention_kind="linear_elu", final_norm=True),
    ),
    dict(
        name="k05_linear_causal_lm",
        format="safetensors",
        config=dict(vocab_size=80, dim=32, num_layers=2, num_heads=2, head_dim=16, ff_dim=64,
                    max_seq_len=48, attention_kind="linear_elu", causal=True, head="lm",
                    head_transform=True),
    ),
    dict(
        name="k06_linear_post_sinus_kv1",
        format="torch",
        config=dict(vocab_size=55, dim=24, num_layers=1, num_heads=3, head_dim=8, kv_heads=1,
                    ff_dim=48, max_seq_len=32, attention_kind="linear_elu",
                    norm_placement="post", positions="sinusoidal", sinusoidal_base=100.0,
                    qkv_bias=False),
    ),
    dict(
        name="k07_givetake_p4_pre",
        format="safetensors",
        config=dict(vocab_size=64, dim=32, num_layers=2, num_heads=4, head_dim=8, ff_dim=64,
                    max_seq_len=32, attention_kind="givetake", num_global_tokens=4),
    ),
    dict(
        name="k08_givetake_p3_post_cls_mean",
        format="torch",
        config=dict(vocab_size=50, dim=24, num_layers=2, num_heads=2, head_dim=12, ff_dim=48,
                    max_seq_len=40, attention_kind="givetake", num_global_tokens=3,
                    norm_placement="post", embedding_norm=True, head="classifier",
                    pooling="mean", num_classes=4),
    ),
    dict(
        name="k09_givetake_conv3_lm",
        format="safetensors",
        config=dict(vocab_size=72, dim=32, num_layers=2, num_heads=4, head_dim=8, ff_dim=64,
                    max_seq_len=32, attention_kind="givetake", num_global_tokens=4,
                    conv_kernel=3, final_norm=True, head="lm"),
    ),
    dict(
        name="k10_givetake_conv5_kv1_rev",
        format="torch",
        explicit=True,
        config=dict(vocab_size=60, dim=24, num_layers=2, num_heads=3, head_dim=8, kv_heads=1,
                    ff_dim=48, max_seq_len=48, attention_kind="givetake", num_global_tokens=2,
                    conv_kernel=5, norm_placement="reversible", positions="sinusoidal",
                    final_norm=True, activation="relu"),
    ),
    dict(
        name="k11_performer_pre_cls",
        format="safetensors",
        config=dict(vocab_size=64, dim=32, num_layers=2, num_heads=4, head_dim=8, ff_dim=64,
                    max_seq_len=40, attention_kind="performer", num_features=37, head="classifier",
                    num_classes=3, final_norm=True),
    ),
    dict(
        name="k12_performer_causal_lm",
        format="torch",
        config=dict(vocab_size=80, dim=32, num_layers=2, num_heads=2, head_dim=16, ff_dim=64,
                    max_seq_len=48, attention_kind="performer", num_features=44, causal=True,
                    head="lm", positions="sinusoidal"),
    ),
    dict(
        name="k13_performer_relu_post_kv1",
        format="safetensors",
        explicit=True,
        config=dict(vocab_size=55, dim=24, num_layers=2, num_heads=3, head_dim=8, kv_heads=1,
                    ff_dim=48, max_seq_len=32, attention_kind="performer", num_features=16,
                    feature_map="relu", norm_placement="post", qkv_bias=False),
    ),
    dict(
        name="k14_performer_relu_causal_rev",
        format="safetensors",
        config=dict(vocab_size=60, dim=24, num_layers=2, num_heads=3, head_dim=8, ff_dim=48,
                    max_seq_len=32, attention_kind="performer", num_features=20, feature_map="relu",
                    causal=True, norm_placement="reversible", head="lm"),
    ),
    # rotary positions (performer-pytorch's PerformerLM default) on top of learned positions
    dict(
        name="k15_performer_rotary_causal_lm",
        format="torch",
        config=dict(vocab_size=50, dim=32, num_layers=2, num_heads=2, head_dim=16, ff_dim=64,
                    max_seq_len=48, attention_kind="performer", num_features=24, causal=True,
                    rotary="adjacent_pairs", final_norm=True, head="lm", qkv_bias=False),
    ),
    dict(
        name="k16_full_rotary_kv1_cls",
        format="safetensors",
        config=dict(vocab_size=40, dim=24, num_layers=2, num_heads=3, head_dim=8, kv_heads=1,
                    ff_dim=48, max_seq_len=40, attention_kind="full", rotary="adjacent_pairs",
                    positions="none", head="classifier", num_classes=3, pooling="mean"),
    ),
    # sliding window (Longformer): global rows with their own projections, as HF's classifier
    # models use them (the first token global), post-norm like RoBERTa
    dict(
        name="k17_window_global_post_cls",
        format="torch",
        config=dict(vocab_size=64, dim=32, num_layers=2, num_heads=4, head_dim=8, ff_dim=64,
                    max_seq_len=48, attention_kind="sliding_window", window_radius=4,
                    global_positions=2, global_projections=True, norm_placement="post",
                    embedding_norm=True, head="classifier", num_classes=3, head_transform=True),
    ),
    dict(
        name="k18_window_kv1_lm",
        format="safetensors",
        config=dict(vocab_size=60, dim=24, num_layers=2, num_heads=3, head_dim=8, kv_heads=1,
                    ff_dim=48, max_seq_len=40, attention_kind="sliding_window", window_radius=2,
                    final_norm=True, head="lm"),
    ),
    dict(
        name="k19_window_shared_global_rev",
        format="safetensors",
        explicit=True,
        config=dict(vocab_size=50, dim=24, num_layers=2, num_heads=2, head_dim=12, ff_dim=48,
                    max_seq_len=32, attention_kind="sliding_window", window_radius=5,
                    global_positions=3, norm_placement="reversible", positions="sinusoidal",
                    qkv_bias=False),
    ),
    # block sparse (BigBird). n/2 + 1 and n are sparse inputs in each (more than 2g + 3 + 2R
    # blocks), with a partial last block at n/2 + 1; 1 and 7 take the full-attention switch.
    dict(
        name="k20_bigbird_random_lm",
        format="safetensors",
        config=dict(vocab_size=64, dim=32, num_layers=2, num_heads=4, head_dim=8, ff_dim=64,
                    max_seq_len=64, attention_kind="block_sparse", block_size=4, global_blocks=1,
                    num_random_blocks=1, random_seed=3, head="lm", final_norm=True),
    ),
    # Hugging Face's eval-mode pattern: every random block is block 0 (listed again each time);
    # global_blocks left at its default (1)
    dict(
        name="k21_bigbird_zeros_post_cls",
        format="torch",
        config=dict(vocab_size=50, dim=24, num_layers=2, num_heads=3, head_dim=8, ff_dim=48,
                    max_seq_len=60, attention_kind="block_sparse", block_size=3,
                    num_random_blocks=2, random_pattern="zeros", norm_placement="post",
                    embedding_norm=True, activation="gelu_tanh", head="classifier", num_classes=3,
                    head_transform=True),
    ),
    dict(
        name="k22_bigbird_g2_kv1_rev",
        format="safetensors",
        explicit=True,
        config=dict(vocab_size=40, dim=24, num_layers=2, num_heads=2, head_dim=12, kv_heads=1,
                    ff_dim=48, max_seq_len=48, attention_kind="block_sparse", block_size=2,
                    global_blocks=2, norm_placement="reversible", positions="sinusoidal",
                    qkv_bias=False),
    ),
    # lsh: rotation seeds chosen so that no bucket is decided by a near-tie (check_kinds' hash
    # margin >= 1e-4), which float32 could resolve the other way.
    dict(  # reformer-pytorch's ReformerLM defaults: rotary positions per layer, pre-norm, 4 rounds
        name="k23_lsh_rotary_lm",
        format="safetensors",
        config=dict(vocab_size=64, dim=32, num_layers=2, num_heads=2, head_dim=16, ff_dim=64,
                    max_seq_len=32, attention_kind="lsh", bucket_size=4, num_hashes=4,
                    positions="none", rotary="adjacent_pairs", final_norm=True, head="lm",
                    rotation_seed=3),
    ),
    dict(
        name="k24_lsh_causal_kv1_rev",
        format="torch",
        config=dict(vocab_size=48, dim=24, num_layers=2, num_heads=3, head_dim=8, kv_heads=1,
                    ff_dim=48, max_seq_len=40, attention_kind="lsh", bucket_size=3, num_hashes=2,
                    causal=True, norm_placement="reversible", final_norm=True, rotation_seed=3),
    ),
    dict(
        name="k25_lsh_one_round_post_cls",
        format="safetensors",
        explicit=True,
        config=dict(vocab_size=40, dim=24, num_layers=2, num_heads=2, head_dim=12, ff_dim=48,
                    max_seq_len=48, attention_kind="lsh", bucket_size=8, num_hashes=1,
                    norm_placement="post", head="classifier", num_classes=3, pooling="mean",
                    rotation_seed=11),
    ),
]

SEED_INDEX = 100  # seeds 1000 + 17 * (SEED_INDEX + i): distinct from tests/golden's


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "..", "..", "tests", "golden_kinds")
    root = os.path.abspath(root)
    os.makedirs(root, exist_ok=True)
    for case in CASES:
        d = os.path.join(root, case["name"])
        if os.path.isdir(d):
            shutil.rmtree(d)
    lines = []
    for index, case in enumerate(CASES):
        ckpt = make_golden.write_case(root, SEED_INDEX + index, case)
        lines.append("%s\t%s" % (case["name"], ckpt))
        print("wrote", case["name"], ckpt)
    with open(os.path.join(root, "cases.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
