"""The Markdown report (``table.md``) of an aggregated reproduction."""

from __future__ import annotations

import json

from varsim.experiments.settings import BASELINE_NORM

__all__ = ["render_table"]


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
