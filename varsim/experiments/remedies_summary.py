"""The remedies grid's summary (:mod:`varsim.experiments.remedies`), written as ``summary.json`` by
:func:`varsim.experiments.aggregate`.

A *group* is a cell of the grid without its attention (:attr:`varsim.experiments.settings.Cell.group`: task,
architecture, norm, depth, recipe, key encoding); within a group every variant is paired with softmax by seed
index. Variants: the trained attentions (their own runs) and the inference-only maps and controls (the softmax
runs' ``inference`` records: the same weights). Each variant has a role: ``remedy`` (in the settings' pre-registered
``primary["variants"]``), ``positive_control``, ``negative_control``, ``baseline`` (softmax) or ``other``.

Per group and variant, over seeds (``groups``; lengths are ``eval_lengths`` then ``eval_long["lengths"]``):

- accuracy per N: mean with a Student-t interval (cut to [0, 1]), and the in-distribution accuracy;
- ranking vs dispersion per N (:mod:`varsim.train.ranking`, last block's best head): the fraction of examples
  whose largest weight is on the correct item, the accuracy given that, the weight on the correct item, and the
  two kinds of error as fractions of all examples (``ranking_error + dispersion_error = 1 - accuracy``);
- the weight on the correct item per probed N and the log-log slope of the attention output's std vs N (probes).

Paired differences against softmax at every N (``paired``): mean with a t interval, paired t-test and exact
sign-flip p-values. Two families, each Holm-adjusted on its own:

- **primary** (``primary``, pre-registered in the settings): every remedy x group at N = ``primary["length"]``;
- **secondary** (``p_holm_secondary`` in ``paired``): every other (variant, N) comparison of the grid, the
  controls excluded.

The controls are judged by their own unadjusted tests at the primary length (``controls``): a positive control
passes when its difference is positive and significant (p < 0.05), a negative control when it is not significant
(p >= 0.05, or every difference is exactly 0).
"""

from __future__ import annotations

import math

from varsim._common.jsonio import jsonable
from varsim.experiments.records import read_selection, runs_by_cell
from varsim.experiments.settings import BASELINE_ATTENTION, GROUP_KEYS

__all__ = ["REMEDIES_SUMMARY_FORMAT", "summarize_remedies", "variant_records", "KEEPS_VARIANCE_SLOPE", "ALPHA",
           "role_of"]

REMEDIES_SUMMARY_FORMAT = "varsim.reproduce.remedies_summary/2"
#: a variant keeps the output variance when the lower end of its post-normalization slope interval is above this
KEEPS_VARIANCE_SLOPE = -0.1
#: the level of every test (and of the Holm family-wise error rate)
ALPHA = 0.05
_KEYS = ("mean", "ci_low", "ci_high")


def variant_records(settings, runs: dict) -> dict:
    """``{group: {variant: {seed: {"eval", "eval_long"?, "in_distribution", "probes", "ranking", ...}}}}`` (a group is
    :attr:`Cell.group`): trained variants from their runs, inference-only maps from the softmax runs' ``inference``
    entries."""
    out: dict = {}
    for cell, by_seed in runs_by_cell(settings, runs).items():
        group = out.setdefault(cell.group, {})
        group[cell.attention] = dict(by_seed)
        if cell.attention == BASELINE_ATTENTION:
            for label in settings.inference_attentions:
                group[label] = {s: r["inference"][label] for s, r in by_seed.items() if label in r.get("inference", {})}
    return out


def role_of(settings, label: str) -> str:
    """``baseline``, ``remedy``, ``positive_control``, ``negative_control`` or ``other`` (settings' ``primary``)."""
    if label == BASELINE_ATTENTION:
        return "baseline"
    p = settings.primary
    for role, key in (("remedy", "variants"), ("positive_control", "positive_controls"),
                      ("negative_control", "negative_controls")):
        if label in p.get(key, ()):
            return role
    return "other"


def _accuracies(rec: dict) -> list:
    return list(rec["eval"]["accuracy"]) + list(rec.get("eval_long", {}).get("accuracy", []))


def _ranking_rows(rec: dict) -> dict | None:
    """Per N (eval then eval_long): ranking_correct, accuracy_given_ranking_correct, weight_correct, ranking_error,
    dispersion_error; None when the record has no decomposition."""
    parts = [rec.get("ranking"), rec.get("ranking_long")]
    if parts[0] is None:
        return None
    out = {k: [] for k in ("ranking_correct", "accuracy_given_ranking_correct", "weight_correct", "ranking_error",
                           "dispersion_error")}
    for part in parts:
        if part is None:
            continue
        for j in range(len(part["ranking_correct"])):
            n = part["n_ranking_correct"][j] + part["n_ranking_wrong"][j]
            out["ranking_correct"].append(part["ranking_correct"][j])
            out["accuracy_given_ranking_correct"].append(part["accuracy_given_ranking_correct"][j])
            out["weight_correct"].append(part["weight_correct"][j])
            out["ranking_error"].append((part["n_ranking_wrong"][j] - part["correct_given_ranking_wrong"][j]) / n)
            out["dispersion_error"].append(
                (part["n_ranking_correct"][j] - part["correct_given_ranking_correct"][j]) / n)
    return out


