#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Sentence vectors: the mean of a model's final hidden states over the tokens, and the cosine
similarity of two texts' vectors (the Python version of examples/embed/embed.cc):

    /usr/bin/python3 examples/python/embed.py examples/models/langid.f32.lfm \
        examples/data/langid-de.txt examples/data/langid-fr.txt
"""
import sys

import numpy as np

import linfer


def sentence_vector(session, ids):
    session.run(ids)
    return session.hidden_states(copy=False).mean(axis=0, dtype=np.float64)  # [dim]; read in place


def read_bytes(path, n):
    try:
        with open(path, "rb") as f:
            data = f.read(n)
    except OSError:
        return None
    return np.frombuffer(data, dtype=np.uint8) if data else None


def main(argv):
    if len(argv) != 4:
        print("usage: %s MODEL.lfm TEXT_A TEXT_B" % argv[0], file=sys.stderr)
        return 2
    try:
        model = linfer.Model(argv[1])
    except linfer.Error as e:
        print("%s: %s" % (argv[1], e), file=sys.stderr)
        return 1
    n = model.info["n"]
    a, b = read_bytes(argv[2], n), read_bytes(argv[3], n)
    if a is None or b is None:
        print("cannot read the two texts (missing or empty)", file=sys.stderr)
        return 1
    session = model.session()  # one session serves both texts: sized for the model's n
    try:
        va, vb = sentence_vector(session, a), sentence_vector(session, b)
    except linfer.Error as e:
        print(e, file=sys.stderr)
        return 1
    cosine = float(va @ vb / np.sqrt((va @ va) * (vb @ vb)))
    print("vector size %d\ncosine similarity %.4f" % (va.size, cosine))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
