"""Flags that contradict each other or the directory they point at, resuming a run from its own configuration, and
messages that name the parameter the user gave: each is one line (exit 2) before any work, or does the right thing.

Catches contradictions accepted silently (``reproduce --aggregate-only --recheck`` rewrote summary.json and exited 0,
``--allow-incomplete`` without ``--aggregate-only`` was ignored, ``figures --results QUICK --rerun`` started the full
reproduction, ``train --outdir NEW --resume`` started a fresh run), ``train --outdir RUN --resume`` needing every
original flag, and messages that spoke of another parameter (``theory --tau 1e308`` of beta, ``sweep --beta 1e308``
of tau) or did not name the damaged file.
"""

from __future__ import annotations

import hashlib
import json
import shutil

import pytest
from cli_checks import run_cli

from varsim.cli import main
from varsim.experiments.presets import PRESETS, preset_settings
from varsim.experiments.settings import GRID_ARCHITECTURES
from varsim.nn.architectures import ARCHITECTURES
from varsim.tasks import TASK_REGISTRY, get_task
from varsim.train import TrainConfig, read_checkpoint
from varsim.train.checkpoint import latest_checkpoint

TINY = ["--task", "argmax", "--d-model", "16", "--heads", "2", "--steps", "4", "--batch", "8",
        "--checkpoint-every", "2"]


def _one_line(code, err, *words, absent=(), status=2):
    assert code == status, err
    assert err.count("\n") == 1 and "Traceback" not in err and "Warning" not in err, err
    for w in words:
        assert w in err, (w, err)
    for w in absent:
        assert w not in err, (w, err)


@pytest.mark.parametrize("argv, words, absent", [
    (["simulate", "--sampler", "logits", "--d-k", "1e308"], ["argument --d-k"], []),
    (["train", "--task", "argmax", "--batch-size", "1e308", "--outdir", "r"], ["--batch-size"], []),
    (["train", "--task", "argmax", "--train-max", "1e308", "--outdir", "r"], ["argument --train-max"], []),
    (["train", "--task", "argmax", "--lr", "1e308", "--outdir", "r"], ["argument --lr"], []),
    (["evaluate", "r", "--threads", "99999999999999999999999"], ["argument --threads"], []),
    (["sweep", "--workers", "99999999999999999999999"], ["argument --workers"], []),
    (["theory", "--d", "4", "--tau", "1e308"], ["argument --tau"], ["beta"]),
    (["sweep", "--beta", "1e308"], ["argument --beta"], ["tau"]),
    (["theory", "--beta", "-1"], ["argument --beta", "between 0 and"], []),
    (["reproduce", "{tmp}", "--aggregate-only", "--recheck", "x"], ["--recheck", "--aggregate-only"], []),
    (["reproduce", "{tmp}", "--allow-incomplete"], ["--allow-incomplete", "--aggregate-only"], []),
    (["train", "--outdir", "{tmp}/new", "--resume"], ["--resume", "holds no run"], []),
    (["train", *TINY, "--outdir", "{tmp}/new", "--resume"], ["--resume", "holds no run"], []),
])
def test_refused_before_any_work(tmp_path, capsys, argv, words, absent):
    argv = [a.format(tmp=tmp_path) for a in argv]
    (tmp_path / "keep").write_text("x")
    code, _, err = run_cli(capsys, argv)
    _one_line(code, err, *words, absent=absent)
    assert [p.name for p in tmp_path.iterdir()] == ["keep"]  # nothing created (no new/ run directory)


def test_aggregate_only_with_recheck_leaves_the_summary_alone(tmp_path, capsys):
    """The combination used to rewrite summary.json and exit 0: now argparse refuses it and nothing changes."""
    (tmp_path / "summary.json").write_text('{"old": true}\n')
    code, _, err = run_cli(capsys, ["reproduce", str(tmp_path), "--aggregate-only", "--recheck", "run-1"])
    _one_line(code, err, "not allowed with argument --aggregate-only")
    assert (tmp_path / "summary.json").read_text() == '{"old": true}\n'


def test_figures_rerun_into_a_quick_directory_is_refused(tmp_path, capsys):
    from varsim.experiments.records import write_settings
    from varsim.experiments.settings import ReproductionSettings

    write_settings(tmp_path, ReproductionSettings.quick())
    before = sorted(p.name for p in tmp_path.iterdir())
    code, _, err = run_cli(capsys, ["figures", "--results", str(tmp_path), "--rerun", "--only", "fig_repro_accuracy",
                                 "--outdir", str(tmp_path / "figs")])
    _one_line(code, err, "results", "quick reproduction", "--rerun")
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no runs/ directory, no figures


@pytest.fixture(scope="module")
def half_run(tmp_path_factory):
    """A run as if killed after its step-2 checkpoint: a finished 4-step run with the later checkpoints removed."""
    run = tmp_path_factory.mktemp("resume") / "run"
    assert main(["train", *TINY, "--lr", "0.003", "--outdir", str(run)]) == 0
    for ckpt in run.glob("ckpt-*.npz"):
        if read_checkpoint(ckpt)[0]["step"] > 2:
            ckpt.unlink()
    return run


