"""The test firmware's inputs and expected outputs (tests/cortex_m/firmware_test.cc):

    /usr/bin/python3 tests/cortex_m/make_cases.py MODEL.lfm PER_LANGUAGE OUT.bin [--max-len 128]

The first PER_LANGUAGE lines of each language of examples/data/langid_short_test.tsv, each cut to
its first --max-len bytes at a character boundary, run by the host build's Python package
(build/runtime/linfer) on MODEL. OUT.bin: b"LFCM", count, classes (uint32), then per input its
length (uint32), its bytes padded to 4, and the host's logits (float32 x classes)."""

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
    tmp = args.out + ".tmp"
    with open(tmp, "wb") as f:
        f.write(b"LFCM" + struct.pack("<II", len(texts), classes) + out)
    os.replace(tmp, args.out)
    print("make_cases.py: %d inputs (%s), %d classes -> %s" % (
        len(texts), ", ".join("%s %d" % kv for kv in sorted(taken.items())), classes, args.out))


if __name__ == "__main__":
    main()
