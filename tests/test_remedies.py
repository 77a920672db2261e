"""The remedies axis of the reproduction: unchanged paper specs, settings validation, lr selection, a quick slice
end to end (locally and on Dask), the summary's statistics and table."""

import dataclasses
import json
import subprocess

import numpy as np
import pytest
from repro_checks import module_grid, run_records

from varsim.experiments import run_reproduction
from varsim.experiments.remedies import remedies_settings
from varsim.experiments.selection import select_lr
from varsim.experiments.settings import ReproductionSettings, cell_key, cells, job_specs, selection_specs
from varsim.experiments.stats import holm

# A slice of the quick remedies grid with the lr-selection axis (the machinery a user's grid may use; the remedies
# preset states its recipes instead), cheap enough for the default suite: one task, two trained and two
# inference-only variants, both depths, two seeds, one lr-selection seed.
SLICE = remedies_settings(
    quick=True, tasks=["dictionary"], attentions={"softmax": {}, "ssmax": {"attention": "ssmax"}},
    inference_attentions={"topk1": {"attention": "topk", "params": {"k": 1}},
                          "control_logn": {"attention": "logn", "params": {"n0": 16.0}}},
    train={"steps": 60, "batch_size": 16, "train_max": 16, "checkpoint_every": 60, "keep_checkpoints": 1},
    eval_lengths=[16, 32], probe_lengths=[16, 32], probe_sets=8, eval_examples=32, id_examples=32,
    validation_examples=32, recipes={}, key_encodings=[], eval_long={}, depths=[1, 2], lr_grid=[1e-3, 3e-3],
    lr_select_seeds=1)


def _old_settings_module():
    src = subprocess.run(["git", "show", "HEAD~0:varsim/experiments/settings.py"], capture_output=True, text=True,
                         cwd=__file__.rsplit("/tests/", 1)[0])
    return src.stdout


def test_paper_specs_and_settings_do_not_carry_remedy_fields():
    """The paper grid's specs and settings.json stay byte-identical: no remedies key at its default. Catches a new
    field written at its default (which would make every committed record 'produced by a different spec')."""
    for factory in (ReproductionSettings.full, ReproductionSettings.quick):
        st = factory()
        assert not st.remedies
        d = st.to_dict()
        for k in ("attentions", "inference_attentions", "depths", "lr_grid", "lr_select_seeds",
                  "validation_lengths", "validation_examples"):
            assert k not in d
        for spec in job_specs(st):
            assert set(spec) == {"run_id", "task", "architecture", "norm", "seed_index", "train_config", "eval",
                                 "in_distribution", "probe"}
            assert spec["run_id"].count("-") == 3
            assert "attention" not in spec["train_config"]["model"]
        assert ReproductionSettings.from_dict(d) == st


def test_remedies_settings_are_validated():
    """Unknown attention names or parameters, a grid without the softmax baseline, a duplicated lr: one-line
    ValueError naming the field."""
    with pytest.raises(ValueError, match="attention"):
        remedies_settings(quick=True, attentions={"softmax": {}, "x": {"attention": "nope"}})
    with pytest.raises(ValueError, match="'k'"):
        remedies_settings(quick=True, inference_attentions={"t": {"attention": "topk", "params": {"k": 0}}})
    with pytest.raises(ValueError, match="baseline"):
        remedies_settings(quick=True, attentions={"ssmax": {"attention": "ssmax"}})
    with pytest.raises(ValueError, match="lr_grid"):
        remedies_settings(quick=True, lr_grid=[1e-3, 1e-3])
    with pytest.raises(ValueError, match="depths"):
        remedies_settings(quick=True, depths=[0])
    with pytest.raises(ValueError, match="recipes"):
        remedies_settings(quick=True, lr_grid=[1e-3])  # a recipe states its lr: nothing to select
    with pytest.raises(ValueError, match="recipes"):
        remedies_settings(quick=True, recipes={"a-b": {"lr": 1e-3}})
    with pytest.raises(ValueError, match="recipes"):
        remedies_settings(quick=True, recipes={"fast": {"steps": 10}})
    with pytest.raises(ValueError, match="key_encodings"):
        remedies_settings(quick=True, key_encodings=["nope"])
    with pytest.raises(ValueError, match="eval_long"):
        remedies_settings(quick=True, eval_long={"lengths": [16], "examples": 8})
    with pytest.raises(ValueError, match="primary"):
        remedies_settings(quick=True, primary={"length": 32, "variants": ["nope"], "positive_controls": [],
                                               "negative_controls": []})
    with pytest.raises(ValueError, match="primary.length"):
        remedies_settings(quick=True, primary={"length": 33, "variants": [], "positive_controls": [],
                                               "negative_controls": []})
    with pytest.raises(ValueError, match="replicate"):
        remedies_settings(quick=True, attentions={"softmax": {}, "r": {"replicate": True, "attention": "ssmax"}})
    full = remedies_settings()
    assert full.seeds >= 6 and full.depths == (1,) and full.lr_grid == ()
    assert set(full.recipes) == {"cosine_lr1e3", "cosine_lr3e3", "constant_lr1e3", "constant_lr3e3"}
    assert full.key_encodings == ("binary", "embedding") and full.primary["length"] == 1024
    assert full.attentions["logn"]["attention_params"]["n0"] == full.train["train_max"]
    assert "lr" not in full.train and full.train["clip_norm"] == 1.0 and full.train["optimizer"] == "adamw"


