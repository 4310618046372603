#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Runs every command of the documentation that starts a built tool, so that the docs cannot rot.

    /usr/bin/python3 tests/docs/run_doc_commands.py --source . --bin build/bin --work build/test_tmp/docs

Reads README.md and docs/*.md. A command is a line of a code block (fenced, or indented by four
spaces) whose first word is build/bin/<tool>, or an `echo "..." | build/bin/<tool> ...` pipeline;
a trailing "# comment" is dropped. Each runs with bash in a sandbox folder where:
  - examples/, tests/ and tools/ are links to the source tree (the shipped models and data);
  - the files the docs use as placeholders exist as small stand-ins with the same interface:
    model.pt (a byte-level LM checkpoint with n = 2048), lucid.pt and args.json (a lucidrains
    checkpoint and its constructor arguments), ids.txt, input.txt, S.safetensors, and the
    benchmark suite's tools/bench/suite/work/{S,M}_{f32,f16,int8}.lfm (tiny models with the
    suite models' n, so every documented --seq-len is valid), build-hf/minilm-{f32,f16,int8}.lfm
    (a tiny pooled model with a WordPiece vocabulary), model.safetensors with config.json and
    tokenizer.json (a tiny LM with the test Unigram tokenizer.json's vocabulary);
and build/bin/ is this build's tool folder. The test fails, listing them, when any command exits
non-zero. Needs torch (Debian's python3-torch) for the stand-ins.
"""
import argparse
import gzip
import os
import re
import shutil
import subprocess
import sys
import time

sys.dont_write_bytecode = True


def doc_files(source):
    files = [os.path.join(source, "README.md")]
    docs = os.path.join(source, "docs")
    files += sorted(os.path.join(docs, f) for f in os.listdir(docs) if f.endswith(".md"))
    return files


PIPED = re.compile(r"^echo (\"[^\"]*\"|'[^']*') \| build/bin/")


def commands_in(path):
    """(line number, command) of every build/bin/ command in the file's code blocks."""
    out = []
    fenced = False
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            stripped = line.strip()
            if stripped.startswith("```"):
                fenced = not fenced
                continue
            in_block = fenced or line.startswith("    ")
            if in_block and (stripped.startswith("build/bin/") or PIPED.match(stripped)):
                command = re.sub(r"\s+#.*$", "", stripped)
                out.append((number, command))
    return out


def make_stand_ins(source, work, bindir):
    sys.path.insert(0, os.path.join(source, "tools", "python", "reference"))
    import torch
    import linfer_ref

    def model(n, **extra):
        cfg = dict(vocab_size=256, dim=32, num_layers=2, num_heads=2, head_dim=16, ff_dim=64,
                   max_seq_len=n, proj_len=16, head="lm")
        cfg.update(extra)
        cfg = linfer_ref.resolve_config(cfg)
        m = linfer_ref.LinferEncoder(cfg)
        linfer_ref.init_random(m, seed=3)
        return m, cfg

    m, cfg = model(2048)
    linfer_ref.save_torch(m, cfg, os.path.join(work, "model.pt"))
    lucid = os.path.join(source, "tests", "golden_layouts", "lucidrains_lm")
    shutil.copy(os.path.join(lucid, "checkpoint.pt"), os.path.join(work, "lucid.pt"))
    shutil.copy(os.path.join(lucid, "config.json"), os.path.join(work, "args.json"))
    with open(os.path.join(work, "ids.txt"), "w") as f:
        f.write(" ".join(str((i * 37) % 256) for i in range(300)) + "\n")
    with open(os.path.join(work, "input.txt"), "w") as f:
        f.write("A small text for a byte-level model.\n" * 10)
    m, cfg = model(8192)
    linfer_ref.save_safetensors(m, cfg, os.path.join(work, "S.safetensors"))
    bench = os.path.join(work, "tools", "bench", "suite", "work")
    os.makedirs(bench, exist_ok=True)
    stand_ins = {"S": os.path.join(work, "S.safetensors")}
    m, cfg = model(4096)
    stand_ins["M"] = os.path.join(work, "M.safetensors")
    linfer_ref.save_safetensors(m, cfg, stand_ins["M"])
    # build-hf/minilm-{f32,f16,int8}.lfm (scripts/minilm.sh): a small mean-pooled, normalized model
    # with a WordPiece vocabulary, so that the linfer-embed commands run.
    m, cfg = model(256, head="none")
    linfer_ref.save_torch(m, cfg, os.path.join(work, "embedder.pt"))
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    with open(os.path.join(work, "vocab.txt"), "w") as f:
        f.write("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + letters + ["##" + c for c in letters]) + "\n")
    os.makedirs(os.path.join(work, "build-hf"))
    for dtype in ("f32", "f16", "int8"):
        subprocess.run([os.path.join(bindir, "linfer-convert"), os.path.join(work, "embedder.pt"), "--tokenizer",
                        os.path.join(work, "vocab.txt"), "--pooling", "mean", "--normalize", "--dtype", dtype,
                        "-o", os.path.join(work, "build-hf", f"minilm-{dtype}.lfm")], check=True, stdout=subprocess.DEVNULL)
    # model.safetensors, config.json and tokenizer.json (docs/tokenizers.md's Unigram conversion):
    # a tiny lucidrains LM with the test tokenizer.json's 4,002 pieces, in safetensors.
    xlmr = os.path.join(work, "xlmr")
    os.makedirs(xlmr)
    subprocess.run([sys.executable, os.path.join(source, "tests", "tokenizers", "make_model.py"), "4002",
                    os.path.join(xlmr, "model.pt"), os.path.join(work, "config.json")], check=True)
    from safetensors_file import write_safetensors
    state = torch.load(os.path.join(xlmr, "model.pt"))
    write_safetensors(os.path.join(work, "model.safetensors"), {k: v.numpy() for k, v in state.items()}, {})
    with gzip.open(os.path.join(source, "tests", "tokenizers", "xlmr_unigram_tokenizer.json.gz")) as f_in, \
            open(os.path.join(work, "tokenizer.json"), "wb") as f_out:
        shutil.copyfileobj(f_in, f_out)
    return bench, stand_ins


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--timeout", type=float, default=600)
    args = ap.parse_args()
    source, bindir, work = (os.path.abspath(p) for p in (args.source, args.bin, args.work))
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    for name in ("examples", "tests"):
        os.symlink(os.path.join(source, name), os.path.join(work, name))
    # tools/: the source tree's folders, with the suite's work folder made here.
    os.makedirs(os.path.join(work, "tools", "bench", "suite"))
    for name in os.listdir(os.path.join(source, "tools")):
        if name != "bench":
            os.symlink(os.path.join(source, "tools", name), os.path.join(work, "tools", name))
    os.makedirs(os.path.join(work, "build"))
    os.symlink(bindir, os.path.join(work, "build", "bin"))
    bench, stand_ins = make_stand_ins(source, work, bindir)
    for model, st in stand_ins.items():
        for dtype in ("f32", "f16", "int8"):
            subprocess.run([os.path.join(bindir, "linfer-convert"), st, "-o",
                            os.path.join(bench, f"{model}_{dtype}.lfm"), "--dtype", dtype],
                           check=True, stdout=subprocess.DEVNULL)

    failures, count = [], 0
    for doc in doc_files(source):
        for number, command in commands_in(doc):
            count += 1
            where = f"{os.path.relpath(doc, source)}:{number}"
            t0 = time.time()
            try:
                r = subprocess.run(["bash", "-c", command], cwd=work, capture_output=True, text=True,
                                   timeout=args.timeout)
                ok, output = r.returncode == 0, (r.stdout + r.stderr).strip()
            except subprocess.TimeoutExpired:
                ok, output = False, f"timed out after {args.timeout:.0f} s"
            print(f"{'ok  ' if ok else 'FAIL'} {where} ({time.time() - t0:.1f} s): {command}")
            if not ok:
                failures.append((where, command, output.splitlines()[-3:]))
    print(f"{count} documented commands, {len(failures)} failed")
    for where, command, tail in failures:
        print(f"\n{where}: {command}\n  " + "\n  ".join(tail))
    if count == 0:
        print("no documented commands found: the extraction is broken")
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
