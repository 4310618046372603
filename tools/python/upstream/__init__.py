"""Re-creations of three public Linformer libraries (state_dict names and eval-mode forward).

lucidrains.py        lucidrains/linformer 0.2.3 (LinformerLM, Linformer)
fairseq_linformer.py fairseq examples/linformer (linformer_roberta) plus checkpoint writer
tatp22.py            tatp22/linformer-pytorch 0.19.3 (LinformerLM, learnable E/F only)

Written for linfer's converter tests; see tools/python/README.md. No upstream code is included.
"""
