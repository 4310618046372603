#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make_embedder.sh BIN OUT: small sentence-embedding models and their native embeddings, for the
# bindings' embed tests (scripts/test-bindings.sh, scripts/test-wasm.sh). BIN has linfer-convert
# and linfer-embed. Writes into OUT:
#   embedder.pt, vocab.txt   a random 2-layer dim-32 Linformer (n = 64) and a WordPiece vocabulary
#                            (the letters and their ## pieces: every word is one id per letter)
#   mean.{f32,int8}.lfm      mean-pooled, L2-normalized, with the tokenizer
#   cls.f32.lfm              [CLS]-pooled, not normalized, with the tokenizer
#   unpooled.f32.lfm         the hidden states (head none), with the tokenizer: embed refuses it
#   notokenizer.f32.lfm      mean-pooled without a tokenizer: embed refuses it
#   texts.txt                the texts, one a line: short, unknown characters, an empty one, and
#                            one of more than n ids (cut to n)
#   {mean.f32,mean.int8,cls.f32}.embed.txt   linfer-embed's embeddings of texts.txt (%.9g)
set -euo pipefail
bin=$1
out=$2
source=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out"
/usr/bin/python3 - "$source" "$out" <<'PY'
import os, sys
sys.path.insert(0, os.path.join(sys.argv[1], "tools", "python", "reference"))
import linfer_ref
out = sys.argv[2]
cfg = linfer_ref.resolve_config(dict(vocab_size=64, dim=32, num_layers=2, num_heads=2, head_dim=16, ff_dim=64,
                                     max_seq_len=64, proj_len=16, head="none"))
m = linfer_ref.LinferEncoder(cfg)
linfer_ref.init_random(m, seed=7)
linfer_ref.save_torch(m, cfg, os.path.join(out, "embedder.pt"))
letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
with open(os.path.join(out, "vocab.txt"), "w") as f:
    f.write("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + letters + ["##" + c for c in letters]) + "\n")
with open(os.path.join(out, "texts.txt"), "w", encoding="utf-8") as f:
    f.write("a small sentence to embed\n")
    f.write("Another one, with CAPITALS and digits 42!\n")
    f.write("\u00fcn\u00efc\u00f6de \u65e5\u672c\u8a9e and emoji \U0001F600\n")
    f.write("\n")
    f.write("the quick brown fox jumps over the lazy dog " * 3 + "\n")  # 107 ids: cut to 64
PY
convert=("$bin/linfer-convert" "$out/embedder.pt")
for dtype in f32 int8; do
  "${convert[@]}" --tokenizer "$out/vocab.txt" --pooling mean --normalize --dtype $dtype -o "$out/mean.$dtype.lfm" > /dev/null
done
"${convert[@]}" --tokenizer "$out/vocab.txt" --pooling cls -o "$out/cls.f32.lfm" > /dev/null
"${convert[@]}" --tokenizer "$out/vocab.txt" --pooling none -o "$out/unpooled.f32.lfm" > /dev/null
"${convert[@]}" --pooling mean --normalize -o "$out/notokenizer.f32.lfm" > /dev/null
for name in mean.f32 mean.int8 cls.f32; do
  "$bin/linfer-embed" "$out/$name.lfm" "$out/texts.txt" > "$out/$name.embed.txt"
done
