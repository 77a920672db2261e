"""The paper reproduction's summary of a results directory: per cell, accuracy over seeds with intervals; per norm,
paired differences against ``none`` (written as ``summary.json`` by :func:`varsim.experiments.aggregate`)."""

from __future__ import annotations

from varsim._common.jsonio import jsonable
from varsim.experiments.records import runs_by_cell
from varsim.experiments.settings import BASELINE_NORM

__all__ = ["SUMMARY_FORMAT", "summarize_reproduction"]

SUMMARY_FORMAT = "varsim.reproduce.summary/1"


def summarize_reproduction(outdir, res: dict, *, confidence: float = 0.95) -> dict:
    """The summary of the paper grid's finished runs (``res`` from :func:`varsim.experiments.records.load_results`).

    Per task, architecture, norm and N: the mean accuracy over seeds with a Student-t interval, and the pooled
    Wilson interval of all seeds' test examples. Per norm against ``none``: the paired difference over the seeds
    both have, with its t interval, the paired t-test p-value and the exact sign-flip p-value.
    """
    from varsim._common.provenance import provenance
    from varsim.experiments.stats import (
        clip_interval,
        paired_difference,
        pooled_bernoulli,
        t_interval,
        t_interval_series,
    )

    settings, runs = res["settings"], res["runs"]
    cells = runs_by_cell(settings, runs)
    groups, paired, learned = [], [], []
    for (task, arch, norm), by_seed in cells.items():
        seeds = sorted(by_seed)
        g = {"task": task, "architecture": arch, "norm": norm, "seeds": seeds, "n_seeds": len(seeds),
             "lengths": list(settings.eval_lengths)}
        if seeds:
            recs = [by_seed[s] for s in seeds]
            ids = [r["in_distribution"] for r in recs]
            g["in_distribution"] = {
                "length": ids[0]["length"],
                **clip_interval(t_interval([d["accuracy"] for d in ids], confidence=confidence), 0.0, 1.0),
                "per_seed": [d["accuracy"] for d in ids],
                "learned": sum(d["learned"] for d in ids),
                "not_learned_seeds": [s for s, d in zip(seeds, ids) if not d["learned"]],
            }
            g["train_accuracy"] = [r["train"]["train_accuracy"] for r in recs]
            rows = [r["eval"]["accuracy"] for r in recs]
            g["accuracy"] = {**t_interval_series(rows, confidence=confidence), "per_seed": rows}
            pooled = [pooled_bernoulli([r["eval"]["correct"][j] for r in recs],
                                       [r["eval"]["examples"] for r in recs], confidence=confidence)
                      for j in range(len(settings.eval_lengths))]
            g["pooled"] = {k: [p[k] for p in pooled] for k in ("accuracy", "ci_low", "ci_high", "successes", "trials")}
            slopes = {}
            for key in ("pre_coordinate", "post_coordinate", "pre_median", "post_median"):
                vals = [r["probes"]["slopes"][key]["slope"] for r in recs if r["probes"]["slopes"].get(key)]
                slopes[key] = t_interval(vals, confidence=confidence) if vals else None
            g["probe_slopes"] = slopes
            learned.append({"task": task, "architecture": arch, "norm": norm,
                            "learned": g["in_distribution"]["learned"], "seeds": len(seeds)})
        groups.append(g)
        if norm == BASELINE_NORM or BASELINE_NORM not in settings.norms:
            continue
        base = cells[(task, arch, BASELINE_NORM)]
        common = sorted(set(base) & set(by_seed))
        p = {"task": task, "architecture": arch, "norm": norm, "baseline": BASELINE_NORM, "seeds": common,
             "lengths": list(settings.eval_lengths)}
        if common:
            per_len = [clip_interval(paired_difference([by_seed[s]["eval"]["accuracy"][j] for s in common],
                                                        [base[s]["eval"]["accuracy"][j] for s in common],
                                                        confidence=confidence), -1.0, 1.0)
                       for j in range(len(settings.eval_lengths))]
            for k in ("mean_diff", "sd", "ci_low", "ci_high", "p_ttest", "p_signflip"):
                p[k] = [d[k] for d in per_len]
            # The lengths where the interval excludes 0 (equivalently, the paired t-test rejects at 1 - confidence).
            p["better_at"] = [n for n, d in zip(settings.eval_lengths, per_len) if d["ci_low"] > 0]
            p["worse_at"] = [n for n, d in zip(settings.eval_lengths, per_len) if d["ci_high"] < 0]
        paired.append(p)

    summary = jsonable({
        "format": SUMMARY_FORMAT,
        "settings": settings.to_dict(),
        "confidence": confidence,
        "methods": {
            "accuracy_interval": "mean over seeds with a two-sided Student-t interval (n_seeds - 1 df), "
                                 "cut to [0, 1]",
            "pooled_interval": "Wilson score interval of all seeds' test examples pooled (ignores seed variation)",
            "paired_difference": "per seed, norm minus none at the same N (same init seed, data, test sets); "
                                 "mean with a Student-t interval, cut to [-1, 1]",
            "p_ttest": "two-sided paired t-test over seeds",
            "p_signflip": "two-sided exact sign-flip (randomization) test over seeds; its smallest possible value "
                          "is 2 / 2**n_seeds",
            "learned": "accuracy >= learned_threshold at N = train_max on id_examples fresh examples",
        },
        "runs": {"expected": settings.seeds * len(settings.tasks) * len(settings.architectures) * len(settings.norms),
                 "found": len(runs), "missing": res["missing"], "corrupt": res["corrupt"]},
        "learned": learned,
        "groups": groups,
        "paired": paired,
        "provenance": provenance(),
    })
    return summary
