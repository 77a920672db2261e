"""Chunk summaries, batch-means standard errors and the log-log slope (plain NumPy, shared by all samplers).

Each chunk of sequences is reduced to a few sums; a grid point combines its chunks in chunk order. Standard errors
are batch means: the statistic is recomputed inside each chunk and ``SE = sd(chunk values) / sqrt(n_chunks)``,
which makes no distributional assumption about the (very skewed) per-sequence quantities.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["summarise_chunk", "combine_chunks", "loglog_slope"]


def summarise_chunk(o: np.ndarray | None, y2: np.ndarray, shift: np.ndarray) -> dict:
    """Reduce one chunk: IPR sum and, when outputs exist, per-coordinate mean and centred sum of squares of ``o``
    (``shift`` only improves conditioning), and the sums of the per-sequence across-feature mean and variance."""
    out = {"n": int(y2.size), "y2": float(np.sum(y2))}
    if o is not None:
        c = o - shift
        mean = c.mean(axis=0)
        out["mean"] = mean
        out["ss"] = np.sum((c - mean) ** 2, axis=0)
        out["gm"] = float(np.sum(o.mean(axis=1)))
        out["gv"] = float(np.sum(o.var(axis=1)))
    return out


def _batch_se(values: np.ndarray) -> float:
    return float(np.std(values, ddof=1) / math.sqrt(values.shape[0]))


def combine_chunks(chunks: list[dict], shift: np.ndarray, coordinate: int, rb_scale2: float | None) -> dict:
    """Statistics of one grid point from its chunk summaries (in chunk order).

    ``var`` pools the per-coordinate variances (each about its own coordinate mean) by averaging them;
    ``rb_scale2 = sigma_v^2`` selects the Rao-Blackwell estimator ``sigma_v^2 mean(sum w^2)`` instead.
    """
    n_b = np.array([c["n"] for c in chunks], dtype=np.float64)
    total = n_b.sum()
    ipr_b = np.array([c["y2"] for c in chunks]) / n_b
    res = {"ipr": float(np.sum([c["y2"] for c in chunks]) / total), "ipr_se": _batch_se(ipr_b)}
    have_o = "mean" in chunks[0]
    if have_o:
        m_b = np.stack([c["mean"] for c in chunks])  # (B, d_v), relative to shift
        ss_b = np.stack([c["ss"] for c in chunks])
        m = (n_b[:, None] * m_b).sum(axis=0) / total
        ss = ss_b.sum(axis=0) + (n_b[:, None] * (m_b - m) ** 2).sum(axis=0)  # parallel-variance combination
        var_c = ss / (total - 1)
        var_c_b = ss_b / (n_b[:, None] - 1)
        res["var"] = float(var_c.mean())
        res["var_se"] = _batch_se(var_c_b.mean(axis=1))
        res["var_coord"] = float(var_c[coordinate])
        res["var_coord_se"] = _batch_se(var_c_b[:, coordinate])
        res["mean"] = float(m[coordinate] + shift[coordinate])
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
    if rb_scale2 is not None:
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
