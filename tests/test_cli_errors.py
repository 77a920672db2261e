"""Bad invocations of `varsim train` and `varsim evaluate`, run in-process: each ends with exit status 2 (1 for a
full disk), exactly one line on stderr that names the offending parameter, no traceback, and nothing written.

Catches any bad input that escapes as an exception (OverflowError, MemoryError, a NumPy error), a multi-line usage
dump, a message that does not say which parameter is wrong, and a refused command that still creates files."""

import errno
import json

import pytest
from cli_checks import assert_one_line, run_cli

from varsim.cli import main
from varsim.train.checkpoint import latest_checkpoint

TINY = ["--d-model", "16", "--heads", "2", "--steps", "6", "--batch", "8", "--checkpoint-every", "6"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A finished tiny run of each task: {task: run directory}."""
    root = tmp_path_factory.mktemp("cli-errors")
    out = {}
    for task, extra in (("argmax", []), ("dictionary", ["--key-vocab", "64"])):
        out[task] = root / task
        assert main(["train", "--task", task, *extra, *TINY, "--outdir", str(out[task])]) == 0
    return out


TRAIN_CASES = [
    # unknown names
    (["--task", "sorting"], "task"),
    (["--task", "argmax", "--norm", "batchnorm"], "norm"),
    (["--task", "argmax", "--optimizer", "sgd"], "optimizer"),
    (["--task", "argmax", "--schedule", "linear"], "schedule"),
    (["--task", "argmax", "--activation", "tanh"], "activation"),
    (["--task", "argmax", "--dtype", "float16"], "dtype"),
    (["--task", "dictionary", "--key-encoding", "onehot"], "key_encoding"),
    (["--task", "argmax", "--no-such-flag", "1"], "--no-such-flag"),
    # NaN / inf / out of range / not numbers
    (["--task", "argmax", "--lr", "nan"], "lr"),
    (["--task", "argmax", "--lr", "inf"], "lr"),
    (["--task", "argmax", "--lr", "-1"], "lr"),
    (["--task", "argmax", "--lr", "abc"], "--lr"),
    (["--task", "argmax", "--weight-decay", "nan"], "--weight-decay"),
    (["--task", "argmax", "--weight-decay=-inf"], "--weight-decay"),
    (["--task", "argmax", "--clip-norm", "nan"], "--clip-norm"),
    (["--task", "argmax", "--min-lr-ratio", "inf"], "--min-lr-ratio"),
    (["--task", "argmax", "--max-hours", "nan"], "--max-hours"),
    (["--task", "argmax", "--steps", "nan"], "--steps"),
    (["--task", "argmax", "--steps", "2.5"], "--steps"),
    (["--task", "argmax", "--batch", "inf"], "--batch"),
    (["--task", "argmax", "--seed", "-1"], "seed"),
    (["--task", "argmax", "--steps", "0"], "steps"),
    (["--task", "argmax", "--batch", "0"], "--batch"),
    (["--task", "argmax", "--d-model", "0"], "--d-model"),
    (["--task", "argmax", "--train-max", "0"], "--train-max"),
    (["--task", "argmax", "--train-min", "9", "--train-max", "4"], "train_min"),
    (["--norm", "layernorm"], "task"),  # no --task
    (["--task", "argmax", "--d-model", "30", "--heads", "4"], "n_heads"),
    # sizes beyond the machine's memory or the time bound
    (["--task", "argmax", "--d-model", "1e9"], "d_model=1000000000"),
    (["--task", "argmax", "--d-hidden", "1e11"], "d_hidden=100000000000"),
    (["--task", "argmax", "--n-blocks", "1e6"], "n_blocks=1000000"),
    (["--task", "argmax", "--n-classes", "1e12"], "n_classes=1000000000000"),
    (["--task", "argmax", "--batch", "1e9"], "batch_size=1000000000"),
    (["--task", "argmax", "--train-max", "1e11"], "train_max=100000000000"),
    (["--task", "argmax", "--steps", "1e12"], "steps=1000000000000"),
    (["--task", "argmax", "--steps", "1e30"], "--steps: must be an integer between 1 and 1e15"),
    (["--task", "dictionary", "--key-encoding", "embedding", "--key-vocab", "1e14"], "key_vocab=100000000000000"),
    (["--task", "dictionary", "--key-vocab", "8", "--train-max", "16"], "key_vocab"),
    # paths
    (["--task", "argmax", "--outdir", ""], "outdir"),
    (["--task", "argmax", "--outdir", "/proc/varsim-run"], "outdir"),
    (["--task", "argmax", "--outdir", "/proc/self"], "outdir"),  # exists, but no file can be created in it
    (["--task", "argmax", "--outdir", "{file}/sub"], "outdir"),
    (["--task", "argmax", "--outdir", "{file}"], "outdir"),
    (["--task", "argmax", "--config", "{missing}"], "config file"),
    (["--task", "argmax", "--config", "{file}"], "config file"),
]


@pytest.mark.parametrize("argv,name", TRAIN_CASES, ids=[" ".join(a) for a, _ in TRAIN_CASES])
def test_bad_train_invocation(tmp_path, capsys, argv, name):
    a_file = tmp_path / "not-a-dir.txt"
    a_file.write_text("x")
    paths = {"file": a_file, "missing": tmp_path / "missing.json"}
    argv = [a.format(**paths) for a in argv]
    if "--outdir" not in argv:
        argv += ["--outdir", str(tmp_path / "r")]
    before = sorted(p.name for p in tmp_path.iterdir())
    code, _, err = run_cli(capsys, ["train", *argv])
    assert_one_line(code, err, name)
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing created


def test_train_in_a_run_directory_held_by_another_process(runs, capsys):
    from varsim._common.runlock import run_lock

    with run_lock(runs["argmax"], "someone else"):
        code, _, err = run_cli(capsys, ["train", "--task", "argmax", *TINY, "--outdir", str(runs["argmax"]),
                                     "--resume"])
    assert_one_line(code, err, "in use")
    assert "someone else" in err


def test_train_resume_with_a_damaged_metrics_line(runs, tmp_path, capsys):
    import shutil

    run = tmp_path / "run"
    shutil.copytree(runs["argmax"], run)
    log = run / "metrics.jsonl"
    log.write_text("not json\n" + log.read_text())
    code, _, err = run_cli(capsys, ["train", "--task", "argmax", *TINY, "--outdir", str(run), "--resume"])
    assert_one_line(code, err, "line 1")
    assert "metrics.jsonl" in err


EVAL_CASES = [
    (["{argmax}", "--lengths", "0"], "lengths"),
    (["{argmax}", "--lengths", "nan"], "--lengths"),
    (["{argmax}", "--lengths", "inf"], "--lengths"),
    (["{argmax}", "--lengths", "1e400"], "--lengths"),
    (["{argmax}", "--lengths", "16", "1e9"], "lengths=1000000000"),
    (["{argmax}", "--lengths", "1e30"], "--lengths: must be an integer between 1 and 1e15"),
    (["{dictionary}", "--lengths", "1e9"], "key_vocab"),
    (["{argmax}", "--lengths", "16", "--examples", "1e12"], "n_examples=1000000000000"),
    (["{argmax}", "--lengths", "1e6", "--examples", "1e6"], "max_hours"),
    (["{argmax}", "--lengths", "16", "--examples", "0"], "--examples"),
    (["{argmax}", "--lengths", "16", "--batch-size", "-3"], "--batch-size"),
    (["{argmax}", "--lengths", "16", "--threads", "-1"], "threads"),
    (["{argmax}", "--lengths", "16", "--workers", "-1"], "--workers"),
    (["{argmax}", "--lengths", "16", "--max-hours", "0"], "--max-hours"),
    (["{argmax}", "--lengths", "16", "--seed", "-5"], "seed"),
    (["{missing}"], "does not exist"),
    (["{not_a_ckpt}"], "unreadable"),
    (["{empty}"], "no checkpoint"),
    (["{truncated}"], "unreadable (truncated or corrupt)"),
    # outputs
    (["{argmax}", "--lengths", "16", "-o", ""], "output"),
    (["{argmax}", "--lengths", "16", "-o", "/proc/varsim-eval.json"], "output"),
    (["{argmax}", "--lengths", "16", "-o", "/nonexistent/dir/out.json"], "output"),
    (["{argmax}", "--lengths", "16", "-o", "{not_a_ckpt}/x.json"], "output"),
    (["{argmax}", "--lengths", "16", "-o", "{argmax_ckpt}"], "output"),
    (["{argmax_ckpt}", "--lengths", "16", "-o", "{argmax_ckpt}"], "output"),
    (["{argmax}", "--lengths", "16", "-o", "{dictionary_ckpt}"], "output"),
    (["{argmax}", "--lengths", "16", "-o", "{tmp}/ckpt-00000001.npz"], "output"),
    (["{argmax}", "--lengths", "16", "-o", "{argmax}/config.json"], "output"),
    (["{argmax}", "--lengths", "16", "-o", "{argmax}/metrics.jsonl"], "output"),
]


@pytest.mark.parametrize("argv,name", EVAL_CASES, ids=[" ".join(a) for a, _ in EVAL_CASES])
def test_bad_evaluate_invocation(runs, tmp_path, capsys, argv, name):
    not_a_ckpt = tmp_path / "cfg.json"
    not_a_ckpt.write_text("{}")
    (tmp_path / "empty").mkdir()
    truncated = tmp_path / "truncated.npz"  # a checkpoint cut short, as a copy interrupted mid-way leaves it
    raw = latest_checkpoint(runs["argmax"]).read_bytes()
    truncated.write_bytes(raw[: len(raw) // 2])
    paths = {"argmax": runs["argmax"], "dictionary": runs["dictionary"], "tmp": tmp_path, "empty": tmp_path / "empty",
             "truncated": truncated,
             "argmax_ckpt": latest_checkpoint(runs["argmax"]), "dictionary_ckpt": latest_checkpoint(runs["dictionary"]),
             "missing": tmp_path / "nope.npz", "not_a_ckpt": not_a_ckpt}
    argv = [a.format(**paths) for a in argv]
    protected = {p: p.read_bytes() for r in runs.values() for p in r.iterdir() if p.is_file()}
    before = sorted(p.name for p in tmp_path.iterdir())
    code, _, err = run_cli(capsys, ["evaluate", *argv])
    assert_one_line(code, err, name)
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert {p: p.read_bytes() for p in protected} == protected


def test_full_disk_while_writing_the_evaluation_keeps_the_previous_file(runs, tmp_path, capsys, monkeypatch):
    """`evaluate -o` on a full disk (the data cannot be flushed: ENOSPC): one line, exit 1, and the previous result
    file unchanged (atomic write), no temporary file left."""
    import varsim._common.atomic as atomic

    out = tmp_path / "eval.json"
    out.write_text('{"previous": true}\n')

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic.os, "fsync", full)
    code, _, err = run_cli(capsys, ["evaluate", str(runs["argmax"]), "--lengths", "4", "--examples", "8", "-o",
                                 str(out)])
    monkeypatch.undo()
    assert_one_line(code, err, "No space left on device", status=1)
    assert json.loads(out.read_text()) == {"previous": True}
    assert [p.name for p in tmp_path.iterdir()] == ["eval.json"]


def test_programming_errors_keep_their_traceback(runs, monkeypatch):
    """The CLI turns ValueError and system OSErrors into one line, not every exception: a bug (here a TypeError,
    and an OSError raised by code without an errno) still propagates."""
    import varsim.train

    def buggy(*a, **k):
        raise TypeError("a bug")

    monkeypatch.setattr(varsim.train, "evaluate", buggy)
    with pytest.raises(TypeError):
        main(["evaluate", str(runs["argmax"]), "--lengths", "4"])

    def buggy_os(*a, **k):
        raise OSError("raised by code")

    monkeypatch.setattr(varsim.train, "evaluate", buggy_os)
    with pytest.raises(OSError):
        main(["evaluate", str(runs["argmax"]), "--lengths", "4"])
