#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""make_unigram_tokenizer_json.py CORPUS OUT.json: an XLM-RoBERTa-style tokenizer.json made the way
Hugging Face makes them: a SentencePiece unigram model trained on the corpus's well-formed lines
(nmt_nfkc normalizer, so its precompiled character map is sentencepiece's own; no byte fallback;
4,000 pieces), loaded as transformers' XLMRobertaTokenizerFast, which converts it with convert_slow_tokenizer
(XLMRobertaConverter: <s> <pad> </s> <unk> first, the pieces shifted by one, <mask> last with
lstrip, the <s> ... </s> template) and adds the special tokens, saved as save_pretrained
saves it. Runs in the venv of scripts/hf-venv.sh, with Debian's python3-sentencepiece and
python3-protobuf (scripts/regen-unigram-tokenizer.sh)."""
import os
import sys
import tempfile

import sentencepiece as spm
import transformers
from transformers import XLMRobertaTokenizerFast

corpus, out = sys.argv[1], sys.argv[2]
lines = open(corpus, "rb").read().split(b"\n")
text = [l.decode("utf-8") for l in lines if l.decode("utf-8", "replace").encode("utf-8") == l]
with tempfile.TemporaryDirectory() as tmp:
    train = os.path.join(tmp, "train.txt")
    with open(train, "w", encoding="utf-8") as f:
        f.write("\n".join(text))
    spm.SentencePieceTrainer.train(input=train, model_prefix=os.path.join(tmp, "xlmr"), vocab_size=4000,
                                   model_type="unigram", normalization_rule_name="nmt_nfkc",
                                   character_coverage=0.9995, byte_fallback=False, max_sentence_length=20000,
                                   num_threads=1, minloglevel=2)
    fast = XLMRobertaTokenizerFast(vocab_file=os.path.join(tmp, "xlmr.model"))
    fast.save_pretrained(tmp)
    os.replace(os.path.join(tmp, "tokenizer.json"), out)
print(f"{out}: sentencepiece {spm.__version__}, transformers {transformers.__version__}", file=sys.stderr)
