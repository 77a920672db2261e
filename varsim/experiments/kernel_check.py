"""The conclusions under a second BLAS kernel: the cells behind the README's sentences, trained again on another
OpenBLAS kernel than the committed grids were made with, and judged by a criterion fixed before the runs.

Training is chaotic: another kernel rounds the matrix products differently, and thousands of steps turn that into
another trajectory, so single runs move. What is claimed to hold anywhere are the conclusions. The arm reruns, with
the committed settings (the same specs, seeds and test sets: every run id is the committed one), the slices
:data:`SLICES` of the committed grids, and judges each primary comparison by :data:`CRITERION`, written to the arm's
``settings.json`` before its first run (``python -m varsim.experiments.kernel_check run DIR``).

Run: ``python -m varsim.experiments.kernel_check run DIR [--workers K]`` (resumes; one results directory per slice,
``DIR/<slice>``), then ``python -m varsim.experiments.kernel_check summarize DIR`` (``DIR/summary.json`` and
``DIR/table.md``, from the slices' summaries and the committed ones), and ``... commit DIR`` (copies them into the
package data, ``varsim/figures/data/kernel_check/``, where the docs read them).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from varsim._common.atomic import atomic_write_json, atomic_write_text
from varsim._common.jsonio import read_json
from varsim._common.provenance import kernel_selection
from varsim.experiments.committed import committed_accuracies, committed_settings, committed_summary
from varsim.experiments.settings import GROUP_KEYS, ReproductionSettings, job_specs

__all__ = ["SLICES", "CRITERION", "CONCLUSIONS", "SETTINGS_FORMAT", "SUMMARY_FORMAT", "COMMITTED_DIR", "slice_settings",
           "run_arm", "summarize", "render_table", "commit", "SYMMETRIC_RULES", "symmetric_verdicts",
           "render_symmetric"]

SETTINGS_FORMAT = "varsim.kernel_check.settings/1"
SUMMARY_FORMAT = "varsim.kernel_check.summary/1"
#: the committed arm (package data): settings.json, summary.json, table.md
COMMITTED_DIR = Path(__file__).resolve().parents[1] / "figures" / "data" / "kernel_check"
COMMITTED_FILES = ("settings.json", "summary.json", "table.md")

#: the cells behind the README's sentences: name -> the committed grid and the restriction of its factors
SLICES = {
    "argmax_cosine_constant_lr1e3": {
        "grid": "remedies", "tasks": ["argmax"], "recipes": ["cosine_lr1e3", "constant_lr1e3"]},
    "dictionary_binary_cosine_lr3e3": {
        "grid": "remedies", "tasks": ["dictionary"], "recipes": ["cosine_lr3e3"], "key_encodings": ["binary"]},
    "decoder_nope_cosine": {"grid": "decoder", "architectures": ["decoder_none"]},
    "dictionary_table_cosine_lr1e3": {
        "grid": "remedies", "tasks": ["dictionary"], "recipes": ["cosine_lr1e3"], "key_encodings": ["embedding"]},
}

#: fixed before the first run of the arm (2026-12-04); each primary comparison of the slices is judged by it
CRITERION = {
    "alpha": 0.05,
    "significant_gain_holds": "a comparison that was significant after Holm in its committed grid holds when its "
                              "mean gain on the second kernel is positive and its paired t-test is significant at "
                              "unadjusted alpha = 0.05",
    "null_stays_null": "a remedy comparison that was not significant after Holm in its committed grid holds when it "
                       "is not significant after Holm over the arm's own family of remedy comparisons (every remedy "
                       "comparison of every slice)",
    "controls": "the controls hold when they behave as in their grids: the positive control (oracle) significantly "
                "positive at unadjusted alpha = 0.05, the negative controls (permuted_softmax, softmax_replicate) "
                "not significant at unadjusted alpha = 0.05",
    "agreement": "secondary: each mean gain of the arm lies within the combined interval of the two kernels, "
                 "|mean_arm - mean_committed| <= sqrt(h_arm^2 + h_committed^2), h the half-widths of the two 95% "
                 "t intervals; about 5% of true agreements miss it by chance (reported, not a verdict)",
    "conclusion": "a README sentence holds on the second kernel when every comparison behind it holds "
                  "(significant_gain_holds, null_stays_null and controls)",
}

#: the README's sentences and the slices' primary comparisons behind each (task, recipe, encoding, architecture)
CONCLUSIONS = {
    "argmax, cosine decay, lr 1e-3: every remedy helps": {"task": "argmax", "recipe": "cosine_lr1e3"},
    "argmax, constant lr 1e-3: the remedies add at most +0.08": {"task": "argmax", "recipe": "constant_lr1e3"},
    "dictionary, learned key table, cosine lr 1e-3: the largest gains (SSMax +0.38)":
        {"task": "dictionary", "recipe": "cosine_lr1e3", "encoding": "embedding"},
    "dictionary, binary code, cosine lr 3e-3: no gain": {"task": "dictionary", "recipe": "cosine_lr3e3",
                                                         "encoding": "binary"},
    "decoder without positions, cosine decay: SSMax and log-N gain +0.12 to +0.17":
        {"architecture": "decoder_none"},
}


def slice_settings(name: str) -> ReproductionSettings:
    """The committed grid's settings restricted to the slice ``name`` of :data:`SLICES` (same specs and run ids)."""
    from varsim._common.validate import check_choice

    sl = SLICES[check_choice("slice", name, SLICES)]
    base = committed_settings(sl["grid"]).to_dict()
    for key in ("tasks", "architectures", "norms", "key_encodings"):
        if key in sl:
            base[key] = list(sl[key])
    if "recipes" in sl:
        base["recipes"] = {r: base["recipes"][r] for r in sl["recipes"]}
    return ReproductionSettings.from_dict(base)


