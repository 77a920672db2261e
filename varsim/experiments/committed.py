"""The committed grids: the results of full grid runs that ship with the package (their ``settings.json`` and
``summary.json``, under ``varsim/figures/data/<name>/``), and what can be recomputed from them on a clean clone.

A committed summary keeps, for every trained or inference-only variant of every cell, its per-seed accuracies at
every test length. A run of the grid is a pure function of its spec, and its spec follows from the committed
settings alone (:func:`run_spec`), so one run can be trained again and its accuracies compared with the committed
ones (:func:`recheck_committed`): the same examples (every test set is drawn from the settings' seeds), so the
comparison is in examples, per length.

What reproduces: bitwise on the BLAS kernel the grid was made with (its provenance names it;
:func:`varsim._common.provenance.kernel_selection` gives the environment variables that select it); elsewhere
training rounds differently and the trajectory moves, so single runs move while the conclusions are expected to hold:
there the verdict is statistical (:mod:`varsim.experiments.rerun_verdict`; ``docs/experiments/reproducibility.md``).
"""

from __future__ import annotations

import functools
from pathlib import Path

from varsim._common.jsonio import read_json
from varsim._common.provenance import compute_environment, kernel_selection
from varsim.experiments.settings import GROUP_KEYS, ReproductionSettings, job_specs

__all__ = ["COMMITTED_GRIDS", "committed_dir", "committed_settings", "committed_summary", "run_spec",
           "committed_accuracies", "run_accuracies", "compare_accuracies", "recheck_committed", "judge_rerun"]

_DATA = Path(__file__).resolve().parents[1] / "figures" / "data"

#: name -> what it is; its files are ``varsim/figures/data/<name>/{settings,summary}.json``
COMMITTED_GRIDS = {
    "remedies": "the remedies grid (varsim reproduce DIR --preset remedies)",
    "decoder": "the causal decoder grid, cosine decay (--preset decoder)",
    "decoder_constant": "the causal decoder grid, constant learning rate (--preset decoder_constant)",
}


def committed_dir(grid: str) -> Path:
    """The package-data directory of the committed grid ``grid`` (ValueError naming ``grid`` when unknown)."""
    from varsim._common.validate import check_choice

    return _DATA / check_choice("grid", grid, COMMITTED_GRIDS)


@functools.lru_cache(maxsize=None)
def committed_settings(grid: str) -> ReproductionSettings:
    """The settings the committed grid ``grid`` was run with (read once per process)."""
    stored = read_json(committed_dir(grid) / "settings.json", what="committed settings", expect=dict)
    return ReproductionSettings.from_dict(stored["settings"])


@functools.lru_cache(maxsize=None)
def committed_summary(grid: str) -> dict:
    """The committed summary of ``grid`` (its ``groups`` hold the per-seed accuracies; read once per process and
    shared: do not modify it)."""
    return read_json(committed_dir(grid) / "summary.json", what="committed summary", expect=dict)


def run_spec(settings: ReproductionSettings, run_id: str) -> dict:
    """The spec of the run ``run_id`` of the grid ``settings`` (ValueError naming ``run_id`` when the grid has no such
    run)."""
    specs = {s["run_id"]: s for s in job_specs(settings)}
    if run_id not in specs:
        example = next(iter(specs))
        raise ValueError(f"run_id: {run_id!r} is not a run of this grid ({len(specs)} runs, e.g. {example!r})")
    return specs[run_id]


def _group_matches(group: dict, spec: dict, variant: str) -> bool:
    keys = {"task": spec["task"], "architecture": spec["architecture"], "norm": spec["norm"],
            "depth": spec.get("depth"), "recipe": spec.get("recipe"), "encoding": spec.get("key_encoding")}
    return group.get("variant") == variant and all(group.get(k) == keys[k] for k in GROUP_KEYS)


def committed_accuracies(summary: dict, spec: dict) -> dict:
    """``{variant: [accuracy per length]}`` of the run ``spec`` as the committed ``summary`` holds them: the trained
    variant, and for a softmax run every inference-only map applied to it; ``"lengths"`` the lengths."""
    seed = spec["seed_index"]
    variants = [spec["attention"]] + [m["label"] for m in spec.get("inference") or []]
    out = {}
    for group in summary["groups"]:
        for variant in variants:
            if _group_matches(group, spec, variant) and seed in group["seeds"]:
                out[variant] = group["accuracy"]["per_seed"][group["seeds"].index(seed)]
                out["lengths"] = group["lengths"]
    missing = [v for v in variants if v not in out]
    if missing:
        raise ValueError(f"run_id: the committed summary holds no per-seed accuracies of {spec['run_id']!r} "
                         f"(variants {missing})")
    return out


