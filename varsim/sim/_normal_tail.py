"""The normal generator's tail certificate: counts of the simulators' own normal draws against the exact law.

The simulators draw every Gaussian key, logit and value with the ziggurat of ``_kernels_rng`` (1024 layers, the tail
beyond ``r = 4.0388`` by Marsaglia's exact method); at ``N = 2^20`` the largest logit sits about 5 standard
deviations out, in that tail. This module turns draws into the certificate's statistics (NumPy/SciPy only; the
draws come from ``_kernels_tail``, imported when a function runs):

- :func:`tail_rows`: for each threshold ``z`` of the grid ``1/8, 2/8, ..., z_max``, the counts of ``X >= z``,
  ``X <= -z`` and ``|X| >= z`` against ``n Q(z)`` (``Q(z) = erfc(z / sqrt 2) / 2``, exact), the binomial standard
  error ``sqrt(n p (1 - p))``, the z-score and the exact two-sided binomial p-value (doubled smaller tail, capped at
  1), which stays right where the expected count is small (``z = 6.5`` at ``1e10`` draws expects 0.8);
- :func:`max_pit`: the maximum ``M`` of ``N`` draws mapped through its exact law, ``U = Phi(M)^N``, uniform on
  (0, 1) for a correct generator; its KS p-value and the mean of ``-ln U`` (Exp(1): mean 1, standard error
  ``1/sqrt(reps)``);
- :func:`tail_histogram` / :func:`maxima_by_n` / :func:`logits_maxima_by_n`: the draws, split into work items whose
  streams are keyed ``(stream, item)`` or ``(n, 0)`` (never by thread), in threads (the kernels release the GIL).
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from scipy import special, stats

from ._rngstate import new_state

__all__ = ["INV_STEP", "P_FLOOR", "tail_rows", "failures", "max_pit", "tail_histogram", "maxima_by_n",
           "logits_maxima_by_n"]

INV_STEP = 8.0  # thresholds on a grid of 1/8 (a power of two: |x| * 8 is exact)
P_FLOOR = 2 * stats.norm.sf(5.0)  # two-sided p-value of 5 standard errors (5.7e-7)
_TAIL_STREAM = 0  # tail_histogram's items are keyed (_TAIL_STREAM, item); maxima_by_n's (_MAX_STREAM, n, 0)
_MAX_STREAM = 1


def tail_rows(hist: np.ndarray, z_max: float, inv_step: float = INV_STEP) -> list[dict]:
    """The certificate's rows from a histogram of ``_kernels_tail`` (``n = hist.sum()`` draws), thresholds
    ``b / inv_step`` for ``b = 1 .. z_max * inv_step``; one row per threshold and side (``upper``, ``lower``,
    ``both``)."""
    n = int(hist.sum())
    above = np.cumsum(hist[:, ::-1], axis=1)[:, ::-1]  # above[s, b] = draws of side s with |x| >= b / inv_step
    rows = []
    for b in range(1, int(round(z_max * inv_step)) + 1):
        z = b / inv_step
        q = 0.5 * float(special.erfc(z / math.sqrt(2.0)))
        for side, count, p in (("upper", above[0, b], q), ("lower", above[1, b], q),
                               ("both", above[0, b] + above[1, b], 2 * q)):
            count = int(count)
            se = math.sqrt(n * p * (1.0 - p))
            two_sided = 2.0 * min(stats.binom.cdf(count, n, p), stats.binom.sf(count - 1, n, p))
            rows.append({"z": z, "side": side, "count": count, "expected": n * p, "se": se,
                         "z_score": (count - n * p) / se, "p_value": min(1.0, float(two_sided))})
    return rows


def failures(rows: list[dict], p_floor: float = P_FLOOR) -> list[dict]:
    """The rows whose p-value is below ``p_floor`` (default: 5 standard errors, two-sided)."""
    return [r for r in rows if r["p_value"] < p_floor]


def max_pit(maxima, n: int) -> dict:
    """``U = Phi(M)^n`` of the maxima ``M`` of ``n`` draws each: the KS p-value of ``U`` against the uniform law and
    the mean of ``-ln U = -n ln Phi(M)`` (Exp(1)) with its standard error and z-score."""
    m = np.asarray(maxima, np.float64)
    e = -n * special.log_ndtr(m)
    u = np.exp(-e)
    se = 1.0 / math.sqrt(m.size)
    return {"n": int(n), "reps": int(m.size), "ks_pvalue": float(stats.kstest(u, "uniform").pvalue),
            "mean_exceedance": float(e.mean()), "se": se, "z_score": float((e.mean() - 1.0) / se),
            "median_max": float(np.median(m))}


def _run(jobs, threads: int):
    if threads <= 1:
        return [job() for job in jobs]
    with ThreadPoolExecutor(threads) as pool:
        return list(pool.map(lambda job: job(), jobs))


def tail_histogram(seed, n_total: int, items: int, *, threads: int = 1, kernels=None) -> np.ndarray:
    """The histogram (``_kernels_tail.tail_histogram``, grid ``INV_STEP``, ``|x| < 64``) of ``n_total`` draws in
    ``items`` work items (item ``k`` draws ``n_total // items`` variates, the first ``n_total % items`` one more,
    from the stream keyed ``(0, k)``); ``kernels`` replaces the kernel module (the tests' planted defects)."""
    if kernels is None:
        from . import _kernels_tail as kernels
    from ._ziggurat import kernel_tables

    tables = kernel_tables()
    n_bins = int(64 * INV_STEP)
    base, extra = divmod(int(n_total), int(items))
    jobs = [lambda k=k: kernels.tail_histogram(new_state(seed, _TAIL_STREAM, k), base + (k < extra), INV_STEP,
                                               n_bins, *tables) for k in range(items)]
    return np.sum(_run(jobs, threads), axis=0)


def maxima_by_n(seed, reps_by_n: dict, *, threads: int = 1, kernels=None) -> dict:
    """``{n: float32[reps] maxima of n draws}`` for ``reps_by_n = {n: reps}``, each ``n`` from the stream keyed
    ``(1, n, 0)``."""
    if kernels is None:
        from . import _kernels_tail as kernels
    from ._ziggurat import kernel_tables

    tables = kernel_tables()
    keys = sorted(reps_by_n)
    jobs = [lambda n=n: kernels.maxima(new_state(seed, _MAX_STREAM, n, 0), n, reps_by_n[n], *tables) for n in keys]
    return dict(zip(keys, _run(jobs, threads)))


def logits_maxima_by_n(seed, reps_by_n: dict, *, threads: int = 1) -> tuple[dict, np.ndarray]:
    """The same through the logits sampler of ``simulate(sampler="logits")`` (fixed ``beta = 1``, no values): the
    maxima of each ``n`` (chunk state keyed ``(n, 0)``, as ``simulate`` keys chunk 0 at length ``n``) and the
    histogram of every logit drawn."""
    from . import _kernels_tail as kernels
    from ._kernel_args import LogitsSampler
    from ._kernels_rng import GAUSSIAN
    from ._ziggurat import kernel_tables

    tables = kernel_tables()
    n_bins = int(64 * INV_STEP)
    keys = sorted(reps_by_n)

    def job(n):
        p = LogitsSampler(int(n), 1.0, False, 1, 1.0, GAUSSIAN, np.empty(0), 1.0)
        return kernels.logits_maxima(new_state(seed, n, 0), p, reps_by_n[n], tables, INV_STEP, n_bins)

    out = _run([lambda n=n: job(n) for n in keys], threads)
    return {n: o[0] for n, o in zip(keys, out)}, np.sum([o[1] for o in out], axis=0)
