"""One committed run rechecked from a clean clone (varsim.experiments.committed, ``varsim recheck``) and the
second-kernel arm's judgement of the conclusions (varsim.experiments.kernel_check).

The retraining itself is replaced by a record made from the committed numbers (planted deviations on top), so these
tests are fast and do not depend on the machine's BLAS kernel; the slow test retrains one real run."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from varsim._common.provenance import compute_environment, kernel_selection
from varsim.experiments import committed as cm
from varsim.experiments.settings import job_specs

pytestmark = pytest.mark.kernel_sensitive  # .ci/run runs these again under another BLAS kernel

RUN = "argmax-residual-none-softmax-d1-cosine_lr1e3-s2"  # a softmax run: its six inference-only maps too


def _fake_record(grid, run_id, shift=None):
    """The record a retraining of ``run_id`` would write if it gave the committed accuracies, with ``shift``
    ``{variant: (length index, examples)}`` planted."""
    spec = cm.run_spec(cm.committed_settings(grid), run_id)
    acc = cm.committed_accuracies(cm.committed_summary(grid), spec)
    ev = spec["eval"]
    n_short = len(ev["lengths"])
    per = copy.deepcopy({k: v for k, v in acc.items() if k != "lengths"})
    for variant, (i, k) in (shift or {}).items():
        n = ev["examples"] if i < n_short else ev["long"]["examples"]
        per[variant][i] += k / n

    def block(a):
        out = {"eval": {"lengths": ev["lengths"], "accuracy": a[:n_short]}}
        if ev.get("long"):
            out["eval_long"] = {"lengths": ev["long"]["lengths"], "accuracy": a[n_short:]}
        return out

    rec = {"spec": spec, **block(per[spec["attention"]])}
    if spec.get("inference"):
        rec["inference"] = {m["label"]: block(per[m["label"]]) for m in spec["inference"]}
    return rec


@pytest.mark.parametrize("grid", list(cm.COMMITTED_GRIDS))
def test_every_committed_run_has_its_per_seed_accuracies(grid):
    """Each run of each committed grid can be rechecked: its spec follows from the committed settings and the summary
    holds its accuracies (the trained variant and every inference-only map) at every length."""
    settings, summary = cm.committed_settings(grid), cm.committed_summary(grid)
    specs = job_specs(settings)
    for spec in specs:
        acc = cm.committed_accuracies(summary, spec)
        n = len(spec["eval"]["lengths"]) + len((spec["eval"].get("long") or {}).get("lengths", []))
        assert acc["lengths"][:len(spec["eval"]["lengths"])] == spec["eval"]["lengths"]
        assert all(len(v) == n for v in acc.values())
        assert set(acc) == {"lengths", spec["attention"], *(m["label"] for m in spec.get("inference") or [])}


def test_a_seed_is_its_own_column():
    """Catches taking another seed's accuracies (the summary's per_seed rows are indexed by its seeds list)."""
    settings, summary = cm.committed_settings("remedies"), cm.committed_summary("remedies")
    a = cm.committed_accuracies(summary, cm.run_spec(settings, RUN))
    b = cm.committed_accuracies(summary, cm.run_spec(settings, RUN.replace("-s2", "-s3")))
    assert a["softmax"] != b["softmax"]


def test_unknown_run_and_grid():
    with pytest.raises(ValueError, match="run_id: 'argmax-nope' is not a run of this grid"):
        cm.run_spec(cm.committed_settings("remedies"), "argmax-nope")
    with pytest.raises(ValueError, match="grid"):
        cm.committed_dir("nope")


@pytest.mark.parametrize("shift, verdict", [
    ({}, "identical"),
    ({"softmax": (6, 1)}, "within one example"),
    ({"topk1": (10, -1), "oracle": (0, 1)}, "within one example"),  # a long length: its own example count
    ({"critical": (3, 3)}, "beyond tolerance"),
])
def test_recheck_verdicts(monkeypatch, shift, verdict):
    """The verdict counts examples per variant and length: one flipped example is within one, three are beyond; a
    deviation of an inference-only map counts like one of the trained variant."""
    import varsim.experiments.worker as worker

    monkeypatch.setattr(worker, "run_job", lambda job: _fake_record("remedies", RUN, shift))
    r = cm.recheck_committed("remedies", RUN)
    assert r["verdict"] == verdict
    assert r["compare"]["max"] == max([abs(k) for _, k in shift.values()], default=0)
    made = kernel_selection(cm.committed_summary("remedies")["provenance"])
    assert r["made_with"] == made
    if r["same_kernel"]:
        assert r["ok"] is (verdict == "identical") and r["advice"] is None
    else:
        assert r["ok"] is (verdict != "beyond tolerance")
        assert r["advice"] == "OPENBLAS_CORETYPE=Haswell OPENBLAS_L2_SIZE=512"


def test_kernel_selection_names_the_variables():
    prov = {"compute": {"blas": [{"library": "openblas", "kernel": "Zen"}], "blas_env": {"OPENBLAS_L2_SIZE": "1024"}}}
    assert kernel_selection(prov) == {"kernel": "Zen", "library": "openblas",
                                      "env": {"OPENBLAS_CORETYPE": "Zen", "OPENBLAS_L2_SIZE": "1024"}}
    assert kernel_selection(None)["env"] == {}
    assert kernel_selection({"compute": compute_environment()})["kernel"] is not None or not compute_environment()[
        "blas"]


def _cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "varsim", "recheck", *args], capture_output=True, text=True,
                          timeout=120, env={**os.environ, **(env or {})})


@pytest.mark.parametrize("args, names", [
    (["nope", "r"], "grid: 'nope' is neither a committed grid"),
    (["remedies", "argmax-x-s0"], "run_id: 'argmax-x-s0' is not a run of this grid"),
    (["remedies", RUN, "--kernel", "Bogus"], "--kernel must be 'record' or an OpenBLAS kernel"),
])
def test_cli_bad_input(args, names):
    r = _cli(*args)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and names in r.stderr, r.stderr


def test_cli_directory_without_records(tmp_path):
    r = _cli(str(tmp_path), "r")
    assert r.returncode == 2 and "holds no run records" in r.stderr


def test_cli_refuses_a_kernel_openblas_did_not_take(monkeypatch):
    """The child started by --kernel checks that OpenBLAS took the kernel (an unknown one it silently ignores)."""
    from varsim.cli import recheck

    here = kernel_selection({"compute": compute_environment()})["kernel"]
    monkeypatch.setenv(recheck._EXPECT, "Not" + str(here))
    with pytest.raises(ValueError, match="--kernel: OpenBLAS did not take"):
        recheck._check_expected_kernel()
    monkeypatch.setenv(recheck._EXPECT, str(here))
    recheck._check_expected_kernel()


@pytest.mark.slow
def test_real_recheck_on_the_records_kernel():
    """Retrain one committed run (about 10 s) under the kernel the grid was made with: identical accuracies, where this
    CPU can run that kernel; elsewhere the command says it cannot."""
    r = _cli("remedies", "argmax-residual-none-ssmax-d1-constant_lr3e3-s4", "--kernel", "record", "--json")
    if r.returncode == 2 and "OpenBLAS did not take" in r.stderr:
        pytest.skip(r.stderr.strip())
    assert r.returncode == 0, r.stderr
    (res,) = json.loads(r.stdout)
    assert res["verdict"] == "identical" and res["same_kernel"]


# ----------------------------------------------------------------------------------------------------------------------
# The second-kernel arm


def test_slices_are_slices_of_the_committed_grids():
    """Each slice's runs are committed runs with the same specs (seeds, test sets, recipes): paired by construction."""
    from varsim.experiments.kernel_check import SLICES, slice_settings

    for name, sl in SLICES.items():
        full = {s["run_id"]: s for s in job_specs(cm.committed_settings(sl["grid"]))}
        specs = job_specs(slice_settings(name))
        assert specs and all(s == full[s["run_id"]] for s in specs)


