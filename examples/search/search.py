# SPDX-License-Identifier: Apache-2.0
"""On-device semantic search with all-MiniLM-L6-v2 (int8): embeds a text collection once into an
index, then prints the top 5 lines for each query with their cosine scores.

    python3 examples/search/search.py [--model M.lfm] [--collection FILE] [--index FILE.npy] QUERY...

Defaults: build-hf/minilm-int8.lfm (bash scripts/minilm.sh), examples/data/search_collection.txt,
and the index beside the model (rebuilt when the collection or the model is newer). Run it from
the project's folder with liblinfer and the package importable (examples/search/run.sh does).
"""
import argparse
import os
import sys
import time

import numpy as np

import linfer


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("query", nargs="+")
    ap.add_argument("--model", default="build-hf/minilm-int8.lfm")
    ap.add_argument("--collection", default="examples/data/search_collection.txt")
    ap.add_argument("--index", default=None)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    index_path = args.index or os.path.splitext(args.model)[0] + ".search-index.npy"
    model = linfer.Model(args.model)
    with open(args.collection, encoding="utf-8") as f:
        lines = f.read().split("\n")[:-1]
    fresh = os.path.exists(index_path) and os.path.getmtime(index_path) >= max(
        os.path.getmtime(args.collection), os.path.getmtime(args.model))
    if fresh:
        index = np.load(index_path)
    if not fresh or index.shape != (len(lines), model.info["dim"]):
        t0 = time.perf_counter()
        index = model.embed(lines, num_threads=args.threads)
        np.save(index_path, index)
        print(f"index: {len(lines)} lines embedded in {time.perf_counter() - t0:.1f} s -> {index_path}", file=sys.stderr)
    for query in args.query:
        t0 = time.perf_counter()
        q = model.embed(query, num_threads=args.threads)
        scores = index @ q  # the vectors are unit length: dot product = cosine
        top = np.argsort(-scores)[:5]
        ms = 1000 * (time.perf_counter() - t0)
        print(f"{query}  ({ms:.1f} ms)")
        for i in top:
            print(f"  {scores[i]:.3f}  {lines[i]}")


if __name__ == "__main__":
    main()
