"""The Markdown report (``table.md``) of an aggregated reproduction."""

from __future__ import annotations

import json
import math

from varsim.experiments.settings import BASELINE_NORM, is_decoder_grid

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


def _group_label(g: dict) -> str:
    """A remedies group in words: task, recipe, key encoding (and architecture, norm, depth when not the default)."""
    parts = [g["task"]]
    if g.get("recipe"):
        parts.append(g["recipe"].replace("_", " "))
    if g.get("encoding"):
        parts.append(f"{g['encoding']} keys")
    if g.get("architecture") not in (None, "residual"):
        parts.append(g["architecture"].replace("_", " "))
    if g.get("norm") not in (None, "none"):
        parts.append(f"norm {g['norm']}")
    if g.get("depth") not in (None, 1):
        parts.append(f"{g['depth']} blocks")
    return ", ".join(parts)


def _group_key(g: dict) -> tuple:
    from varsim.experiments.settings import GROUP_KEYS

    return tuple(g.get(k) for k in GROUP_KEYS)


def _diff_cell(mean, lo, hi, p, *, star: bool) -> str:
    p_text = "n/a" if p is None or not math.isfinite(p) else f"{p:.2g}"
    return f"{mean:+.3f} [{lo:+.3f}, {hi:+.3f}] p={p_text}" + ("*" if star else "")


def render_remedies_table(summary: dict) -> str:
    """The Markdown report of the remedies summary (:func:`varsim.experiments.remedies_summary.summarize_remedies`):
    the pre-registered primary endpoint with its Holm correction and the controls first, then per group the accuracy
    per N, the paired differences against softmax (secondary, Holm over the secondary family), the ranking vs
    dispersion decomposition, the weight on the correct item and the output-std slopes."""
    st = summary["settings"]
    conf = int(round(100 * summary["confidence"]))
    alpha = summary["alpha"]
    ep = summary.get("primary_endpoint")
    lines = [
        "# varsim decoder: does the set model's picture hold in a causal decoder with positions?"
        if is_decoder_grid(st) else
        "# varsim remedies: which attention variant repairs length generalization, under which recipe?",
        "",
        f"Settings: model {json.dumps(st['model'])}; training {json.dumps(st['train'])}; recipes "
        f"{json.dumps(st.get('recipes', {}))}; key encodings {st.get('key_encodings', [])}; {st['seeds']} seeds (root "
        f"seed {st['root_seed']}); test examples per N and seed: "
        + ", ".join(f"{n}: {e}" for n, e in zip(summary["lengths"], summary["examples"])) + ".",
        f"Runs found: {summary['runs']['found']} of {summary['runs']['expected']}.",
    ]
    if ep:
        lines += ["", f"## Primary endpoint (pre-registered): paired accuracy difference against softmax at "
                      f"N = {ep['length']}", "",
                  f"Mean over seeds [{conf}% t interval], p = Holm-adjusted paired t-test; {ep['correction']}; "
                  f"* marks p <= {alpha}.", ""]
        rows = summary["primary"]
        variants = list(dict.fromkeys(r["variant"] for r in rows))
        lines += ["| group | " + " | ".join(variants) + " |", "|---" * (len(variants) + 1) + "|"]
        for key in dict.fromkeys(_group_key(r) for r in rows):
            by_v = {r["variant"]: r for r in rows if _group_key(r) == key}
            label = _group_label(next(iter(by_v.values())))
            cells = [_diff_cell(r["mean_diff"], r["ci_low"], r["ci_high"], r["p_holm"], star=r["significant"])
                     if (r := by_v.get(v)) else "n/a" for v in variants]
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
        lines += ["", f"## Controls at N = {ep['length']} (unadjusted paired t-tests)", "",
                  "Positive: must be positive and significant; negative: must not be significant.", "",
                  "| group | control | difference | behaves |", "|---|---|---|---|"]
        for r in summary["controls"]:
            lines.append(f"| {_group_label(r)} | {r['variant']} ({r['role'].replace('_control', '')}) | "
                         f"{_diff_cell(r['mean_diff'], r['ci_low'], r['ci_high'], r['p_ttest'], star=False)} | "
                         f"{'yes' if r['behaves'] else 'NO'} |")
    lines += ["", "## Secondary (every group, variant and N)", "",
              f"Accuracy: mean over seeds [{conf}% t interval]. Differences: variant minus softmax, paired by seed, "
              f"mean [{conf}% t interval], p = {summary['secondary_correction']}; * marks p <= {alpha}."]
    groups, paired = summary["groups"], summary["paired"]
    for key in dict.fromkeys(_group_key(g) for g in groups):
        gs = [g for g in groups if _group_key(g) == key]
        ps = {p["variant"]: p for p in paired if _group_key(p) == key}
        names = [g["variant"] + ("" if g["kind"] == "trained" else " (inf.)") for g in gs]
        lines += ["", f"### {_group_label(gs[0])}", "", "Accuracy:", "",
                  "| N | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
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
                ph = p["p_holm_secondary"][j]
                if ph is None:  # primary comparison or a control: its own table above
                    cells.append(_diff_cell(p["mean_diff"][j], p["ci_low"][j], p["ci_high"][j], p["p_ttest"][j],
                                            star=False) + " (unadj.)")
                    continue
                cells.append(_diff_cell(p["mean_diff"][j], p["ci_low"][j], p["ci_high"][j], ph, star=ph <= alpha))
            lines.append(f"| {n} | " + " | ".join(cells) + " |")
        ranked = [g for g in gs if "ranking" in g]
        if ranked:
            lines += ["", "Ranking vs dispersion (last block's best head; mean over seeds): P(largest weight on the "
                          "correct item) / errors with the ranking wrong / errors with the ranking right:", "",
                      "| N | " + " | ".join(g["variant"] for g in ranked) + " |", "|---" * (len(ranked) + 1) + "|"]
            for j, n in enumerate(gs[0]["lengths"]):
                cells = [f"{g['ranking']['ranking_correct']['mean'][j]:.2f} / "
                         f"{g['ranking']['ranking_error']['mean'][j]:.2f} / "
                         f"{g['ranking']['dispersion_error']['mean'][j]:.2f}" for g in ranked]
                lines.append(f"| {n} | " + " | ".join(cells) + " |")
        lines += ["", "Attention weight on the correct item (probes, best head, mean over seeds):", "",
                  "| N | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
        for j, n in enumerate(gs[0]["probe_lengths"]):
            cells = [f"{g['weight_correct']['mean'][j]:.3f}" if "weight_correct" in g else "n/a" for g in gs]
            lines.append(f"| {n} | " + " | ".join(cells) + " |")
        keep = []
        for g, name in zip(gs, names):
            sl = (g.get("std_slopes") or {}).get("post_median")
            keep.append(f"{name}: " + ("n/a" if not sl else f"{sl['mean']:+.2f} [{_nan(sl['ci_low'])}, "
                                       f"{_nan(sl['ci_high'])}]" + (", keeps it" if g.get("keeps_variance") else "")))
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
