# SPDX-License-Identifier: Apache-2.0
"""Flash taken by each part of a firmware, from the linker's map (-Wl,-Map):

    python3 tests/cortex_m/code_size.py FIRMWARE.map

Sums the code and constant sections placed in flash per origin: linfer's objects by layer
(kernels, format, runtime), the C library, the C++ library, libm, libgcc, the firmware's own, and the
model (blobs.S). Prints one line per origin, the totals, and the total code: all but the
firmware's (docs/microcontrollers.md)."""

import collections
import re
import sys

FORMAT = {"lfm.cc.obj", "encoder.cc.obj", "panel.cc.obj"}


def origin(path):
    name = path.split("/")[-1]
    m = re.match(r"(lib[^()]+)\.a\(([^)]+)\)", name)
    if not m:
        return "firmware: " + name
    lib, obj = m.groups()
    if lib == "liblinfer":
        kernels = "kernels/" in path or obj.split(".")[0].endswith(("_ref", "_hwy", "_generic", "_select", "_targets")) \
            or obj.startswith("dense_")
        return "linfer format: " + obj if obj in FORMAT else ("linfer kernels: " if kernels else "linfer runtime: ") + obj
    return lib


def main():
    text = open(sys.argv[1]).read()
    text = text[text.index("Linker script and memory map"):]
    sizes = collections.Counter()
    pending = None
    for line in text.splitlines():
        m = re.match(r"^ (\.\S+)\s*$", line)
        if m:
            pending = m.group(1)
            continue
        m = re.match(r"^ (\.\S+)?\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+(\S.*)$", line)
        if not m:
            pending = None
            continue
        section = m.group(1) or pending
        pending = None
        addr, size, path = int(m.group(2), 16), int(m.group(3), 16), m.group(4).strip()
        if not section or addr >= 0x20000000 or not section.startswith((".text", ".rodata", ".ARM.ex")):
            continue
        sizes[origin(path)] += size
    groups = collections.Counter()
    for k, v in sizes.items():
        groups[k.split(":")[0]] += v
    for k, v in sorted(sizes.items(), key=lambda kv: -kv[1]):
        print("%8d  %s" % (v, k))
    print()
    for k, v in sorted(groups.items(), key=lambda kv: -kv[1]):
        print("%8d  %s (total)" % (v, k))
    # (scripts/test-cortex-m.sh holds this to a budget.)
    print("%8d  total code (linfer and the libraries: all but the firmware's)" %
          sum(v for k, v in groups.items() if k != "firmware"))


if __name__ == "__main__":
    main()
