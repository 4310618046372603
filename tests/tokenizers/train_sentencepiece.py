#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""train_sentencepiece.py CORPUS OUT_DIR: SentencePiece models trained here with
python3-sentencepiece on the corpus's well-formed lines (default nmt_nfkc normalizer, so the
.model carries its precompiled character map): unigram with byte fallback (spm_unigram.model)
and BPE without (spm_bpe.model, unknown characters as one <unk> per run)."""
import os
import sys

import sentencepiece as spm

corpus, out = sys.argv[1], sys.argv[2]
lines = open(corpus, "rb").read().split(b"\n")
text = [l.decode("utf-8") for l in lines if l.decode("utf-8", "replace").encode("utf-8") == l]
train = os.path.join(out, "spm_train.txt")
with open(train, "w", encoding="utf-8") as f:
    f.write("\n".join(text))
for kind, fallback in (("unigram", True), ("bpe", False)):
    spm.SentencePieceTrainer.train(input=train, model_prefix=os.path.join(out, "spm_" + kind), vocab_size=4000,
                                   model_type=kind, character_coverage=0.9995, byte_fallback=fallback,
                                   max_sentence_length=20000, num_threads=1, minloglevel=2)