def test_resume_reads_the_runs_own_config(half_run, tmp_path, capsys):
    """`varsim train --outdir RUN --resume` alone continues the run with its recorded config (lr 0.003, 4 steps), to
    the same parameters as the uninterrupted run."""
    run = tmp_path / "run"
    shutil.copytree(half_run, run)
    code, _, err = run_cli(capsys, ["train", "--outdir", str(run), "--resume"])
    assert code == 0, err
    header, arrays = read_checkpoint(latest_checkpoint(run))
    assert header["step"] == 4 and TrainConfig.from_dict(header["config"]).lr == 0.003
    straight = tmp_path / "straight"
    assert main(["train", *TINY, "--lr", "0.003", "--outdir", str(straight)]) == 0
    _, expected = read_checkpoint(latest_checkpoint(straight))
    assert arrays.keys() == expected.keys() and all((arrays[k] == expected[k]).all() for k in expected)


def test_resume_refuses_a_flag_that_differs_from_the_run(half_run, tmp_path, capsys):
    run = tmp_path / "run"
    shutil.copytree(half_run, run)
    code, _, err = run_cli(capsys, ["train", "--outdir", str(run), "--resume", "--lr", "0.01"])
    _one_line(code, err, "cannot resume", "lr")
    assert latest_checkpoint(run).name == latest_checkpoint(half_run).name


@pytest.mark.parametrize("text, words", [
    ('{"config": {"task": "argmax", "bogus": 1}}', ["config.json", "bogus"]),
    ('{"config": {"task": "argmax", "lr": "fast"}}', ["config.json", "lr"]),
    ("{torn", ["config.json", "not valid JSON"]),
    ('{"no": "config"}', ["config.json", "'config'"]),
])
def test_a_corrupt_run_config_is_named(tmp_path, capsys, text, words):
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(text)
    for extra in ([], TINY):
        code, _, err = run_cli(capsys, ["train", *extra, "--outdir", str(run), "--resume"])
        _one_line(code, err, *words)


def test_a_bad_field_in_a_config_file_names_the_file(tmp_path, capsys):
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"task": "argmax", "lr": "fast"}))
    code, _, err = run_cli(capsys, ["train", "--config", str(cfg), "--outdir", str(tmp_path / "r")])
    _one_line(code, err, "cfg.json", "lr")


def test_a_huge_learning_rate_from_a_config_file_stops_without_warnings(tmp_path, capsys):
    """lr = 1e308 (allowed by the config file, refused by --lr) overflows the first update: the run stops on the
    non-finite values (exit 1) with no NumPy RuntimeWarning on stderr."""
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"task": "argmax", "lr": 1e308, "steps": 3, "batch_size": 4,
                               "model": {"d_model": 16, "n_heads": 2}}))
    with _no_warnings():
        code, _, err = run_cli(capsys, ["train", "--config", str(cfg), "--outdir", str(tmp_path / "r")])
    assert code == 1 and "non-finite" in err and "Warning" not in err, err


class _no_warnings:
    def __enter__(self):
        import warnings

        self._ctx = warnings.catch_warnings(record=True)
        self.caught = self._ctx.__enter__()
        warnings.simplefilter("always")
        return self

    def __exit__(self, *exc):
        self._ctx.__exit__(*exc)
        assert not self.caught, [str(w.message) for w in self.caught]


def _model_of(label: str) -> str:
    """The model (a name of the architecture registry) that the grid architecture ``label`` builds: asked of the
    model config it makes, not of the code under test."""
    from varsim.nn.config import ModelConfig

    model = ModelConfig.from_dict({"task": "argmax", **GRID_ARCHITECTURES[label]}).architecture
    assert model in ARCHITECTURES
    return model


def _preset_models(preset: str) -> set:
    """The models the preset's own grid trains."""
    return {_model_of(a) for a in PRESETS[preset](quick=True).architectures}


PRESET_ARCHITECTURES = [(p, a) for p in PRESETS for a in GRID_ARCHITECTURES]
PRESET_TASKS = [(p, t) for p in PRESETS for t in TASK_REGISTRY]


@pytest.fixture
def no_work(monkeypatch):
    """``varsim reproduce`` may not start its grid: the test fails at once if it tries (it ran 85 s, or wrote a
    set-transformer grid as the decoder grid, before the preset's contradictions were refused)."""
    import varsim.experiments.reproduce as rep

    def refuse(*args, **kwargs):
        raise AssertionError("the grid started: a contradiction was not refused before any work")

    monkeypatch.setattr(rep, "run_grid", refuse)


def test_the_preset_walk_finds_the_contradictions():
    """The registries give the contradictions the issue named (a walk that finds none would pass anything)."""
    contradicting = {(p, a) for p, a in PRESET_ARCHITECTURES if _model_of(a) not in _preset_models(p)}
    assert {("decoder", "residual"), ("remedies", "decoder_rope"), ("decoder_constant", "no_residual")} <= \
        contradicting
    assert len(PRESETS) >= 3 and len({_model_of(a) for a in GRID_ARCHITECTURES}) >= 2


