"""Flags that contradict each other or the directory they point at, resuming a run from its own configuration, and
messages that name the parameter the user gave: each is one line (exit 2) before any work, or does the right thing.

Catches contradictions accepted silently (``reproduce --aggregate-only --recheck`` rewrote summary.json and exited 0,
``--allow-incomplete`` without ``--aggregate-only`` was ignored, ``figures --results QUICK --rerun`` started the full
reproduction, ``train --outdir NEW --resume`` started a fresh run), ``train --outdir RUN --resume`` needing every
original flag, and messages that spoke of another parameter (``theory --tau 1e308`` of beta, ``sweep --beta 1e308``
of tau) or did not name the damaged file.
"""

from __future__ import annotations

import json
import shutil

import pytest
from cli_checks import run_cli

from varsim.cli import main
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
