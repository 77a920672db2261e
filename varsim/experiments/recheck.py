"""Recompute finished runs of a results directory with the current code and compare them with their records.

A directory resumed across code changes holds records made at several commits (``varsim reproduce`` says so when it
resumes). Each run is a pure function of its spec, so a recomputed run whose numbers equal the record's shows that
the current code gives what the older record says. The recomputation trains in a temporary directory: nothing in the
results directory is written (``varsim reproduce DIR --recheck RUN_ID ...``).

What reproduces, said exactly: bitwise on the machine and BLAS kernel the record was made on; elsewhere, within the
tolerances below (:func:`compare_numbers`), which are those of float rounding and say nothing of a training run
that rounding sent along another trajectory (see :func:`recheck_runs`).
"""

from __future__ import annotations

import json
import time

from varsim._common.intervals import wilson_interval
from varsim._common.jsonio import JSONFileError, jsonable, read_json
from varsim._common.provenance import kernel_selection, provenance
from varsim.experiments.records import CorruptRun, load_run, load_select_run, record_numbers, run_path, select_path

__all__ = ["recheck_runs", "recheck_result", "record_provenance", "compare_numbers", "compare_environments",
           "environment", "COUNT_FIELDS", "PROPORTION_FIELDS", "FLOAT_RTOL"]


def recheck_runs(outdir, run_ids, *, on_result=None) -> list[dict]:
    """Recompute the runs ``run_ids`` of ``outdir`` (main runs or lr-selection runs) from their records' specs.

    Every record is read and checked before anything is computed (ValueError naming the ``run_id`` without a
    trustworthy record). Returns, per run, ``{"run_id", "verdict", "ok", "identical", "differs", "fields",
    "added", "removed", "environment", "made_at", "recomputed_at" (git commits), "seconds"}``; ``on_result(result)``
    is called as each one finishes.

    ``verdict``: ``"bitwise-equal"`` (every number of the record, timing and provenance aside, has the same bits;
    fields the recomputation adds, written by newer code, are listed in ``added`` and not judged), ``"within
    tolerance"`` or ``"beyond tolerance"`` (:func:`compare_numbers`: ``fields`` gives, per field that differs, the
    largest absolute and relative deviation and the tolerance). ``environment``: the record's CPU model, BLAS
    library/version/kernel, NumPy and Numba against this machine's (:func:`compare_environments`); ``expect``
    ``"bitwise"`` when they are the same, else ``"tolerance"``; ``needs``, when the CPU or BLAS kernel differs,
    the record's kernel and the environment that selects it (``kernel_selection`` of varsim._common.provenance).
    ``ok``: bitwise-equal, or within tolerance on a
    different (or unrecorded) environment; on the same one anything but bitwise equality is a defect.

    A recheck retrains the model. On another BLAS kernel the training steps round differently and thousands of
    steps can amplify that into a different trajectory: "beyond tolerance" on another machine may mean the training
    diverged, which this comparison cannot tell from a defect; on the record's own machine and kernel it can."""
    if isinstance(run_ids, str) or not run_ids:
        raise ValueError("run_ids must be a non-empty list of run ids")
    records = [(rid, _record(outdir, rid)) for rid in run_ids]
    from varsim.experiments.worker import run_job

    commit = provenance().get("git_commit")
    results = []
    for rid, rec in records:
        t0 = time.perf_counter()
        new = json.loads(json.dumps(jsonable(run_job((rec["spec"], None)))))  # as it would be written to disk
        results.append(recheck_result(rid, rec, new, commit, time.perf_counter() - t0))
        if on_result is not None:
            on_result(results[-1])
    return results


def recheck_result(run_id: str, rec: dict, new: dict, commit, seconds: float) -> dict:
    """The verdict on a record ``rec`` and its recomputation ``new`` (both as written to disk; the environments
    compared are those their provenance records, so both name the BLAS libraries a run loads): see
    :func:`recheck_runs`."""
    old, now = record_numbers(rec), record_numbers(new)
    cmp = compare_numbers(old, now)
    env = compare_environments(environment(rec.get("provenance")), environment(new.get("provenance")) or {})
    if cmp["bitwise"] or (cmp["added"] and not cmp["fields"] and not cmp["removed"]):
        verdict = "bitwise-equal"
    elif cmp["within_tolerance"]:
        verdict = "within tolerance"
    else:
        verdict = "beyond tolerance"
    # the same machine and kernel must give the same bits; elsewhere rounding may move numbers within tolerance
    ok = verdict == "bitwise-equal" or (verdict == "within tolerance" and env["expect"] == "tolerance")
    differs = sorted({f["field"].split(".", 1)[0] for f in cmp["fields"]} | set(cmp["removed"]))
    made = kernel_selection(rec.get("provenance"))
    return {"run_id": run_id, "verdict": verdict, "ok": ok, "identical": verdict == "bitwise-equal",
            "needs": made if {"blas", "cpu"} & set(env["differences"]) else None,
            "differs": differs, "fields": cmp["fields"], "added": cmp["added"], "removed": cmp["removed"],
            "environment": env, "made_at": (rec.get("provenance") or {}).get("git_commit"), "recomputed_at": commit,
            "seconds": seconds}


