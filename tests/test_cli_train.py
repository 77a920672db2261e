"""`varsim train` and `varsim evaluate`: flags, config files and JSON output (bad input: tests/test_cli_errors.py)."""

import json

from cli_checks import assert_one_line, run_cli

from varsim.train import TrainConfig, read_checkpoint
from varsim.train.checkpoint import latest_checkpoint

TINY = ["--d-model", "16", "--heads", "2", "--steps", "12", "--batch", "8", "--checkpoint-every", "6",
        "--log-every", "4"]


def test_train_with_flags_then_evaluate_json_file(tmp_path, capsys):
    out_dir = tmp_path / "run"
    code, out, err = run_cli(capsys, ["train", "--task", "dictionary", "--key-vocab", "128", "--norm",
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
    code, out, err = run_cli(capsys, ["evaluate", str(out_dir), "--lengths", "4", "32", "--examples", "40",
                                     "--batch-size", "16", "--json", "-o", str(result_file)])
    assert code == 0, err
    printed = json.loads(out)
    assert printed == json.loads(result_file.read_text())
    assert printed["lengths"] == [4, 32] and printed["n_examples"] == 40 and len(printed["ci_low"]) == 2

    code, out, _ = run_cli(capsys, ["evaluate", str(out_dir), "--lengths", "8", "--examples", "10"])
    assert code == 0 and "accuracy" in out and "95% CI" in out

    # --threads is deprecated: said on stderr, and the numbers are those of one BLAS thread
    code, out, err = run_cli(capsys, ["evaluate", str(out_dir), "--lengths", "4", "32", "--examples", "40",
                                      "--batch-size", "16", "--json", "--threads", "2"])
    assert code == 0 and "--threads is deprecated" in err
    again = json.loads(out)
    assert (again["correct"], again["ranking"]) == (printed["correct"], printed["ranking"])


def test_config_file_with_flag_override_and_resume(tmp_path, capsys):
    cfg_file = tmp_path / "cfg.json"
    cfg_file.write_text(json.dumps({"task": "argmax", "model": {"d_model": 16, "n_heads": 2, "norm": "layernorm"},
                                    "steps": 12, "batch_size": 8, "checkpoint_every": 6, "lr": 1e-3}))
    out_dir = tmp_path / "run"
    code, out, err = run_cli(capsys, ["train", "--config", str(cfg_file), "--lr", "2e-3", "--outdir", str(out_dir),
                                     "--json"])
    assert code == 0, err
    summary = json.loads(out)
    assert summary["status"] == "completed" and summary["steps_done"] == 12
    header, _ = read_checkpoint(latest_checkpoint(out_dir))
    assert header["config"]["lr"] == 2e-3 and header["config"]["model"]["norm"] == "layernorm"
    # a finished run resumed is a no-op; a changed config is refused with one line and exit 2
    code, out, _ = run_cli(capsys, ["train", "--config", str(cfg_file), "--lr", "2e-3", "--outdir", str(out_dir),
                                   "--resume"])
    assert code == 0 and "already complete" in out
    code, _, err = run_cli(capsys, ["train", "--config", str(cfg_file), "--outdir", str(out_dir), "--resume"])
    assert_one_line(code, err, "cannot resume", "lr")


def test_non_finite_run_exits_1_with_a_message(tmp_path, capsys):
    code, _, err = run_cli(capsys, ["train", "--task", "argmax", "--lr", "1e12", "--warmup", "0", "--schedule",
                                   "constant", "--clip-norm", "none", "--outdir", str(tmp_path / "r"), *TINY])
    assert_one_line(code, err, "non-finite", status=1)
