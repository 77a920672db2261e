"""The statistical verdict on a committed run trained again under another BLAS kernel than the grid was made with.

Training is chaotic: another kernel rounds the matrix products differently, thousands of steps turn that into another
trajectory, and a single run's accuracies move by more than rounding (the second-kernel arm,
``varsim/figures/data/kernel_check/``, measured it: of its 168 reruns, 1 stayed within one test example of the
committed run). Bitwise equality is therefore asked only on the record's kernel; on any other kernel the question is
statistical, in two parts, both fixed here before any use:

- **spread**: the rerun's largest per-length difference from the committed run, in test examples, over the trained
  variant and the inference-only maps on its weights, is at most the largest difference the arm measured among the
  single runs of the same slice (its trained runs and their inference-only maps); for a run of a cell the arm did
  not rerun, the largest over the whole arm. On the arm's own reruns, each judged against the others of its slice,
  3 of 168 lie beyond it (``varsim.experiments.kernel_signs.judge_arm_reruns``); a kernel that moves runs more than
  SkylakeX did is what it reports.
- **conclusions**: every pre-registered comparison of the committed grid that rests on the run (the comparisons of its
  variant, or for a softmax run every comparison of its cell, at the primary length), recomputed with the rerun's
  accuracies in place of the committed ones for its seed, keeps its committed verdict: a remedy comparison its Holm
  verdict over the grid's whole primary family (the same correction for a gain as for a null), a control its
  unadjusted one (as in the grid).
"""

from __future__ import annotations

from pathlib import Path

from varsim._common.jsonio import read_json
from varsim.experiments.settings import BASELINE_ATTENTION, GROUP_KEYS

__all__ = ["ARM_SUMMARY", "arm_spread", "conclusions_with_rerun", "statistical_verdict"]

#: the committed second-kernel arm's summary (package data; written by varsim.experiments.kernel_check)
ARM_SUMMARY = Path(__file__).resolve().parents[1] / "figures" / "data" / "kernel_check" / "summary.json"


def _slice_of(slices: dict, grid: str, spec: dict) -> str | None:
    """The arm's slice whose cells hold the run ``spec`` of ``grid`` (None: the arm did not rerun its cell)."""
    fields = {"tasks": spec["task"], "recipes": spec.get("recipe"), "key_encodings": spec.get("key_encoding"),
              "architectures": spec["architecture"]}
    for name, sl in slices.items():
        if sl["grid"] == grid and all(value in sl[key] for key, value in fields.items() if key in sl):
            return name
    return None


def arm_spread(grid: str, spec: dict, arm: dict | None = None) -> dict:
    """The spread the arm measured for single runs like ``spec`` (a run of ``grid``): ``{"examples", "slice", "runs",
    "kernels"}``: the largest per-length difference in test examples among the arm's reruns (trained variants and
    inference-only maps) of the run's slice, or of every slice (``slice`` None) when the arm did not rerun its cell."""
    arm = arm if arm is not None else read_json(ARM_SUMMARY, what="kernel-check summary", expect=dict)
    name = _slice_of(arm["settings"]["slices"], grid, spec)
    pool = [r for r in arm["per_run"]["rows"] if name is None or r["slice"] == name]
    return {"examples": max(r["max_examples"] for r in pool), "slice": name,
            "runs": len({(r["slice"], r["run_id"]) for r in pool}),
            "kernels": [arm["committed_kernel"]["kernel"], arm["arm_kernel"]["kernel"]]}


def _group_of(summary: dict, spec: dict) -> dict:
    want = {"task": spec["task"], "architecture": spec["architecture"], "norm": spec["norm"],
            "depth": spec.get("depth"), "recipe": spec.get("recipe"), "encoding": spec.get("key_encoding")}
    return {k: want[k] for k in GROUP_KEYS}


def _per_seed(summary: dict, where: dict, variant: str, j: int) -> dict:
    for g in summary["groups"]:
        if g["variant"] == variant and all(g.get(k) == v for k, v in where.items()):
            return {s: row[j] for s, row in zip(g["seeds"], g["accuracy"]["per_seed"])}
    raise ValueError(f"the committed summary holds no per-seed accuracies of {variant!r} in {where}")


