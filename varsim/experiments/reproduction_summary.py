"""The paper reproduction's grid kind (:data:`REPRODUCTION`): the summary of a results directory (per cell, accuracy
over seeds with intervals; per norm, paired differences against ``none``; written as ``summary.json`` by
:func:`varsim.experiments.aggregate`) and its Markdown table (``table.md``)."""

from __future__ import annotations

import json

from varsim._common.jsonio import jsonable
from varsim.experiments.grid_kind import GridKind
from varsim.experiments.records import runs_by_cell
from varsim.experiments.report import fmt_ci, fmt_diff, head, row
from varsim.experiments.settings import BASELINE_NORM
from varsim.experiments.variant_axis import has_variant_axis

__all__ = ["SUMMARY_FORMAT", "summarize_reproduction", "render_table", "REPRODUCTION"]

SUMMARY_FORMAT = "varsim.reproduce.summary/1"
TITLE = "varsim reproduction: accuracy vs set size N"


def _group_stats(settings, by_seed: dict, confidence: float) -> dict:
    """The statistics of one cell's runs (``by_seed``: seed -> record) over seeds."""
    from varsim.experiments.stats import clip_interval, pooled_bernoulli, t_interval, t_interval_series

    seeds = sorted(by_seed)
    recs = [by_seed[s] for s in seeds]
    ids = [r["in_distribution"] for r in recs]
    g = {"in_distribution": {
        "length": ids[0]["length"],
        **clip_interval(t_interval([d["accuracy"] for d in ids], confidence=confidence), 0.0, 1.0),
        "per_seed": [d["accuracy"] for d in ids],
        "learned": sum(d["learned"] for d in ids),
        "not_learned_seeds": [s for s, d in zip(seeds, ids) if not d["learned"]],
    }}
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
    return g


def _paired_stats(settings, by_seed: dict, base: dict, confidence: float) -> dict:
    """The paired differences of one cell's runs against its baseline norm's, over the seeds both have."""
    from varsim.experiments.stats import clip_interval, paired_difference

    common = sorted(set(base) & set(by_seed))
    p = {"baseline": BASELINE_NORM, "seeds": common, "lengths": list(settings.eval_lengths)}
    if not common:
        return p
    per_len = [clip_interval(paired_difference([by_seed[s]["eval"]["accuracy"][j] for s in common],
                                               [base[s]["eval"]["accuracy"][j] for s in common],
                                               confidence=confidence), -1.0, 1.0)
               for j in range(len(settings.eval_lengths))]
    for k in ("mean_diff", "sd", "ci_low", "ci_high", "p_ttest", "p_signflip"):
        p[k] = [d[k] for d in per_len]
    # The lengths where the interval excludes 0 (equivalently, the paired t-test rejects at 1 - confidence).
    p["better_at"] = [n for n, d in zip(settings.eval_lengths, per_len) if d["ci_low"] > 0]
    p["worse_at"] = [n for n, d in zip(settings.eval_lengths, per_len) if d["ci_high"] < 0]
    return p


def summarize_reproduction(outdir, res: dict, *, confidence: float = 0.95) -> dict:
    """The summary of the paper grid's finished runs (``res`` from :func:`varsim.experiments.records.load_results`).

    Per task, architecture, norm and N: the mean accuracy over seeds with a Student-t interval, and the pooled
    Wilson interval of all seeds' test examples. Per norm against ``none``: the paired difference over the seeds
    both have, with its t interval, the paired t-test p-value and the exact sign-flip p-value.
    """
    from varsim._common.provenance import provenance

    settings, runs = res["settings"], res["runs"]
    cells = runs_by_cell(settings, runs)
    groups, paired, learned = [], [], []
    for cell, by_seed in cells.items():
        keys = {"task": cell.task, "architecture": cell.architecture, "norm": cell.norm}
        seeds = sorted(by_seed)
        g = {**keys, "seeds": seeds, "n_seeds": len(seeds), "lengths": list(settings.eval_lengths)}
        if seeds:
            g.update(_group_stats(settings, by_seed, confidence))
            learned.append({**keys, "learned": g["in_distribution"]["learned"], "seeds": len(seeds)})
        groups.append(g)
        if cell.norm != BASELINE_NORM and BASELINE_NORM in settings.norms:
            base = cells[cell._replace(norm=BASELINE_NORM)]
            paired.append({**keys, **_paired_stats(settings, by_seed, base, confidence)})

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


