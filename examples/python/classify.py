#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Classifies a text file with a byte-level classifier model (the shipped language-ID model):

    /usr/bin/python3 examples/python/classify.py examples/models/langid.int8.lfm \
        examples/models/langid.labels.txt examples/data/langid-fr.txt

Each byte of the file is one token; line breaks at its end are not part of the text, and a longer
text is cut to the model's maximum length (at a character boundary). Prints what
examples/classify/classify.cc prints for a file: the most likely language, then the next two
(the C++ example also reads standard input and takes --threshold).
"""
import math
import sys

import numpy as np

import linfer


def main(argv):
    if len(argv) != 4:
        print("usage: %s MODEL.lfm LABELS.txt TEXT_FILE" % argv[0], file=sys.stderr)
        return 2
    try:
        model = linfer.Model(argv[1])
    except linfer.Error as e:
        print("%s: %s" % (argv[1], e), file=sys.stderr)
        return 1
    info = model.info
    if info["head"] != "classifier" or info["vocab_size"] < 256:
        print("%s is not a byte-level classifier" % argv[1], file=sys.stderr)
        return 1
    with open(argv[2], encoding="utf-8") as f:
        labels = f.read().splitlines()
    if len(labels) != info["num_classes"]:
        print("%s has %d labels, the model has %d classes" % (argv[2], len(labels), info["num_classes"]),
              file=sys.stderr)
        return 1
    try:
        with open(argv[3], "rb") as f:
            text = f.read().rstrip(b"\r\n")  # one token per byte
    except OSError as e:
        print("cannot open %s: %s" % (argv[3], e.strerror), file=sys.stderr)
        return 1
    if not text:
        print("%s is empty" % argv[3], file=sys.stderr)
        return 1
    length = min(len(text), info["n"])
    if length < len(text):  # do not cut a UTF-8 character
        while length > 1 and (text[length] & 0xC0) == 0x80:
            length -= 1
    text = text[:length]

    ids = np.frombuffer(text, dtype=np.uint8)  # any integer dtype; the session copies into int32
    session = model.session(max_seq_len=len(ids))
    try:
        logits = session.run(ids)[0]  # [classes]
    except linfer.Error as e:
        print(e, file=sys.stderr)
        return 1
    # Softmax over the class logits in double precision, as the C++ example computes it.
    top = float(logits.max())
    p = [math.exp(float(v) - top) for v in logits]
    total = sum(p)
    p = [v / total for v in p]
    order = sorted(range(len(p)), key=lambda c: -p[c])
    print("%s (%.1f%%)" % (labels[order[0]], 100.0 * p[order[0]]))
    for c in order[1:3]:
        print("  then %s (%.1f%%)" % (labels[c], 100.0 * p[c]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
