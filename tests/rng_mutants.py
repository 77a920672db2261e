"""Planted defects in the ziggurat's tail, compiled from the kernels' own code with one piece replaced.

``mutant_kernels(...)`` returns a stand-in for ``varsim.sim._kernels_tail`` whose ``tail_histogram``, ``maxima``
and ``logits_maxima`` run the real ``_draw``, ``_zig_slow`` and logits sampler, recompiled (uncached) from their
Python source with module globals in which the tail's constant ``r`` or the tail sampler itself is replaced. The
production kernels are untouched: the copies live in their own globals dictionaries.
"""

from __future__ import annotations

import math
import types

import numba as nb

from varsim.sim import _kernels_draws as KD
from varsim.sim import _kernels_rng as K
from varsim.sim import _kernels_tail as KT

R_256 = 3.6541528853610088  # the 256-layer ziggurat's tail edge (Marsaglia & Tsang 2000): right constant, wrong table


def _clone(dispatcher, namespace: dict, **options):
    """A fresh (uncached) Numba function from ``dispatcher``'s Python source, resolving its globals in ``namespace``."""
    f = dispatcher.py_func
    g = types.FunctionType(f.__code__, namespace, f.__name__, f.__defaults__, f.__closure__)
    return nb.njit(nogil=True, **options)(g)


@nb.njit(nogil=True)
def _tail_exponential(a0, a1, a2, a3):
    """Wrong law: ``r + Exp(rate r)`` without Marsaglia's acceptance test (the exponential envelope itself)."""
    u1, a0, a1, a2, a3 = K._open_uniform(a0, a1, a2, a3)
    edge = K._ZF[K._TAIL]
    return float(edge - math.log(u1) / edge), a0, a1, a2, a3


def mutant_kernels(*, tail_edge: float | None = None, wrong_law: bool = False):
    """The tail kernels with the tail sampler's ``r`` set to ``tail_edge`` (tables unchanged) or, with
    ``wrong_law``, the tail drawn from ``r + Exp(r)`` without rejection."""
    rng_ns = dict(vars(K))
    if tail_edge is not None:
        zf = K._ZF.copy()
        zf[K._TAIL] = tail_edge
        rng_ns["_ZF"] = zf
    rng_ns["_zig_tail"] = _tail_exponential if wrong_law else _clone(K._zig_tail, rng_ns)
    rng_ns["_zig_slow"] = _clone(K._zig_slow, rng_ns)
    rng_ns["_draw"] = _clone(K._draw, rng_ns)
    draws_ns = dict(vars(KD), _draw=rng_ns["_draw"])
    tail_ns = dict(vars(KT), _draw=rng_ns["_draw"], logits_sampler=_clone(KD.logits_sampler, draws_ns,
                                                                           inline="always"))
    return types.SimpleNamespace(**{name: _clone(getattr(KT, name), tail_ns)
                                    for name in ("tail_histogram", "maxima", "logits_maxima")})
