"""The second-kernel arm's signed per-seed accuracies at the primary length, recovered from what is committed.

The arm's run records were not committed: its ``summary.json`` keeps, per rerun and variant, only the number of test
examples answered differently from the committed run at each length (``per_run.rows``, absolute values), and, per
primary comparison, the arm's mean gain, interval and p-values at N = 1024. An arm accuracy is therefore the
committed one plus or minus a known count over the examples, and only the signs are missing. This module enumerates
them: per cell, every sign vector of the softmax runs (2^6) and, for each, every sign vector of each variant's runs,
keeping those that give the arm's committed mean gain and paired t-test p-value exactly (to 1e-9); an inference-only
map that decides exactly as softmax by construction (``permuted_softmax``) takes the softmax runs' accuracies. The
recovery is **unique** when exactly one assignment survives in the cell; then the arm's accuracies at N = 1024 are
written as a table (``varsim/figures/data/kernel_check/signed_1024.json``), from which every arm statistic at
N = 1024 recomputes (``tests/test_kernel_signs.py``). At the other lengths no arm statistic constrains the signs, so
they are not recoverable from the repository.

Run: ``python -m varsim.experiments.kernel_signs`` (writes the table beside the arm's summary).
"""

from __future__ import annotations

import hashlib
import itertools
import sys
from pathlib import Path

import numpy as np

from varsim.experiments.kernel_check import COMMITTED_DIR, SLICES, slice_settings

__all__ = ["SIGNED_FILE", "EXACT_AS_SOFTMAX", "recover_signs", "write_signed", "judge_arm_reruns"]

SIGNED_FILE = COMMITTED_DIR / "signed_1024.json"
SIGNED_FORMAT = "varsim.kernel_check.signed/1"
#: inference-only maps that decide exactly as softmax on every example (so their arm accuracy is softmax's)
EXACT_AS_SOFTMAX = ("permuted_softmax",)
_SIGNS = np.array(list(itertools.product((-1, 1), repeat=6)), dtype=float)
_TOL = 1e-9


def _cells(arm: dict, name: str) -> dict:
    """``{cell key: {variant: {seed: (committed accuracy, examples differing, examples, run_id)}}}`` at N = 1024."""
    from varsim.experiments.committed import committed_accuracies, committed_summary
    from varsim.experiments.settings import job_specs

    rows = {(r["slice"], r["run_id"], r["variant"]): r for r in arm["per_run"]["rows"]}
    summary = committed_summary(SLICES[name]["grid"])
    li = summary["lengths"].index(1024)
    cells: dict = {}
    for spec in job_specs(slice_settings(name)):
        key = (spec["task"], spec["architecture"], spec["norm"], spec.get("depth"), spec.get("recipe"),
               spec.get("key_encoding"))
        for variant, acc in committed_accuracies(summary, spec).items():
            if variant != "lengths":
                d = rows[(name, spec["run_id"], variant)]["examples"][li]
                cells.setdefault(key, {}).setdefault(variant, {})[spec["seed_index"]] = (
                    acc[li], d, spec["eval"]["examples"], spec["run_id"])
    return cells


def _candidates(runs: dict, seeds: list) -> np.ndarray:
    """Every signed accuracy vector of ``runs`` (one row per sign vector)."""
    base = np.array([runs[s][0] for s in seeds])
    step = np.array([runs[s][1] / runs[s][2] for s in seeds])
    return base + _SIGNS * step


def _p(d: np.ndarray) -> float:
    from varsim.experiments.stats import paired_t_pvalue

    return 1.0 if not d.any() else paired_t_pvalue(d)


def _matches(treat: np.ndarray, soft: np.ndarray, target: dict) -> list:
    """The rows of ``treat`` whose paired difference from ``soft`` has the arm's mean and p-value."""
    diff = treat - soft
    hits = []
    for j in np.flatnonzero(np.abs(diff.mean(axis=1) - target["mean_diff"]) <= _TOL):
        p, want = _p(diff[j]), target["p_ttest"]
        if (np.isnan(p) and np.isnan(want)) or abs(p - want) <= _TOL * max(want, 1e-300):
            hits.append(j)
    return hits


def _recover_cell(runs: dict, comps: list) -> list:
    """Every softmax sign assignment of one cell that every comparison can match: ``[{variant: [matching accuracy
    vectors]}]`` (softmax: its one vector)."""
    seeds = sorted(runs["softmax"])
    found = []
    for soft in np.unique(_candidates(runs["softmax"], seeds), axis=0):
        assignment = {"softmax": [soft]}
        for c in comps:
            if c["variant"] in EXACT_AS_SOFTMAX:
                cand = soft[None, :]
            else:
                cand = np.unique(_candidates(runs[c["variant"]], seeds), axis=0)
            assignment[c["variant"]] = [cand[j] for j in _matches(cand, soft, c["arm"])]
            if not assignment[c["variant"]]:
                break
        else:
            found.append(assignment)
    return found


