#!/usr/bin/env python3
"""make_model.py VOCAB OUT.pt OUT.json: a tiny random lucidrains LinformerLM (dim 8, one layer)
with VOCAB tokens, for storing a tokenizer of that vocabulary beside it."""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "python"))
from upstream import lucidrains  # noqa: E402

vocab, out, cfg_path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
args = dict(num_tokens=vocab, dim=8, seq_len=64, depth=1, k=4, heads=2)
torch.manual_seed(0)
model = lucidrains.LinformerLM(**args)
torch.save(model.state_dict(), out)
with open(cfg_path, "w") as f:
    json.dump(args, f)
