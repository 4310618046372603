# SPDX-License-Identifier: Apache-2.0
"""Small random Hugging Face BERT-family models and their outputs from transformers itself, for
the `bert` layout (scripts/test-minilm.sh converts each with linfer-convert and compares):

  tests/hf/bert_family/<case>/model.safetensors, config.json (save_pretrained),
                              ids_<T>.txt, out_<T>.npy (float32 [rows, C], computed in float64)

    PY=$(bash scripts/hf-venv.sh) && $PY tools/python/reference/make_bert_family_golden.py
"""
import json
import os
import shutil

import numpy as np
import torch
import transformers as tf

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "..", "..", "tests", "hf", "bert_family")
SIZES = dict(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=48,
             max_position_embeddings=24, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


def cases():
    yield "bert_cls", tf.BertForSequenceClassification(tf.BertConfig(**SIZES, num_labels=3, type_vocab_size=2)), "logits"
    yield "bert_mlm_gelu_new", tf.BertForMaskedLM(tf.BertConfig(**SIZES, hidden_act="gelu_new")), "logits"
    yield "roberta_model", tf.RobertaModel(tf.RobertaConfig(**dict(SIZES, max_position_embeddings=26), pad_token_id=1,
                                                            type_vocab_size=1)), "last_hidden_state"
    yield "roberta_cls", tf.RobertaForSequenceClassification(
        tf.RobertaConfig(**dict(SIZES, max_position_embeddings=26), pad_token_id=1, type_vocab_size=1, num_labels=2)), "logits"
    yield "xlmr_mlm", tf.XLMRobertaForMaskedLM(tf.XLMRobertaConfig(**dict(SIZES, max_position_embeddings=26), pad_token_id=1,
                                                                   type_vocab_size=1)), "logits"
    dsizes = dict(vocab_size=99, dim=32, n_layers=2, n_heads=4, hidden_dim=48, max_position_embeddings=24, dropout=0.0,
                  attention_dropout=0.0, seq_classif_dropout=0.0)
    yield "distilbert_model", tf.DistilBertModel(tf.DistilBertConfig(**dsizes)), "last_hidden_state"
    yield "distilbert_cls", tf.DistilBertForSequenceClassification(tf.DistilBertConfig(**dsizes, num_labels=4)), "logits"


def main():
    torch.manual_seed(50)
    shutil.rmtree(OUT, ignore_errors=True)
    rng = np.random.default_rng(50)
    for name, model, key in cases():
        model.eval()
        with torch.no_grad():  # larger than the default init, so that every part matters to the output
            for p in model.parameters():
                p.add_(0.05 * torch.randn_like(p))
        folder = os.path.join(OUT, name)
        model.save_pretrained(folder, safe_serialization=True)
        model = model.double()
        n = 24
        for T in (1, 7, n):
            ids = rng.integers(3, 99, size=T)
            with torch.no_grad():
                out = getattr(model(torch.tensor(ids[None, :])), key)[0].numpy()
            np.savetxt(os.path.join(folder, f"ids_{T}.txt"), ids[None, :], fmt="%d")
            np.save(os.path.join(folder, f"out_{T}.npy"), out.reshape(-1, out.shape[-1]).astype(np.float32))
        cfg = json.load(open(os.path.join(folder, "config.json")))
        print(name, cfg["architectures"], os.path.getsize(os.path.join(folder, "model.safetensors")), "bytes")
    print("transformers", tf.__version__, "torch", torch.__version__)


if __name__ == "__main__":
    main()