def test_selection_uses_validation_only_and_picks_the_best_mean():
    """The selection specs carry only in-distribution validation sets (N <= train_max, their own seed) and
    select_lr picks the lr of the largest mean score (ties to the smaller lr). Catches selection on test lengths or
    on one seed's score."""
    st = SLICE
    specs = selection_specs(st)
    assert len(specs) == len(cells(st)) * len(st.lr_grid) * st.lr_select_seeds
    for s in specs:
        assert set(s) == {"run_id", "kind", "cell", "lr", "seed_index", "train_config", "validation"}
        assert max(s["validation"]["lengths"]) <= st.train["train_max"]
        assert s["validation"]["seed"] not in (st.seed_for(s["seed_index"], "eval"),
                                               st.seed_for(s["seed_index"], "in_distribution"))
    recs = {}
    for s in specs:
        score = 0.9 if (s["lr"] == st.lr_grid[1]) == ("ssmax" in s["cell"]) else 0.5
        recs[s["run_id"]] = {"spec": s, "validation": {"score": score}}
    sel = select_lr(st, recs)
    for cell in cells(st):
        want = st.lr_grid[1] if cell[3] == "ssmax" else st.lr_grid[0]
        assert sel["chosen"][cell_key(cell)] == want
    del recs[specs[0]["run_id"]]
    with pytest.raises(ValueError, match="selection"):
        select_lr(st, recs)
    main = job_specs(st, sel["chosen"])
    assert {s["lr"] for s in main if s["attention"] == "ssmax"} == {st.lr_grid[1]}
    assert all(("inference" in s) == (s["attention"] == "softmax") for s in main)


def test_selection_ties_survive_float_rounding():
    """Equal mean scores that float summation makes differ in the last bit are a tie, and the tie goes to the smaller
    lr. Catches the rule applied to the float means as they come: the committed remedies run of 2026-12-01 chose
    3e-3 for dictionary softmax, 1 block, whose per-seed scores (0.99870, 1.0) and (0.99935, 0.99935) have equal
    means (0.9993489583333333 vs ...334)."""
    st = dataclasses.replace(SLICE, lr_select_seeds=2)
    lo, hi = st.lr_grid[0], st.lr_grid[1]
    per_seed = {lo: (0.9986979166666666, 1.0), hi: (0.9993489583333334, 0.9993489583333334)}
    assert sum(per_seed[lo]) / 2 < sum(per_seed[hi]) / 2  # the rounding the rule must see through
    recs = {}
    for s in selection_specs(st):
        scores = per_seed.get(s["lr"], (0.5, 0.5))
        recs[s["run_id"]] = {"spec": s, "validation": {"score": scores[s["seed_index"]]}}
    assert set(select_lr(st, recs)["chosen"].values()) == {lo}
    per_seed[hi] = (0.9993489583333334, 0.9999)  # a real difference (~1e-4) still wins
    for s in selection_specs(st):
        recs[s["run_id"]]["validation"]["score"] = per_seed.get(s["lr"], (0.5, 0.5))[s["seed_index"]]
    assert set(select_lr(st, recs)["chosen"].values()) == {hi}


def test_holm_is_one_home():
    """Holm's adjustment: k-th smallest times (m - k + 1), monotone, NaN left out; the figures use the same one."""
    from varsim.figures import fig_repro_accuracy

    adj = holm([0.01, 0.04, 0.03, 0.005, np.nan])
    np.testing.assert_allclose(adj[:4], [0.03, 0.06, 0.06, 0.02])
    assert np.isnan(adj[4])
    assert fig_repro_accuracy.holm is holm