def _arm_settings() -> dict:
    return {"slices": SLICES, "criterion": CRITERION, "conclusions": CONCLUSIONS}


def write_arm_settings(outdir: Path) -> None:
    """Write (or check) ``outdir/settings.json``: the slices and the criterion, before any run."""
    from varsim._common.provenance import provenance

    path = outdir / "settings.json"
    if path.exists():
        stored = read_json(path, what="kernel-check settings", expect=dict)
        if stored.get("format") != SETTINGS_FORMAT or stored.get("settings") != _arm_settings():
            raise ValueError(f"outdir {str(outdir)!r} holds a kernel-check arm with other settings; use another "
                             "outdir")
        return
    outdir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(path, {"format": SETTINGS_FORMAT, "settings": _arm_settings(), "provenance": provenance()})


def run_arm(outdir, *, workers: int | None = None, progress: bool = True, only=None) -> list[dict]:
    """Run (or resume) every slice (or those named in ``only``) into ``outdir/<slice>``; return their reports."""
    from varsim.experiments.reproduce import run_reproduction

    out = Path(outdir)
    write_arm_settings(out)
    reports = []
    for name in SLICES:
        if only and name not in only:
            continue
        print(f"kernel_check: slice {name}", file=sys.stderr, flush=True)
        reports.append(run_reproduction(out / name, settings=slice_settings(name), workers=workers,
                                        progress=progress))
    return reports


# ----------------------------------------------------------------------------------------------------------------------
# The comparison with the committed grids


def _key(row: dict) -> tuple:
    return tuple(row.get(k) for k in GROUP_KEYS) + (row["variant"],)


def _half(row: dict) -> float:
    return (row["ci_high"] - row["ci_low"]) / 2


def _per_run_differences(name: str, outdir: Path) -> list[dict]:
    """Per run of the slice and variant: the largest number of test examples answered differently from the
    committed run at any length, and at the primary length."""
    from varsim.experiments.committed import compare_accuracies, run_accuracies
    from varsim.experiments.records import load_run, run_path

    settings = slice_settings(name)
    summary = committed_summary(SLICES[name]["grid"])
    rows = []
    for spec in job_specs(settings):
        path = run_path(outdir / name, spec["run_id"])
        if not path.exists():
            continue
        cmp = compare_accuracies(committed_accuracies(summary, spec), run_accuracies(load_run(path)), spec)
        for variant, diffs in cmp["per_variant"].items():
            rows.append({"slice": name, "run_id": spec["run_id"], "variant": variant,
                         "trained": variant == spec["attention"], "max_examples": max(diffs), "examples": diffs})
    return rows


