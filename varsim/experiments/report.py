"""The Markdown report (``table.md``) of an aggregated reproduction."""

from __future__ import annotations

import json
import math

from varsim.experiments.settings import BASELINE_NORM

__all__ = ["render_table", "render_remedies_table"]


def _fmt_ci(mean, lo, hi, digits=3) -> str:
    if mean is None:
        return "n/a"
    if lo is None or hi is None:
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def _fmt_diff(mean, lo, hi, pt, ps) -> str:
    if mean is None:
        return "n/a"
    ci = "" if lo is None or hi is None else f" [{lo:+.3f}, {hi:+.3f}]"
    pt_s = "n/a" if pt is None else f"{pt:.3g}"
    ps_s = "n/a" if ps is None else f"{ps:.3g}"
    return f"{mean:+.3f}{ci} p={pt_s} / {ps_s}"


def render_table(summary: dict) -> str:
    """The Markdown report of :func:`aggregate`'s summary."""
    st = summary["settings"]
    conf = int(round(100 * summary["confidence"]))
    lines = [
        "# varsim reproduction: accuracy vs set size N",
        "",
        f"Settings: model {json.dumps(st['model'])}; training {json.dumps(st['train'])}; "
        f"{st['seeds']} seeds (root seed {st['root_seed']}); {st['eval_examples']} test examples per N and seed; "
        f"in-distribution check at N = {st['train'].get('train_max', 16)} on {st['id_examples']} examples "
        f"(learned if accuracy >= {st['learned_threshold']}).",
        f"Runs found: {summary['runs']['found']} of {summary['runs']['expected']}"
        + (f"; missing: {', '.join(summary['runs']['missing'])}" if summary['runs']['missing'] else "")
        + (f"; corrupt: {', '.join(c['run_id'] for c in summary['runs']['corrupt'])}"
           if summary['runs']['corrupt'] else "") + ".",
        "",
        f"Accuracy: mean over seeds [{conf}% t interval]. Differences: norm minus none, paired by seed, mean "
        f"[{conf}% t interval], then p-values of the paired t-test / exact sign-flip test (sign-flip cannot go below "
        f"2/2^seeds).",
    ]
    groups = summary["groups"]
    paired = {(p["task"], p["architecture"], p["norm"]): p for p in summary["paired"]}
    for task in st["tasks"]:
        for arch in st["architectures"]:
            gs = [g for g in groups if g["task"] == task and g["architecture"] == arch]
            norms = [g["norm"] for g in gs]
            lines += ["", f"## {task}, {arch.replace('_', ' ')}", ""]
            lines.append("| | " + " | ".join(norms) + " |")
            lines.append("|---" * (len(norms) + 1) + "|")
            row = []
            for g in gs:
                d = g.get("in_distribution")
                row.append("no runs" if d is None else
                           f"{_fmt_ci(d['mean'], d['ci_low'], d['ci_high'])}, learned {d['learned']}/{g['n_seeds']}")
            lines.append("| in-distribution | " + " | ".join(row) + " |")
            for j, n in enumerate(st["eval_lengths"]):
                cells = []
                for g in gs:
                    a = g.get("accuracy")
                    cells.append("n/a" if a is None else _fmt_ci(a["mean"][j], a["ci_low"][j], a["ci_high"][j]))
                lines.append(f"| N = {n} | " + " | ".join(cells) + " |")
            others = [n for n in norms if n != BASELINE_NORM and (task, arch, n) in paired]
            if others:
                lines += ["", f"Paired differences vs {BASELINE_NORM} ({task}, {arch.replace('_', ' ')}):", ""]
                lines.append("| N | " + " | ".join(f"{n} - {BASELINE_NORM}" for n in others) + " |")
                lines.append("|---" * (len(others) + 1) + "|")
                for j, n in enumerate(st["eval_lengths"]):
                    cells = []
                    for norm in others:
                        p = paired[(task, arch, norm)]
                        if "mean_diff" not in p:
                            cells.append("n/a")
                        else:
                            cells.append(_fmt_diff(p["mean_diff"][j], p["ci_low"][j], p["ci_high"][j],
                                                   p["p_ttest"][j], p["p_signflip"][j]))
                    lines.append(f"| {n} | " + " | ".join(cells) + " |")
                lines.append("")
                for norm in others:
                    p = paired[(task, arch, norm)]
                    better, worse = p.get("better_at", []), p.get("worse_at", [])
                    lines.append(f"- {norm} vs {BASELINE_NORM}: {conf}% interval above 0 at N = "
                                 f"{', '.join(map(str, better)) or 'none'}; below 0 at N = "
                                 f"{', '.join(map(str, worse)) or 'none'}.")
            slope_cells = []
            for g in gs:
                s = (g.get("probe_slopes") or {})
                pre, post = s.get("pre_median"), s.get("post_median")
                slope_cells.append(
                    "n/a" if not pre or not post else
                    f"{pre['mean']:+.2f} -> {post['mean']:+.2f}")
            lines += ["", "Log-log slope of the per-coordinate std of the attention output vs N (median over "
                          "coordinates, mean over seeds), before -> after the normalization: "
                      + "; ".join(f"{n}: {c}" for n, c in zip(norms, slope_cells)) + "."]
    not_learned = [x for x in summary["learned"] if x["learned"] < x["seeds"]]
    lines += ["", "## Variants that did not learn", ""]
    if not_learned:
        for x in not_learned:
            lines.append(f"- {x['task']}, {x['architecture']}, {x['norm']}: learned in {x['learned']} of "
                         f"{x['seeds']} seeds")
    else:
        lines.append("None: every run reached the in-distribution threshold.")
    return "\n".join(lines) + "\n"


