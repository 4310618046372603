#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""make_tokenizer_seeds.py [CONVERTER]: fuzz_lfm seeds with a tokenizer table: a tiny lucidrains
LM (400 tokens) converted with a WordPiece and with a byte-level BPE tokenizer.json, with a
SentencePiece unigram model (nmt_nfkc, so with its character map; byte fallback) trained here,
with that model's pieces (trained again without byte fallback) in the tokenizer.json that
transformers' XLMRobertaConverter writes (Precompiled, Strip, Replace, Metaspace, <mask> last),
and the WordPiece one in int8 with activation smoothing (--calibrate: format version 3)
(tests/fuzz/corpus/fuzz_lfm/tokenizer_*.lfm; fuzz_lfm tokenizes part of its input with them, and
tests/unit/test_tokenizer.cc and test_no_alloc.cc use them). Run it with
build-upstream/venv/bin/python (scripts/upstream-venv.sh), which has linformer and sentencepiece."""
import base64
import json
import os
import subprocess
import sys
import tempfile

import sentencepiece as spm
import torch

import linformer as lucidrains  # lucidrains/linformer from PyPI: build-upstream/venv/bin/python (scripts/upstream-venv.sh)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

converter = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "bin", "linfer-convert")
out = os.path.join(ROOT, "tests", "fuzz", "corpus", "fuzz_lfm")


def byte_level(bs):  # GPT-2's bytes_to_unicode
    keep = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    m, n = {}, 0
    for b in range(256):
        if b in keep:
            m[b] = chr(b)
        else:
            m[b] = chr(256 + n)
            n += 1
    return "".join(m[b] for b in bs)


pieces = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "##aff", "##able", "hello", ",", "!", "cafe", "中", "##s", "a"]
added = [dict(id=i, content=p, single_word=False, lstrip=False, rstrip=False, normalized=False, special=True)
         for i, p in enumerate(pieces[:5])]
wordpiece = dict(
    version="1.0", truncation=None, padding=None, added_tokens=added,
    normalizer=dict(type="BertNormalizer", clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=True),
    pre_tokenizer=dict(type="BertPreTokenizer"),
    post_processor=dict(type="BertProcessing", sep=["[SEP]", 3], cls=["[CLS]", 2]),
    model=dict(type="WordPiece", unk_token="[UNK]", continuing_subword_prefix="##", max_input_chars_per_word=100,
               vocab={p: i for i, p in enumerate(pieces)}))
vocab = {byte_level([b]): b for b in range(256)}
merges = [("h", "e"), ("l", "l"), ("he", "ll"), ("hell", "o"), (" ", "w")]
for a, b in merges:
    vocab[byte_level((a + b).encode())] = len(vocab)
bpe = dict(
    version="1.0", truncation=None, padding=None, added_tokens=[], normalizer=None,
    pre_tokenizer=dict(type="ByteLevel", add_prefix_space=False, trim_offsets=True, use_regex=True),
    post_processor=None,
    model=dict(type="BPE", dropout=None, unk_token=None, vocab=vocab,
               merges=[byte_level(a.encode()) + " " + byte_level(b.encode()) for a, b in merges]))

torch.manual_seed(0)
with tempfile.TemporaryDirectory() as tmp:
    args = dict(num_tokens=400, dim=8, seq_len=8, depth=1, k=4, heads=2)
    torch.save(lucidrains.LinformerLM(**args).state_dict(), os.path.join(tmp, "lm.pt"))
    with open(os.path.join(tmp, "lm.json"), "w") as f:
        json.dump(args, f)
    text = os.path.join(tmp, "text.txt")
    with open(text, "w", encoding="utf-8") as f:
        for i in range(200):
            f.write("the quick brown fox %d jumps over the lazy dog. Ｆｕｌｌ ｗｉｄｔｈ ﬁ café №%d ½ 東京 한국어\n" % (i, i * 7))
    spm.SentencePieceTrainer.train(input=text, model_prefix=os.path.join(tmp, "sp"), vocab_size=380, model_type="unigram",
                                   byte_fallback=True, num_threads=1, minloglevel=2)
    spm.SentencePieceTrainer.train(input=text, model_prefix=os.path.join(tmp, "xlmr"), vocab_size=190, model_type="unigram",
                                   byte_fallback=False, num_threads=1, minloglevel=2)
    proto = spm.SentencePieceProcessor(model_file=os.path.join(tmp, "xlmr.model"))
    from sentencepiece import sentencepiece_model_pb2 as model_pb2  # python3-sentencepiece's own
    m = model_pb2.ModelProto()
    m.ParseFromString(open(os.path.join(tmp, "xlmr.model"), "rb").read())
    specials = ["<s>", "<pad>", "</s>", "<unk>"]
    uvocab = [[p, 0.0] for p in specials] + [[p.piece, p.score] for p in m.pieces[3:]] + [["<mask>", 0.0]]
    unigram = dict(
        version="1.0", truncation=None, padding=None,
        added_tokens=[dict(id=i, content=p, single_word=False, lstrip=False, rstrip=False, normalized=False, special=True)
                      for i, p in enumerate(specials)] +
                     [dict(id=len(uvocab) - 1, content="<mask>", single_word=False, lstrip=True, rstrip=False,
                           normalized=True, special=True)],
        normalizer=dict(type="Sequence", normalizers=[
            dict(type="Precompiled", precompiled_charsmap=base64.b64encode(m.normalizer_spec.precompiled_charsmap).decode()),
            dict(type="Strip", strip_left=False, strip_right=True),
            dict(type="Replace", pattern=dict(Regex=" {2,}"), content="\u2581")]),
        pre_tokenizer=dict(type="Metaspace", replacement="\u2581", prepend_scheme="always", split=True),
        post_processor=dict(type="TemplateProcessing", single=[dict(SpecialToken=dict(id="<s>", type_id=0)),
                                                               dict(Sequence=dict(id="A", type_id=0)),
                                                               dict(SpecialToken=dict(id="</s>", type_id=0))],
                            special_tokens={"<s>": dict(id="<s>", ids=[0], tokens=["<s>"]),
                                            "</s>": dict(id="</s>", ids=[2], tokens=["</s>"])}),
        model=dict(type="Unigram", unk_id=3, vocab=uvocab, byte_fallback=False))
    for name, tok in (("wordpiece", wordpiece), ("byte_bpe", bpe), ("sentencepiece", None), ("unigram", unigram)):
        path = os.path.join(tmp, "sp.model") if tok is None else os.path.join(tmp, name + ".json")
        if tok is not None:
            with open(path, "w") as f:
                json.dump(tok, f)
        subprocess.run([converter, os.path.join(tmp, "lm.pt"), "--config", os.path.join(tmp, "lm.json"),
                        "-o", os.path.join(out, "tokenizer_%s_f32.lfm" % name), "--tokenizer", path],
                       check=True, stdout=subprocess.DEVNULL)
    # int8 with activation smoothing (format version 3: input scales on Q, K, V and fc1), calibrated
    # on the same text through the WordPiece tokenizer.
    subprocess.run([converter, os.path.join(tmp, "lm.pt"), "--config", os.path.join(tmp, "lm.json"),
                    "-o", os.path.join(out, "tokenizer_wordpiece_int8_smoothed.lfm"), "--tokenizer",
                    os.path.join(tmp, "wordpiece.json"), "--dtype", "int8", "--calibrate", text],
                   check=True, stdout=subprocess.DEVNULL)