@pytest.mark.parametrize("preset, architecture", PRESET_ARCHITECTURES, ids=[f"{p}-{a}" for p, a in
                                                                              PRESET_ARCHITECTURES])
def test_a_preset_refuses_an_architecture_of_another_model(tmp_path, capsys, no_work, preset, architecture):
    """Every preset x every grid architecture: one of another model than the preset's grid trains (``--preset
    decoder --architectures residual``: set transformers written as the decoder grid; ``--preset remedies
    --architectures decoder_rope``: 12 runs failing on the oracle control after 85 s) is one line naming both, exit
    2, nothing created; one of the same model is accepted."""
    if _model_of(architecture) in _preset_models(preset):
        for quick in (True, False):
            assert preset_settings(preset, quick=quick, architectures=[architecture]).architectures == (architecture,)
        return
    out = tmp_path / "out"
    for quick in (["--quick"], []):
        code, _, err = run_cli(capsys, ["reproduce", str(out), *quick, "--preset", preset, "--architectures",
                                        architecture])
        _one_line(code, err, f"preset {preset!r}", f"architectures {architecture!r}")
    assert not out.exists()


@pytest.mark.parametrize("preset, task", PRESET_TASKS, ids=[f"{p}-{t}" for p, t in PRESET_TASKS])
def test_a_preset_refuses_a_task_its_model_cannot_read(tmp_path, capsys, no_work, preset, task):
    """Every preset x every task: a task whose items are several tokens, given to a preset of a model without token
    order, is one line naming the preset and the task (it named neither the preset nor the option); any other task
    is accepted."""
    readable = get_task(task).item_tokens == 1 or all(ARCHITECTURES[m].sequence for m in _preset_models(preset))
    if readable:
        assert preset_settings(preset, quick=True, tasks=[task]).tasks == (task,)
        return
    out = tmp_path / "out"
    code, _, err = run_cli(capsys, ["reproduce", str(out), "--quick", "--preset", preset, "--tasks", task])
    _one_line(code, err, f"preset {preset!r}", f"tasks {task}")
    assert not out.exists()


def _hashes(directory) -> dict:
    """Every file under ``directory`` (hidden ones too) -> the SHA-256 of its bytes."""
    return {str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def full_run(tmp_path_factory):
    run = tmp_path_factory.mktemp("complete") / "run"
    assert main(["train", *TINY, "--outdir", str(run)]) == 0
    return run


def test_a_no_op_resume_changes_no_byte_of_the_run(full_run, tmp_path, capsys):
    """Resuming a complete run (with its own config, or with every original flag) reports it complete and changes no
    byte of any file in the run directory; it rewrote config.json (losing its created_utc) and summary.json."""
    run = tmp_path / "run"
    shutil.copytree(full_run, run)
    before = _hashes(run)
    assert {"config.json", "summary.json", "metrics.jsonl"} <= set(before)
    for extra in ([], TINY):
        code, out, err = run_cli(capsys, ["train", *extra, "--outdir", str(run), "--resume"])
        assert code == 0 and "already complete" in out, err
        assert _hashes(run) == before


def test_a_resume_after_the_last_checkpoint_writes_only_the_missing_summary(full_run, tmp_path, capsys):
    """A run killed after its last checkpoint but before its summary: resuming writes summary.json and nothing else."""
    run = tmp_path / "run"
    shutil.copytree(full_run, run)
    (run / "summary.json").unlink()
    before = _hashes(run)
    code, _, err = run_cli(capsys, ["train", "--outdir", str(run), "--resume"])
    assert code == 0, err
    after = _hashes(run)
    assert json.loads((run / "summary.json").read_text())["status"] == "completed"
    assert {k: v for k, v in after.items() if k != "summary.json"} == before


@pytest.mark.parametrize("flags, there", [
    (["--architecture", "decoder"], "model.architecture: 'set_transformer' there"),
    (["--attention", "ssmax"], "model.attention: 'softmax' there"),
])
def test_a_resume_refusal_names_the_runs_default_value(half_run, tmp_path, capsys, flags, there):
    """A field the run left at its default is named by that value in the refusal ('set_transformer', 'softmax'),
    not as None."""
    run = tmp_path / "run"
    shutil.copytree(half_run, run)
    code, _, err = run_cli(capsys, ["train", "--outdir", str(run), "--resume", *flags])
    _one_line(code, err, "cannot resume", there, absent=["None"])


def test_figures_results_with_a_bad_settings_file_names_it(tmp_path, capsys):
    """``figures --results DIR`` whose settings.json has a bad field names the file (it said only "seeds must be an
    integer, got 'two'")."""
    from varsim.experiments.records import write_settings
    from varsim.experiments.settings import ReproductionSettings

    write_settings(tmp_path, ReproductionSettings.quick())
    path = tmp_path / "settings.json"
    stored = json.loads(path.read_text())
    stored["settings"]["seeds"] = "two"
    path.write_text(json.dumps(stored))
    code, _, err = run_cli(capsys, ["figures", "--only", "fig_repro_std", "--results", str(tmp_path), "--outdir",
                                    str(tmp_path / "figs"), "--no-progress"])
    _one_line(code, err, str(path), "seeds")
