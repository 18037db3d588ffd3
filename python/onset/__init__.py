"""onset from Python: a study's results as pandas DataFrames, and trained models as PyTorch
modules or Hugging Face transformers models (docs/python.md).

    import onset
    results = onset.open("onset-data")           # a data directory, or a coordinator's HTTP API
    results.cells("demo")                        # a row per cell: axes, state, final metrics
    results.metrics("demo", names=["niah/acc"])  # a row per metric point
    results.compare("demo", metric="niah/acc", threshold=0.5)   # `onset compare --json`
    model = onset.load_model("export")           # an `onset-train export` directory

    python -m onset.hf EXPORT_DIR OUT_DIR        # a transformers model directory
    python -m onset.reference EXPORT_DIR --tokens 256,1,2   # the reference's logits

The names below are imported when first used, so that `onset.reference` needs torch alone and
the results need no torch.
"""

__all__ = ["open", "Results", "load_model", "OnsetNetwork", "OnsetCommandError"]

_LAZY = {
    "open": ("onset.results", "open"),
    "Results": ("onset.results", "Results"),
    "OnsetCommandError": ("onset.results.command", "OnsetCommandError"),
    "load_model": ("onset.loading", "load_model"),
    "OnsetNetwork": ("onset.network", "OnsetNetwork"),
}


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module 'onset' has no attribute {name!r}")
    import importlib

    module, attribute = _LAZY[name]
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
