"""The blind test of the long-N accuracy predictor (varsim.experiments.prediction_blind; its registration:
docs/experiments/prediction_blind_registration.md): the registered runs, the git gate before any long-N evaluation,
the registered analysis with its symmetric Holm criterion, and the committed analysis recomputed from the committed
records."""

from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import pytest

from varsim.experiments import prediction_blind as pb
from varsim.experiments.prediction import INFERENCE_MAPS, LENGTHS


@pytest.fixture(scope="module")
def specs():
    return pb.blind_specs()


def test_the_runs_are_the_registered_thirty_in_whole_seed_rounds(specs):
    """30 runs: the held-out recipes at seeds 6-8 and cosine lr 2e-3 at seeds 0-5, argmax and the binary key code,
    softmax, in the order of the rounds. Catches a wrong recipe set, seed set, learning rate or order."""
    from varsim.experiments.remedies import RECIPES

    assert len(specs) == 30 and len({s["run_id"] for s in specs}) == 30
    new_seeds = [s for s in specs if pb.part_of(s) == "new_seeds"]
    new_cell = [s for s in specs if pb.part_of(s) == "new_cell"]
    assert len(new_seeds) == 18 and len(new_cell) == 12
    assert {(s["recipe"], s["seed_index"]) for s in new_seeds} == {
        (r, k) for r in ("cosine_lr3e3", "constant_lr1e3", "constant_lr3e3") for k in (6, 7, 8)}
    assert {(s["recipe"], s["seed_index"]) for s in new_cell} == {("cosine_lr2e3", k) for k in range(6)}
    assert {(s["task"], s.get("key_encoding")) for s in specs} == {("argmax", None), ("dictionary", "binary")}
    assert all(s["attention"] == "softmax" for s in specs)
    # the new recipe is the cosine recipe with lr 2e-3 and nothing else changed
    lr2, lr3 = (next(s for s in specs if s["recipe"] == r and s["task"] == "argmax" and s["seed_index"] == 6 - 6 * (
        r == "cosine_lr2e3")) for r in ("cosine_lr2e3", "cosine_lr3e3"))
    assert lr2["train_config"]["lr"] == 2e-3 and RECIPES["cosine_lr3e3"]["lr"] == 3e-3
    diff = {k for k in lr2["train_config"] if lr2["train_config"][k] != lr3["train_config"][k]}
    assert diff <= {"lr", "seed", "data_seed"} and "lr" in diff
    # whole seeds, in the registered rounds
    order = [(pb.part_of(s), s["seed_index"]) for s in specs]
    assert [k for i, k in enumerate(order) if i == 0 or order[i - 1] != k] == list(pb.ROUNDS)


def test_the_grid_machinery_makes_them(specs):
    """The settings with 9 seeds give the committed grid's specs for seeds 0-5 unchanged (so seeds 6-8 are the same
    grid's next seeds), and new seeds draw new initializations. Catches specs built outside the grid's settings."""
    from varsim.experiments.prediction import subset_specs
    from varsim.experiments.settings import job_specs

    old = {s["run_id"]: s for s in subset_specs()}
    new = {s["run_id"]: s for s in job_specs(pb.blind_settings()) if s["run_id"] in old}
    assert len(new) == len(old) == 48
    assert all(json.dumps(new[k], sort_keys=True) == json.dumps(old[k], sort_keys=True) for k in old)
    seeds = {s["train_config"]["seed"] for s in specs if pb.part_of(s) == "new_seeds"}
    assert len(seeds) == 3 and not seeds & {s["train_config"]["seed"] for s in old.values()}


def _git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True)


@pytest.fixture
def repo(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "config", "user.email", "t@example.org")
    _git(tmp_path, "config", "user.name", "t")
    return tmp_path


def test_committed_version_only_for_a_committed_unchanged_file(repo):
    """Untracked, staged, or modified after its commit: None; committed and unchanged: that commit. Catches a gate
    that lets an edited prediction through (a planted check without ``git diff``)."""
    f = repo / "p.json"
    f.write_text("1")
    assert pb.committed_version(f) is None
    _git(repo, "add", "p.json")
    assert pb.committed_version(f) is None
    _git(repo, "commit", "-qm", "p")
    head = _git(repo, "rev-parse", "HEAD").stdout.strip()
    assert pb.committed_version(f) == head
    f.write_text("2")
    assert pb.committed_version(f) is None
    _git(repo, "add", "p.json")
    assert pb.committed_version(f) is None
    assert pb.committed_version(repo / "absent.json") is None