def run_accuracies(record: dict) -> dict:
    """``{variant: [accuracy per length]}`` of a run record (test lengths, then the long ones), as
    :func:`committed_accuracies` gives them: the trained variant and the inference-only maps on its weights."""
    def accs(block):
        return list(block["eval"]["accuracy"]) + list((block.get("eval_long") or {}).get("accuracy", []))

    out = {record["spec"]["attention"]: accs(record)}
    for label, block in (record.get("inference") or {}).items():
        out[label] = accs(block)
    lengths = list(record["eval"]["lengths"]) + list((record.get("eval_long") or {}).get("lengths", []))
    return {**out, "lengths": lengths}


def _examples(spec: dict) -> list[int]:
    ev = spec["eval"]
    long = ev.get("long") or {}
    return [ev["examples"]] * len(ev["lengths"]) + [long.get("examples")] * len(long.get("lengths") or [])


def compare_accuracies(committed: dict, recomputed: dict, spec: dict) -> dict:
    """Per variant and length, how many test examples the recomputed run answers differently from the committed
    count (``|accuracy difference| * examples``): ``{"per_variant": {variant: [examples per length]}, "lengths", "max",
    "identical", "within_one"}``."""
    if committed["lengths"] != recomputed["lengths"]:
        raise ValueError(f"the recomputed run's lengths {recomputed['lengths']} are not the committed "
                         f"{committed['lengths']}")
    n = _examples(spec)
    per = {}
    for variant, acc in committed.items():
        if variant == "lengths":
            continue
        per[variant] = [int(round(abs(a - b) * k)) for a, b, k in zip(acc, recomputed[variant], n)]
    largest = max((max(v) for v in per.values()), default=0)
    return {"per_variant": per, "lengths": committed["lengths"], "max": largest,
            "identical": all(committed[v] == recomputed[v] for v in per),
            "within_one": largest <= 1}


def _current_kernel() -> dict:
    return kernel_selection({"compute": compute_environment()})


def recheck_committed(grid: str, run_id: str) -> dict:
    """Train the run ``run_id`` of the committed grid ``grid`` again (a temporary directory; nothing is written)
    and compare its accuracies, per variant and length, with the committed per-seed ones.

    Two verdicts, and which one was asked follows from the kernel (``mode``): ``"bitwise"`` when this machine selects
    the BLAS kernel the grid was made with (``verdict`` ``"identical"`` or ``"not identical"``: on the same kernel
    anything but identical accuracies is a defect), ``"statistical"`` on any other kernel (``verdict`` ``"holds"`` or
    ``"fails"``: the rerun lies within the spread the second-kernel arm measured for single runs and every committed
    comparison that rests on it keeps its verdict; ``statistical`` gives both parts,
    :func:`varsim.experiments.rerun_verdict.statistical_verdict`).

    Returns ``{"grid", "run_id", "mode", "verdict", "ok", "compare", "statistical", "made_with", "here",
    "same_kernel", "advice", "seconds"}``: ``made_with`` / ``here`` the BLAS kernels (``kernel_selection`` of
    varsim._common.provenance); ``advice`` the environment that selects the committed kernel, when they differ."""
    import json
    import time

    from varsim._common.jsonio import jsonable
    from varsim.experiments.worker import run_job

    settings = committed_settings(grid)
    spec = run_spec(settings, run_id)
    t0 = time.perf_counter()
    record = json.loads(json.dumps(jsonable(run_job((spec, None)))))
    return judge_rerun(grid, spec, record, time.perf_counter() - t0)


def judge_rerun(grid: str, spec: dict, record: dict, seconds: float = 0.0) -> dict:
    """The verdict of :func:`recheck_committed` on ``record``, a rerun of ``spec`` (as written to disk)."""
    from varsim.experiments.rerun_verdict import statistical_verdict

    summary = committed_summary(grid)
    rerun = run_accuracies(record)
    cmp = compare_accuracies(committed_accuracies(summary, spec), rerun, spec)
    made, here = kernel_selection(summary.get("provenance")), _current_kernel()
    same = made["kernel"] == here["kernel"] and made["env"].get("OPENBLAS_L2_SIZE") == here["env"].get(
        "OPENBLAS_L2_SIZE")
    stat = None
    if same:
        verdict, ok = ("identical", True) if cmp["identical"] else ("not identical", False)
    else:
        stat = statistical_verdict(grid, summary, spec, rerun, cmp)
        verdict, ok = ("holds", True) if stat["holds"] else ("fails", False)
    advice = None
    if not same and made["env"]:
        advice = " ".join(f"{k}={v}" for k, v in sorted(made["env"].items()))
    return {"grid": grid, "run_id": spec["run_id"], "mode": "bitwise" if same else "statistical", "verdict": verdict,
            "ok": ok, "compare": cmp, "statistical": stat, "made_with": made, "here": here, "same_kernel": same,
            "advice": advice, "seconds": seconds}