def _plant_arm(tmp_path, change=None):
    """An arm whose slices report exactly the committed comparisons (``change(row)`` applied to each)."""
    from varsim.experiments.kernel_check import SLICES, slice_settings
    from varsim.experiments.settings import GROUP_KEYS

    for name, sl in SLICES.items():
        st = slice_settings(name)
        old = cm.committed_summary(sl["grid"])
        keys = {tuple(s.get(k) for k in ("task", "architecture", "norm", "recipe", "key_encoding"))
                for s in job_specs(st)}

        def mine(row):
            return tuple(row.get(k) for k in ("task", "architecture", "norm", "recipe", "encoding")) in keys

        rows = {"primary": [copy.deepcopy(r) for r in old["primary"] if mine(r)],
                "controls": [copy.deepcopy(r) for r in old["controls"] if mine(r)]}
        assert rows["primary"], (name, GROUP_KEYS)
        for r in rows["primary"] + rows["controls"]:
            if change:
                change(r)
        (tmp_path / name).mkdir()
        (tmp_path / name / "summary.json").write_text(json.dumps({**rows, "runs": {"missing": [], "corrupt": []}}))


def test_arm_equal_to_the_committed_grids_holds_everywhere(tmp_path):
    """Planted: the arm reports the committed numbers. Every conclusion holds and every comparison agrees, except that
    a committed non-significant comparison with unadjusted p < 0.05 can still be Holm-significant in the smaller
    family; the table lists every comparison."""
    from varsim.experiments.kernel_check import CONCLUSIONS, summarize

    _plant_arm(tmp_path)
    s = summarize(tmp_path)
    assert s["slices_missing"] == [] and len(s["conclusions"]) == len(CONCLUSIONS)
    assert all(r["agrees"] for r in s["comparisons"])
    assert all(c["complete"] for c in s["conclusions"])
    table = (tmp_path / "table.md").read_text()
    assert table.count("\n| ") >= len(s["comparisons"]) + len(CONCLUSIONS)
    assert json.loads((tmp_path / "settings.json").read_text())["settings"]["criterion"]["alpha"] == 0.05