@pytest.fixture(scope="module")
def slice_dir(tmp_path_factory):
    return module_grid(tmp_path_factory, "remedies", settings=SLICE)


def test_quick_slice_end_to_end(slice_dir):
    """Selection, choice, main runs and the summary: the inference maps are evaluated on the softmax runs' weights
    (paired), the control is present, the summary names the correction and the table has every variant."""
    out, report = slice_dir
    assert report["failed"] == []
    n_main = len(cells(SLICE)) * SLICE.seeds
    assert report["runs"] == n_main and len(report["completed"]) == n_main
    sel = json.loads((out / "selection.json").read_text())
    assert set(sel["chosen"]) == {cell_key(c) for c in cells(SLICE)}
    summary = json.loads((out / "summary.json").read_text())
    assert "Holm" in summary["secondary_correction"] and summary["lr_selection"]["chosen"] == sel["chosen"]
    variants = {(g["variant"], g["depth"]) for g in summary["groups"]}
    assert variants == {(v, d) for v in ("softmax", "ssmax", "topk1", "control_logn") for d in (1, 2)}
    for p in summary["paired"]:
        assert len(p["p_holm_secondary"]) == len(SLICE.eval_lengths)
    for rec_path in (out / "runs").glob("*softmax*.json"):
        rec = json.loads(rec_path.read_text())
        # the control is the identity at N <= n0 = 16: same accuracy there as the softmax weights it is applied to
        ctl = rec["inference"]["control_logn"]
        assert ctl["eval"]["correct"][0] == rec["eval"]["correct"][0]
        assert ctl["in_distribution"]["correct"] == rec["in_distribution"]["correct"]
    table = (out / "table.md").read_text()
    assert "control_logn (inf.)" in table and "Holm" in table and "Learning-rate selection" in table
    again = run_reproduction(out, settings=SLICE, workers=2, progress=False)
    assert again["completed"] == [] and len(again["skipped"]) == n_main


def test_resume_after_the_chosen_lr_changes_redoes_those_runs(slice_dir, tmp_path):
    """A finished grid whose lr choice changes (here: a selection record edited so that the other lr of the softmax
    cells wins; in practice a fixed selection rule) resumes: the main runs of those cells are redone at the new lr,
    their old checkpoint directories set aside, the other runs kept. Catches a resume that fails on "cannot resume:
    the config differs" because the run's checkpoint directory holds the training at the old lr."""
    import shutil

    from varsim.experiments.records import select_path

    src, _ = slice_dir
    out = tmp_path / "grid"
    shutil.copytree(src, out)
    old = json.loads((out / "selection.json").read_text())["chosen"]
    flipped = {}
    for spec in selection_specs(SLICE):
        if spec["cell"].endswith("-softmax-d1"):
            path = select_path(out, spec["run_id"])
            rec = json.loads(path.read_text())
            rec["validation"]["score"] = 1.0 if spec["lr"] != old[spec["cell"]] else 0.0
            path.write_text(json.dumps(rec))
            flipped[spec["cell"]] = [lr for lr in SLICE.lr_grid if lr != old[spec["cell"]]][0]
    before = {p.name: p.read_bytes() for p in (out / "runs").glob("*.json")}
    report = run_reproduction(out, settings=SLICE, workers=1, progress=False)
    assert report["failed"] == []
    redone = sorted(report["completed"])
    softmax_d1 = sorted(s["run_id"] for s in job_specs(SLICE, {**old, **flipped})
                        if s["attention"] == "softmax" and s["depth"] == 1)
    assert redone == softmax_d1
    for rid in redone:
        rec = json.loads((out / "runs" / f"{rid}.json").read_text())
        assert rec["spec"]["lr"] == list(flipped.values())[0]
    assert sorted(p.name for p in (out / "checkpoints").glob("*.superseded")) == [f"{r}.superseded" for r in redone]
    kept = {p.name: p.read_bytes() for p in (out / "runs").glob("*.json") if p.stem not in redone}
    assert kept == {k: v for k, v in before.items() if k[:-5] not in redone}