def _recomputed_p(summary, where, variant, j, seed, rerun) -> tuple[float, float]:
    """Mean paired difference and paired t-test p of ``variant`` against softmax at length index ``j``, the seed
    ``seed`` taken from ``rerun`` for every variant it holds."""
    import numpy as np

    from varsim.experiments.stats import paired_t_pvalue

    treat, base = _per_seed(summary, where, variant, j), _per_seed(summary, where, BASELINE_ATTENTION, j)
    for acc, name in ((treat, variant), (base, BASELINE_ATTENTION)):
        if name in rerun:
            acc[seed] = rerun[name][j]
    seeds = sorted(set(treat) & set(base))
    d = np.array([treat[s] - base[s] for s in seeds])
    return float(d.mean()), (1.0 if not d.any() else paired_t_pvalue(d))


def conclusions_with_rerun(summary: dict, spec: dict, rerun: dict) -> list[dict]:
    """The committed grid's primary and control comparisons that rest on the run ``spec``, each with its committed
    verdict and the one recomputed with ``rerun`` (``{variant: [accuracy per length]}``, as
    :func:`varsim.experiments.committed.run_accuracies` gives it) in place of the committed accuracies of its seed
    (module docstring). Each entry: ``{"variant", "role", "committed": {"mean_diff", "p", "verdict"}, "rerun": {...},
    "holds"}``; ``verdict`` is ``"significant"`` / ``"not significant"`` (remedies, Holm over the grid's primary
    family) or ``"behaves"`` / ``"misbehaves"`` (controls, unadjusted)."""
    import numpy as np

    from varsim.experiments.stats import holm

    alpha = summary["alpha"]
    where = _group_of(summary, spec)
    j = summary["lengths"].index(summary["settings"]["primary"]["length"])
    seed, touched = spec["seed_index"], set(rerun) - {"lengths"}

    def mine(row):
        return all(row.get(k) == v for k, v in where.items()) and (
            row["variant"] in touched or BASELINE_ATTENTION in touched)

    primary = summary["primary"]
    new = [(_recomputed_p(summary, where, r["variant"], j, seed, rerun) if mine(r) else (r["mean_diff"], r["p_ttest"]))
           for r in primary]
    adjusted = holm(np.array([p for _, p in new]))
    out = []
    for r, (mean, _), adj in zip(primary, new, adjusted):
        if mine(r):
            out.append(_entry(r, "remedy", r["p_holm"], r["significant"], mean, float(adj), bool(adj <= alpha),
                              ("significant", "not significant")))
    for r in summary["controls"]:
        if mine(r):
            mean, p = _recomputed_p(summary, where, r["variant"], j, seed, rerun)
            behaves = (p < alpha and mean > 0) if r["role"] == "positive_control" else not p < alpha
            out.append(_entry(r, r["role"], r["p_ttest"], r["behaves"], mean, p, bool(behaves),
                              ("behaves", "misbehaves")))
    return out


def _entry(row, role, p_old, yes_old, mean, p, yes, words) -> dict:
    return {"variant": row["variant"], "role": role,
            "committed": {"mean_diff": row["mean_diff"], "p": p_old, "verdict": words[0] if yes_old else words[1]},
            "rerun": {"mean_diff": mean, "p": p, "verdict": words[0] if yes else words[1]},
            "holds": bool(yes) == bool(yes_old)}


def statistical_verdict(grid: str, summary: dict, spec: dict, rerun: dict, compare: dict,
                        arm: dict | None = None) -> dict:
    """Both parts of the statistical verdict (module docstring) on the rerun ``rerun`` of ``spec`` whose per-length
    differences from the committed run are ``compare`` (:func:`varsim.experiments.committed.compare_accuracies`):
    ``{"within_spread", "spread", "largest", "conclusions", "conclusions_hold", "holds"}``."""
    spread = arm_spread(grid, spec, arm)
    conclusions = conclusions_with_rerun(summary, spec, rerun)
    within = compare["max"] <= spread["examples"]
    held = all(c["holds"] for c in conclusions)
    return {"within_spread": within, "spread": spread, "largest": compare["max"], "conclusions": conclusions,
            "conclusions_hold": held, "holds": within and held}
