"""The remedies grid's summary (:mod:`varsim.experiments.remedies`), written as ``summary.json`` by
:func:`varsim.experiments.aggregate`.

Variants: the trained attentions (their own runs) and the inference-only maps (the softmax runs' ``inference``
records: same weights). Per (task, architecture, norm, depth) and variant, over seeds:

- accuracy per N: mean with a Student-t interval (cut to [0, 1]), and the in-distribution accuracy;
- the weight on the correct item per probed N (best head, ``probes.attn_correct.max_head``), mean with a t interval;
- the log-log slope of the attention output's per-coordinate std vs N (median over coordinates; ``probes.slopes``)
  before and after the output normalization: a variant "keeps the variance" when the t interval of the slope of the
  vector the next layer reads (after the normalization) contains 0 or lies above -0.1 at its lower end;
- paired differences against softmax at every N (same seed; same weights for the inference-only maps): mean with a
  t interval, paired t-test p-value, exact sign-flip p-value, and the Holm-adjusted t-test p-value over the whole
  family (every task, architecture, norm, depth, variant and N of the grid).
"""

from __future__ import annotations

import math

from varsim._common.jsonio import jsonable
from varsim.experiments.records import read_selection, runs_by_cell
from varsim.experiments.settings import BASELINE_ATTENTION

__all__ = ["REMEDIES_SUMMARY_FORMAT", "summarize_remedies", "variant_records", "KEEPS_VARIANCE_SLOPE"]

REMEDIES_SUMMARY_FORMAT = "varsim.reproduce.remedies_summary/1"
#: a variant keeps the output variance when the lower end of its post-normalization slope interval is above this
KEEPS_VARIANCE_SLOPE = -0.1
_KEYS = ("mean", "ci_low", "ci_high")


def variant_records(settings, runs: dict) -> dict:
    """``{(task, arch, norm, depth): {variant: {seed: {"eval", "in_distribution", "probes"}}}}``: trained variants
    from their runs, inference-only maps from the softmax runs' ``inference`` entries."""
    out: dict = {}
    for (task, arch, norm, att, depth), by_seed in runs_by_cell(settings, runs).items():
        group = out.setdefault((task, arch, norm, depth), {})
        group[att] = {s: r for s, r in by_seed.items()}
        if att == BASELINE_ATTENTION:
            for label in settings.inference_attentions:
                group[label] = {s: r["inference"][label] for s, r in by_seed.items() if label in r.get("inference", {})}
    return out