def _slice_rows(name: str, sl: dict, new: dict) -> list[dict]:
    """The primary and control rows of one finished slice's summary ``new``, each beside its committed row."""
    old = committed_summary(sl["grid"])
    old_rows = {_key(r): r for r in old["primary"] + old["controls"]}
    stats = ("mean_diff", "ci_low", "ci_high", "p_ttest")
    rows = []
    for r in new["primary"] + new["controls"]:
        o = old_rows[_key(r)]
        rows.append({"slice": name, "grid": sl["grid"], **{k: r.get(k) for k in GROUP_KEYS},
                     "variant": r["variant"], "role": r.get("role", "remedy"),
                     "committed": {**{k: o[k] for k in stats},
                                   "significant": o.get("significant"), "behaves": o.get("behaves")},
                     "arm": {k: r[k] for k in stats}})
    return rows


def _judge(rows: list[dict], alpha: float) -> None:
    """Holm over the arm's remedy comparisons, then each row's test of :data:`CRITERION` (``test``, ``holds``) and
    whether its mean agrees with the committed one within both intervals (``agrees``)."""
    from varsim.experiments.stats import holm

    remedies = [r for r in rows if r["role"] == "remedy"]
    for r, p in zip(remedies, holm([r["arm"]["p_ttest"] for r in remedies])):
        r["arm"]["p_holm_arm"] = float(p)
    for r in rows:
        a, c = r["arm"], r["committed"]
        if r["role"] == "remedy" and c["significant"]:
            r["test"], r["holds"] = "significant_gain_holds", a["mean_diff"] > 0 and a["p_ttest"] < alpha
        elif r["role"] == "remedy":
            r["test"], r["holds"] = "null_stays_null", a["p_holm_arm"] >= alpha
        elif r["role"] == "positive_control":
            r["test"], r["holds"] = "controls", a["mean_diff"] > 0 and a["p_ttest"] < alpha
        else:
            r["test"], r["holds"] = "controls", not (a["p_ttest"] < alpha)
        r["holds"] = bool(r["holds"])
        r["agrees"] = abs(a["mean_diff"] - c["mean_diff"]) <= math.hypot(_half(a), _half(c)) + 1e-12


def _conclusions(rows: list[dict]) -> list[dict]:
    """Each of :data:`CONCLUSIONS` with the comparisons behind it: it holds when every one of them holds."""
    out = []
    for text, where in CONCLUSIONS.items():
        behind = [r for r in rows if all(r.get(k) == v for k, v in where.items())]
        out.append({"conclusion": text, "comparisons": len(behind),
                    "holds": bool(behind) and all(r["holds"] for r in behind),
                    "failed": [f"{r['variant']} ({r['test']})" for r in behind if not r["holds"]],
                    "complete": bool(behind)})
    return out


#: the symmetric rules reported beside the registered one (issue 46; not registered before the arm's runs): the same
#: correction for a gain that must hold as for a null that must stay null
SYMMETRIC_RULES = {
    "registered": "as registered (CRITERION): a gain holds at unadjusted alpha, a null must stay null after Holm",
    "holm_both": "a gain holds when positive and significant after Holm over the arm's remedy comparisons; a null "
                 "when not significant after that Holm",
    "unadjusted_both": "a gain holds when positive and significant at unadjusted alpha; a null when not significant "
                       "at unadjusted alpha",
}


def _holds_under(r: dict, rule: str, alpha: float) -> bool:
    a = r["arm"]
    if r["role"] != "remedy" or rule == "registered":
        return bool(r["holds"])  # the controls keep their own unadjusted tests, as in their grids
    p = a["p_holm_arm"] if rule == "holm_both" else a["p_ttest"]
    if r["committed"]["significant"]:
        return bool(a["mean_diff"] > 0 and p < alpha)
    return bool(p >= alpha)


