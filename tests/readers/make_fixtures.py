#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Regenerates the checkpoint-reader fixtures used by tests/unit/test_readers.cc.

Needs torch (Debian python3-torch; the fixtures were made with 1.13). Run from anywhere:

    /usr/bin/python3 tests/readers/make_fixtures.py

Every tensor holds fixed values so the C++ tests can check them exactly.
"""
import argparse
import collections
import io
import json
import os
import struct
import zipfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))


def path(name):
    return os.path.join(HERE, name)


def small_state_dict():
    """An OrderedDict state_dict (pickled with BUILD of its _metadata) of Linear(4, 3) + LayerNorm(3)."""
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.LayerNorm(3))
    with torch.no_grad():
        model[0].weight.copy_(torch.arange(12, dtype=torch.float32).view(3, 4) / 4)
        model[0].bias.copy_(torch.tensor([0.5, -1.0, 2.0]))
        model[1].weight.copy_(torch.tensor([1.0, 2.0, 3.0]))
        model[1].bias.copy_(torch.tensor([-0.25, 0.0, 0.25]))
    return model, model.state_dict()


def write_plain():
    _, sd = small_state_dict()
    torch.save(sd, path("plain.pt"))  # saved to a path: the zip folder is "plain/"


def write_shared():
    t = torch.arange(6, dtype=torch.float32).view(2, 3)
    obj = {"embed.weight": t, "head.weight": t, "row": t[1]}
    with open(path("shared.pt"), "wb") as f:  # saved to a file object: the zip folder is "archive/"
        torch.save(obj, f)


def write_views():
    base = torch.arange(20, dtype=torch.float32).view(4, 5)
    obj = {"transposed": base.t(), "sliced": base[1:, 2:], "column": base[:, 3]}
    torch.save(obj, path("views.pt"))


def write_dtypes():
    obj = {
        "half": torch.tensor([1.0, -2.5, 65504.0, 2.0 ** -24, 0.0], dtype=torch.float16),
        "bf16": torch.tensor([1.0, -3.0, 2.0 ** 100], dtype=torch.bfloat16),
        "double": torch.tensor([[0.125, -7.0]], dtype=torch.float64),
        "long": torch.tensor([1, -2, 2 ** 40], dtype=torch.int64),
        "scalar": torch.tensor(3.5),
        "empty": torch.zeros(0, 3),
    }
    torch.save(obj, path("dtypes.pt"))


def write_with_config():
    _, sd = small_state_dict()
    obj = {"linfer_config": '{"dim": 4, "num_layers": 1}', "state_dict": sd}
    torch.save(obj, path("with_config.pt"))


def write_proto4():
    _, sd = small_state_dict()
    torch.save(sd, path("proto4.pt"), pickle_protocol=4)


def write_fairseq_like():
    model, sd = small_state_dict()
    model.half()
    args = argparse.Namespace(arch="linformer_roberta_base", lr=[0.0001], fp16=True, seed=1,
                              dropout=0.1, max_positions=512, big=2 ** 40, neg=-5, nothing=None)
    obj = {
        "args": args,
        "cfg": None,
        "model": model.state_dict(),
        "optimizer_history": [{"criterion_name": "MaskedLmLoss", "num_updates": 10,
                               "lr_scheduler_state": {"best": 1.5}}],
        "extra_state": {"val_loss": None, "epoch": 3, "flags": (True, False)},
    }
    torch.save(obj, path("fairseq_like.pt"))


def write_parameters():
    model, _ = small_state_dict()
    torch.save(dict(model.named_parameters()), path("parameters.pt"))  # _rebuild_parameter


def legacy_save(obj, name, **kwargs):
    """torch.save in the pre-1.6 format: magic, protocol, sys_info, object, key list, records."""
    torch.save(obj, path(name), _use_new_zipfile_serialization=False, **kwargs)


def write_legacy():
    _, sd = small_state_dict()
    legacy_save(sd, "legacy.pt")


def write_legacy_variants():
    """The zip fixtures' contents again in the legacy format (storage keys are heap addresses)."""
    t = torch.arange(6, dtype=torch.float32).view(2, 3)
    legacy_save({"embed.weight": t, "head.weight": t, "row": t[1]}, "legacy_shared.pt")
    base = torch.arange(20, dtype=torch.float32).view(4, 5)
    legacy_save({"transposed": base.t(), "sliced": base[1:, 2:], "column": base[:, 3]}, "legacy_views.pt")
    legacy_save({
        "half": torch.tensor([1.0, -2.5, 65504.0, 2.0 ** -24, 0.0], dtype=torch.float16),
        "bf16": torch.tensor([1.0, -3.0, 2.0 ** 100], dtype=torch.bfloat16),
        "double": torch.tensor([[0.125, -7.0]], dtype=torch.float64),
        "long": torch.tensor([1, -2, 2 ** 40], dtype=torch.int64),
        "scalar": torch.tensor(3.5),
        "empty": torch.zeros(0, 3),
    }, "legacy_dtypes.pt")
    _, sd = small_state_dict()
    legacy_save(sd, "legacy_proto4.pt", pickle_protocol=4)  # FRAME in every pickle
    model, sd = small_state_dict()
    model.half()
    args = argparse.Namespace(arch="linformer_roberta_base", lr=[0.0001], fp16=True)
    legacy_save({"args": args, "model": model.state_dict(), "extra_state": {"epoch": 3}}, "legacy_fairseq_like.pt")
    legacy_save(Tiny(), "legacy_module.pt")  # a whole nn.Module: ('module', cls, file, source) ids


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(2))


