#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""reference_sentencepiece.py MODEL.model CORPUS: python3-sentencepiece's ids of each corpus line
(its bytes decoded as UTF-8 with U+FFFD for ill-formed sequences), one line each, as
linfer-tokenize prints them (no template: a .model has none)."""
import sys

import sentencepiece as spm

sp = spm.SentencePieceProcessor(model_file=sys.argv[1])
lines = open(sys.argv[2], "rb").read().split(b"\n")
if lines and lines[-1] == b"":
    lines.pop()
out = sys.stdout
for ids in sp.encode([l.decode("utf-8", "replace") for l in lines]):
    out.write(" ".join(map(str, ids)) + "\n")
