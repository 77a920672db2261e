"""The bias add and ReLU of a linear layer as one Numba pass, beside its plain NumPy reference (same arguments).

Private: :func:`varsim.nn.layers.mlp_forward` calls the kernel; the tests compare it with the reference bit for bit.
Compiled on first call (``cache=True`` keeps the machine code on disk), never at import.

``bias_relu(out, b)``: ``out`` (M, K) C-contiguous, ``b`` (K,) of its dtype; per entry, in place,
``v = out + b`` rounded to the dtype, then ``max(v, 0)`` as ``np.maximum`` gives it (``v`` when ``v > 0`` or NaN,
else +0.0: -0.0 too). Two NumPy passes over the layer's output become one.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from varsim._common.numba_cache import install as _install_cache

_install_cache()  # before any @njit(cache=True)

__all__ = ["bias_relu", "bias_relu_reference"]


@nb.njit(nogil=True, cache=True)
def bias_relu(out, b):
    m, k = out.shape
    for i in range(m):
        for j in range(k):
            v = out[i, j] + b[j]
            out[i, j] = v if v > 0 or v != v else 0.0  # NaN passes; -0.0 becomes +0.0


def bias_relu_reference(out, b):
    """NumPy reference of :func:`bias_relu` (the two passes of ``linear_forward`` and ``relu_forward``)."""
    out += b
    np.maximum(out, 0, out=out)