def render_remedies_table(summary: dict) -> str:
    """The Markdown report of the remedies summary (:func:`varsim.experiments.remedies_summary.summarize_remedies`):
    per task and depth, accuracy per N [t interval], paired differences against softmax with Holm-adjusted p-values,
    the weight on the correct item per N, which variants keep the output variance, and the lr selection."""
    st = summary["settings"]
    conf = int(round(100 * summary["confidence"]))
    lines = [
        "# varsim remedies: which attention variant repairs length generalization?",
        "",
        f"Settings: model {json.dumps(st['model'])}; training {json.dumps(st['train'])}; lr grid {st.get('lr_grid')}; "
        f"{st['seeds']} seeds (root seed {st['root_seed']}); {st['eval_examples']} test examples per N and seed.",
        f"Runs found: {summary['runs']['found']} of {summary['runs']['expected']}.",
        f"Multiple-comparison correction: {summary['correction']}.",
        "",
        f"Accuracy: mean over seeds [{conf}% t interval]. Differences: variant minus softmax, paired by seed (the "
        f"inference-only maps on the same weights), mean [{conf}% t interval], Holm-adjusted p; "
        "* marks p_holm <= 0.05.",
    ]
    groups, paired = summary["groups"], summary["paired"]
    keys = []
    for g in groups:
        k = (g["task"], g["architecture"], g["norm"], g["depth"])
        if k not in keys:
            keys.append(k)
    for key in keys:
        gs = [g for g in groups if (g["task"], g["architecture"], g["norm"], g["depth"]) == key]
        ps = {p["variant"]: p for p in paired if (p["task"], p["architecture"], p["norm"], p["depth"]) == key}
        names = [g["variant"] + ("" if g["kind"] == "trained" else " (inf.)") for g in gs]
        task, arch, norm, depth = key
        lines += ["", f"## {task}, {arch.replace('_', ' ')}, norm {norm}, {depth} block(s)", "",
                  "Accuracy:", "", "| N | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
        row = []
        for g in gs:
            d = g.get("in_distribution")
            row.append("no runs" if d is None else f"{_fmt_ci(d['mean'], d['ci_low'], d['ci_high'])}, learned "
                                                   f"{d['learned']}/{g['n_seeds']}")
        lines.append("| in-dist. | " + " | ".join(row) + " |")
        for j, n in enumerate(gs[0]["lengths"]):
            cells = [_fmt_ci(g["accuracy"]["mean"][j], g["accuracy"]["ci_low"][j], g["accuracy"]["ci_high"][j])
                     if "accuracy" in g else "n/a" for g in gs]
            lines.append(f"| {n} | " + " | ".join(cells) + " |")
        others = [g["variant"] for g in gs if g["variant"] in ps]
        lines += ["", "Paired difference vs softmax:", "", "| N | " + " | ".join(others) + " |",
                  "|---" * (len(others) + 1) + "|"]
        for j, n in enumerate(gs[0]["lengths"]):
            cells = []
            for v in others:
                p = ps[v]
                if "mean_diff" not in p:
                    cells.append("n/a")
                    continue
                ph = p["p_holm"][j]
                star = "*" if ph is not None and math.isfinite(ph) and ph <= 0.05 else ""
                cells.append(f"{p['mean_diff'][j]:+.3f} [{p['ci_low'][j]:+.3f}, {p['ci_high'][j]:+.3f}] "
                             f"p={'n/a' if ph is None or not math.isfinite(ph) else f'{ph:.3g}'}{star}")
            lines.append(f"| {n} | " + " | ".join(cells) + " |")
        lines += ["", "Attention weight on the correct item (best head, mean over seeds):", "",
                  "| N | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
        for j, n in enumerate(gs[0]["probe_lengths"]):
            cells = [f"{g['weight_correct']['mean'][j]:.3f}" if "weight_correct" in g else "n/a" for g in gs]
            lines.append(f"| {n} | " + " | ".join(cells) + " |")
        keep = []
        for g, name in zip(gs, names):
            s = (g.get("std_slopes") or {}).get("post_median")
            keep.append(f"{name}: " + ("n/a" if not s else f"{s['mean']:+.2f} [{_nan(s['ci_low'])}, "
                                       f"{_nan(s['ci_high'])}]" + (", keeps it" if g.get("keeps_variance") else "")))
        lines += ["", "Log-log slope of the output std vs N after the normalization (median over coordinates, "
                      f"mean [{conf}% t interval] over seeds; 0 = the variance does not vanish): " + "; ".join(keep)
                  + "."]
    sel = summary.get("lr_selection")
    if sel:
        lines += ["", "## Learning-rate selection (in-distribution validation only)", "",
                  f"Rule: {summary['methods']['lr_selection']}.", "", "| cell | " + " | ".join(
                      f"lr {lr:g}" for lr in st["lr_grid"]) + " | chosen |", "|---" * (len(st["lr_grid"]) + 2) + "|"]
        for cell, c in sel["cells"].items():
            lines.append(f"| {cell} | " + " | ".join(f"{x:.3f}" for x in c["score"]) + f" | {c['chosen']:g} |")
    return "\n".join(lines) + "\n"


def _nan(x) -> str:
    return "n/a" if x is None or not math.isfinite(x) else f"{x:+.2f}"
