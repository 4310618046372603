# SPDX-License-Identifier: Apache-2.0
"""compare_goldens.py NEW_DIR OLD_DIR: compares a regenerated golden folder (tests/golden,
tests/golden_kinds or tests/golden_layouts) with the committed one, case by case:
- the case lists (cases.txt / cases.tsv), config.json, case.json (tests/golden_kinds' case
  specifications) and the inputs (ids_T.txt / emb_T.npy) must be identical;
- a checkpoint identical byte for byte is reported so; otherwise it must hold the same tensor
  names in the same order, with the same dtypes and shapes, and the values are reported (equal,
  or which differ);
- out_T.npy must agree within 1e-6 of the output's scale (max |old - new| / max(1, max |old|)).
Prints one line per case and exits 1 if any case fails (with the reason)."""

import os
import sys

sys.dont_write_bytecode = True

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import safetensors_file  # noqa: E402  (tools/python/reference)

TOL = 1e-6


def load_checkpoint(path):
    """name -> tensor, in the file's order (safetensors header order; a torch.save dict's order;
    fairseq's checkpoint: its "model" dict)."""
    if path.endswith(".safetensors"):
        arrays, _ = safetensors_file.read_safetensors(path)
        return {name: torch.from_numpy(a.copy()) for name, a in arrays.items()}
    obj = torch.load(path, map_location="cpu")
    for key in ("model", "state_dict"):  # fairseq's checkpoint; linfer's own torch layout
        if isinstance(obj.get(key), dict):
            return obj[key]
    return obj


def compare_case(new, old, name):
    problems, notes = [], []
    files_new, files_old = sorted(os.listdir(new)), sorted(os.listdir(old))
    if files_new != files_old:
        return ["files differ: %s" % sorted(set(files_new) ^ set(files_old))], notes
    for f in files_new:
        a, b = os.path.join(new, f), os.path.join(old, f)
        if f in ("config.json", "case.json") or f.startswith("ids_"):
            if open(a, "rb").read() != open(b, "rb").read():
                problems.append(f + " differs")
        elif f.startswith("emb_"):
            if not np.array_equal(np.load(a), np.load(b)):
                problems.append(f + " differs")
        elif f.startswith("out_"):
            x, y = np.load(a), np.load(b)
            if x.shape != y.shape:
                problems.append("%s shape %s, committed %s" % (f, x.shape, y.shape))
                continue
            err = float(np.abs(x.astype(np.float64) - y).max()) / max(1.0, float(np.abs(y).max()))
            notes.append("%s %.1e" % (f[4:-4], err))
            if not err <= TOL:
                problems.append("%s differs by %.3g (scaled)" % (f, err))
        elif f.startswith("checkpoint"):
            if open(a, "rb").read() == open(b, "rb").read():
                notes.append("checkpoint identical")
                continue
            sa, sb = load_checkpoint(a), load_checkpoint(b)
            if list(sa) != list(sb):
                missing = [k for k in sb if k not in sa]
                extra = [k for k in sa if k not in sb]
                problems.append("tensor names differ: committed only %s, new only %s%s" % (
                    missing[:4], extra[:4], "" if missing or extra else " (order)"))
                continue
            diff = []
            for k in sa:
                ta, tb = sa[k], sb[k]
                if not torch.is_tensor(ta) or not torch.is_tensor(tb):
                    continue
                if ta.dtype != tb.dtype or ta.shape != tb.shape:
                    problems.append("%s: %s %s, committed %s %s" % (k, ta.dtype, list(ta.shape), tb.dtype,
                                                                     list(tb.shape)))
                elif not torch.equal(ta, tb):
                    diff.append(k)
            notes.append("weights equal" if not diff else "weights differ in %d tensors (%s...)" % (len(diff), diff[0]))
    return problems, notes


def main():
    new, old = sys.argv[1], sys.argv[2]
    failed = 0
    for name in sorted(set(os.listdir(old)) | set(os.listdir(new))):
        a, b = os.path.join(new, name), os.path.join(old, name)
        if not name.startswith("cases.") and not os.path.isdir(a) and not os.path.isdir(b):
            continue  # not a reference (tests/golden also holds test_golden.cc)
        if not os.path.exists(a) or not os.path.exists(b):
            print("%-40s FAIL  only in %s" % (name, new if os.path.exists(a) else old))
            failed += 1
        elif not os.path.isdir(b) and open(a, "rb").read() != open(b, "rb").read():
            print("%-40s FAIL  differs" % name)
            failed += 1
    for name in sorted(d for d in os.listdir(old) if os.path.isdir(os.path.join(old, d)) and
                       os.path.isdir(os.path.join(new, d))):
        problems, notes = compare_case(os.path.join(new, name), os.path.join(old, name), name)
        print("%-40s %s  %s" % (name, "FAIL" if problems else "ok", "; ".join(problems + notes)))
        failed += bool(problems)
    print("%d case(s) differ from %s" % (failed, old) if failed else "all cases agree with " + old)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
