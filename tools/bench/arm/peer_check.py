# SPDX-License-Identifier: Apache-2.0
"""peer_check.py OUT REF.npy DTYPE: one runtime's output (OUT: .npy as linfer-bench --dump writes it,
else raw little-endian float32 as ort_proxy --out does) against PyTorch's, with the x86
suite's rules (tools/bench/suite/suite.py: compare, F32_TOL, INT8_MIN_COSINE). Prints one line;
exit status 1 when an f32 output is off by more than F32_TOL of the largest |output| or an int8
one has a mean cosine similarity below INT8_MIN_COSINE. Run with /usr/bin/python3 (numpy)."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "suite"))
import suite  # noqa: E402


def main():
    if len(sys.argv) != 4 or sys.argv[3] not in ("f32", "int8"):
        raise SystemExit("usage: peer_check.py OUT REF.npy f32|int8")
    ref = np.load(sys.argv[2])
    out = np.load(sys.argv[1]) if sys.argv[1].endswith(".npy") else np.fromfile(sys.argv[1], dtype="<f4")
    if out.size != ref.size:
        raise SystemExit("peer_check: %s holds %d values, the reference %d" % (sys.argv[1], out.size, ref.size))
    e = suite.compare(ref, out)
    if sys.argv[3] == "int8":
        ok = e["cos_mean"] >= suite.INT8_MIN_COSINE
    else:
        ok = e["max_abs"] <= suite.F32_TOL * e["max_abs_ref"]
    print("%s max_abs_err=%.3g of %.3g cosine=%.6f argmax=%.1f%%" % (
        "ok" if ok else "FAILED", e["max_abs"], e["max_abs_ref"], e["cos_mean"], 100 * e["argmax"]))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
