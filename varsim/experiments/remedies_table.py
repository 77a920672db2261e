"""The Markdown report (``table.md``) of a variant grid's summary (:mod:`varsim.experiments.remedies_summary`), the
table of the remedies and decoder grid kinds: the pre-registered primary endpoint with its Holm correction and the
controls first, then per group the accuracy per N, the paired differences against softmax (secondary, Holm over the
secondary family), the ranking vs dispersion decomposition, the weight on the correct item and the output-std
slopes, then the learning-rate selection."""

from __future__ import annotations

import json

from varsim.experiments.report import diff_cell, fmt_ci, fmt_signed, head, row
from varsim.experiments.settings import GROUP_KEYS

__all__ = ["render_variant_table"]


def _group_label(g: dict) -> str:
    """A group in words: task, recipe, key encoding (and architecture, norm, depth when not the default)."""
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
    return tuple(g.get(k) for k in GROUP_KEYS)


def _primary(summary: dict, conf: int) -> list[str]:
    """The primary endpoint's table (one row per group, one column per remedy) and the controls' table."""
    ep, alpha, rows = summary["primary_endpoint"], summary["alpha"], summary["primary"]
    lines = ["", f"## Primary endpoint (pre-registered): paired accuracy difference against softmax at "
                 f"N = {ep['length']}", "",
             f"Mean over seeds [{conf}% t interval], p = Holm-adjusted paired t-test; {ep['correction']}; "
             f"* marks p <= {alpha}.", ""]
    variants = list(dict.fromkeys(r["variant"] for r in rows))
    lines += head("group", variants)
    for key in dict.fromkeys(_group_key(r) for r in rows):
        by_v = {r["variant"]: r for r in rows if _group_key(r) == key}
        lines.append(row(_group_label(next(iter(by_v.values()))), [
            diff_cell(r["mean_diff"], r["ci_low"], r["ci_high"], r["p_holm"], star=r["significant"])
            if (r := by_v.get(v)) else "n/a" for v in variants]))
    lines += ["", f"## Controls at N = {ep['length']} (unadjusted paired t-tests)", "",
              "Positive: must be positive and significant; negative: must not be significant.", "",
              "| group | control | difference | behaves |", "|---|---|---|---|"]
    for r in summary["controls"]:
        lines.append(f"| {_group_label(r)} | {r['variant']} ({r['role'].replace('_control', '')}) | "
                     f"{diff_cell(r['mean_diff'], r['ci_low'], r['ci_high'], r['p_ttest'], star=False)} | "
                     f"{'yes' if r['behaves'] else 'NO'} |")
    return lines


def _paired_cell(p: dict, j: int, alpha: float) -> str:
    if "mean_diff" not in p:
        return "n/a"
    ph = p["p_holm_secondary"][j]
    if ph is None:  # primary comparison or a control: its own table above
        return diff_cell(p["mean_diff"][j], p["ci_low"][j], p["ci_high"][j], p["p_ttest"][j], star=False) \
            + " (unadj.)"
    return diff_cell(p["mean_diff"][j], p["ci_low"][j], p["ci_high"][j], ph, star=ph <= alpha)


def _ranking(gs: list) -> list[str]:
    ranked = [g for g in gs if "ranking" in g]
    if not ranked:
        return []
    lines = ["", "Ranking vs dispersion (last block's best head; mean over seeds): P(largest weight on the "
                 "correct item) / errors with the ranking wrong / errors with the ranking right:", "",
             *head("N", (g["variant"] for g in ranked))]
    for j, n in enumerate(gs[0]["lengths"]):
        lines.append(row(n, [f"{g['ranking']['ranking_correct']['mean'][j]:.2f} / "
                             f"{g['ranking']['ranking_error']['mean'][j]:.2f} / "
                             f"{g['ranking']['dispersion_error']['mean'][j]:.2f}" for g in ranked]))
    return lines


def _slope(g: dict, name: str) -> str:
    sl = (g.get("std_slopes") or {}).get("post_median")
    return f"{name}: " + ("n/a" if not sl else f"{sl['mean']:+.2f} [{fmt_signed(sl['ci_low'])}, "
                          f"{fmt_signed(sl['ci_high'])}]" + (", keeps it" if g.get("keeps_variance") else ""))