def symmetric_verdicts(summary: dict) -> dict:
    """Each comparison and each conclusion of a finished arm's ``summary`` judged under every rule of
    :data:`SYMMETRIC_RULES`, and how many comparisons agree in sign with the committed grids (arm and committed mean
    gain both positive, both negative or both zero)."""
    alpha = summary["settings"]["criterion"]["alpha"]
    rows = summary["comparisons"]
    judged = [{"slice": r["slice"], "variant": r["variant"], "role": r["role"], "test": r["test"],
               **{k: r.get(k) for k in GROUP_KEYS},
               "rules": {rule: _holds_under(r, rule, alpha) for rule in SYMMETRIC_RULES}} for r in rows]
    conclusions = []
    for text, where in summary["settings"]["conclusions"].items():
        behind = [j for j in judged if all(j.get(k) == v for k, v in where.items())]
        conclusions.append({"conclusion": text, "comparisons": len(behind),
                            "rules": {rule: bool(behind) and all(j["rules"][rule] for j in behind)
                                      for rule in SYMMETRIC_RULES},
                            "failed": {rule: [j["variant"] for j in behind if not j["rules"][rule]]
                                       for rule in SYMMETRIC_RULES}})
    sign = sum(math.copysign(1, r["arm"]["mean_diff"]) == math.copysign(1, r["committed"]["mean_diff"])
               if r["arm"]["mean_diff"] and r["committed"]["mean_diff"] else
               r["arm"]["mean_diff"] == r["committed"]["mean_diff"] for r in rows)
    return {"rules": SYMMETRIC_RULES, "comparisons": judged, "conclusions": conclusions,
            "agree_in_sign": int(sign), "agree_within_interval": sum(r["agrees"] for r in rows), "n": len(rows)}


def render_symmetric(sym: dict) -> str:
    """A Markdown table of :func:`symmetric_verdicts`: each conclusion under each rule."""
    rules = list(sym["rules"])
    lines = ["| conclusion | " + " | ".join(rules) + " |", "|---" * (1 + len(rules)) + "|"]
    for c in sym["conclusions"]:
        cells = ["holds" if c["rules"][r] else "fails (" + ", ".join(c["failed"][r]) + ")" for r in rules]
        lines.append(f"| {c['conclusion']} | " + " | ".join(cells) + " |")
    lines.append("| **sentences that hold** | " + " | ".join(
        f"**{sum(c['rules'][r] for c in sym['conclusions'])} of {len(sym['conclusions'])}**" for r in rules) + " |")
    return "\n".join(lines) + "\n"


def summarize(outdir) -> dict:
    """Judge every primary comparison of the finished slices by :data:`CRITERION` against the committed grids;
    write ``outdir/summary.json`` and ``outdir/table.md``; return the summary."""
    from varsim._common.provenance import provenance

    out = Path(outdir)
    write_arm_settings(out)
    rows, done, missing = [], [], []
    for name, sl in SLICES.items():
        path = out / name / "summary.json"
        new = read_json(path, what="slice summary", expect=dict) if path.exists() else None
        if new is None or new.get("runs", {}).get("missing") or new.get("runs", {}).get("corrupt"):
            missing.append(name)
            continue
        done.append(name)
        rows += _slice_rows(name, sl, new)
    _judge(rows, CRITERION["alpha"])
    diffs = [d for name in done for d in _per_run_differences(name, out)]
    made = kernel_selection(committed_summary("remedies").get("provenance"))
    here = kernel_selection(provenance())
    summary = {"format": SUMMARY_FORMAT, "settings": _arm_settings(), "slices_done": done, "slices_missing": missing,
               "committed_kernel": made, "arm_kernel": here, "comparisons": rows, "conclusions": _conclusions(rows),
               "per_run": _difference_distribution(diffs), "provenance": provenance()}
    atomic_write_json(out / "summary.json", summary)
    atomic_write_text(out / "table.md", render_table(summary))
    return summary


def _difference_distribution(diffs: list[dict]) -> dict:
    """How far single runs moved: the distribution over runs (each run's trained variant; the inference-only maps on
    its weights are in the raw rows) of the largest per-length difference in test examples answered."""
    import numpy as np

    trained = [d for d in diffs if d["trained"]]
    if not trained:
        return {"n": 0, "rows": diffs}
    m = np.array([d["max_examples"] for d in trained])
    return {"n": int(m.size), "identical": int((m == 0).sum()), "within_one": int((m <= 1).sum()),
            "quantiles": {str(q): float(np.quantile(m, q)) for q in (0.1, 0.25, 0.5, 0.75, 0.9)},
            "max": int(m.max()), "rows": diffs}


