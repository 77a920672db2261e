"""Distribution-shift measurements on a trained model: the paper's Figures 1-3, and attention sharpness.

For each set size N the probe draws ``n_sets`` independent evaluation sets of exactly N items, runs the model's
``analysis`` pass and looks at the *query token* of one attention block (the first by default, as the paper's
Figure 1 looks at the first layer):

- ``std_pre`` / ``std_post``: the standard deviation over the sets of every coordinate of the attention output
  before and after the normalization (Figure 1: a fixed coordinate vs N; all coordinates are kept). The fixed
  coordinate is chosen once, as the one with the largest spread at the shortest probed N, so that a coordinate
  the network never uses (constant, std 0) cannot be picked; its log-log slope vs N is fitted, as is the slope
  of the median over coordinates;
- ``hist``: the raw values of that coordinate at a few N (Figure 2);
- ``global``: per set, the mean and the variance across the D features of the attention output before and after
  the normalization and of the input to the next layer, averaged over sets with standard errors (Figure 3);
- ``attn_correct``: the attention weight on the item that decides the answer (the task's ``correct_item``: the
  largest priority, or the key equal to the query), per head, averaged over sets, and the per-set maximum over
  heads (links accuracy to dispersion: 1 means a hard selection, 1/N a uniform average).

Sets of length N are drawn from ``child_generator(seed, i, chunk)`` for the i-th length, so the numbers depend on
the seed, the lengths and the chunking limit only, not on where or when they run.
"""

from __future__ import annotations

import math

import numpy as np

from varsim._common.fits import loglog_fit
from varsim._common.seeding import child_generator
from varsim._common.validate import check_int, check_int_grid, check_positive_int
from varsim.tasks import check_set_size, get_task, make_batch

__all__ = ["probe_length_shift", "correct_item", "PROBE_KEYS"]

# The analysis outputs the probes read, per block b: f"block{b}.<key>".
PROBE_KEYS = ("attn_pre_norm", "attn_post_norm", "attn_weights", "next_input")


def correct_item(task: str, batch: dict) -> np.ndarray:
    """(B,) index of the item that decides the answer (the task's :meth:`~varsim.tasks.Task.correct_item`)."""
    return get_task(task).correct_item(batch)


