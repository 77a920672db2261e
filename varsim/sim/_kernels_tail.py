"""Numba kernels of the normal generator's certificate: tail counts and maxima of many draws, none of them stored.

Private: the entry points of ``benchmarks/certify_normal_tail.py`` and ``tests/test_normal_tail.py``, which check the
generator where the simulators use it (``_kernels_rng._draw``, the logits sampler of ``_kernels_draws``). Each kernel
has a NumPy twin of the same name and arguments in ``_twins_tail.py`` that returns the same numbers bit for bit.

Draw order: ``n`` Gaussian variates are drawn in requests of ``REQUEST`` (the last one shorter), so a kernel's output
is a function of the state and ``n`` only. The histogram bins ``|x|`` on a grid of step ``1 / inv_step`` (a power
of two, so ``|x| * inv_step`` is exact): bin ``b < n_bins`` holds ``b <= |x| inv_step < b + 1`` and bin ``n_bins``
everything beyond; row 0 is ``x >= 0``, row 1 ``x < 0``. The count of ``x >= b / inv_step`` is then ``hist[0, b:]``
summed, exactly, and nothing but the histogram is kept.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from varsim._common.numba_cache import install as _install_cache

from ._kernels_draws import logits_sampler
from ._kernels_rng import GAUSSIAN, _draw, _scratch

_install_cache()  # before any @njit(cache=True): the cache stamp covers the modules a kernel compiles in

REQUEST = 1 << 14  # variates per request
_JIT = dict(nogil=True, cache=True)


@nb.njit(**_JIT)
def _bin_into(hist, x, m, inv_step, n_bins):
    """Add the first ``m`` variates of ``x`` to ``hist`` (see the module docstring)."""
    for j in range(m):
        v = np.float64(x[j])
        side = 1 if v < 0.0 else 0
        b = int(abs(v) * inv_step)
        hist[side, min(b, n_bins)] += 1


@nb.njit(**_JIT)
def tail_histogram(state, n, inv_step, n_bins, zw, zk, zf):
    """int64[2, n_bins + 1]: the histogram of ``n`` Gaussian variates drawn from ``state`` (advanced) by sign and
    ``|x|`` bin."""
    hist = np.zeros((2, n_bins + 1), np.int64)
    scratch = _scratch(REQUEST)
    buf = np.empty(2 * scratch[0].size, np.float32)
    bits = buf.view(np.uint32)
    done = 0
    while done < n:
        m = min(REQUEST, n - done)
        _draw(state, scratch, buf, bits, m, GAUSSIAN, zw, zk, zf)
        _bin_into(hist, buf, m, inv_step, n_bins)
        done += m
    return hist


@nb.njit(**_JIT)
def maxima(state, n, reps, zw, zk, zf):
    """float32[reps]: the maximum of each of ``reps`` consecutive groups of ``n`` Gaussian variates from ``state``
    (each group drawn in its own requests)."""
    out = np.empty(reps, np.float32)
    scratch = _scratch(REQUEST)
    buf = np.empty(2 * scratch[0].size, np.float32)
    bits = buf.view(np.uint32)
    for r in range(reps):
        best = np.float32(-np.inf)
        done = 0
        while done < n:
            m = min(REQUEST, n - done)
            _draw(state, scratch, buf, bits, m, GAUSSIAN, zw, zk, zf)
            for j in range(m):
                best = max(best, buf[j])
            done += m
        out[r] = best
    return out


@nb.njit(**_JIT)
def _keep_max(seq, logits, core, p, o_out, y2_out, extra):
    """The logits sampler's per-sequence reduction for the certificate: ``y2_out[seq]`` receives the largest logit
    and ``extra = (hist, inv_step, n_bins)`` the histogram of all of them."""
    hist, inv_step, n_bins = extra
    best = -np.inf
    for i in range(p.n_keys):
        best = max(best, logits[i])
    y2_out[seq] = best
    _bin_into(hist, logits, p.n_keys, inv_step, n_bins)


@nb.njit(**_JIT)
def logits_maxima(state, p, n_seq, tables, inv_step, n_bins):
    """The logits sampler's chunk (``p`` a ``LogitsSampler``; ``beta_fixed = 1`` and ``d_v = 0`` make its logits the
    raw variates ``g_i``) of ``n_seq`` sequences of ``p.n_keys`` logits: ``(float64[n_seq] maxima,
    int64[2, n_bins + 1] histogram of every logit)``."""
    best = np.empty(n_seq)
    hist = np.zeros((2, n_bins + 1), np.int64)
    logits_sampler(state, p, tables, np.empty((n_seq, 0)), best, True, _keep_max, (hist, inv_step, n_bins))
    return best, hist
