"""The engine's settings: how requests share a model, and the weights' number formats."""

BATCHED, NAIVE = "batched", "naive"
GENERATION_MODES = (BATCHED, NAIVE)
DTYPES = ("float32", "bfloat16")
QUANTIZE_OPTIONS = ("", "int8")
# "as_shipped": the GGUF file's 4-bit layers multiplied from its own blocks (shipped.py).
WEIGHTS_OPTIONS = ("", "as_shipped")