def _group(summary: dict, gs: list, conf: int) -> list[str]:
    """One group's secondary tables: accuracy, paired differences, ranking, weight on the correct item, slopes."""
    ps = {p["variant"]: p for p in summary["paired"] if _group_key(p) == _group_key(gs[0])}
    names = [g["variant"] + ("" if g["kind"] == "trained" else " (inf.)") for g in gs]
    lines = ["", f"### {_group_label(gs[0])}", "", "Accuracy:", "", *head("N", names)]
    lines.append(row("in-dist.", ["no runs" if (d := g.get("in_distribution")) is None else
                                  f"{fmt_ci(d['mean'], d['ci_low'], d['ci_high'])}, learned {d['learned']}/"
                                  f"{g['n_seeds']}" for g in gs]))
    for j, n in enumerate(gs[0]["lengths"]):
        lines.append(row(n, [fmt_ci(g["accuracy"]["mean"][j], g["accuracy"]["ci_low"][j],
                                    g["accuracy"]["ci_high"][j]) if "accuracy" in g else "n/a" for g in gs]))
    others = [g["variant"] for g in gs if g["variant"] in ps]
    lines += ["", "Paired difference vs softmax:", "", *head("N", others)]
    for j, n in enumerate(gs[0]["lengths"]):
        lines.append(row(n, [_paired_cell(ps[v], j, summary["alpha"]) for v in others]))
    lines += _ranking(gs)
    lines += ["", "Attention weight on the correct item (probes, best head, mean over seeds):", "", *head("N", names)]
    for j, n in enumerate(gs[0]["probe_lengths"]):
        lines.append(row(n, [f"{g['weight_correct']['mean'][j]:.3f}" if "weight_correct" in g else "n/a"
                             for g in gs]))
    return lines + ["", "Log-log slope of the output std vs N after the normalization (median over coordinates, "
                        f"mean [{conf}% t interval] over seeds; 0 = the variance does not vanish): "
                    + "; ".join(_slope(g, name) for g, name in zip(gs, names)) + "."]


def _lr_selection(summary: dict) -> list[str]:
    sel, grid = summary.get("lr_selection"), summary["settings"].get("lr_grid")
    if not sel:
        return []
    lines = ["", "## Learning-rate selection (in-distribution validation only)", "",
             f"Rule: {summary['methods']['lr_selection']}.", "", *head("cell", [*(f"lr {lr:g}" for lr in grid),
                                                                           "chosen"])]
    for cell, c in sel["cells"].items():
        lines.append(f"| {cell} | " + " | ".join(f"{x:.3f}" for x in c["score"]) + f" | {c['chosen']:g} |")
    return lines


def render_variant_table(summary: dict, title: str) -> str:
    """The Markdown report of a variant grid's summary (module docstring), headed ``title``."""
    st = summary["settings"]
    conf = int(round(100 * summary["confidence"]))
    lines = [
        f"# {title}",
        "",
        f"Settings: model {json.dumps(st['model'])}; training {json.dumps(st['train'])}; recipes "
        f"{json.dumps(st.get('recipes', {}))}; key encodings {st.get('key_encodings', [])}; {st['seeds']} seeds (root "
        f"seed {st['root_seed']}); test examples per N and seed: "
        + ", ".join(f"{n}: {e}" for n, e in zip(summary["lengths"], summary["examples"])) + ".",
        f"Runs found: {summary['runs']['found']} of {summary['runs']['expected']}.",
    ]
    if summary.get("primary_endpoint"):
        lines += _primary(summary, conf)
    lines += ["", "## Secondary (every group, variant and N)", "",
              f"Accuracy: mean over seeds [{conf}% t interval]. Differences: variant minus softmax, paired by seed, "
              f"mean [{conf}% t interval], p = {summary['secondary_correction']}; * marks p <= {summary['alpha']}."]
    groups = summary["groups"]
    for key in dict.fromkeys(_group_key(g) for g in groups):
        lines += _group(summary, [g for g in groups if _group_key(g) == key], conf)
    return "\n".join(lines + _lr_selection(summary)) + "\n"