def test_no_long_n_evaluation_before_the_prediction_is_committed(repo, tmp_path_factory):
    """End to end on the grid's smoke-test sizes: train, predict (N = 16 only), then evaluate writes nothing until
    the prediction record is committed; after the commit it names that commit, covers every length of the test
    sets for softmax and the inference-only maps; a different model at the same place is refused."""
    ckpt = tmp_path_factory.mktemp("ckpt")
    spec = pb.blind_specs(pb.blind_settings(quick=True), rounds=(("new_cell", 0),))[0]
    from varsim.experiments.prediction import train_specs

    train_specs([spec], ckpt, log=ckpt / "progress.log")
    pb.predict_blind(ckpt, repo, [spec])
    pred = json.loads((repo / "predictions" / f"{spec['run_id']}.json").read_text())
    assert pred["accuracy_16"] >= 0 and pred["spec"] == spec and "provenance" in pred
    pb.evaluate_blind(ckpt, repo, [spec])
    ev_path = repo / "evaluations" / f"{spec['run_id']}.json"
    assert not ev_path.exists()
    assert "not committed" in (ckpt / "progress.log").read_text()
    _git(repo, "add", "predictions")
    _git(repo, "commit", "-qm", "predictions")
    pb.evaluate_blind(ckpt, repo, [spec])
    ev = json.loads(ev_path.read_text())
    assert ev["prediction_commit"] == _git(repo, "rev-parse", "HEAD").stdout.strip()
    lengths = spec["eval"]["lengths"] + spec["eval"]["long"]["lengths"]
    assert ev["softmax"]["lengths"] == lengths and set(ev["inference"]) == set(INFERENCE_MAPS)
    assert all(len(m["accuracy"]) == len(lengths) for m in ev["inference"].values())
    # the grid's own test sets: the accuracy at N = 16 is the one the prediction recorded
    assert ev["softmax"]["accuracy"][0] == pred["accuracy_16"]
    ev_path.unlink()
    pred["model_sha256"] = "0" * 64
    (repo / "predictions" / f"{spec['run_id']}.json").write_text(json.dumps(pred))
    _git(repo, "commit", "-qam", "other model")
    with pytest.raises(ValueError, match="not the model that was predicted"):
        pb.evaluate_blind(ckpt, repo, [spec])


# ----------------------------------------------------------------------------------------------------------------------
# The analysis on synthetic records with known errors


def _table(acc, rank, disp):
    labels = ("softmax", *INFERENCE_MAPS)
    return {m: {"accuracy": list(acc), "ranking_correct": list(rank), "dispersion_error": list(disp)}
            for m in labels}


def _write_synthetic(root, specs, err, gauss_err, acc16=0.97):
    """Records where the measured softmax accuracy is 0.5 beyond N = 16, the full predictor (kappa 0.5) is off by
    ``err(seed)``, the Gaussian predictor by ``gauss_err(seed)``, the ranking-only predictor by 0.2 and kappa 1 by
    0.1."""
    from varsim.tasks import chance_level

    n = len(LENGTHS)
    (root / "predictions").mkdir(parents=True)
    (root / "evaluations").mkdir()
    for s in specs:
        sd, chance = s["seed_index"], chance_level(s["task"])
        truth = [acc16] + [0.5] * (n - 1)
        r = (0.7 - chance) / (1 - chance)  # ranking only predicts 0.7: error 0.2
        full = _table([t + err(sd) for t in truth], [r] * n, [0.01] * n)
        k1 = _table([t + 0.1 for t in truth], [r] * n, [0.01] * n)
        gauss = _table([t + gauss_err(sd) for t in truth], [r] * n, [0.01] * n)
        pred = {"run_id": s["run_id"], "accuracy_16": acc16, "kappas": list(pb.BLIND_KAPPAS),
                "measured": [full, k1], "gaussian": [gauss, gauss], "tau": 0.2, "sigma": 0.5, "lapse": 0.0,
                "best_head": 0}
        m = {"lengths": list(LENGTHS), "accuracy": truth, "ranking_correct": [0.6] * n, "dispersion_error": [0.1] * n}
        ev = {"run_id": s["run_id"], "softmax": m, "inference": {k: m for k in INFERENCE_MAPS}}
        (root / "predictions" / f"{s['run_id']}.json").write_text(json.dumps(pred))
        (root / "evaluations" / f"{s['run_id']}.json").write_text(json.dumps(ev))


