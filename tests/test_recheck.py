"""`--recheck` says exactly what reproduces: bitwise-equal, or per field the largest absolute and relative deviation
and whether it lies within the stated tolerance, and which applies given the record's CPU and BLAS kernel
(varsim.experiments.recheck). Deviations are planted in a copy of a real run record."""

import copy
import json

import pytest

from varsim.cli.reproduce import _recheck_text
from varsim.experiments.recheck import FLOAT_RTOL, compare_numbers, recheck_result

pytestmark = pytest.mark.kernel_sensitive  # .ci/run runs these again under another BLAS kernel


@pytest.fixture(scope="module")
def record():
    """One tiny reproduction run (40 steps, about 2 s), as written to disk."""
    from varsim._common.jsonio import jsonable
    from varsim.experiments.settings import ReproductionSettings, job_specs
    from varsim.experiments.worker import run_job

    spec = job_specs(ReproductionSettings.quick(seeds=1, tasks=("argmax",), norms=("none",)))[0]
    spec["train_config"]["steps"] = 40
    spec["train_config"]["checkpoint_every"] = 40
    return json.loads(json.dumps(jsonable(run_job((spec, None)))))


def _other_kernel(kernel):
    """A BLAS kernel other than ``kernel`` (the one this machine's OpenBLAS chose): never assume which that is."""
    return next(k for k in ("Haswell", "SkylakeX", "Zen", "Sandybridge") if k != kernel)


def _elsewhere(rec):
    """The record as if made on another CPU with another BLAS kernel than this machine's."""
    rec = copy.deepcopy(rec)
    rec["provenance"]["compute"]["cpu"] = "Some Other CPU"
    for b in rec["provenance"]["compute"]["blas"]:
        b["kernel"] = _other_kernel(b["kernel"])
    return rec


def _check(rec, new):
    return recheck_result("r", rec, new, "abc", 1.0)


def _field(res, name):
    return next(f for f in res["fields"] if f["field"] == name)


def test_identical_numbers_are_bitwise_equal(record):
    """Timing and provenance differ between executions and are not judged; a newer field is listed, not judged."""
    new = copy.deepcopy(record)
    new["timing"]["total_s"] += 5.0
    new["provenance"]["created_utc"] = "later"
    r = _check(record, new)
    assert (r["verdict"], r["ok"], r["fields"], r["environment"]["expect"]) == ("bitwise-equal", True, [], "bitwise")
    old = {k: v for k, v in record.items() if k != "ranking"}
    r = _check(old, new)
    assert r["verdict"] == "bitwise-equal" and r["added"] == ["ranking"]


def test_one_flipped_example_is_within_tolerance_only_elsewhere(record):
    """One example flipped at the first length: count +1, accuracy +1/examples, the Wilson bounds moved by less:
    within tolerance. On the record's own CPU and kernel that is still a defect (not ok); elsewhere it is ok.
    Catches a tolerance in relative terms (1/128 of 0.17 is 4%), and a verdict that ignores the environment."""
    n = record["eval"]["examples"]
    new = copy.deepcopy(record)
    from varsim._common.intervals import wilson_interval

    k = new["eval"]["correct"][0] + 1
    new["eval"]["correct"][0] = k
    new["eval"]["accuracy"][0] = k / n
    new["eval"]["ci_low"][0], new["eval"]["ci_high"][0] = wilson_interval(k, n)
    here = _check(record, new)
    assert here["verdict"] == "within tolerance" and not here["ok"]
    acc = _field(here, "eval.accuracy")
    assert acc["kind"] == "proportion" and acc["differ"] == 1 and acc["values"] == len(record["eval"]["lengths"])
    assert acc["max_abs"] == pytest.approx(1 / n, rel=1e-9) and acc["tolerance"] == 1 / n and acc["within"]
    assert _field(here, "eval.correct")["kind"] == "count"
    away = _check(_elsewhere(record), new)
    assert away["verdict"] == "within tolerance" and away["ok"]
    assert away["environment"]["expect"] == "tolerance"
    assert set(away["environment"]["differences"]) == {"cpu", "blas"}


