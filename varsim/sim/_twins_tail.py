"""NumPy twins of ``_kernels_tail`` (same names and arguments, the same numbers bit for bit); slow, for small sizes."""

from __future__ import annotations

import numpy as np

from . import _twins_rng as R
from ._kernels_rng import GAUSSIAN
from ._kernels_tail import REQUEST
from ._twins_draws import sample_logits


def _histogram(x, inv_step: float, n_bins: int) -> np.ndarray:
    x = np.asarray(x, np.float64)
    b = np.minimum((np.abs(x) * inv_step).astype(np.int64), n_bins)
    return np.stack([np.bincount(b[x >= 0], minlength=n_bins + 1), np.bincount(b[x < 0], minlength=n_bins + 1)])


def _gaussians(state, n: int) -> np.ndarray:
    """``n`` variates in the kernels' requests of ``REQUEST``."""
    return np.concatenate([R.draw(state, min(REQUEST, n - i), GAUSSIAN) for i in range(0, n, REQUEST)])


def tail_histogram(state, n, inv_step, n_bins, zw, zk, zf):
    """Twin of ``_kernels_tail.tail_histogram`` (the tables are the twin generator's own)."""
    return _histogram(_gaussians(state, n), inv_step, n_bins)


def maxima(state, n, reps, zw, zk, zf):
    """Twin of ``_kernels_tail.maxima``."""
    return np.array([_gaussians(state, n).max() for _ in range(reps)], np.float32)


def logits_maxima(state, p, n_seq, tables, inv_step, n_bins):
    """Twin of ``_kernels_tail.logits_maxima``: the logits replayed by ``_twins_draws.sample_logits``."""
    logits, _v = sample_logits(state, p, n_seq, 0)
    return logits.max(axis=1), _histogram(logits.ravel(), inv_step, n_bins)