def _fmt(a: dict) -> str:
    return f"{a['mean_diff']:+.3f} [{a['ci_low']:+.3f}, {a['ci_high']:+.3f}]"


def render_table(summary: dict) -> str:
    k = summary["committed_kernel"]["kernel"], summary["arm_kernel"]["kernel"]
    lines = [f"# The conclusions under a second BLAS kernel (committed: {k[0]}; arm: {k[1]})", "",
             "Fixed before the first run (the arm's settings.json): " + CRITERION["conclusion"] + ".", "",
             "| conclusion | comparisons | holds | failed |", "|---|---|---|---|"]
    for c in summary["conclusions"]:
        held = "not run" if not c["complete"] else "yes" if c["holds"] else "NO"
        lines.append(f"| {c['conclusion']} | {c['comparisons']} | {held} | {', '.join(c['failed']) or '-'} |")
    lines += ["", "Per comparison: paired accuracy gain over softmax at N = 1024, mean over 6 seeds [95% t interval]; "
              "p: unadjusted paired t-test; Holm over the arm's remedy comparisons.", "",
              "| slice | cell | variant | test | committed | arm | p (arm) | Holm (arm) | holds | agrees |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for r in summary["comparisons"]:
        cell = " ".join(str(r[k]) for k in ("task", "architecture", "norm", "recipe", "encoding") if r.get(k))
        holm_p = r["arm"].get("p_holm_arm")
        lines.append(f"| {r['slice']} | {cell} | {r['variant']} | {r['test']} | {_fmt(r['committed'])} | "
                     f"{_fmt(r['arm'])} | {r['arm']['p_ttest']:.2g} | {'-' if holm_p is None else f'{holm_p:.2g}'} | "
                     f"{'yes' if r['holds'] else 'NO'} | {'yes' if r['agrees'] else 'no'} |")
    pr = summary["per_run"]
    if pr["n"]:
        q = pr["quantiles"]
        lines += ["", f"Single runs ({pr['n']} trained runs): the largest per-length difference in test examples "
                  f"answered differently from the committed run: identical in {pr['identical']}, at most one in "
                  f"{pr['within_one']}; median {q['0.5']:g}, 90% quantile {q['0.9']:g}, largest {pr['max']}."]
    if summary["slices_missing"]:
        lines += ["", "Slices not (completely) run: " + ", ".join(summary["slices_missing"]) + "."]
    return "\n".join(lines) + "\n"


def commit(outdir, dest=COMMITTED_DIR) -> list[Path]:
    """Copy a complete arm's settings, summary and table into ``dest`` (the package data); refused (ValueError) for
    an arm with a slice missing or a table that is not its summary's."""
    out = Path(outdir)
    summary = read_json(out / "summary.json", what="kernel-check summary", expect=dict)
    if summary.get("format") != SUMMARY_FORMAT:
        raise ValueError(f"outdir {str(out)!r} holds no kernel-check summary ({SUMMARY_FORMAT})")
    if summary["slices_missing"]:
        raise ValueError(f"outdir: the arm is incomplete (slices not run: {', '.join(summary['slices_missing'])})")
    if (out / "table.md").read_text() != render_table(summary):
        raise ValueError(f"outdir: {out / 'table.md'} is not the table of its summary.json; run summarize again")
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    return [atomic_write_text(dest / name, (out / name).read_text()) for name in COMMITTED_FILES]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m varsim.experiments.kernel_check", description=__doc__.split(
        "\n\n")[0])
    parser.add_argument("action", choices=("run", "summarize", "commit"))
    parser.add_argument("outdir")
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--only", nargs="+", choices=list(SLICES), default=None)
    args = parser.parse_args(argv)
    try:
        if args.action == "commit":
            for path in commit(args.outdir):
                print(f"wrote {path}")
            return 0
        if args.action == "run":
            run_arm(args.outdir, workers=args.workers, only=args.only)
        print(render_table(summarize(args.outdir)))
    except ValueError as exc:
        print(f"kernel_check: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