def record_provenance(outdir, run_id) -> dict | None:
    """The provenance of the record of ``run_id`` in ``outdir`` (ValueError naming ``run_id`` without a trustworthy
    record)."""
    return _record(outdir, run_id).get("provenance")


def _record(outdir, run_id) -> dict:
    if not isinstance(run_id, str) or not run_id or "/" in run_id:
        raise ValueError(f"run_id must be the name of a run record, got {run_id!r}")
    main, select = run_path(outdir, run_id), select_path(outdir, run_id)
    if not (main.is_file() or select.is_file()):
        raise ValueError(f"run_id: no record of {run_id!r} in {outdir}/runs or {outdir}/runs/select")
    try:
        if main.is_file():
            return load_run(main)
        stored = read_json(select, what="selection run record", expect=None)  # checked against the spec it carries
        return load_select_run(select, stored.get("spec") if isinstance(stored, dict) else None)
    except (CorruptRun, JSONFileError) as exc:
        raise ValueError(f"run_id {run_id!r}: its record cannot be trusted: {exc}") from None


# ----------------------------------------------------------------------------------------------------------------------
# What reproduces: bitwise, or within a stated tolerance

#: Counts of examples: rounding may flip an example whose decision margin is within rounding, so each count may move
#: by one example.
COUNT_FIELDS = ("correct", "n_ranking_correct", "n_ranking_wrong", "correct_given_ranking_correct",
                "correct_given_ranking_wrong")
#: Proportions of examples -> the sibling field(s) holding their denominator (None: the record's fewest examples).
#: One flipped example moves ``k / n`` by at most ``1 / n``, and a conditional proportion, whose denominator is itself
#: a count that may move by one, by at most ``1 / (n - 1)``. The Wilson bounds (``ci_low``, ``ci_high``) may move by
#: more than ``1 / n`` (near k = 0 or n), so they are allowed exactly what a one-example change of their count
#: (``correct``) moves them.
PROPORTION_FIELDS = {
    "accuracy": ("examples",), "ci_low": ("examples",), "ci_high": ("examples",),
    "ranking_correct": ("n_ranking_correct", "n_ranking_wrong"),
    "accuracy_given_ranking_correct": ("n_ranking_correct",), "accuracy_given_ranking_wrong": ("n_ranking_wrong",),
    "train_accuracy": None, "score": None,
}
#: Relative tolerance of every other real number (float32 statistics: losses, probe moments, slopes, weights): the
#: float32 epsilon is 1.2e-7 and a statistic summed over n float32 terms in another order moves by about
#: sqrt(n) eps relative to the size of its terms (1e-5 for n = 1e4), so 1e-4 leaves a margin of ten; the size of
#: the terms is taken as the largest magnitude in the field (a mean near 0 of terms near 1 is judged on 1e-4 of the
#: field's scale, not of itself).
FLOAT_RTOL = 1e-4
#: What bitwise equality needs to be the same (``provenance()["compute"]`` and ``["versions"]``).
ENVIRONMENT_FIELDS = ("cpu", "machine", "blas", "numpy", "numba")


def environment(prov: dict | None) -> dict | None:
    """The fields of a record's provenance that bitwise equality depends on, or None when it does not say (records
    made before the CPU and BLAS kernel were recorded)."""
    prov = prov or {}
    compute, versions = prov.get("compute"), prov.get("versions") or {}
    if not compute:
        return None
    blas = sorted({(b.get("library"), b.get("version"), b.get("kernel")) for b in compute.get("blas") or []},
                  key=str)
    return {"cpu": compute.get("cpu"), "machine": compute.get("machine"),
            "blas": [f"{lib} {ver} ({kern})" for lib, ver, kern in blas],
            "numpy": versions.get("numpy"), "numba": versions.get("numba")}


def compare_environments(recorded: dict | None, current: dict) -> dict:
    """``{"same", "differences": {field: [recorded, current]}, "expect"}``: ``expect`` is ``"bitwise"`` when the
    record was made on the same CPU model, BLAS library, version and kernel, NumPy and Numba, else ``"tolerance"``
    (also when the record does not say)."""
    if recorded is None:
        return {"same": False, "differences": {"record": ["no CPU/BLAS recorded", "-"]}, "expect": "tolerance"}
    diff = {k: [recorded.get(k), current.get(k)] for k in ENVIRONMENT_FIELDS if recorded.get(k) != current.get(k)}
    return {"same": not diff, "differences": diff, "expect": "tolerance" if diff else "bitwise"}


