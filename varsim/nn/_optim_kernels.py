"""The Adam update as one Numba pass per parameter, beside its plain NumPy reference (same arguments).

Private: :class:`varsim.nn.optim.Adam` calls the kernel; the tests compare it with the reference bit for bit.
Compiled on first call (``cache=True`` keeps the machine code on disk), never at import.

``adam_update(p, g, m, v, decayed, decoupled, c)`` updates the flat arrays ``p`` (the parameter), ``m`` and ``v``
(its moments) in place from the gradient ``g``, all of one floating dtype; ``c`` holds the step's constants in
that dtype, in the order of :data:`CONSTANTS`. Per entry, each operation rounded to the dtype, in this order::

    g = g * scale                                   (only when scale != 1)
    p = p * (1 - lr wd)       if decayed and decoupled (AdamW)
    g = g + wd * p            if decayed and not decoupled (Adam's L2 term)
    m = m * b1 + (1 - b1) * g
    v = v * b2 + (1 - b2) * (g * g)
    p = p - step * (m / (sqrt(v) / sqrt_bc2 + eps))

The kernel reads and writes each array once (the reference makes a dozen passes); without ``fastmath`` Numba
neither reorders nor fuses the operations, so both give the same bits.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from varsim._common.numba_cache import install as _install_cache

_install_cache()  # before any @njit(cache=True)

__all__ = ["adam_update", "adam_update_reference", "CONSTANTS"]

#: the entries of the constants array ``c``
CONSTANTS = ("scale", "decay_factor", "weight_decay", "beta1", "one_minus_beta1", "beta2", "one_minus_beta2",
             "sqrt_bias_correction2", "eps", "step_size")


@nb.njit(nogil=True, cache=True)
def adam_update(p, g, m, v, decayed, decoupled, c):
    # One loop per case, the branch outside it; ``g * scale`` with scale = 1 is g exactly.
    scale, decay_factor, wd, b1, c1 = c[0], c[1], c[2], c[3], c[4]
    b2, c2, sbc2, eps, step = c[5], c[6], c[7], c[8], c[9]
    if decayed and decoupled:
        for i in range(p.size):
            gi = g[i] * scale
            pi = p[i] * decay_factor
            mi = m[i] * b1 + c1 * gi
            vi = v[i] * b2 + c2 * (gi * gi)
            m[i] = mi
            v[i] = vi
            p[i] = pi - step * (mi / (np.sqrt(vi) / sbc2 + eps))
    elif decayed:
        for i in range(p.size):
            gi = g[i] * scale
            gi = gi + wd * p[i]
            mi = m[i] * b1 + c1 * gi
            vi = v[i] * b2 + c2 * (gi * gi)
            m[i] = mi
            v[i] = vi
            p[i] = p[i] - step * (mi / (np.sqrt(vi) / sbc2 + eps))
    else:
        for i in range(p.size):
            gi = g[i] * scale
            mi = m[i] * b1 + c1 * gi
            vi = v[i] * b2 + c2 * (gi * gi)
            m[i] = mi
            v[i] = vi
            p[i] = p[i] - step * (mi / (np.sqrt(vi) / sbc2 + eps))


def adam_update_reference(p, g, m, v, decayed, decoupled, c):
    scale, decay_factor, wd, b1, c1, b2, c2, sbc2, eps, step = c
    g = g.copy()
    if scale != 1.0:
        g *= scale
    if decayed:
        if decoupled:
            p *= decay_factor
        else:
            g += wd * p
    m *= b1
    m += c1 * g
    v *= b2
    v += c2 * (g * g)
    denom = np.sqrt(v)
    denom /= sbc2
    denom += eps
    p -= step * (m / denom)
