"""Numba chunk kernels of softmax at a (possibly N-rescaled) logit scale: each sequence reduced on the fly to its
attention output deviation ``o - mu`` and IPR ``sum_i w_i^2``.

Private. Both kernels run their sampler's routine (``_kernels_draws``, ``keep=False``: online max-subtracted softmax,
values accumulated linearly) under fast-math; the arguments are packed as in ``_kernel_args``. The driver adds ``mu``
back where a mean is reported. Each kernel has a NumPy twin in ``_twins_attn.py`` with the same arguments that draws
the same variates (``_twins_draws``), materialises q, K and V explicitly and evaluates ``softmax(scale q.K^T) V - mu``
directly.
"""

from __future__ import annotations

import numba as nb

from varsim._common.numba_cache import install as _install_cache

from ._kernels_draws import full_sampler, logits_sampler

_install_cache()  # before any @njit(cache=True): the cache stamp covers the modules a kernel compiles in

_FAST = dict(nogil=True, cache=True, fastmath={"reassoc", "contract"})


@nb.njit(**_FAST)
def full_chunk(state, p, tables, o_out, y2_out):
    """Full sampler (``p`` a ``FullSampler``): ``o_out[s] = o - mu`` (float64[n_seq, d_v]) and ``y2_out[s] =
    sum_i w_i^2`` (float64[n_seq]) per sequence; keys in blocks of ``KEY_BLOCK``, neither K nor V stored."""
    full_sampler(state, p, tables, o_out, y2_out, False, None, None)


@nb.njit(**_FAST)
def logits_chunk(state, p, tables, o_out, y2_out):
    """Logits sampler (``p`` a ``LogitsSampler``, i.i.d. Gaussian keys): the logits ``beta g_i`` drawn directly, in
    blocks of ``LOGIT_BLOCK``; ``o_out`` float64[n_seq, d_v] (``o - mu``; ``d_v = 0``: no values are drawn at all,
    the Rao-Blackwell path) and ``y2_out`` float64[n_seq]."""
    logits_sampler(state, p, tables, o_out, y2_out, False, None, None)