def _group_entry(settings, group, label, by_seed, lengths, confidence) -> dict:
    from varsim.experiments.stats import clip_interval, t_interval, t_interval_series

    seeds = sorted(by_seed)
    g = {**{k: getattr(group, k) for k in GROUP_KEYS},
         "variant": label, "kind": "trained" if label in settings.attentions else "inference",
         "role": role_of(settings, label), "seeds": seeds, "n_seeds": len(seeds), "lengths": lengths,
         "probe_lengths": list(settings.probe_lengths)}
    if not seeds:
        return g
    recs = [by_seed[s] for s in seeds]
    g["in_distribution"] = {
        **clip_interval(t_interval([r["in_distribution"]["accuracy"] for r in recs], confidence=confidence), 0.0, 1.0),
        "learned": sum(bool(r["in_distribution"].get("learned")) for r in recs)}
    rows = [_accuracies(r) for r in recs]
    g["accuracy"] = {**t_interval_series(rows, confidence=confidence, keys=_KEYS), "per_seed": rows}
    rank = [_ranking_rows(r) for r in recs]
    if all(x is not None for x in rank):
        g["ranking"] = {k: {**t_interval_series([x[k] for x in rank], confidence=confidence, keys=(*_KEYS, "n")),
                            "per_seed": [x[k] for x in rank]} for k in rank[0]}
    w = [r["probes"]["attn_correct"]["max_head"] for r in recs]
    g["weight_correct"] = {**t_interval_series(w, confidence=confidence, keys=_KEYS), "per_seed": w}
    slopes = {}
    for key in ("pre_median", "post_median"):
        vals = [r["probes"]["slopes"][key]["slope"] for r in recs if r["probes"]["slopes"].get(key)]
        slopes[key] = t_interval(vals, confidence=confidence) if vals else None
    g["std_slopes"] = slopes
    post = slopes["post_median"]
    g["keeps_variance"] = (None if post is None or not math.isfinite(post["ci_low"])
                           else bool(post["ci_low"] > KEEPS_VARIANCE_SLOPE or post["ci_high"] >= 0.0))
    return g


def _paired_entry(settings, group, label, by_seed, base, lengths, confidence) -> dict:
    from varsim.experiments.stats import clip_interval, paired_difference

    common = sorted(set(base) & set(by_seed))
    p = {**{k: getattr(group, k) for k in GROUP_KEYS},
         "variant": label, "kind": "trained" if label in settings.attentions else "inference",
         "role": role_of(settings, label), "baseline": BASELINE_ATTENTION, "seeds": common, "lengths": lengths}
    if len(common) < 2:
        return p
    treat = [_accuracies(by_seed[s]) for s in common]
    ctrl = [_accuracies(base[s]) for s in common]
    per = []
    for j in range(len(lengths)):
        d = clip_interval(paired_difference([t[j] for t in treat], [c[j] for c in ctrl], confidence=confidence),
                          -1.0, 1.0)
        if all(t[j] == c[j] for t, c in zip(treat, ctrl)):  # identical: no evidence of a difference
            d["p_ttest"], d["p_signflip"] = 1.0, 1.0
        per.append(d)
    for k in ("mean_diff", "ci_low", "ci_high", "p_ttest", "p_signflip"):
        p[k] = [d[k] for d in per]
    p["per_seed_diff"] = [[t[j] - c[j] for j in range(len(lengths))] for t, c in zip(treat, ctrl)]
    p["weight_correct_diff"] = [
        paired_difference([by_seed[s]["probes"]["attn_correct"]["max_head"][j] for s in common],
                          [base[s]["probes"]["attn_correct"]["max_head"][j] for s in common],
                          confidence=confidence)["mean_diff"]
        for j in range(len(settings.probe_lengths))]
    return p


def _holm_into(entries: list, pvals: list, key: str) -> None:
    """Holm-adjust ``pvals`` (one family) and store each adjusted value under ``key`` of its entry."""
    import numpy as np

    from varsim.experiments.stats import holm

    adj = holm(np.array(pvals, dtype=float)) if pvals else []
    for e, a in zip(entries, adj):
        e[key] = float(a)


def _rows_at_primary(settings, paired: list, roles: tuple, label: str) -> list:
    """The paired comparisons of ``roles`` at ``primary["length"]``, one row each: the group, the variant and its
    ``label`` field, the length, n, and the difference with its interval and tests there."""
    if not settings.primary:
        return []
    j = settings.eval_lengths.index(settings.primary["length"])
    return [{**{k: p[k] for k in (*GROUP_KEYS, "variant", label)}, "length": settings.primary["length"],
             "n": len(p["seeds"]), **{k: p[k][j] for k in ("mean_diff", "ci_low", "ci_high", "p_ttest", "p_signflip")}}
            for p in paired if p["role"] in roles and "mean_diff" in p]


