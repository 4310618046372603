"""Re-creations of public model libraries (state_dict names and eval-mode forward).

lucidrains.py        lucidrains/linformer 0.2.3 (LinformerLM, Linformer)
fairseq_linformer.py fairseq examples/linformer (linformer_roberta) plus checkpoint writer
tatp22.py            tatp22/linformer-pytorch 0.19.3 (LinformerLM, learnable E/F only)
performer.py         lucidrains/performer-pytorch 1.1.4 (PerformerLM, Performer)
hf_longformer.py     Hugging Face transformers Longformer (masked LM, classification, model)
hf_bigbird.py        Hugging Face transformers BigBird (masked LM, classification, model)

Written for linfer's converter tests; see tools/python/README.md. No upstream code is included.
"""