def write_legacy_golden_expected():
    """Per tensor of the real legacy golden file: name, dtype, shape, FNV-1a 64 of its float32 values
    (contiguous, little-endian), as torch.load reads them. test_readers.cc compares its own reading."""
    golden = os.path.join(HERE, "..", "golden_layouts", "lucidrains_share_kv_legacy", "checkpoint.pt")
    sd = torch.load(golden)
    lines = []
    for name, t in sd.items():
        raw = t.float().contiguous().numpy().tobytes()
        h = 0xcbf29ce484222325
        for b in raw:
            h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
        shape = ",".join(str(d) for d in t.shape) or "-"
        lines.append(f"{name} {str(t.dtype).replace('torch.', '')} {shape} {h:016x}\n")
    with open(path("legacy_golden_expected.txt"), "w") as f:
        f.write("".join(lines))


def write_torchscript():
    torch.jit.save(torch.jit.script(torch.nn.Linear(2, 2)), path("torchscript.pt"))


def write_malicious():
    """A torch-layout zip whose data.pkl (protocol 2, written by hand) calls posix.system('id')."""
    pkl = (b"\x80\x02"                      # PROTO 2
           b"cposix\nsystem\n"              # GLOBAL posix.system
           b"q\x00"                         # BINPUT 0
           b"X\x02\x00\x00\x00id"           # BINUNICODE 'id'
           b"q\x01"                         # BINPUT 1
           b"\x85"                          # TUPLE1
           b"q\x02"                         # BINPUT 2
           b"R"                             # REDUCE
           b"q\x03"                         # BINPUT 3
           b".")                            # STOP
    with zipfile.ZipFile(path("malicious_system.pt"), "w", zipfile.ZIP_STORED) as z:
        for name, data in (("archive/data.pkl", pkl), ("archive/version", b"3\n")):
            z.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), data)


def write_overlapping_views():
    """A valid linfer-layout model (64 layers, dim 256) whose every tensor is a distinct view of one
    small storage: the dense matrices [256, 256] with strides (1, 1), each at its own offset, so
    that none is the same view as another. A small file that would materialize about 100 MB of f32
    weights. Each view stays under tensor_to_f32's per-view expansion limit; the converter's
    overall budget must refuse it."""
    import sys
    sys.path.insert(0, os.path.join(HERE, "..", "..", "tools", "python", "reference"))
    import linfer_ref
    cfg = linfer_ref.resolve_config(dict(vocab_size=16, dim=256, num_layers=64, num_heads=4, head_dim=64,
                                         ff_dim=256, max_seq_len=16, proj_len=4, qkv_bias=False,
                                         ff_bias=False))
    model = linfer_ref.LinferEncoder(cfg)
    base = torch.arange(4096, dtype=torch.float32) / 4096
    sd = collections.OrderedDict()
    for i, (name, t) in enumerate(model.state_dict().items()):
        strides = [1] * t.dim()  # every row starts one value after the previous: overlapping rows
        sd[name] = base.as_strided(tuple(t.shape), tuple(strides), i % 3000)
    torch.save({"linfer_config": json.dumps(cfg), "state_dict": sd}, path("overlapping_views.pt"))


def main():
    write_plain()
    write_shared()
    write_views()
    write_dtypes()
    write_with_config()
    write_proto4()
    write_fairseq_like()
    write_parameters()
    write_legacy()
    write_legacy_variants()
    write_legacy_golden_expected()
    write_torchscript()
    write_malicious()
    write_overlapping_views()
    for name in sorted(os.listdir(HERE)):
        if name.endswith(".pt"):
            print(f"{name}: {os.path.getsize(path(name))} bytes")


if __name__ == "__main__":
    main()
