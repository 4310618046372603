#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""make_model.py VOCAB OUT.pt OUT.json: a tiny random lucidrains LinformerLM (dim 8, one layer)
with VOCAB tokens, for storing a tokenizer of that vocabulary beside it. The state_dict is written
directly (the names and shapes linformer 0.2.3's LinformerLM saves for this configuration), so that
the test needs torch only."""
import json
import sys

import torch

vocab, out, cfg_path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
args = dict(num_tokens=vocab, dim=8, seq_len=64, depth=1, k=4, heads=2)
C, n, k, V = args["dim"], args["seq_len"], args["k"], vocab
A, F = "linformer.net.layers.0.0.", "linformer.net.layers.0.1."
shapes = [("token_emb.weight", (V, C)), ("pos_emb.weight", (n, C)),
          (A + "fn.proj_k", (n, k)), (A + "fn.proj_v", (n, k)),
          (A + "fn.to_q.weight", (C, C)), (A + "fn.to_k.weight", (C, C)), (A + "fn.to_v.weight", (C, C)),
          (A + "fn.to_out.weight", (C, C)), (A + "fn.to_out.bias", (C,)), (A + "norm.weight", (C,)), (A + "norm.bias", (C,)),
          (F + "fn.w1.weight", (4 * C, C)), (F + "fn.w1.bias", (4 * C,)), (F + "fn.w2.weight", (C, 4 * C)),
          (F + "fn.w2.bias", (C,)), (F + "norm.weight", (C,)), (F + "norm.bias", (C,)),
          ("to_logits.weight", (V, C)), ("to_logits.bias", (V,))]
g = torch.Generator().manual_seed(0)
state = {name: 0.3 * torch.randn(shape, generator=g) for name, shape in shapes}
torch.save(state, out)
with open(cfg_path, "w") as f:
    json.dump(args, f)
