# SPDX-License-Identifier: Apache-2.0
"""The test firmware's inputs and expected outputs (tests/cortex_m/firmware_test.cc):

    /usr/bin/python3 tests/cortex_m/make_cases.py MODEL.lfm PER_LANGUAGE OUT.bin [--max-len 128]

The first PER_LANGUAGE lines of each language of examples/data/langid_short_test.tsv, each cut to
its first --max-len bytes at a character boundary, run by the host build's Python package
(build/runtime/linfer) on MODEL. OUT.bin: b"LFCM", count, classes (uint32), then per input its
length (uint32), its bytes padded to 4, and the host's logits (float32 x classes); then b"LFRM", a
count and that many (offset, byte) uint32 pairs: the changes that turn MODEL into one whose first
dense weight (layers.0.attention.q.weight) is row-major, as format version 1 stores dense weights
(row_major_patch), which the bare-metal build refuses and the host's packs."""

import argparse
import os
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def cut(b, n):
    if len(b) <= n:
        return b
    while n > 0 and (b[n] & 0xC0) == 0x80:  # not inside a character
        n -= 1
    return b[:n]


def row_major_patch(data):
    """(offset, byte) pairs that make layers.0.attention.q.weight row-major: its layout byte
    RowMajor, its channel sums an empty vector (a row-major tensor has none). The FlatBuffers
    tables are walked by hand (schema/linfer.fbs's field numbers)."""
    u32 = lambda at: struct.unpack_from("<I", data, at)[0]

    def field(table, i):  # where field i of the table at `table` is stored (it must be)
        vtable = table - struct.unpack_from("<i", data, table)[0]
        at = struct.unpack_from("<H", data, vtable + 4 + 2 * i)[0] if 4 + 2 * i < u32(vtable) & 0xFFFF else 0
        if not at:
            raise SystemExit("make_cases.py: the model's q weight has no field %d" % i)
        return table + at

    ref = lambda at: at + u32(at)
    layers = ref(field(u32(0), 11))  # ModelFile.layers
    attention = ref(field(ref(layers + 4), 0))  # layers[0].attention
    weight = ref(field(ref(field(attention, 0)), 0))  # Attention.q, Linear.weight
    layout, sums = field(weight, 5), ref(field(weight, 7))  # Tensor.layout, Tensor.channel_sums
    if data[layout] != 1:
        raise SystemExit("make_cases.py: the model's q weight is not in panel layout")
    return [(layout, 0)] + [(sums + i, 0) for i in range(4)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("per_language", type=int)
    ap.add_argument("out")
    ap.add_argument("--max-len", type=int, default=128)
    ap.add_argument("--package", default=os.path.join(ROOT, "build", "runtime"),
                    help="the folder holding the host build's linfer package")
    args = ap.parse_args()
    sys.path.insert(0, args.package)
    import linfer

    model = linfer.Model(args.model)
    session = linfer.Session(model, max_seq_len=args.max_len)
    taken, texts = {}, []
    with open(os.path.join(ROOT, "examples", "data", "langid_short_test.tsv"), encoding="utf-8") as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            lang, _page, _unit, text = line.rstrip("\n").split("\t", 3)
            if taken.get(lang, 0) < args.per_language:
                taken[lang] = taken.get(lang, 0) + 1
                texts.append(cut(text.encode("utf-8"), args.max_len))
    out = bytearray()
    classes = None
    for t in texts:
        logits = session.run(list(t)).reshape(-1)
        classes = len(logits)
        out += struct.pack("<I", len(t)) + t + b"\0" * (-len(t) % 4) + struct.pack("<%df" % classes, *logits)
    # The row-major copy (the weight's bytes, in panel order, now read as row-major: a valid model,
    # other numbers) loads and runs on the host, which packs it: the bare-metal build's refusal is
    # the packing left out, not a damaged file.
    data = bytearray(open(args.model, "rb").read())
    patch = row_major_patch(data)
    for at, byte in patch:
        data[at] = byte
    row_major = linfer.Session(linfer.Model.from_bytes(bytes(data)), max_seq_len=args.max_len)
    if row_major.run(list(texts[0])).size != classes:
        raise SystemExit("make_cases.py: the row-major copy does not run on the host")
    out += b"LFRM" + struct.pack("<I", len(patch)) + b"".join(struct.pack("<II", at, byte) for at, byte in patch)
    tmp = args.out + ".tmp"
    with open(tmp, "wb") as f:
        f.write(b"LFCM" + struct.pack("<II", len(texts), classes) + out)
    os.replace(tmp, args.out)
    print("make_cases.py: %d inputs (%s), %d classes -> %s" % (
        len(texts), ", ".join("%s %d" % kv for kv in sorted(taken.items())), classes, args.out))


if __name__ == "__main__":
    main()
