# SPDX-License-Identifier: Apache-2.0
"""python3 -m linfer MODEL.lfm (--ids FILE | --text FILE) [--dump OUT.npy] [--threads N]

Runs a model once and prints a summary, as linfer-run does (tools/run/linfer_run.cc): --ids reads
whitespace-separated token ids, --text takes each byte of the file as one token, --dump writes the
output as a .npy file instead. On bad input it prints one line and exits non-zero (2: usage,
1: everything else).
"""

import os
import re
import sys
import time

import numpy as np

import linfer

USAGE = "usage: python3 -m linfer MODEL.lfm (--ids FILE | --text FILE) [--dump OUT.npy] [--threads N]"


_INTEGER = re.compile(rb"[+-]?[0-9]+\Z")


class _Fail(Exception):
    def __init__(self, message, code=1):
        super().__init__(message)
        self.code = code


def _parse(argv):
    model = None
    opts = {}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("--ids", "--text", "--dump", "--threads"):
            if i + 1 >= len(argv):
                raise _Fail(a + " needs a value", 2)
            opts[a] = argv[i + 1]
            i += 2
            continue
        if a in ("-h", "--help"):
            print(USAGE)
            raise SystemExit(0)
        if a.startswith("-") and a != "-":
            raise _Fail("unknown option '%s'" % a, 2)
        if model is not None:
            raise _Fail("unexpected argument '%s'" % a, 2)
        model = a
        i += 1
    if model is None:
        raise _Fail("no model given (%s)" % USAGE, 2)
    if ("--ids" in opts) == ("--text" in opts):
        raise _Fail("give exactly one of --ids and --text", 2)
    threads = opts.get("--threads", "1")
    if not re.match(r"[0-9]+\Z", threads) or not 1 <= int(threads) <= 256:
        raise _Fail("--threads must be an integer in [1, 256], got '%s'" % threads, 2)
    return model, opts, int(threads)


def _read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise _Fail("cannot open '%s': %s" % (path, e.strerror or e)) from None


def _read_ids(path):
    ids = []
    for token in _read(path).split():
        v = int(token) if _INTEGER.match(token) else None  # what strtoll takes, no more
        if v is None or not -(1 << 31) <= v < (1 << 31):
            raise _Fail("'%s': token %d ('%s') is not an integer id"
                        % (path, len(ids), token[:32].decode("utf-8", "replace")))
        ids.append(v)
    return np.array(ids, dtype=np.int32)


def _write_atomic(path, array):
    tmp = "%s.tmp.%d" % (path, os.getpid())
    try:
        with open(tmp, "wb") as f:
            np.save(f, array)
        os.replace(tmp, path)
    except OSError as e:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise _Fail("cannot write '%s': %s" % (path, e.strerror or e)) from None


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    try:
        model_path, opts, threads = _parse(argv)
        if "--ids" in opts:
            ids = _read_ids(opts["--ids"])
        else:
            ids = np.frombuffer(_read(opts["--text"]), dtype=np.uint8).astype(np.int32)
        if ids.size == 0:
            raise _Fail("the input has no tokens")
        try:
            model = linfer.Model(model_path)
        except linfer.Error as e:
            raise _Fail("%s: %s" % (model_path, e)) from None
        info = model.info
        if ids.size > info["max_seq_len"]:
            raise _Fail("the input has %d tokens; the model accepts at most %d"
                        % (ids.size, info["max_seq_len"]))
        session = model.session(max_seq_len=int(ids.size), num_threads=threads)
        t0 = time.perf_counter()
        out = session.run(ids)
        ms = (time.perf_counter() - t0) * 1e3
        if "--dump" in opts:
            _write_atomic(opts["--dump"], out)
            return 0
    except linfer.Error as e:
        print("linfer: %s" % e, file=sys.stderr)
        return 1
    except _Fail as e:
        print("linfer: %s" % e, file=sys.stderr)
        return e.code
    kind = {"lm_logits": "logits", "classifier": "class logits"}.get(info["head"], "hidden states")
    print("model: %s, %d layers, dim %d, %d heads, n=%d, k=%d, %s weights"
          % (info["attention_kind"], info["num_layers"], info["dim"], info["num_heads"],
             info["max_seq_len"], info["proj_len"], info["weight_dtype"]))
    print("input: %d tokens; output: %s [%d, %d]; %.3f ms with %d thread%s (one cold run, through "
          "Python)" % (ids.size, kind, out.shape[0], out.shape[1], ms, threads,
                       "" if threads == 1 else "s"))
    if info["head"] == "classifier":
        best = int(np.argmax(out[0]))
        print("predicted class: %d (logit %.4f)" % (best, out[0, best]))
    print("first row:" + "".join(" %.5f" % v for v in out[0, :8]) + (" ..." if out.shape[1] > 8 else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