def _sets_per_chunk(n: int, max_items: int) -> int:
    return max(1, max_items // n)


def _mean_se(x: np.ndarray) -> tuple[float, float]:
    x = np.asarray(x, dtype=np.float64)
    se = float(x.std(ddof=1) / math.sqrt(x.size)) if x.size > 1 else math.nan
    return float(x.mean()), se


def probe_length_shift(
    model,
    task: str,
    *,
    lengths,
    n_sets: int = 256,
    seed,
    hist_lengths=(16, 256, 4096),
    block: int = 0,
    max_items: int = 1 << 18,
    task_kwargs: dict | None = None,
) -> dict:
    """Measure the attention-output statistics of ``model`` on ``task`` at every N in ``lengths``.

    ``model`` needs ``analysis(batch) -> dict`` with (B, D) ``block{block}.attn_pre_norm``, ``.attn_post_norm``,
    ``.next_input`` and (B, H, N) ``.attn_weights`` for the query token. ``max_items`` bounds the items per forward
    pass (sets x N), which bounds memory at large N. ``task_kwargs`` go to ``varsim.tasks.make_batch`` (vocabulary
    sizes; they must match the model's). Returns plain data (lists and floats), ready for JSON.
    """
    spec = get_task(task)  # unknown names: ValueError listing the registered tasks
    if not callable(getattr(model, "analysis", None)):
        raise ValueError("model must provide an analysis(batch) method")
    lengths = check_int_grid("lengths", lengths, minimum=1)
    if np.any(np.diff(lengths) <= 0):
        raise ValueError("lengths must be strictly increasing")
    n_sets = check_int("n_sets", n_sets, minimum=2)
    hist_lengths = [int(n) for n in check_int_grid("hist_lengths", hist_lengths)] if len(hist_lengths) else []
    block = check_int("block", block, minimum=0)
    max_items = check_positive_int("max_items", max_items)
    task_kwargs = dict(task_kwargs or {})
    for n in lengths:
        check_set_size(task, int(n), name="lengths", **spec.vocab_of(task_kwargs))
    keys = {k: f"block{block}.{k}" for k in PROBE_KEYS}
    per_length = [_activations(model, task, spec, int(n), i, n_sets=n_sets, max_items=max_items, seed=seed,
                               keys=keys, task_kwargs=task_kwargs) for i, n in enumerate(lengths)]
    out = _statistics(per_length, block=block, n_sets=n_sets, hist_lengths=hist_lengths)
    out["slopes"] = _slopes(out, out["coordinate"])
    return out


def _activations(model, task: str, spec, n: int, i: int, *, n_sets: int, max_items: int, seed, keys: dict,
                 task_kwargs: dict) -> dict:
    """The activations at set size ``n`` (the ``i``-th length) over ``n_sets`` sets, in chunks of ``max_items`` items
    at most: ``pre``, ``post``, ``next`` (S, D) and ``w`` (S, H), each head's weight on the correct item."""
    pre, post, nxt, w_heads = [], [], [], []
    done, chunk = 0, 0
    while done < n_sets:
        b = min(_sets_per_chunk(n, max_items), n_sets - done)
        batch = make_batch(task, b, n, child_generator(seed, i, chunk), **task_kwargs)
        out = model.analysis(batch)
        missing = [v for v in keys.values() if v not in out]
        if missing:
            raise ValueError(f"model.analysis did not return {missing}")
        pre.append(np.asarray(out[keys["attn_pre_norm"]], dtype=np.float64))  # (b, D)
        post.append(np.asarray(out[keys["attn_post_norm"]], dtype=np.float64))  # (b, D)
        nxt.append(np.asarray(out[keys["next_input"]], dtype=np.float64))  # (b, D)
        weights = np.asarray(out[keys["attn_weights"]], dtype=np.float64)  # (b, H, N)
        idx = spec.correct_item(batch)  # (b,)
        w_heads.append(weights[np.arange(b), :, idx])  # (b, H)
        done += b
        chunk += 1
    pre_a, post_a, nxt_a, w_a = (np.concatenate(x) for x in (pre, post, nxt, w_heads))
    return {"n": n, "pre": pre_a, "post": post_a, "next": nxt_a, "w": w_a}


def _statistics(per_length: list, *, block: int, n_sets: int, hist_lengths) -> dict:
    """:func:`probe_length_shift`'s result but the slopes, from each length's :func:`_activations` (histograms: of the
    coordinate with the largest std at the first length)."""
    coord = int(np.argmax(per_length[0]["pre"].std(axis=0, ddof=1)))
    out = {
        "block": block,
        "n_sets": n_sets,
        "lengths": [rec["n"] for rec in per_length],
        "coordinate": coord,
        "std_pre": [],
        "std_post": [],
        "global": {k: {"mean": [], "mean_se": [], "var": [], "var_se": []} for k in ("pre", "post", "next")},
        "attn_correct": {"per_head": [], "per_head_se": [], "max_head": [], "max_head_se": []},
        "hist": {"coordinate": coord, "lengths": [], "pre": [], "post": []},
    }
    for rec in per_length:
        out["std_pre"].append(rec["pre"].std(axis=0, ddof=1).tolist())  # (D,) over sets
        out["std_post"].append(rec["post"].std(axis=0, ddof=1).tolist())
        for name in ("pre", "post", "next"):
            x = rec[name]  # (S, D): statistics across the features of each set, then over sets
            g = out["global"][name]
            m, m_se = _mean_se(x.mean(axis=1))
            v, v_se = _mean_se(x.var(axis=1))
            g["mean"].append(m)
            g["mean_se"].append(m_se)
            g["var"].append(v)
            g["var_se"].append(v_se)
        w = rec["w"]  # (S, H)
        a = out["attn_correct"]
        a["per_head"].append(w.mean(axis=0).tolist())
        a["per_head_se"].append((w.std(axis=0, ddof=1) / math.sqrt(w.shape[0])).tolist())
        mh, mh_se = _mean_se(w.max(axis=1))
        a["max_head"].append(mh)
        a["max_head_se"].append(mh_se)
        if rec["n"] in hist_lengths:
            out["hist"]["lengths"].append(rec["n"])
            out["hist"]["pre"].append(rec["pre"][:, coord].tolist())
            out["hist"]["post"].append(rec["post"][:, coord].tolist())
    return out


def _slopes(out: dict, coord: int) -> dict:
    """Log-log slopes of the fixed coordinate's std and of the median std over coordinates, before/after the norm."""
    n = np.asarray(out["lengths"], dtype=np.float64)
    res = {}
    for stage in ("pre", "post"):
        std = np.asarray(out[f"std_{stage}"])  # (L, D)
        for label, y in (("coordinate", std[:, coord]), ("median", np.median(std, axis=1))):
            if n.size >= 2 and np.all(y > 0):
                fit = loglog_fit(n, y)
                res[f"{stage}_{label}"] = {"slope": fit["slope"], "se": fit["se"], "intercept": fit["intercept"]}
            else:  # a constant coordinate (std 0) or a single length: no power law to fit
                res[f"{stage}_{label}"] = None
    return res
