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


RECORDED = kernel_selection(cm.committed_summary("remedies")["provenance"])
OTHER = {"kernel": "Zen", "library": "openblas", "env": {"OPENBLAS_CORETYPE": "Zen"}}


def _rerun(monkeypatch, shift, kernel, grid="remedies", run_id=RUN):
    """Make the retraining of ``run_id`` return the committed accuracies with ``shift`` planted, and this machine
    select ``kernel``."""
    import varsim.experiments.worker as worker

    monkeypatch.setattr(worker, "run_job", lambda job: _fake_record(grid, run_id, shift))
    monkeypatch.setattr(cm, "_current_kernel", lambda: kernel)


@pytest.mark.parametrize("shift, verdict", [({}, "identical"), ({"softmax": (6, 1)}, "not identical"),
                                            ({"topk1": (10, -1)}, "not identical")])
def test_same_kernel_asks_the_bitwise_verdict(monkeypatch, shift, verdict):
    """On the grid's kernel only identical accuracies pass; one flipped example anywhere (a long length too) fails."""
    _rerun(monkeypatch, shift, RECORDED)
    r = cm.recheck_committed("remedies", RUN)
    assert (r["mode"], r["verdict"], r["ok"], r["statistical"]) == ("bitwise", verdict, verdict == "identical", None)
    assert r["compare"]["max"] == max([abs(k) for _, k in shift.values()], default=0) and r["advice"] is None


@pytest.mark.parametrize("shift, within, hold", [
    ({}, True, True),
    ({"softmax": (6, 9), "critical": (3, -30)}, True, True),  # the arm's median and more: single runs move
    ({"topk1": (10, -1), "oracle": (0, 71)}, True, True),     # the slice's largest measured difference
    ({"softmax": (2, 72)}, False, True),                      # beyond it, at a length no comparison rests on
    ({"softmax": (6, -60)}, True, False),                     # within it, but two Holm verdicts change
])
def test_another_kernel_asks_the_statistical_verdict(monkeypatch, shift, within, hold):
    """Under another kernel the verdict is statistical: within the spread the arm measured for this slice (71
    examples) and every comparison resting on the run keeping its verdict. Catches a bound of one example (the old
    rule), a spread taken from another slice, and a conclusion check that ignores the rerun."""
    _rerun(monkeypatch, shift, OTHER)
    r = cm.recheck_committed("remedies", RUN)
    st = r["statistical"]
    assert r["mode"] == "statistical" and r["advice"] == "OPENBLAS_CORETYPE=Haswell OPENBLAS_L2_SIZE=512"
    assert st["spread"] == {"examples": 71, "slice": "argmax_cosine_constant_lr1e3", "runs": 60,
                            "kernels": ["Haswell", "SkylakeX"]}
    assert (st["within_spread"], st["conclusions_hold"]) == (within, hold)
    assert r["ok"] is (within and hold) and r["verdict"] == ("holds" if r["ok"] else "fails")
    # a softmax run carries every comparison of its cell: 7 remedies and 3 controls
    assert len(st["conclusions"]) == 10
    if not hold:
        assert sorted(c["variant"] for c in st["conclusions"] if not c["holds"]) == ["critical", "entmax15"]


def test_unchanged_rerun_recomputes_the_committed_statistics():
    """With the committed accuracies, every comparison resting on a run (remedy runs and softmax runs, remedies and
    decoder grids) recomputes its committed mean and p exactly: catches another seed's column, another length or the
    wrong baseline."""
    from varsim.experiments.rerun_verdict import conclusions_with_rerun

    for grid in ("remedies", "decoder"):
        summary = cm.committed_summary(grid)
        for spec in job_specs(cm.committed_settings(grid))[::5]:
            for c in conclusions_with_rerun(summary, spec, cm.committed_accuracies(summary, spec)):
                assert c["holds"] and c["rerun"]["mean_diff"] == pytest.approx(c["committed"]["mean_diff"], abs=1e-15)
                assert c["rerun"]["p"] == pytest.approx(c["committed"]["p"], rel=1e-12), (spec["run_id"], c)


def test_a_cell_outside_the_arm_gets_the_arms_largest_spread():
    """A run of a slice's cell gets that slice's spread (the decoder's 12 examples), also when the arm has no row of
    that very run; a run of a cell the arm did not rerun gets the largest over the whole arm."""
    from varsim.experiments.rerun_verdict import arm_spread

    def spec(grid, rid):
        return cm.run_spec(cm.committed_settings(grid), rid)

    nope = spec("decoder", "argmax-decoder_none-none-ssmax-d2-s0")
    assert arm_spread("decoder", nope)["slice"] == "decoder_nope_cosine"
    assert arm_spread("decoder", nope)["examples"] == 12
    rope = [s for s in job_specs(cm.committed_settings("decoder")) if s["architecture"] == "decoder_rope"][0]
    assert arm_spread("decoder", rope)["slice"] is None
    out = arm_spread("remedies", spec("remedies", "argmax-residual-none-softmax-d1-cosine_lr3e3-s0"))
    assert out["slice"] is None and out["runs"] == 168 and out["examples"] == 71
    binary = spec("remedies", "dictionary-residual-none-softmax-d1-cosine_lr3e3-binary-s0")
    assert arm_spread("remedies", binary)["slice"] == "dictionary_binary_cosine_lr3e3"
    table = spec("remedies", "dictionary-residual-none-softmax-d1-cosine_lr3e3-embedding-s0")
    assert arm_spread("remedies", table)["slice"] is None  # the table slice is cosine lr 1e-3 only


@pytest.mark.parametrize("shift, kernel, status, mode", [
    ({}, RECORDED, 0, "bitwise"), ({"softmax": (6, 1)}, RECORDED, 1, "bitwise"),
    ({"softmax": (6, 9)}, OTHER, 0, "statistical"), ({"softmax": (2, 72)}, OTHER, 3, "statistical"),
    ({"softmax": (6, -60)}, OTHER, 3, "statistical")])
def test_cli_exit_status_says_which_verdict_and_whether_it_held(monkeypatch, capsys, shift, kernel, status, mode):
    import argparse

    from varsim.cli import recheck

    _rerun(monkeypatch, shift, kernel)
    monkeypatch.delenv(recheck._EXPECT, raising=False)
    args = argparse.Namespace(grid="remedies", run_ids=[RUN], kernel=None, json=False)
    assert recheck.run(args) == status
    out = capsys.readouterr().out
    assert f"{mode} verdict: " in out.splitlines()[0]
    if mode == "statistical":
        assert "spread: largest difference" in out and ("BEYOND" in out) is ("(2, 72)" in str(shift))


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