def test_three_flipped_examples_are_beyond_tolerance(record):
    n = record["eval"]["examples"]
    new = copy.deepcopy(record)
    new["eval"]["correct"][1] += 3
    new["eval"]["accuracy"][1] += 3 / n
    r = _check(_elsewhere(record), new)
    assert r["verdict"] == "beyond tolerance" and not r["ok"]
    acc = _field(r, "eval.accuracy")
    assert acc["max_abs"] == pytest.approx(3 / n) and not acc["within"]
    assert acc["max_rel"] == pytest.approx(3 / n / max(record["eval"]["accuracy"][1] + 3 / n,
                                                       record["eval"]["accuracy"][1]))
    assert not _field(r, "eval.correct")["within"]


@pytest.mark.parametrize("factor, within", [(1 + 0.5 * FLOAT_RTOL, True), (1 + 10 * FLOAT_RTOL, False)])
def test_float_statistics_relative_tolerance(record, factor, within):
    """A float32 statistic moved by half the relative tolerance is within it, by ten times is not; the reported
    relative deviation is the planted one."""
    new = copy.deepcopy(record)
    vals = new["probes"]["global"]["pre"]["var"]
    i = max(range(len(vals)), key=lambda j: abs(vals[j]))  # the field's largest term: judged on itself
    vals[i] *= factor
    r = _check(_elsewhere(record), new)
    f = _field(r, "probes.global.pre.var")
    assert f["kind"] == "float" and f["differ"] == 1 and f["within"] is within
    assert f["max_rel"] == pytest.approx(abs(factor - 1) / factor, rel=1e-6)
    assert r["verdict"] == ("within tolerance" if within else "beyond tolerance")


def test_exact_fields_and_missing_fields(record):
    """Integers that are not counts (lengths, steps) must be equal; a field of the record the recomputation lacks
    is beyond tolerance."""
    new = copy.deepcopy(record)
    new["eval"]["lengths"][0] += 1
    r = _check(_elsewhere(record), new)
    assert _field(r, "eval.lengths")["kind"] == "exact" and r["verdict"] == "beyond tolerance"
    new = copy.deepcopy(record)
    del new["probes"]
    r = _check(_elsewhere(record), new)
    assert r["removed"] == ["probes"] and r["verdict"] == "beyond tolerance"


def test_record_without_environment_gets_the_tolerance(record):
    old = copy.deepcopy(record)
    del old["provenance"]["compute"]
    r = _check(old, copy.deepcopy(record))
    assert r["environment"]["expect"] == "tolerance" and r["verdict"] == "bitwise-equal"


def test_text_names_every_field_and_the_environment(record):
    n = record["eval"]["examples"]
    new = copy.deepcopy(record)
    new["eval"]["accuracy"][0] += 1 / n
    new["train"]["final_loss"] *= 1 + 1e-3
    text = _recheck_text(_check(_elsewhere(record), new))
    lines = text.splitlines()
    assert lines[0].startswith("r: BEYOND TOLERANCE (record made at ")
    assert "cpu: Some Other CPU -> " in lines[0] and "the tolerance applies" in lines[0]
    assert any(ln.startswith("  eval.accuracy (proportion): 1 of ") and ln.endswith(": within") for ln in lines)
    assert any(ln.startswith("  train.final_loss (float): 1 of 1 differ") and ln.endswith(": BEYOND")
               for ln in lines)


def test_compare_numbers_direct():
    """Small hand-made records: conditional proportions use their own count as denominator (1/(n - 1))."""
    old = {"ranking": {"n_ranking_correct": [10], "n_ranking_wrong": [5],
                       "accuracy_given_ranking_correct": [0.5], "ranking_correct": [10 / 15]}}
    new = copy.deepcopy(old)
    new["ranking"]["accuracy_given_ranking_correct"] = [0.5 + 1 / 9]
    c = compare_numbers(old, new)
    f = c["fields"][0]
    assert f["tolerance"] == pytest.approx(1 / 9) and f["within"]
    new["ranking"]["accuracy_given_ranking_correct"] = [0.5 + 1.5 / 9]
    assert not compare_numbers(old, new)["within_tolerance"]
