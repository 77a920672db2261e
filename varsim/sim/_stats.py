"""Chunk summaries, batch-means standard errors and the log-log slope (plain NumPy, shared by all samplers).

Each chunk of sequences is reduced to a few sums; a grid point combines its chunks in chunk order. Standard errors
are batch means: the statistic is recomputed inside each chunk and ``SE = sd(chunk values) / sqrt(n_chunks)``,
which makes no distributional assumption about the (very skewed) per-sequence quantities.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["summarise_chunk", "combine_chunks", "loglog_slope"]


def summarise_chunk(dev: np.ndarray | None, y2: np.ndarray, mu: np.ndarray, s1: np.ndarray | None = None) -> dict:
    """Reduce one chunk of per-sequence results.

    ``dev`` (``(S, d_v)`` or None): the outputs' deviations ``o - mu`` from the known value mean ``mu`` (``(d_v,)``);
    working with them keeps the variance exact however large ``mu`` is next to the spread. ``y2`` (``(S,)``):
    ``sum w^2``; ``s1`` (``(S,)`` or None): ``sum w`` for weight maps that do not sum to 1.
    Returns the IPR sum, the per-coordinate mean and centred sum of squares of ``dev``, the sums of the per-sequence
    across-feature mean and (population) variance of ``o = mu + dev``, and the mean / centred sum of squares of
    ``s1``.
    """
    out = {"n": int(y2.size), "y2": float(np.sum(y2))}
    if dev is not None:
        mean = dev.mean(axis=0)
        out["mean"] = mean
        out["ss"] = np.sum((dev - mean) ** 2, axis=0)
        mu_bar = float(mu.mean()) if mu.size else 0.0
        out["gm"] = float(y2.size * mu_bar + np.sum(dev.mean(axis=1)))
        out["gv"] = float(np.sum(((mu - mu_bar) + dev).var(axis=1))) if dev.shape[1] else 0.0
    if s1 is not None:
        m1 = float(s1.mean())
        out["s1_mean"] = m1
        out["s1_ss"] = float(np.sum((s1 - m1) ** 2))
    return out


def _batch_se(values: np.ndarray) -> float:
    return float(np.std(values, ddof=1) / math.sqrt(values.shape[0]))


def _pooled(n_b, m_b, ss_b):
    """Mean and centred sum of squares of the union of chunks (parallel-variance combination), any trailing shape."""
    total = n_b.sum()
    nb = n_b.reshape((-1,) + (1,) * (np.ndim(m_b) - 1))
    m = (nb * m_b).sum(axis=0) / total
    return m, ss_b.sum(axis=0) + (nb * (m_b - m) ** 2).sum(axis=0)


def combine_chunks(chunks: list[dict], mu: np.ndarray, coordinate: int, rb_scale2: float | None) -> dict:
    """Statistics of one grid point from its chunk summaries (in chunk order).

    ``var`` pools the per-coordinate variances (each about its own coordinate mean) by averaging them;
    ``rb_scale2 = sigma_v^2`` selects the Rao-Blackwell estimator
    ``sigma_v^2 mean(sum w^2) + mu_c^2 Var(sum w)`` (REMEDIES 1; the second term only for maps not summing to 1).
    """
    n_b = np.array([c["n"] for c in chunks], dtype=np.float64)
    total = n_b.sum()
    ipr_b = np.array([c["y2"] for c in chunks]) / n_b
    res = {"ipr": float(np.sum([c["y2"] for c in chunks]) / total), "ipr_se": _batch_se(ipr_b)}
    have_o = "mean" in chunks[0]
    if have_o:
        m_b = np.stack([c["mean"] for c in chunks])  # (B, d_v), deviations from mu
        ss_b = np.stack([c["ss"] for c in chunks])
        m, ss = _pooled(n_b, m_b, ss_b)
        var_c = ss / (total - 1)
        var_c_b = ss_b / (n_b[:, None] - 1)
        res["var"] = float(var_c.mean())
        res["var_se"] = _batch_se(var_c_b.mean(axis=1))
        res["var_coord"] = float(var_c[coordinate])
        res["var_coord_se"] = _batch_se(var_c_b[:, coordinate])
        res["mean"] = float(m[coordinate] + mu[coordinate])
        res["mean_se"] = _batch_se(m_b[:, coordinate])
        gm_b = np.array([c["gm"] for c in chunks]) / n_b
        gv_b = np.array([c["gv"] for c in chunks]) / n_b
        res["global_mean"] = float(np.sum([c["gm"] for c in chunks]) / total)
        res["global_mean_se"] = _batch_se(gm_b)
        res["global_var"] = float(np.sum([c["gv"] for c in chunks]) / total)
        res["global_var_se"] = _batch_se(gv_b)
    else:
        for key in ("mean", "mean_se", "global_mean", "global_mean_se", "global_var", "global_var_se"):
            res[key] = None
    have_s1 = "s1_mean" in chunks[0]
    if have_s1:
        s1m_b = np.array([c["s1_mean"] for c in chunks])
        s1ss_b = np.array([c["s1_ss"] for c in chunks])
        s1m, s1ss = _pooled(n_b, s1m_b, s1ss_b)
        s1v_b = s1ss_b / (n_b - 1)
        res.update(wsum=float(s1m), wsum_se=_batch_se(s1m_b), wsum_var=float(s1ss / (total - 1)),
                   wsum_var_se=_batch_se(s1v_b))
    else:
        res.update(wsum=None, wsum_se=None, wsum_var=None, wsum_var_se=None)
    if rb_scale2 is not None:
        if have_s1:
            mu2 = np.asarray(mu, dtype=np.float64) ** 2
            pooled_b = rb_scale2 * ipr_b + float(mu2.mean()) * s1v_b
            coord_b = rb_scale2 * ipr_b + float(mu2[coordinate]) * s1v_b
            res["var"] = rb_scale2 * res["ipr"] + float(mu2.mean()) * res["wsum_var"]
            res["var_coord"] = rb_scale2 * res["ipr"] + float(mu2[coordinate]) * res["wsum_var"]
            res["var_se"], res["var_coord_se"] = _batch_se(pooled_b), _batch_se(coord_b)
        else:
            res["var"] = res["var_coord"] = rb_scale2 * res["ipr"]
            res["var_se"] = res["var_coord_se"] = rb_scale2 * res["ipr_se"]
    return res


def loglog_slope(n, var, var_se) -> tuple[float | None, float | None]:
    """Slope of ``log var`` against ``log N`` and its standard error (``varsim._common.fits.loglog_fit`` with the
    standard errors); ``(None, None)`` with fewer than two points, a zero variance or a non-finite value."""
    from varsim._common.fits import loglog_fit

    n = np.asarray(n, dtype=np.float64)
    var = np.asarray(var, dtype=np.float64)
    se = np.asarray(var_se, dtype=np.float64)
    if n.size < 2 or not np.all(var > 0) or not np.all(np.isfinite(var)) or not np.all(np.isfinite(se)):
        return None, None
    fit = loglog_fit(n, var, se)
    return fit["slope"], fit["se"]