def test_a_vanished_gain_fails_its_conclusion(tmp_path):
    """Planted: the SSMax gain of argmax cosine lr 1e-3 (significant in its grid) becomes zero. That conclusion fails
    with SSMax named; the constant-lr one is untouched; the comparison no longer agrees."""
    from varsim.experiments.kernel_check import summarize

    def change(r):
        if (r["task"], r["recipe"], r["variant"]) == ("argmax", "cosine_lr1e3", "ssmax"):
            r.update(mean_diff=0.0, ci_low=-0.01, ci_high=0.01, p_ttest=0.9)

    _plant_arm(tmp_path, change)
    s = summarize(tmp_path)
    by = {c["conclusion"]: c for c in s["conclusions"]}
    failed = by["argmax, cosine decay, lr 1e-3: every remedy helps"]
    assert not failed["holds"] and failed["failed"] == ["ssmax (significant_gain_holds)"]
    assert not [r for r in s["comparisons"] if r["variant"] == "ssmax" and r["recipe"] == "cosine_lr1e3"
                and r["task"] == "argmax"][0]["agrees"]


def test_a_significant_negative_control_fails(tmp_path):
    from varsim.experiments.kernel_check import summarize

    def change(r):
        if r["variant"] == "softmax_replicate" and r["architecture"] == "decoder_none":
            r.update(p_ttest=0.01)

    _plant_arm(tmp_path, change)
    by = {c["conclusion"]: c for c in summarize(tmp_path)["conclusions"]}
    assert by["decoder without positions, cosine decay: SSMax and log-N gain +0.12 to +0.17"]["failed"] == [
        "softmax_replicate (controls)", "softmax_replicate (controls)"]


def test_arm_settings_are_fixed(tmp_path):
    """A directory holding an arm with another criterion is refused (the criterion was fixed before the runs)."""
    from varsim.experiments.kernel_check import write_arm_settings

    write_arm_settings(tmp_path)
    stored = json.loads((tmp_path / "settings.json").read_text())
    stored["settings"]["criterion"]["alpha"] = 0.1
    (tmp_path / "settings.json").write_text(json.dumps(stored))
    with pytest.raises(ValueError, match="other settings"):
        write_arm_settings(tmp_path)


def test_committed_arm_is_complete_and_current():
    """The committed second-kernel arm is what the current code makes from its slices' results: its settings are the
    pre-registered ones, every slice ran, its table is its summary's (a forgotten regeneration fails here), and the
    docs page quotes its single-run distribution."""
    from varsim.experiments.kernel_check import COMMITTED_DIR, _arm_settings, render_table

    settings = json.loads((COMMITTED_DIR / "settings.json").read_text())
    summary = json.loads((COMMITTED_DIR / "summary.json").read_text())
    assert settings["settings"] == json.loads(json.dumps(_arm_settings()))
    assert summary["settings"] == settings["settings"] and summary["slices_missing"] == []
    assert (COMMITTED_DIR / "table.md").read_text() == render_table(summary)
    from varsim.experiments.kernel_check import SLICES, slice_settings

    assert summary["per_run"]["n"] == sum(len(job_specs(slice_settings(name))) for name in SLICES)
    assert all(c["complete"] for c in summary["conclusions"])
    page = " ".join((Path(__file__).resolve().parents[1] / "docs" / "experiments" / "reproducibility.md").read_text()
                    .split())
    q, runs, comparisons = summary["per_run"]["quantiles"], summary["per_run"], summary["comparisons"]
    quoted = (f"{runs['n']} runs", f"median is {q['0.5']:g} examples", f"90% quantile {q['0.9']:g}",
              f"largest {runs['max']}", f"{len(comparisons)} comparisons, {sum(c['holds'] for c in comparisons)} of "
              f"which hold and {sum(c['agrees'] for c in comparisons)} of which agree")
    assert [number for number in quoted if number not in page] == []
    for conclusion in summary["conclusions"]:
        verdict = "**holds**" if conclusion["holds"] else "**fails the criterion as written**"
        assert f"*{conclusion['conclusion']}*: {verdict}" in page, conclusion["conclusion"]