def _holm_reference(p):
    """Holm step-down, written as the loop of its definition."""
    order = sorted(range(len(p)), key=lambda i: p[i])
    adj, running = [0.0] * len(p), 0.0
    for k, i in enumerate(order):
        running = max(running, min(1.0, (len(p) - k) * p[i]))
        adj[i] = running
    return adj


def test_analysis_primary_comparisons_and_symmetric_holm(tmp_path, specs):
    """On records with known errors: the primary MAE per part is the per-seed mean error with its t interval; the
    comparison with the Gaussian predictor (better than the full one here) is declared a loss, the ones the full
    predictor wins are wins, each by Holm over all 8 comparisons. Catches an asymmetric criterion (losses never
    declared), unadjusted p-values, and pooling that mixes the parts."""
    from scipy import stats

    _write_synthetic(tmp_path, specs, err=lambda sd: 0.03 + 0.002 * sd, gauss_err=lambda sd: 0.001 * (sd % 3))
    res = pb.analyze_blind(tmp_path, specs)
    assert res["left_out"] == {}
    for part, seeds in (("new_seeds", [6, 7, 8]), ("new_cell", list(range(6)))):
        d = res["parts"][part]
        e = [0.03 + 0.002 * sd for sd in seeds]
        assert d["seeds"] == seeds and d["runs"] == (18 if part == "new_seeds" else 12)
        assert d["primary"]["predictor"]["mean"] == pytest.approx(np.mean(e), abs=1e-12)
        half = stats.t.ppf(0.975, len(e) - 1) * np.std(e, ddof=1) / np.sqrt(len(e))
        assert d["primary"]["predictor"]["ci_high"] == pytest.approx(np.mean(e) + half, abs=1e-12)
        assert d["primary"]["ranking_only"]["mean"] == pytest.approx(0.2, abs=1e-12)
        assert d["primary"]["predictor_kappa1"]["mean"] == pytest.approx(0.1, abs=1e-12)
        assert d["readout_contribution"]["kappa_0.5"]["mean"] == pytest.approx(np.mean(e) - 0.2, abs=1e-12)
    p = [h["p"] for h in res["holm"]]
    assert len(p) == 8
    assert [h["p_holm"] for h in res["holm"]] == pytest.approx(_holm_reference(p), abs=1e-12)
    verdict = {(h["part"], h["against"]): h["verdict"] for h in res["holm"]}
    for part in pb.PARTS:
        assert verdict[(part, "carry")] == "win"  # carry-over is off by 0.47
        assert verdict[(part, "gaussian")] == ("loss" if res["holm"][[(h["part"], h["against"]) for h in
                                                                      res["holm"]].index((part, "gaussian"))][
            "p_holm"] < 0.05 else "undecided")
    assert verdict[("new_cell", "gaussian")] == "loss"
    assert res["pooled"]["seeds"] == list(range(9)) and res["pooled"]["runs"] == 30
    md = pb.render_blind(res)
    assert "loss" in md and "win" in md


def test_an_excluded_run_drops_its_whole_seed(tmp_path, specs):
    """A run below 0.9 at N = 16 (or refused) removes its seed from its part, never a single cell; the other part
    keeps all its seeds. Catches exclusion of single cells."""
    _write_synthetic(tmp_path, specs, err=lambda sd: 0.03, gauss_err=lambda sd: 0.1)
    bad = next(s for s in specs if pb.part_of(s) == "new_seeds" and s["seed_index"] == 7)
    p = tmp_path / "predictions" / f"{bad['run_id']}.json"
    rec = json.loads(p.read_text())
    p.write_text(json.dumps({**rec, "accuracy_16": 0.85}))
    refused = next(s for s in specs if pb.part_of(s) == "new_cell" and s["seed_index"] == 2)
    p = tmp_path / "predictions" / f"{refused['run_id']}.json"
    p.write_text(json.dumps({"run_id": refused["run_id"], "accuracy_16": 0.99, "refused": "no"}))
    res = pb.analyze_blind(tmp_path, specs)
    assert res["parts"]["new_seeds"]["seeds"] == [6, 8] and res["parts"]["new_seeds"]["runs"] == 12
    assert res["parts"]["new_cell"]["seeds"] == [0, 1, 3, 4, 5] and res["parts"]["new_cell"]["runs"] == 10
    assert set(res["left_out"]) == {bad["run_id"], refused["run_id"]}