def test_recheck_recomputes_a_run_and_finds_a_changed_record(slice_dir, tmp_path, capsys):
    """`varsim reproduce DIR --recheck RUN_ID ...` recomputes a main run and an lr-selection run with the current code:
    identical numbers (exit 0), nothing written in DIR; a record whose numbers were changed is named with the field
    that differs (exit 1); an unknown run id is refused before anything runs (exit 2, one line). Catches a recheck
    that compares the volatile fields (timing, provenance), trusts the record instead of recomputing, or writes."""
    import shutil

    from varsim.cli import main
    from varsim.experiments.records import select_path

    src, report = slice_dir
    out = tmp_path / "grid"
    shutil.copytree(src, out)
    rid = sorted(report["completed"])[0]
    sel = sorted(p.stem for p in select_path(out, "x").parent.glob("*.json"))[0]
    before = sorted(str(p.relative_to(out)) for p in out.rglob("*"))
    assert main(["reproduce", str(out), "--recheck", rid, sel]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 2 and all(": bitwise-equal (record made at " in ln for ln in lines), lines
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == before
    path = out / "runs" / f"{rid}.json"
    rec = json.loads(path.read_text())
    rec["eval"]["correct"][0] += 1
    rec["eval"]["accuracy"][0] = min(1.0, rec["eval"]["accuracy"][0] + 1e-3)
    rec["eval"]["ci_high"][0] = 1.0
    path.write_text(json.dumps(rec))
    assert main(["reproduce", str(out), "--recheck", rid]) == 1
    text = capsys.readouterr().out
    assert f"{rid}: BEYOND TOLERANCE" in text and "  eval.ci_high (proportion): 1 of " in text
    assert main(["reproduce", str(out), "--recheck", rid, "no-such-run"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "no-such-run" in captured.err and len(captured.err.strip().splitlines()) == 1


def test_cli_preset_flag_is_parsed(slice_dir, capsys):
    from varsim.cli import main

    out, _ = slice_dir
    assert main(["reproduce", str(out), "--aggregate-only"]) == 0
    with pytest.raises(SystemExit):
        main(["reproduce", str(out), "--preset", "nope"])


def test_dask_matches_local_and_reused_selection_training_is_exact(slice_dir, tmp_path):
    """The remedies slice on a Dask LocalCluster (no checkpoints: every main run trains) gives the same selection
    and main records, number for number, as the local run, whose main runs of the selection seed start from their
    lr-selection twin's finished training (``timing.train_reused_from``); resumed through Dask, it skips every
    finished run. Catches a reuse that takes the wrong lr's or seed's training (the accuracies and probes would
    differ), a reuse of a different config, randomness keyed by worker or executor, and a resume that redoes runs."""
    distributed = pytest.importorskip("distributed")
    out, _ = slice_dir
    reused = {}
    for path in (out / "runs").glob("*.json"):
        rec = json.loads(path.read_text())
        reused[rec["run_id"]] = rec["timing"].get("train_reused_from")
    first = [rid for rid in reused if rid.endswith("-s0")]
    assert first and all(reused[rid] == f"{rid.rsplit('-s', 1)[0]}-lr{_chosen_index(out, rid)}-s0" for rid in first)
    assert all(reused[rid] is None for rid in reused if not rid.endswith("-s0"))  # seed 1 is not a selection seed
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, protocol="tcp",
                                  host="127.0.0.1", dashboard_address=None) as cluster:
        remote = run_reproduction(tmp_path / "dask", settings=SLICE, scheduler=cluster.scheduler_address,
                                  progress=False)
        assert remote["failed"] == [] and remote["completed"]
        assert not (tmp_path / "dask" / "checkpoints").exists()  # off by default on Dask
        # Resuming through Dask skips the finished runs as the local path does.
        again = run_reproduction(tmp_path / "dask", settings=SLICE, scheduler=cluster.scheduler_address,
                                 progress=False)
        assert again["completed"] == [] and len(again["skipped"]) == len(remote["completed"])
    for sub in ("select", ""):
        a, b = run_records(out, sub), run_records(tmp_path / "dask", sub)
        assert sorted(a) == sorted(b) and a
        for name in a:
            assert a[name] == b[name], name
    sa = json.loads((out / "summary.json").read_text())
    sb = json.loads((tmp_path / "dask" / "summary.json").read_text())
    assert sa["groups"] == sb["groups"] and sa["paired"] == sb["paired"]


def _chosen_index(out, rid):
    sel = json.loads((out / "selection.json").read_text())
    return list(SLICE.lr_grid).index(sel["chosen"][rid.rsplit("-s", 1)[0]])