def summarize_remedies(outdir, res: dict, *, confidence: float = 0.95) -> dict:
    """The summary of a remedies results directory (``res`` from :func:`varsim.experiments.records.load_results`)."""
    import numpy as np

    from varsim._common.provenance import provenance
    from varsim.experiments.stats import clip_interval, holm, paired_difference, t_interval, t_interval_series

    settings, runs = res["settings"], res["runs"]
    groups, paired = [], []
    for (task, arch, norm, depth), variants in variant_records(settings, runs).items():
        base = variants.get(BASELINE_ATTENTION, {})
        for label, by_seed in variants.items():
            seeds = sorted(by_seed)
            g = {"task": task, "architecture": arch, "norm": norm, "depth": depth, "variant": label,
                 "kind": "trained" if label in settings.attentions else "inference", "seeds": seeds,
                 "n_seeds": len(seeds), "lengths": list(settings.eval_lengths),
                 "probe_lengths": list(settings.probe_lengths)}
            if seeds:
                recs = [by_seed[s] for s in seeds]
                g["in_distribution"] = {
                    **clip_interval(t_interval([r["in_distribution"]["accuracy"] for r in recs],
                                               confidence=confidence), 0.0, 1.0),
                    "learned": sum(bool(r["in_distribution"].get("learned")) for r in recs)}
                rows = [r["eval"]["accuracy"] for r in recs]
                g["accuracy"] = {**t_interval_series(rows, confidence=confidence, keys=_KEYS), "per_seed": rows}
                w = [r["probes"]["attn_correct"]["max_head"] for r in recs]
                g["weight_correct"] = {**t_interval_series(w, confidence=confidence, keys=_KEYS), "per_seed": w}
                slopes = {}
                for key in ("pre_median", "post_median"):
                    vals = [r["probes"]["slopes"][key]["slope"] for r in recs if r["probes"]["slopes"].get(key)]
                    slopes[key] = t_interval(vals, confidence=confidence) if len(vals) >= 1 else None
                g["std_slopes"] = slopes
                post = slopes["post_median"]
                g["keeps_variance"] = (None if post is None or not math.isfinite(post["ci_low"])
                                       else bool(post["ci_low"] > KEEPS_VARIANCE_SLOPE or post["ci_high"] >= 0.0))
            groups.append(g)
            if label == BASELINE_ATTENTION:
                continue
            common = sorted(set(base) & set(by_seed))
            p = {"task": task, "architecture": arch, "norm": norm, "depth": depth, "variant": label,
                 "kind": g["kind"], "baseline": BASELINE_ATTENTION, "seeds": common,
                 "lengths": list(settings.eval_lengths)}
            if len(common) >= 2:
                per = [clip_interval(paired_difference([by_seed[s]["eval"]["accuracy"][j] for s in common],
                                                       [base[s]["eval"]["accuracy"][j] for s in common],
                                                       confidence=confidence), -1.0, 1.0)
                       for j in range(len(settings.eval_lengths))]
                for k in ("mean_diff", "ci_low", "ci_high", "p_ttest", "p_signflip"):
                    p[k] = [d[k] for d in per]
                wd = [paired_difference([by_seed[s]["probes"]["attn_correct"]["max_head"][j] for s in common],
                                        [base[s]["probes"]["attn_correct"]["max_head"][j] for s in common],
                                        confidence=confidence)["mean_diff"]
                      for j in range(len(settings.probe_lengths))]
                p["weight_correct_diff"] = wd
            paired.append(p)
    # Holm over the whole family: every (group, variant, N) paired t-test of the grid
    raw = [x for p in paired for x in p.get("p_ttest", [])]
    adj = holm(np.array(raw, dtype=float)) if raw else np.array([])
    i = 0
    for p in paired:
        n = len(p.get("p_ttest", []))
        p["p_holm"] = adj[i:i + n].tolist()
        i += n
    selection = read_selection(outdir) if settings.lr_grid else None
    summary = jsonable({
        "format": REMEDIES_SUMMARY_FORMAT,
        "settings": settings.to_dict(),
        "confidence": confidence,
        "correction": f"Holm step-down over all {len(raw)} paired t-tests of the grid (family-wise error rate)",
        "methods": {
            "accuracy_interval": "mean over seeds with a two-sided Student-t interval, cut to [0, 1]",
            "paired_difference": "per seed, variant minus softmax at the same N (same init, data and test sets; same "
                                 "weights for the inference-only maps), Student-t interval",
            "p_holm": "paired t-test p-value, Holm-adjusted over the whole family",
            "weight_correct": "attention weight on the correct item, best head, mean over probe sets, then seeds",
            "keeps_variance": f"t interval of the log-log slope of the post-normalization output std vs N contains "
                              f"0 or has its lower end above {KEEPS_VARIANCE_SLOPE}",
            "lr_selection": None if selection is None else selection["rule"],
        },
        "runs": {"expected": len(res["runs"]) + len(res["missing"]) + len(res["corrupt"]), "found": len(runs),
                 "missing": res["missing"], "corrupt": res["corrupt"]},
        "lr_selection": None if selection is None else {"chosen": selection["chosen"], "cells": selection["cells"]},
        "learned": [{"task": g["task"], "architecture": g["architecture"], "norm": g["norm"], "depth": g["depth"],
                     "variant": g["variant"], "learned": g.get("in_distribution", {}).get("learned", 0),
                     "seeds": g["n_seeds"]} for g in groups],
        "groups": groups,
        "paired": paired,
        "provenance": provenance(),
    })
    return summary
