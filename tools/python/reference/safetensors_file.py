# SPDX-License-Identifier: Apache-2.0
"""The one safetensors reader and writer of the Python tools (numpy only, no torch).

write_safetensors(path, arrays, metadata) writes the tensors in the given order, contiguous, after
a compact JSON header padded with spaces to a multiple of 8 bytes, __metadata__ last.
read_safetensors(path) gives every tensor, in the file's order, as a read-only numpy array of its
own dtype, and the __metadata__ strings. It checks what the format requires: a JSON header, each
tensor's bytes matching its dtype and shape, and the tensors covering the data buffer exactly (no
hole, overlap or trailing byte). Failures raise ValueError naming the file and the problem."""

import json
import struct
from collections import OrderedDict

import numpy as np

DTYPES = {"F32": np.dtype("<f4"), "F16": np.dtype("<f2"), "I64": np.dtype("<i8")}


def read_safetensors(path, dtypes=tuple(DTYPES), aligned=False):
    """Returns (OrderedDict name -> np.ndarray, metadata dict). dtypes: the dtypes the caller
    accepts (any other fails). aligned: the header's length must also be a multiple of 8, as
    linfer_ref's and the safetensors library's writers make it."""

    def fail(what):
        raise ValueError("%s: %s" % (path, what))

    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        fail("shorter than the 8-byte header length")
    (n,) = struct.unpack("<Q", raw[:8])
    if 8 + n > len(raw):
        fail("header length %d past the end of the file" % n)
    if aligned and n % 8:
        fail("header length %d not a multiple of 8" % n)
    header = json.loads(raw[8 : 8 + n].decode("utf-8"), object_pairs_hook=OrderedDict)
    meta = header.pop("__metadata__", None) or {}
    data = raw[8 + n :]
    tensors, spans = OrderedDict(), []
    for name, info in header.items():
        if info["dtype"] not in dtypes:
            fail("tensor %s has dtype %s, expected one of %s" % (name, info["dtype"], ", ".join(dtypes)))
        dtype = DTYPES[info["dtype"]]
        b, e = info["data_offsets"]
        if e - b != dtype.itemsize * int(np.prod(info["shape"], dtype=np.int64)):
            fail("tensor %s: %d bytes for shape %s" % (name, e - b, info["shape"]))
        spans.append((b, e))
        tensors[name] = np.frombuffer(data[b:e], dtype=dtype).reshape(info["shape"])
    pos = 0
    for b, e in sorted(spans):
        if b != pos:
            fail("hole or overlap in the data buffer at byte %d" % b)
        pos = e
    if pos != len(data):
        fail("%d bytes after the last tensor" % (len(data) - pos))
    return tensors, meta


def write_safetensors(path, arrays, metadata):
    """arrays: name -> np.ndarray of float32, float16 or int64, in the order to write them;
    metadata: the __metadata__ strings."""
    names = {np.dtype(np.float32): "F32", np.dtype(np.float16): "F16", np.dtype(np.int64): "I64"}
    header, blobs, offset = OrderedDict(), [], 0
    for name, a in arrays.items():
        dtype = names[a.dtype.newbyteorder("=")]
        data = a.astype(DTYPES[dtype]).tobytes()
        header[name] = {"dtype": dtype, "shape": list(a.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    header["__metadata__"] = metadata
    hbytes = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hbytes += b" " * ((-len(hbytes)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hbytes)))
        f.write(hbytes)
        for b in blobs:
            f.write(b)
