"""End-to-end quick reproduction: files, sanity of every number, resume, corrupt records, CLI (figures: test_figures).

The quick grid (2 tasks x residual x 4 norms x 2 seeds, tiny models) runs once per module; the tests assert shapes
and invariants, never particular accuracies.
"""

import json

import pytest
from repro_checks import module_grid

import varsim.experiments as experiments
from varsim.experiments import ReproductionSettings, run_reproduction
from varsim.experiments.records import record_numbers


@pytest.fixture(scope="module")
def quick_dir(tmp_path_factory):
    return module_grid(tmp_path_factory, "repro", quick=True)


def test_quick_run_writes_every_file(quick_dir):
    out, report = quick_dir
    settings = ReproductionSettings.quick()
    n_runs = len(settings.tasks) * len(settings.architectures) * len(settings.norms) * settings.seeds
    assert report["runs"] == n_runs and len(report["completed"]) == n_runs
    assert report["failed"] == [] and report["skipped"] == [] and report["corrupt"] == []
    for name in ("settings.json", "summary.json", "table.md"):
        assert (out / name).is_file()
    assert len(list((out / "runs").glob("*.json"))) == n_runs
    table = (out / "table.md").read_text()
    assert "## argmax, residual" in table and "layernorm - none" in table


def test_progress_log_has_a_line_per_run(quick_dir):
    """progress.log is written with progress=False too (the fixture's): a time-stamped line per finished run with its
    seconds, then the closing line."""
    import re

    out, report = quick_dir
    lines = (out / "progress.log").read_text().splitlines()
    runs = [ln for ln in lines if re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \[\d+/\d+\] ", ln)]
    assert len(runs) == report["runs"]
    assert {ln.split("] ")[1].split(":")[0] for ln in runs} == set(report["completed"])
    assert all(re.search(r", \d+\.\d s \(elapsed ", ln) for ln in runs)
    assert lines[0].endswith(f"reproduce: {report['runs']} runs, 0 already finished, {report['runs']} to run")
    assert lines[-1].split(" ", 1)[1].startswith(f"reproduce: {report['runs']} run(s) done, 0 failed, summary written")


def test_run_records_are_sane(quick_dir):
    """Accuracies in [0, 1], Wilson intervals around them, counts consistent, probes shaped by the settings."""
    out, _ = quick_dir
    settings = ReproductionSettings.quick()
    for path in sorted((out / "runs").glob("*.json")):
        rec = json.loads(path.read_text())
        ev = rec["eval"]
        assert ev["lengths"] == list(settings.eval_lengths)
        for k, acc, lo, hi in zip(ev["correct"], ev["accuracy"], ev["ci_low"], ev["ci_high"]):
            assert 0.0 <= lo <= acc <= hi <= 1.0
            assert acc == k / settings.eval_examples
        idd = rec["in_distribution"]
        assert 0.0 <= idd["ci_low"] <= idd["accuracy"] <= idd["ci_high"] <= 1.0
        assert idd["learned"] == (idd["accuracy"] >= settings.learned_threshold)
        assert rec["train"]["status"] == "completed" and rec["train"]["steps_done"] == settings.train["steps"]
        pr = rec["probes"]
        d = settings.model["d_model"]
        assert pr["lengths"] == list(settings.probe_lengths)
        assert all(len(row) == d for row in pr["std_pre"] + pr["std_post"])
        assert all(len(v) == settings.probe_sets for v in pr["hist"]["pre"])
        assert all(0.0 <= w <= 1.0 for w in pr["attn_correct"]["max_head"])
        if rec["spec"]["norm"] == "none":  # no norm: the post-norm vector is the pre-norm one
            assert pr["std_post"] == pr["std_pre"]
        assert rec["provenance"]["versions"]["numpy"]


def test_summary_intervals_contain_means(quick_dir):
    out, _ = quick_dir
    summary = json.loads((out / "summary.json").read_text())
    settings = ReproductionSettings.quick()
    assert len(summary["groups"]) == len(settings.tasks) * len(settings.architectures) * len(settings.norms)
    for g in summary["groups"]:
        assert g["n_seeds"] == settings.seeds
        a = g["accuracy"]
        for m, lo, hi, per_seed in zip(a["mean"], a["ci_low"], a["ci_high"], zip(*a["per_seed"])):
            assert 0.0 <= lo <= m <= hi <= 1.0
            assert m == pytest.approx(sum(per_seed) / len(per_seed))
        p = g["pooled"]
        assert all(lo <= m <= hi for m, lo, hi in zip(p["accuracy"], p["ci_low"], p["ci_high"]))
    assert len(summary["paired"]) == len(settings.tasks) * len(settings.architectures) * (len(settings.norms) - 1)
    for p in summary["paired"]:
        assert p["seeds"] == list(range(settings.seeds))
        for m, lo, hi, pt, ps in zip(p["mean_diff"], p["ci_low"], p["ci_high"], p["p_ttest"], p["p_signflip"]):
            assert -1.0 <= lo <= m <= hi <= 1.0
            assert pt is None or 0.0 <= pt <= 1.0
            assert 2 / 2 ** settings.seeds <= ps <= 1.0


def test_resume_skips_finished_and_redoes_corrupt_runs(quick_dir, tmp_path, capsys):
    """A second call redoes nothing; a truncated record is reported, kept aside and redone; a deleted one is redone.

    The redone runs execute in this process (workers=1) and must equal, number for number, what the process pool
    produced: a run is a pure function of its spec."""
    out, _ = quick_dir
    again = run_reproduction(out, quick=True, workers=2, progress=False)
    assert again["completed"] == [] and len(again["skipped"]) == again["runs"]

    runs = out / "runs"
    victims = ["argmax-residual-layernorm-s1", "dictionary-residual-none-s0"]
    originals = {v: json.loads((runs / f"{v}.json").read_text()) for v in victims}
    text = (runs / f"{victims[0]}.json").read_text()
    (runs / f"{victims[0]}.json").write_text(text[: len(text) // 2])  # a torn write
    (runs / f"{victims[1]}.json").unlink()
    report = run_reproduction(out, quick=True, workers=1, progress=False)
    assert sorted(report["completed"]) == sorted(victims)
    assert [c["run_id"] for c in report["corrupt"]] == [victims[0]]
    assert "unreadable" in report["corrupt"][0]["reason"]
    assert (runs / f"{victims[0]}.json.corrupt").exists()
    assert "redoing argmax-residual-layernorm-s1" in capsys.readouterr().err
    for v in victims:
        assert record_numbers(json.loads((runs / f"{v}.json").read_text())) == record_numbers(originals[v])


def test_record_of_another_spec_is_not_trusted(quick_dir):
    out, _ = quick_dir
    specs = {s["run_id"]: s for s in experiments.job_specs(ReproductionSettings.quick())}
    path = out / "runs" / "argmax-residual-none-s0.json"
    experiments.load_run(path, specs["argmax-residual-none-s0"])
    with pytest.raises(experiments.CorruptRun, match="holds run"):
        experiments.load_run(path, specs["argmax-residual-none-s1"])
    other = dict(specs["argmax-residual-none-s0"], eval={**specs["argmax-residual-none-s0"]["eval"], "seed": 1})
    with pytest.raises(experiments.CorruptRun, match="different spec"):
        experiments.load_run(path, other)


def test_settings_are_validated_and_pinned(quick_dir, tmp_path):
    out, _ = quick_dir
    with pytest.raises(ValueError, match="other settings"):
        run_reproduction(out, quick=True, seeds=3, progress=False)
    with pytest.raises(ValueError, match="norms"):
        ReproductionSettings.quick(norms=("none", "batchnorm"))
    with pytest.raises(ValueError, match="grid sets"):
        ReproductionSettings.quick(model={"norm": "layernorm"})
    with pytest.raises(ValueError, match="steps"):
        ReproductionSettings.quick(train={"steps": 0})
    with pytest.raises(ValueError, match="settings"):
        run_reproduction(tmp_path / "x", settings=ReproductionSettings.quick(), seeds=2)
    # Pairing: seed index s fixes init, data, test and probe seeds for every norm and architecture.
    specs = experiments.job_specs(ReproductionSettings.quick(architectures=("residual", "no_residual")))
    by_seed = {}
    for s in specs:
        key = (s["train_config"]["seed"], s["train_config"]["data_seed"], s["eval"]["seed"], s["probe"]["seed"])
        by_seed.setdefault(s["seed_index"], set()).add(key)
    assert all(len(keys) == 1 for keys in by_seed.values()) and len(by_seed) == 2
    assert len({next(iter(k)) for k in by_seed.values()}) == 2  # different seeds differ


def test_cli(quick_dir, capsys):
    from varsim.cli import main

    out, _ = quick_dir
    assert main(["reproduce", str(out), "--quick", "--progress", "--workers", "2"]) == 0
    assert "already finished" in capsys.readouterr().out
    assert main(["reproduce", str(out), "--aggregate-only"]) == 0
    assert main(["reproduce", str(out), "--quick", "--norms", "batchnorm"]) == 2
    assert "norms" in capsys.readouterr().err


def test_aggregate_with_missing_runs(quick_dir, tmp_path):
    """Partial results aggregate over the seeds each cell has; pairs use the seeds both sides have."""
    import shutil

    out, _ = quick_dir
    part = tmp_path / "partial"
    shutil.copytree(out, part, ignore=shutil.ignore_patterns("checkpoints"))
    (part / "runs" / "argmax-residual-layernorm-s1.json").unlink()
    summary = experiments.aggregate(part)
    assert summary["runs"]["missing"] == ["argmax-residual-layernorm-s1"]
    g = next(g for g in summary["groups"] if (g["task"], g["norm"]) == ("argmax", "layernorm"))
    assert g["seeds"] == [0] and g["accuracy"]["ci_low"][0] is None  # one seed: no interval
    p = next(p for p in summary["paired"] if (p["task"], p["norm"]) == ("argmax", "layernorm"))
    assert p["seeds"] == [0] and p["p_signflip"][0] == 1.0
    assert "missing: argmax-residual-layernorm-s1" in (part / "table.md").read_text()


def test_a_run_that_diverges_before_its_first_checkpoint_is_recorded_as_not_learned(tmp_path):
    """A learning rate that makes the loss non-finite at once: the run is a variant that did not learn (evaluated
    at its initial parameters), not a failure that a re-run would repeat forever."""
    settings = ReproductionSettings.quick(seeds=1, tasks=("argmax",), norms=("none",))
    spec = experiments.job_specs(settings)[0]
    spec["train_config"]["lr"] = 1e30
    spec["train_config"]["clip_norm"] = 1e30
    rec = experiments.run_job((spec, str(tmp_path / "work")))
    assert rec["train"]["status"] != "completed"
    assert rec["train"]["evaluated_step"] == 0
    assert rec["in_distribution"]["learned"] is False
    assert all(0.0 <= a <= 1.0 for a in rec["eval"]["accuracy"])


def test_unreachable_scheduler_leaves_no_pinned_directory(tmp_path):
    """The cluster is contacted before settings.json is written, so a typo in --scheduler does not pin outdir."""
    pytest.importorskip("distributed")
    import dask

    out = tmp_path / "repro"
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        with pytest.raises(ValueError, match="scheduler"):
            run_reproduction(out, quick=True, scheduler="tcp://127.0.0.1:9", progress=False)
    assert not (out / "settings.json").exists()


def test_aggregate_only_names_corrupt_runs_and_fails_when_incomplete(quick_dir, tmp_path, capsys):
    """``--aggregate-only`` on a torn record: one line naming the run and saying it will be redone, exit status 1
    (0 with --allow-incomplete), and the record stays where it is for the next run to move aside. Catches a
    corrupt run silently dropped from the summary with exit status 0."""
    import shutil

    from varsim.cli import main

    out, _ = quick_dir
    part = tmp_path / "torn"
    shutil.copytree(out, part, ignore=shutil.ignore_patterns("checkpoints"))
    victim = part / "runs" / "dictionary-residual-standardize-s1.json"
    victim.write_text(victim.read_text()[:100])
    assert main(["reproduce", str(part), "--aggregate-only"]) == 1
    err = capsys.readouterr().err
    assert "run dictionary-residual-standardize-s1 has a corrupt record" in err and "will be redone" in err
    assert "incomplete" in err and victim.exists()
    assert main(["reproduce", str(part), "--aggregate-only", "--allow-incomplete"]) == 0
    (part / "runs" / "argmax-residual-none-s0.json").unlink()
    assert main(["reproduce", str(part), "--aggregate-only"]) == 1
    assert "1 run(s) not finished (argmax-residual-none-s0)" in capsys.readouterr().err
    assert main(["reproduce", str(out), "--aggregate-only"]) == 0  # complete results
