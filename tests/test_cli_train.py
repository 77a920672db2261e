"""`varsim train` and `varsim evaluate`: flags, config files, JSON output, and one-line errors with exit 2."""

import json

import pytest

from varsim.cli import main
from varsim.train import TrainConfig, read_checkpoint
from varsim.train.checkpoint import latest_checkpoint

TINY = ["--d-model", "16", "--heads", "2", "--steps", "12", "--batch", "8", "--checkpoint-every", "6",
        "--log-every", "4"]


def _run(capsys, argv):
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own errors (unparsable numbers)
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def test_train_with_flags_then_evaluate_json_file(tmp_path, capsys):
    out_dir = tmp_path / "run"
    code, out, err = _run(capsys, ["train", "--task", "dictionary", "--key-vocab", "128", "--norm",
                                   "standardize_per_head", "--no-residual", "--lr", "3e-3", "--seed", "4",
                                   "--data-seed", "7", "--train-min", "3", "--train-max", "9", "--clip-norm", "none",
                                   "--outdir", str(out_dir), *TINY])
    assert code == 0, err
    assert "completed 12 steps" in out
    header, _ = read_checkpoint(latest_checkpoint(out_dir))
    cfg = TrainConfig.from_dict(header["config"])
    assert cfg.task == "dictionary" and cfg.model.key_vocab == 128 and cfg.model.norm == "standardize_per_head"
    assert cfg.model.residual is False and cfg.lr == 3e-3 and cfg.seed == 4 and cfg.data_seed == 7
    assert cfg.train_range == (3, 9) and cfg.clip_norm is None and cfg.steps == 12

    result_file = tmp_path / "eval.json"
    code, out, err = _run(capsys, ["evaluate", str(out_dir), "--lengths", "4", "32", "--examples", "40",
                                   "--batch-size", "16", "--json", "-o", str(result_file)])
    assert code == 0, err
    printed = json.loads(out)
    assert printed == json.loads(result_file.read_text())
    assert printed["lengths"] == [4, 32] and printed["n_examples"] == 40 and len(printed["ci_low"]) == 2

    code, out, _ = _run(capsys, ["evaluate", str(out_dir), "--lengths", "8", "--examples", "10"])
    assert code == 0 and "accuracy" in out and "95% CI" in out

    # --threads is deprecated: said on stderr, and the numbers are those of one BLAS thread
    code, out, err = _run(capsys, ["evaluate", str(out_dir), "--lengths", "4", "32", "--examples", "40",
                                   "--batch-size", "16", "--json", "--threads", "2"])
    assert code == 0 and "--threads is deprecated" in err
    again = json.loads(out)
    assert (again["correct"], again["ranking"]) == (printed["correct"], printed["ranking"])


def test_config_file_with_flag_override_and_resume(tmp_path, capsys):
    cfg_file = tmp_path / "cfg.json"
    cfg_file.write_text(json.dumps({"task": "argmax", "model": {"d_model": 16, "n_heads": 2, "norm": "layernorm"},
                                    "steps": 12, "batch_size": 8, "checkpoint_every": 6, "lr": 1e-3}))
    out_dir = tmp_path / "run"
    code, out, err = _run(capsys, ["train", "--config", str(cfg_file), "--lr", "2e-3", "--outdir", str(out_dir),
                                   "--json"])
    assert code == 0, err
    summary = json.loads(out)
    assert summary["status"] == "completed" and summary["steps_done"] == 12
    header, _ = read_checkpoint(latest_checkpoint(out_dir))
    assert header["config"]["lr"] == 2e-3 and header["config"]["model"]["norm"] == "layernorm"
    # a finished run resumed is a no-op; a changed config is refused with one line and exit 2
    code, out, _ = _run(capsys, ["train", "--config", str(cfg_file), "--lr", "2e-3", "--outdir", str(out_dir),
                                 "--resume"])
    assert code == 0 and "already complete" in out
    code, _, err = _run(capsys, ["train", "--config", str(cfg_file), "--outdir", str(out_dir), "--resume"])
    assert code == 2 and "cannot resume" in err and "lr" in err and err.count("\n") == 1


def test_non_finite_run_exits_1_with_a_message(tmp_path, capsys):
    code, _, err = _run(capsys, ["train", "--task", "argmax", "--lr", "1e12", "--warmup", "0", "--schedule",
                                 "constant", "--clip-norm", "none", "--outdir", str(tmp_path / "r"), *TINY])
    assert code == 1 and "non-finite" in err and "Warning" not in err


@pytest.mark.parametrize(
    "argv,name",
    [
        (["--task", "sorting"], "task"),
        (["--task", "argmax", "--norm", "batchnorm"], "norm"),
        (["--task", "argmax", "--optimizer", "sgd"], "optimizer"),
        (["--task", "argmax", "--lr", "nan"], "lr"),
        (["--task", "argmax", "--lr", "inf"], "lr"),
        (["--task", "argmax", "--lr", "-1"], "lr"),
        (["--task", "argmax", "--steps", "0"], "steps"),
        (["--task", "argmax", "--batch", "0"], "--batch"),
        (["--task", "argmax", "--d-model", "0"], "--d-model"),
        (["--task", "argmax", "--train-max", "0"], "--train-max"),
        (["--task", "argmax", "--train-min", "9", "--train-max", "4"], "train_min"),
        (["--task", "dictionary", "--key-vocab", "8", "--train-max", "16"], "key_vocab"),
        (["--norm", "layernorm"], "task"),
        (["--task", "argmax", "--config", "/nonexistent/cfg.json"], "config file"),
        (["--task", "argmax", "--lr", "abc"], "--lr"),
    ],
)
def test_train_bad_input_is_one_line_exit_2(tmp_path, capsys, argv, name):
    code, out, err = _run(capsys, ["train", *argv, "--outdir", str(tmp_path / "r")])
    assert code == 2 and name in err and err.count("\n") == 1, err
    assert not (tmp_path / "r" / "config.json").exists()


@pytest.mark.parametrize(
    "argv,name",
    [
        (["{missing}"], "does not exist"),
        (["{empty}"], "no checkpoint"),
        (["{truncated}"], "unreadable (truncated or corrupt)"),
        (["{run}", "--lengths", "0"], "lengths"),
        (["{run}", "--lengths", "99999"], "key_vocab"),
        (["{run}", "--examples", "0"], "--examples"),
        (["{run}", "--batch-size", "0"], "--batch-size"),
        (["{run}", "-o", "/nonexistent/dir/out.json"], "output"),
    ],
)
def test_evaluate_bad_input_is_one_line_exit_2(tmp_path, capsys, argv, name):
    run = tmp_path / "run"
    assert main(["train", "--task", "dictionary", "--outdir", str(run), *TINY]) == 0
    (tmp_path / "empty").mkdir()
    capsys.readouterr()
    truncated = tmp_path / "truncated.npz"  # a checkpoint cut short, as a copy interrupted mid-way leaves it
    raw = latest_checkpoint(run).read_bytes()
    truncated.write_bytes(raw[: len(raw) // 2])
    paths = {"missing": tmp_path / "nope.npz", "empty": tmp_path / "empty", "run": run, "truncated": truncated}
    argv = [a.format(**paths) for a in argv]
    code, _, err = _run(capsys, ["evaluate", *argv])
    assert code == 2 and name in err and err.count("\n") == 1, err
