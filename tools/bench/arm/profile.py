# SPDX-License-Identifier: Apache-2.0
"""profile.py PROGRAM RUN1 RUN2 [--top N]: instructions per function of one forward pass, from two
insn_profile outputs (the same program with --runs 1 and --runs 2, as the insn_count proxy
takes them): per function, instructions of RUN2 minus those of RUN1. PROGRAM must be the non-PIE
guest program the profiles came from (addresses are taken as they are), e.g. an arm64
linfer-bench linked statically against linfer (README.md, "Where the instructions go").
Addresses outside PROGRAM (the C library, ld.so) are summed as "(shared libraries)".
A proxy, not a timing."""
import argparse
import bisect
import collections
import subprocess


def symbols(program):
    out = subprocess.run(["aarch64-linux-gnu-nm", "-C", "--defined-only", "-S", "-n", program],
                         check=True, capture_output=True, text=True).stdout
    starts, ends, names = [], [], []
    for line in out.splitlines():
        parts = line.split(" ", 3)
        if len(parts) == 4 and parts[2] in "tTwW":
            start, size = int(parts[0], 16), int(parts[1], 16)
            starts.append(start), ends.append(start + size), names.append(parts[3])
    return starts, ends, names


def per_function(path, syms):
    starts, ends, names = syms
    totals = collections.Counter()
    with open(path) as f:
        for line in f:
            addr, n, times = line.split()
            addr = int(addr, 16)
            i = bisect.bisect_right(starts, addr) - 1
            name = names[i] if i >= 0 and addr < ends[i] else "(shared libraries)"
            totals[name] += int(n) * int(times)
    return totals


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("program")
    ap.add_argument("run1")
    ap.add_argument("run2")
    ap.add_argument("--top", type=int, default=25)
    a = ap.parse_args()
    syms = symbols(a.program)
    one, two = per_function(a.run1, syms), per_function(a.run2, syms)
    diff = {k: two[k] - one.get(k, 0) for k in two}
    total = sum(diff.values())
    print("instructions of one forward pass: %d (proxy: dynamic instruction count under qemu)" % total)
    print("| instructions | share | function |")
    print("|---:|---:|---|")
    for name, v in sorted(diff.items(), key=lambda kv: -kv[1])[:a.top]:
        short = name if len(name) < 110 else name[:107] + "..."
        print("| %d | %.1f%% | `%s` |" % (v, 100.0 * v / total, short))


if __name__ == "__main__":
    main()
