"""Integer codes and float parameter vectors for the attention variants inside the ``map_*`` kernels.

The registry (``varsim.variants``) names the variants; the Numba kernels dispatch on a small integer and read their
parameters from a float64 vector. ``pack`` is the only place that translates one into the other.
"""

from __future__ import annotations

import numpy as np

from varsim.variants import get_variant

__all__ = ["SCALED_SOFTMAX", "ADAPTIVE", "TOPK", "ENTMAX15", "SPARSEMAX", "SIGMOID", "pack", "unpack"]

SCALED_SOFTMAX, ADAPTIVE, TOPK, ENTMAX15, SPARSEMAX, SIGMOID = range(6)
_CODES = {"adaptive_temperature": ADAPTIVE, "topk": TOPK, "entmax15": ENTMAX15, "sparsemax": SPARSEMAX,
          "sigmoid": SIGMOID}


def pack(name: str, params: dict, n_keys: int = 1) -> tuple[int, np.ndarray]:
    """``(code, vparams)`` for the variant ``name`` with validated ``params`` at length ``n_keys``.

    Softmax with an N-dependent temperature becomes ``SCALED_SOFTMAX`` with ``vparams = [f(n_keys)]``; ``topk``
    carries ``[k]``; the others take no parameter (``[0.0]``, so the vector is never empty).
    """
    spec = get_variant(name)
    if spec.is_scaled_softmax:
        return SCALED_SOFTMAX, np.array([spec.beta_factor(n_keys, **params)], dtype=np.float64)
    if name == "topk":
        return TOPK, np.array([float(params["k"])])
    return _CODES[name], np.zeros(1)


def unpack(code: int, vparams: np.ndarray) -> tuple[str, dict, float]:
    """``(registry name, params, logit factor)`` for a code (the twins call the registry's NumPy reference)."""
    if code == SCALED_SOFTMAX:
        return "softmax", {}, float(vparams[0])
    if code == TOPK:
        return "topk", {"k": int(vparams[0])}, 1.0
    name = {v: k for k, v in _CODES.items()}[int(code)]
    return name, {}, 1.0