def _paired_block(st: dict, paired: dict, task: str, arch: str, others: list, conf: int) -> list[str]:
    """The paired differences of the norms ``others`` against the baseline norm in one (task, architecture)."""
    where = f"{task}, {arch.replace('_', ' ')}"
    lines = ["", f"Paired differences vs {BASELINE_NORM} ({where}):", "",
             *head("N", (f"{n} - {BASELINE_NORM}" for n in others))]
    for j, n in enumerate(st["eval_lengths"]):
        ps = [paired[(task, arch, norm)] for norm in others]
        lines.append(row(n, ["n/a" if "mean_diff" not in p else
                             fmt_diff(p["mean_diff"][j], p["ci_low"][j], p["ci_high"][j], p["p_ttest"][j],
                                      p["p_signflip"][j]) for p in ps]))
    lines.append("")
    for norm in others:
        p = paired[(task, arch, norm)]
        better, worse = p.get("better_at", []), p.get("worse_at", [])
        lines.append(f"- {norm} vs {BASELINE_NORM}: {conf}% interval above 0 at N = "
                     f"{', '.join(map(str, better)) or 'none'}; below 0 at N = "
                     f"{', '.join(map(str, worse)) or 'none'}.")
    return lines


def _slope_cell(g: dict) -> str:
    s = g.get("probe_slopes") or {}
    pre, post = s.get("pre_median"), s.get("post_median")
    return "n/a" if not pre or not post else f"{pre['mean']:+.2f} -> {post['mean']:+.2f}"


def _cell_section(summary: dict, paired: dict, task: str, arch: str, conf: int) -> list[str]:
    """One (task, architecture): accuracy per norm and N, paired differences, probe slopes."""
    st = summary["settings"]
    gs = [g for g in summary["groups"] if g["task"] == task and g["architecture"] == arch]
    norms = [g["norm"] for g in gs]
    lines = ["", f"## {task}, {arch.replace('_', ' ')}", "", *head("", norms)]
    ids = [g.get("in_distribution") for g in gs]
    lines.append(row("in-distribution", [
        "no runs" if d is None else f"{fmt_ci(d['mean'], d['ci_low'], d['ci_high'])}, learned {d['learned']}/"
                                    f"{g['n_seeds']}" for g, d in zip(gs, ids)]))
    for j, n in enumerate(st["eval_lengths"]):
        lines.append(row(f"N = {n}", ["n/a" if (a := g.get("accuracy")) is None else
                                      fmt_ci(a["mean"][j], a["ci_low"][j], a["ci_high"][j]) for g in gs]))
    others = [n for n in norms if n != BASELINE_NORM and (task, arch, n) in paired]
    if others:
        lines += _paired_block(st, paired, task, arch, others, conf)
    return lines + ["", "Log-log slope of the per-coordinate std of the attention output vs N (median over "
                        "coordinates, mean over seeds), before -> after the normalization: "
                    + "; ".join(f"{n}: {_slope_cell(g)}" for n, g in zip(norms, gs)) + "."]


def render_table(summary: dict, title: str = TITLE) -> str:
    """The Markdown report of :func:`summarize_reproduction`'s summary."""
    st = summary["settings"]
    conf = int(round(100 * summary["confidence"]))
    runs = summary["runs"]
    lines = [
        f"# {title}",
        "",
        f"Settings: model {json.dumps(st['model'])}; training {json.dumps(st['train'])}; "
        f"{st['seeds']} seeds (root seed {st['root_seed']}); {st['eval_examples']} test examples per N and seed; "
        f"in-distribution check at N = {st['train'].get('train_max', 16)} on {st['id_examples']} examples "
        f"(learned if accuracy >= {st['learned_threshold']}).",
        f"Runs found: {runs['found']} of {runs['expected']}"
        + (f"; missing: {', '.join(runs['missing'])}" if runs['missing'] else "")
        + (f"; corrupt: {', '.join(c['run_id'] for c in runs['corrupt'])}" if runs['corrupt'] else "") + ".",
        "",
        f"Accuracy: mean over seeds [{conf}% t interval]. Differences: norm minus none, paired by seed, mean "
        f"[{conf}% t interval], then p-values of the paired t-test / exact sign-flip test (sign-flip cannot go below "
        f"2/2^seeds).",
    ]
    paired = {(p["task"], p["architecture"], p["norm"]): p for p in summary["paired"]}
    for task in st["tasks"]:
        for arch in st["architectures"]:
            lines += _cell_section(summary, paired, task, arch, conf)
    not_learned = [x for x in summary["learned"] if x["learned"] < x["seeds"]]
    lines += ["", "## Variants that did not learn", ""]
    lines += [f"- {x['task']}, {x['architecture']}, {x['norm']}: learned in {x['learned']} of {x['seeds']} seeds"
              for x in not_learned] or ["None: every run reached the in-distribution threshold."]
    return "\n".join(lines) + "\n"


#: the paper grid: every grid without the variant axis
REPRODUCTION = GridKind(name="reproduction", title=TITLE, claims=lambda st: not has_variant_axis(st),
                        summarize=summarize_reproduction, summary_format=SUMMARY_FORMAT, table=render_table,
                        figure_source="reproduction")
