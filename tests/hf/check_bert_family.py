# SPDX-License-Identifier: Apache-2.0
"""Converts each Hugging Face model of tests/hf/bert_family (made by transformers:
tools/python/reference/make_bert_family_golden.py) with linfer-convert (layout from config.json's model_type),
runs it with linfer-run on each ids_<T>.txt and compares with transformers' out_<T>.npy: the
largest difference at most 1e-4 of the output's largest magnitude (f32).

    /usr/bin/python3 tests/hf/check_bert_family.py BIN_DIR WORK_DIR
"""
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    bindir, work = sys.argv[1], sys.argv[2]
    root = os.path.join(HERE, "bert_family")
    failures, checked = [], 0
    for case in sorted(os.listdir(root)):
        d = os.path.join(root, case)
        lfm = os.path.join(work, case + ".lfm")
        conv = subprocess.run([os.path.join(bindir, "linfer-convert"), os.path.join(d, "model.safetensors"), "--config",
                               os.path.join(d, "config.json"), "-o", lfm], capture_output=True, text=True)
        if conv.returncode != 0:
            failures.append(f"{case}: linfer-convert: {conv.stderr.strip()}")
            continue
        worst = 0.0
        for f in sorted(os.listdir(d)):
            if not f.startswith("ids_"):
                continue
            T = f[4:-4]
            out = os.path.join(work, f"{case}_{T}.npy")
            subprocess.run([os.path.join(bindir, "linfer-run"), lfm, "--ids", os.path.join(d, f), "--dump", out],
                           check=True, stdout=subprocess.DEVNULL)
            got, want = np.load(out), np.load(os.path.join(d, f"out_{T}.npy"))
            if got.shape != want.shape:
                failures.append(f"{case} T={T}: shape {got.shape}, transformers' {want.shape}")
                continue
            rel = float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30))
            worst = max(worst, rel)
            checked += 1
            if rel > 1e-4:
                failures.append(f"{case} T={T}: largest difference {rel:.2e} of the output's scale (limit 1e-4)")
        layout = [l for l in conv.stdout.splitlines() if l.startswith("note:")][:1]
        print(f"{case}: worst {worst:.1e} of the output's scale; {layout[0][6:] if layout else ''}")
    for f in failures:
        print("FAIL " + f)
    print(f"{checked} outputs compared")
    return 1 if failures or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