def recover_signs(arm: dict) -> dict:
    """Per cell of the arm (``arm``: its committed ``summary.json``), the signed accuracies at N = 1024 when the
    recovery is unique, else the number of consistent assignments (module docstring)."""
    out = []
    for name in SLICES:
        for key, runs in _cells(arm, name).items():
            comps = [c for c in arm["comparisons"] if c["slice"] == name and (
                c["task"], c["architecture"], c["norm"], c["depth"], c["recipe"], c["encoding"]) == key]
            found = _recover_cell(runs, comps)
            unique = len(found) == 1 and all(len(v) == 1 for v in found[0].values())
            seeds = sorted(runs["softmax"])
            cell = {"slice": name, "task": key[0], "architecture": key[1], "norm": key[2], "depth": key[3],
                    "recipe": key[4], "encoding": key[5], "seeds": seeds, "unique": unique,
                    "assignments": len(found)}
            if unique:
                cell["accuracy"] = {v: [float(x) for x in acc[0]] for v, acc in found[0].items()}
                cell["committed"] = {v: [runs[v][s][0] for s in seeds] for v in found[0]}
                cell["run_ids"] = {v: [runs[v][s][3] for s in seeds] for v in found[0]}
            out.append(cell)
    return {"format": SIGNED_FORMAT, "length": 1024, "cells": out,
            "recovered": sum(c["unique"] for c in out), "n_cells": len(out)}


def write_signed(dest: Path = SIGNED_FILE) -> dict:
    """Recover the signs from the committed arm and write the table with the commit, the time and the SHA-256 of the
    summary it read."""
    from varsim._common.atomic import atomic_write_json
    from varsim._common.jsonio import read_json
    from varsim._common.provenance import provenance

    src = COMMITTED_DIR / "summary.json"
    res = {**recover_signs(read_json(src, what="kernel-check summary", expect=dict)),
           "inputs": {"summary.json": hashlib.sha256(src.read_bytes()).hexdigest()}, "provenance": provenance()}
    atomic_write_json(Path(dest), res)
    return res


def judge_arm_reruns(arm: dict, signed: dict) -> dict:
    """The statistical verdict of ``varsim recheck`` (:func:`varsim.experiments.rerun_verdict.statistical_verdict`)
    on each of the arm's reruns, as if each had just been rechecked on SkylakeX: its largest per-length difference
    from the committed run against the spread of the *other* reruns of its slice (left out of its own bound), and the
    comparisons resting on it recomputed with its signed accuracies at N = 1024 (``signed``: the recovered table).
    Returns the counts ``{"runs", "holds", "beyond_spread", "conclusion_changed", "failed": [{"run_id", "beyond",
    "changed"}]}``."""
    import collections

    from varsim.experiments.committed import committed_accuracies, committed_settings, committed_summary
    from varsim.experiments.rerun_verdict import statistical_verdict
    from varsim.experiments.settings import job_specs

    acc = {(rid, v): a for c in signed["cells"] for v, vals in c["accuracy"].items()
           for a, rid in zip(vals, c["run_ids"][v])}
    by_run = collections.defaultdict(list)
    for r in arm["per_run"]["rows"]:
        by_run[(r["slice"], r["run_id"])].append(r)
    out = {"runs": len(by_run), "holds": 0, "beyond_spread": 0, "conclusion_changed": 0, "failed": []}
    specs = {g: {s["run_id"]: s for s in job_specs(committed_settings(g))}
             for g in {sl["grid"] for sl in arm["settings"]["slices"].values()}}
    for (name, rid), rows in by_run.items():
        grid = arm["settings"]["slices"][name]["grid"]
        summary = committed_summary(grid)
        spec = specs[grid][rid]
        li = summary["lengths"].index(1024)
        rerun = {v: list(a) if v != "lengths" else a for v, a in committed_accuracies(summary, spec).items()}
        for v in rerun:
            if v != "lengths":
                rerun[v][li] = acc[(rid, v)]
        others = {**arm, "per_run": {**arm["per_run"], "rows": [r for r in arm["per_run"]["rows"]
                                                                 if r["run_id"] != rid]}}
        st = statistical_verdict(grid, summary, spec, rerun, {"max": max(r["max_examples"] for r in rows)}, others)
        out["holds"] += st["holds"]
        out["beyond_spread"] += not st["within_spread"]
        out["conclusion_changed"] += not st["conclusions_hold"]
        if not st["holds"]:
            out["failed"].append({"run_id": rid, "beyond": not st["within_spread"],
                                  "changed": [c["variant"] for c in st["conclusions"] if not c["holds"]]})
    return out


def main(argv=None) -> int:
    res = write_signed()
    print(f"recovered the signs uniquely in {res['recovered']} of {res['n_cells']} cells; wrote {SIGNED_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
