#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench_sentencepiece.py MODEL.model CORPUS: python3-sentencepiece's time for the corpus's lines
(one batch, num_threads=1, the best of 3), tokens per second."""
import sys
import time

import sentencepiece as spm

sp = spm.SentencePieceProcessor(model_file=sys.argv[1])
data = open(sys.argv[2], "rb").read()
lines = [l.decode("utf-8", "replace") for l in data.split(b"\n")[:-1]]
best, tokens = float("inf"), 0
for _ in range(3):
    t0 = time.perf_counter()
    ids = sp.encode(lines, num_threads=1)
    best = min(best, time.perf_counter() - t0)
    tokens = sum(len(x) for x in ids)
print("sentencepiece %s: %d lines, %d tokens in %.3f s: %d tokens/s, %.1f MB/s" % (
    spm.__version__, len(lines), tokens, best, tokens / best, len(data) / best / 1e6), file=sys.stderr)
