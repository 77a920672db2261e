"""Integer codes and float parameter vectors for the attention variants inside the ``map_*`` kernels.

The registry (``varsim.variants``) declares each variant's kernel branch (``Variant.kernel``, one of
:data:`varsim.variants.KERNELS`) and the parameters packed for it (``Variant.kernel_params``); the Numba kernels
dispatch on the branch's small integer and read the parameters from a float64 vector. ``pack`` and ``unpack`` are the
only places that translate one into the other.
"""

from __future__ import annotations

import numpy as np

from varsim.variants import KERNELS, VARIANTS, get_variant

__all__ = ["SCALED_SOFTMAX", "ADAPTIVE", "TOPK", "ENTMAX15", "SPARSEMAX", "SIGMOID", "pack", "unpack"]

SCALED_SOFTMAX, ADAPTIVE, TOPK, ENTMAX15, SPARSEMAX, SIGMOID = (
    KERNELS.index(k) for k in ("scaled_softmax", "adaptive_temperature", "topk", "entmax15", "sparsemax", "sigmoid"))
# the variant whose NumPy reference a twin runs for each map kernel (the scaled softmax runs softmax on scaled logits)
_OWNER = {KERNELS.index(v.kernel): v for v in VARIANTS.values() if v.kernel != "scaled_softmax"}


def pack(name: str, params: dict, n_keys: int = 1) -> tuple[int, np.ndarray]:
    """``(code, vparams)`` for the variant ``name`` with validated ``params`` at length ``n_keys``.

    A softmax with an N-dependent temperature becomes ``SCALED_SOFTMAX`` with ``vparams = [f(n_keys)]``; the others
    carry their ``kernel_params`` in order (topk: ``[k]``), or ``[0.0]`` when they have none (never empty).
    """
    spec = get_variant(name)
    code = KERNELS.index(spec.kernel)
    if code == SCALED_SOFTMAX:
        return code, np.array([spec.beta_factor(n_keys, **params)], dtype=np.float64)
    if spec.kernel_params:
        return code, np.array([float(params[p]) for p in spec.kernel_params])
    return code, np.zeros(1)


def unpack(code: int, vparams: np.ndarray) -> tuple[str, dict, float]:
    """``(registry name, params, logit factor)`` for a code (the twins call the registry's NumPy reference)."""
    if code == SCALED_SOFTMAX:
        return "softmax", {}, float(vparams[0])
    spec = _OWNER[int(code)]
    kinds = {p.name: p.kind for p in spec.params}
    params = {p: int(v) if kinds[p] == "int" else float(v) for p, v in zip(spec.kernel_params, vparams)}
    return spec.name, params, 1.0
