# SPDX-License-Identifier: Apache-2.0
"""The upstream libraries behind tests/golden_layouts.

packages.py          the PyPI packages themselves (requirements.txt; scripts/upstream-venv.sh):
                     linformer (lucidrains), linformer-pytorch (tatp22), performer-pytorch,
                     reformer-pytorch, transformers (Longformer, BigBird)
fairseq_linformer.py a re-creation of fairseq examples/linformer (linformer_roberta) plus its
                     checkpoint writer: fairseq does not install beside Debian's torch
check_upstream.py    independent numpy checks of the goldens and the packages
compare_goldens.py   regenerated goldens against the committed ones

See tools/python/README.md. No upstream code is included.
"""
