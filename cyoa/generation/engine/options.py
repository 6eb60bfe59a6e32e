"""The engine's settings: how requests share a model, and the weights' number formats."""

BATCHED, NAIVE = "batched", "naive"
GENERATION_MODES = (BATCHED, NAIVE)
DTYPES = ("float32", "bfloat16")
QUANTIZE_OPTIONS = ("", "int8")