# ----------------------------------------------------------------------------------------------------------------------
# The committed test


def _assert_same_analysis(committed, again, where="analysis"):
    """Equal structure, names, counts and verdicts; equal numbers to 1e-12 relative: the logistic baseline's least
    squares run through BLAS, whose kernel moves its last bits (1e-16 relative between Haswell and SkylakeX), while a
    changed record moves an MAE by 1e-4 or more."""
    if isinstance(committed, dict):
        assert isinstance(again, dict) and committed.keys() == again.keys(), where
        for k in committed:
            _assert_same_analysis(committed[k], again[k], f"{where}/{k}")
    elif isinstance(committed, list):
        assert isinstance(again, list) and len(committed) == len(again), where
        for i, (a, b) in enumerate(zip(committed, again)):
            _assert_same_analysis(a, b, f"{where}[{i}]")
    elif isinstance(committed, float) and not isinstance(again, bool):
        assert again == pytest.approx(committed, rel=1e-12, abs=1e-15), where
    else:
        assert committed == again, where


def test_the_committed_analysis_is_what_the_committed_records_give():
    """``analysis_blind.json`` equals the analysis made again from the committed prediction and evaluation records
    (so a record changed without the analysis made again is noticed), and every evaluation follows the commit of its
    prediction record, with the same model."""
    from varsim._common.jsonio import jsonable, read_json

    path = pb.DATA_DIR / "analysis_blind.json"
    if not path.exists():
        pytest.skip("no committed blind analysis in this installation (it lives in the repository)")
    committed = read_json(path)
    again = json.loads(json.dumps(jsonable(pb.analyze_blind(pb.DATA_DIR))))
    _assert_same_analysis({k: v for k, v in committed.items() if k != "provenance"}, again)
    assert committed["provenance"]["git_commit"]
    git = shutil.which("git") is not None and (pb.DATA_DIR.parents[3] / ".git").exists()
    for p in sorted((pb.DATA_DIR / "evaluations").glob("*.json")):
        ev = read_json(p)
        pred = read_json(pb.DATA_DIR / "predictions" / p.name)
        assert ev["model_sha256"] == pred["model_sha256"] and ev["prediction_commit"]
        assert ev["provenance"]["created_utc"] > pred["provenance"]["created_utc"]
        if git:  # in git order, the prediction's commit precedes the commit that added the evaluation
            added = subprocess.run(["git", "-C", str(p.parent), "log", "--diff-filter=A", "--format=%H", "--",
                                    p.name], capture_output=True, text=True).stdout.split()
            if added:  # (an uncommitted evaluation has no commit yet)
                assert added[-1] != ev["prediction_commit"]
                assert subprocess.run(["git", "-C", str(p.parent), "merge-base", "--is-ancestor",
                                       ev["prediction_commit"], added[-1]]).returncode == 0


def test_the_command_answers_bad_input_in_one_line(tmp_path, capsys, specs):
    """A corrupt record or an unwritable folder: one line naming the step, exit status 2, no traceback; a missing
    checkpoint directory is a usage error. Catches a step that lets the exception through."""
    (tmp_path / "predictions").mkdir()
    (tmp_path / "predictions" / f"{specs[0]['run_id']}.json").write_text("{")
    assert pb.main(["analyze", "--data", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("prediction_blind analyze:") and specs[0]["run_id"] in err[0]
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert pb.main(["predict", str(blocker / "ckpt")]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    with pytest.raises(SystemExit) as exc:
        pb.main(["train"])
    assert exc.value.code == 2