def compare_numbers(old: dict, new: dict) -> dict:
    """Every number of two run records (their :func:`record_numbers`), field by field.

    Returns ``{"bitwise", "within_tolerance", "fields", "added", "removed"}``: ``fields`` one entry per field that
    differs anywhere (list positions grouped under one name such as ``eval.accuracy``): ``{"field", "kind" ("count",
    "proportion", "float", "exact"), "values", "differ", "max_abs", "max_rel", "tolerance" (the largest allowed
    absolute deviation among the values that differ; 0 for "exact"), "within"}``; ``added``/``removed``: top-level
    fields only in the recomputation (written by newer code, not judged) or only in the record (judged: missing)."""
    fewest = _fewest_examples(old)
    groups: dict[str, dict] = {}
    for key in sorted(set(old) & set(new)):
        _walk(old[key], new[key], key, None, None, fewest, groups)
    for g in groups.values():
        for a, b in g["_pending"]:
            _judge(g, a, b, FLOAT_RTOL * max(abs(a), abs(b), g["_scale"]))
    fields = [g for g in groups.values() if g["differ"]]
    for g in fields:
        g["within"] = g.pop("_within")
        g.pop("_scale")
        g.pop("_pending")
    removed = sorted(set(old) - set(new))
    return {"bitwise": not fields and not removed and set(new) <= set(old),
            "within_tolerance": not removed and all(g["within"] for g in fields),
            "fields": fields, "added": sorted(set(new) - set(old)), "removed": removed}


def _fewest_examples(rec) -> int:
    found = []

    def visit(x):
        if isinstance(x, dict):
            for k, v in x.items():
                if k == "examples" and isinstance(v, int) and not isinstance(v, bool) and v > 0:
                    found.append(v)
                visit(v)
        elif isinstance(x, list):
            for v in x:
                visit(v)

    visit(rec)
    return min(found) if found else 1


def _group(groups, path, kind):
    return groups.setdefault(path, {"field": path, "kind": kind, "values": 0, "differ": 0, "max_abs": 0.0,
                                    "max_rel": 0.0, "tolerance": 0.0, "_within": True, "_scale": 0.0,
                                    "_pending": []})


def _is_real(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _walk(a, b, path, parent, index, fewest, groups):
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                g = _group(groups, f"{path}.{k}", "exact")
                g["values"] += 1
                g["differ"] += 1
                g["_within"] = False
                continue
            _walk(a[k], b[k], f"{path}.{k}", (a, k), index, fewest, groups)
        return
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            _walk(x, y, path, parent, i if index is None else index, fewest, groups)
        return
    leaf = None if parent is None else parent[1]
    if not (_is_real(a) and _is_real(b)):
        g = _group(groups, path, "exact")
        g["values"] += 1
        if a != b or type(a) is not type(b):
            g["differ"] += 1
            g["_within"] = False
        return
    if leaf in COUNT_FIELDS and isinstance(a, int) and isinstance(b, int):
        kind, tol = "count", 1.0
    elif leaf in PROPORTION_FIELDS:
        kind, tol = "proportion", _proportion_tolerance(parent[0], leaf, index, fewest)
    elif isinstance(a, int) and isinstance(b, int):
        kind, tol = "exact", 0.0
    else:
        kind, tol = "float", None
    g = _group(groups, path, kind)
    g["values"] += 1
    g["_scale"] = max(g["_scale"], abs(float(a)))
    if a == b and type(a) is type(b):
        return
    if tol is None:  # judged once the field's scale (its largest magnitude in the record) is known
        g["_pending"].append((float(a), float(b)))
        return
    _judge(g, float(a), float(b), tol)


def _judge(g, a, b, tol):
    d = abs(a - b)
    g["differ"] += 1
    g["max_abs"] = max(g["max_abs"], d)
    g["max_rel"] = max(g["max_rel"], d / max(abs(a), abs(b)))
    g["tolerance"] = max(g["tolerance"], tol)
    g["_within"] = g["_within"] and d <= tol * (1 + 1e-9)


def _proportion_tolerance(siblings: dict, leaf: str, index, fewest: int) -> float:
    names = PROPORTION_FIELDS[leaf]
    if not names or any(n not in siblings for n in names):
        return 1.0 / fewest
    if leaf in ("ci_low", "ci_high") and "correct" in siblings:
        k = siblings["correct"][index] if isinstance(siblings["correct"], list) else siblings["correct"]
        n = int(siblings["examples"])
        side = 0 if leaf == "ci_low" else 1
        here = wilson_interval(int(k), n)[side]
        return max(abs(wilson_interval(j, n)[side] - here) for j in (int(k) - 1, int(k) + 1) if 0 <= j <= n)
    vals = [siblings[n] if index is None or not isinstance(siblings[n], list) else siblings[n][index] for n in names]
    n = sum(int(v) for v in vals)
    if names == ("examples",):
        return 1.0 / max(n, 1)
    return 1.0 / max(n - 1, 1)