def primary_table(settings, paired: list) -> list:
    """The pre-registered primary endpoint: one row per remedy x group at ``primary["length"]``, Holm over them."""
    rows = _rows_at_primary(settings, paired, ("remedy",), "kind")
    _holm_into(rows, [r["p_ttest"] for r in rows], "p_holm")
    for r in rows:
        r["significant"] = bool(r["p_holm"] <= ALPHA)
    return rows


def control_table(settings, paired: list) -> list:
    """The controls at ``primary["length"]``, each judged by its unadjusted paired t-test (module docstring)."""
    rows = _rows_at_primary(settings, paired, ("positive_control", "negative_control"), "role")
    for r in rows:
        significant = r["p_ttest"] < ALPHA
        r["behaves"] = bool(significant and r["mean_diff"] > 0) if r["role"] == "positive_control" \
            else bool(not significant)
    return rows


def summarize_remedies(outdir, res: dict, *, confidence: float = 0.95) -> dict:
    """The summary of a remedies results directory (``res`` from :func:`varsim.experiments.records.load_results`)."""
    from varsim._common.provenance import provenance

    settings, runs = res["settings"], res["runs"]
    lengths = list(settings.eval_lengths) + list(settings.eval_long.get("lengths", ()))
    groups, paired = [], []
    for group, variants in variant_records(settings, runs).items():
        base = variants.get(BASELINE_ATTENTION, {})
        for label, by_seed in variants.items():
            groups.append(_group_entry(settings, group, label, by_seed, lengths, confidence))
            if label != BASELINE_ATTENTION:
                paired.append(_paired_entry(settings, group, label, by_seed, base, lengths, confidence))
    primary = primary_table(settings, paired)
    controls = control_table(settings, paired)
    # the secondary family: every other (variant, N) comparison, controls excluded
    j_primary = settings.eval_lengths.index(settings.primary["length"]) if settings.primary else None
    sec_entries, sec_p = [], []
    for p in paired:
        p["p_holm_secondary"] = [None] * len(p.get("p_ttest", []))
        if p["role"] in ("positive_control", "negative_control"):
            continue
        for j, pv in enumerate(p.get("p_ttest", [])):
            if p["role"] == "remedy" and j == j_primary:
                continue
            box = {"p": p, "j": j}
            sec_entries.append(box)
            sec_p.append(pv)
    _holm_into(sec_entries, sec_p, "adj")
    for box in sec_entries:
        box["p"]["p_holm_secondary"][box["j"]] = box.get("adj")
    selection = read_selection(outdir) if settings.lr_grid else None
    return jsonable({
        "format": REMEDIES_SUMMARY_FORMAT,
        "settings": settings.to_dict(),
        "confidence": confidence,
        "alpha": ALPHA,
        "lengths": lengths,
        "examples": [settings.eval_examples] * len(settings.eval_lengths)
                    + [settings.eval_long.get("examples")] * len(settings.eval_long.get("lengths", ())),
        "primary_endpoint": None if not settings.primary else {
            **settings.to_dict()["primary"], "n_comparisons": len(primary),
            "correction": f"Holm step-down over the {len(primary)} primary comparisons (family-wise error rate "
                          f"{ALPHA})"},
        "primary": primary,
        "controls": controls,
        "secondary_correction": f"Holm step-down over the {len(sec_p)} secondary comparisons (every other variant "
                                f"and N; controls excluded), reported as p_holm_secondary in paired",
        "methods": {
            "accuracy_interval": "mean over seeds with a two-sided Student-t interval, cut to [0, 1]",
            "paired_difference": "per seed, variant minus softmax at the same N (same test sets; same weights for "
                                 "the inference-only maps), Student-t interval; p = 1 when every difference is 0",
            "ranking": "last block's best head (the head with the largest mean weight on the correct item at that "
                       "N): ranking correct = its largest weight is on the correct item; ranking_error and "
                       "dispersion_error are the errors with ranking wrong and right, as fractions of all examples",
            "weight_correct": "attention weight on the correct item, best head, mean over probe sets, then seeds",
            "keeps_variance": f"t interval of the log-log slope of the post-normalization output std vs N contains "
                              f"0 or has its lower end above {KEEPS_VARIANCE_SLOPE}",
            "lr_selection": None if selection is None else selection["rule"],
        },
        "runs": {"expected": len(res["runs"]) + len(res["missing"]) + len(res["corrupt"]), "found": len(runs),
                 "missing": res["missing"], "corrupt": res["corrupt"]},
        "lr_selection": None if selection is None else {"chosen": selection["chosen"], "cells": selection["cells"]},
        "learned": [{k: g[k] for k in (*GROUP_KEYS, "variant")} | {
            "learned": g.get("in_distribution", {}).get("learned", 0), "seeds": g["n_seeds"]} for g in groups],
        "groups": groups,
        "paired": paired,
        "provenance": provenance(),
    })
