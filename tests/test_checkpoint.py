"""Checkpoints: a real SIGKILL and resume ends bitwise-equal; corrupt, truncated or foreign files and config
changes are refused with a clear message."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from varsim.train import TrainConfig, load_checkpoint, read_checkpoint, read_metrics, train
from varsim.train.checkpoint import list_checkpoints, payload_sha256

REPO = Path(__file__).resolve().parents[1]

TIMING_FIELDS = ("steps_per_s", "elapsed_s")


def _final_arrays(run_dir):
    header, arrays = read_checkpoint(list_checkpoints(run_dir)[-1][1])
    return header, arrays


def _metrics_without_timing(run_dir):
    return [{k: v for k, v in r.items() if k not in TIMING_FIELDS} for r in read_metrics(run_dir / "metrics.jsonl")]


def test_sigkilled_run_resumes_bitwise_equal_to_an_uninterrupted_run(tmp_path):
    """`python -m varsim train` is killed with SIGKILL between checkpoints, then resumed; its final parameters,
    Adam moments, update count and metrics log equal those of the same run never interrupted, bit for bit.

    Catches: a data stream keyed by anything but (data_seed, step) (e.g. one generator advanced across steps),
    optimizer moments or update count not restored (bias correction restarts), the LR schedule restarting,
    metrics windows or log lines duplicated after the resume, a torn checkpoint."""
    cfg = {
        "task": "dictionary",
        "model": {"d_model": 32, "n_heads": 2, "key_vocab": 256, "norm": "layernorm"},
        "lr": 3e-3,
        "steps": 400,
        "batch_size": 32,
        "checkpoint_every": 40,
        "log_every": 15,  # not a divisor of checkpoint_every: the window in progress must be restored
        "seed": 3,
    }
    cfg_file = tmp_path / "cfg.json"
    cfg_file.write_text(json.dumps(cfg))
    killed = tmp_path / "killed"
    proc = subprocess.Popen(
        [sys.executable, "-m", "varsim", "train", "--config", str(cfg_file), "--outdir", str(killed)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        cwd=REPO,  # this checkout's varsim, whatever the installed one
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])},
    )
    try:
        deadline = time.monotonic() + 120
        while not list_checkpoints(killed):
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.monotonic() < deadline, "no checkpoint written within 120 s"
            time.sleep(0.005)
        time.sleep(0.03)  # land between checkpoints, mid-window
        running = proc.poll() is None
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stderr.close()
    assert running, "the run finished before it could be killed; make it longer"
    assert proc.returncode == -signal.SIGKILL
    step_at_kill = list_checkpoints(killed)[-1][0]
    assert 0 < step_at_kill < cfg["steps"]

    resumed = train(cfg, killed, resume=True)
    reference = train(cfg, tmp_path / "reference")
    assert resumed["status"] == reference["status"] == "completed"
    assert resumed["final_loss"] == reference["final_loss"]
    h1, a1 = _final_arrays(killed)
    h2, a2 = _final_arrays(tmp_path / "reference")
    assert h1["step"] == h2["step"] == cfg["steps"] and h1["optimizer"] == h2["optimizer"]
    assert a1.keys() == a2.keys() and any(k.startswith("opt/m/") for k in a1)
    for k in a1:
        assert a1[k].dtype == a2[k].dtype and a1[k].tobytes() == a2[k].tobytes(), k
    assert _metrics_without_timing(killed) == _metrics_without_timing(tmp_path / "reference")


@pytest.fixture(scope="module")
def short_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("short")
    cfg = TrainConfig(task="argmax", model={"d_model": 16, "n_heads": 2}, steps=20, batch_size=8,
                      checkpoint_every=10, log_every=5)
    train(cfg, d)
    return cfg, d


def _copy(run, tmp_path):
    dst = tmp_path / "run"
    shutil.copytree(run, dst)
    return dst


def test_checkpoint_contents_round_trip(short_run):
    cfg, d = short_run
    assert [s for s, _ in list_checkpoints(d)] == [10, 20]  # keep_checkpoints=2
    model, loaded_cfg, state = load_checkpoint(d)
    assert loaded_cfg == cfg and state["step"] == 20 and state["optimizer"]["t"] == 20
    header, arrays = read_checkpoint(state["path"])
    assert header["sha256"] == payload_sha256(arrays)
    assert header["rng"]["data_seed"] == 0 and header["rng"]["next_step"] == 20 and header["config"] == cfg.to_dict()
    for k, p in model.params.items():
        assert p.tobytes() == arrays[f"param/{k}"].tobytes()
    assert set(state["optimizer"]["m"]) == set(model.params)
    assert "versions" in header["provenance"]


@pytest.mark.parametrize("damage", ["flip_byte", "truncate", "empty", "rewrite_array", "foreign_npz"])
def test_corrupt_or_truncated_checkpoint_is_refused(short_run, tmp_path, damage):
    """Each kind of damage makes resume and load_checkpoint fail with a ValueError that names the file.

    ``rewrite_array`` is a well-formed zip whose array differs from what the header's SHA-256 covers: only the
    checksum can catch it (a loader that trusted the zip CRCs alone would accept it)."""
    cfg, d = short_run
    run = _copy(d, tmp_path)
    path = list_checkpoints(run)[-1][1]
    raw = bytearray(path.read_bytes())
    if damage == "flip_byte":
        header, arrays = read_checkpoint(path)
        target = arrays["param/embed.0.w"].tobytes()
        at = bytes(raw).find(target)
        raw[at + len(target) // 2] ^= 0xFF
        path.write_bytes(bytes(raw))
    elif damage == "truncate":
        path.write_bytes(bytes(raw[: len(raw) // 2]))
    elif damage == "empty":
        path.write_bytes(b"")
    elif damage == "rewrite_array":
        with np.load(path) as z:
            data = {k: z[k] for k in z.files}
        data["param/embed.0.w"] = data["param/embed.0.w"] + np.float32(1e-3)
        with open(path, "wb") as fh:
            np.savez(fh, **data)
    else:
        with open(path, "wb") as fh:
            np.savez(fh, x=np.zeros(3))
    expected = {"flip_byte": "corrupt", "truncate": "unreadable", "empty": "unreadable",
                "rewrite_array": "checksum", "foreign_npz": "not a varsim checkpoint"}[damage]
    with pytest.raises(ValueError, match=expected) as err:
        train(cfg, run, resume=True)
    assert path.name in str(err.value)
    with pytest.raises(ValueError, match=expected):
        load_checkpoint(path)


@pytest.mark.parametrize(
    "change,field",
    [({"lr": 2e-3}, "lr"), ({"steps": 30}, "steps"), ({"seed": 1}, "seed"), ({"data_seed": 4}, "data_seed"),
     ({"model": {"d_model": 16, "n_heads": 2, "norm": "layernorm"}}, "model.norm")],
)
def test_resume_with_a_different_config_is_refused(short_run, tmp_path, change, field):
    cfg, d = short_run
    run = _copy(d, tmp_path)
    other = cfg.replace(**change) if "model" not in change else TrainConfig(**{**cfg.to_dict(), **change})
    with pytest.raises(ValueError, match=rf"cannot resume.*{field}"):
        train(other, run, resume=True)


def test_resume_accepts_a_new_checkpoint_interval_and_cleans_stale_temp_files(short_run, tmp_path):
    cfg, d = short_run
    run = _copy(d, tmp_path)
    for _, p in list_checkpoints(run)[1:]:
        p.unlink()  # back to the step-10 checkpoint
    stale = run / ".ckpt-00000020.npz.abc123.tmp"  # what a kill during a checkpoint write leaves behind
    stale.write_bytes(b"partial")
    out = train(cfg.replace(checkpoint_every=7), run, resume=True)
    assert out["status"] == "completed" and out["steps_done"] == 20 and not stale.exists()
    _, a = _final_arrays(run)
    _, b = _final_arrays(d)
    assert all(a[k].tobytes() == b[k].tobytes() for k in a)


def test_new_run_refuses_an_existing_run_directory(short_run):
    cfg, d = short_run
    with pytest.raises(ValueError, match="already holds a run"):
        train(cfg, d)


def test_load_checkpoint_of_an_empty_directory(tmp_path):
    with pytest.raises(ValueError, match="no checkpoint"):
        load_checkpoint(tmp_path)


def test_checkpoint_whose_arrays_do_not_fit_its_config_is_refused(short_run, tmp_path):
    """A well-formed, correctly checksummed file whose parameters belong to another model (here: one missing)."""
    from varsim.train.checkpoint import checkpoint_path, save_checkpoint

    cfg, d = short_run
    model, _, state = load_checkpoint(d)
    params = dict(model.params)
    params.pop(next(iter(params)))
    path = save_checkpoint(checkpoint_path(tmp_path, 5), params=params, optimizer_state=state["optimizer"],
                           header={"step": 5, "config": cfg.to_dict()})
    with pytest.raises(ValueError, match="does not fit the model"):
        load_checkpoint(path)


@pytest.mark.parametrize("value, counts", [(np.nan, "1 NaN and 0 infinite"), (-np.inf, "0 NaN and 1 infinite")])
def test_checkpoint_with_a_non_finite_weight_is_refused_naming_file_and_weight(short_run, tmp_path, capsys, value,
                                                                               counts):
    """A correctly checksummed file with a NaN or an infinity in one weight (training never saves one): one line
    naming the file and the weight, from the library and from `varsim evaluate` / `varsim predict` (issue 45: predict
    said "logits must be finite" and evaluate scored the broken model)."""
    from varsim.cli import main
    from varsim.train.checkpoint import checkpoint_path, save_checkpoint

    cfg, d = short_run
    model, _, state = load_checkpoint(d)
    params = {k: v.copy() for k, v in model.params.items()}
    params["block0.attn.w_qkv"].flat[3] = value
    path = save_checkpoint(checkpoint_path(tmp_path, 5), params=params, optimizer_state=state["optimizer"],
                           header={"step": 5, "config": cfg.to_dict()})
    message = f"checkpoint {str(path)!r}: weight 'block0.attn.w_qkv' holds {counts}"
    with pytest.raises(ValueError, match=re.escape(message)):
        load_checkpoint(path)
    capsys.readouterr()
    for argv in (["evaluate", str(path), "--lengths", "16", "--examples", "8"],
                 ["predict", str(path), "--lengths", "16", "--sets", "64"]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and message in err, err


# ----------------------------------------------------------------------------------------------------------------------
# The metrics log on resumption, a full disk, a refused first step, two processes on one run directory


def _metrics_bytes(run):
    return (run / "metrics.jsonl").read_bytes()


def test_torn_last_metrics_line_is_dropped_with_a_notice(short_run, tmp_path, capsys):
    """A write cut short (kill, full disk) leaves a last line without its newline: resume drops it, says so on
    stderr, replays from the checkpoint and ends with the log of the uninterrupted run. Catches a reader that keeps
    the torn bytes (the next append would glue onto them) or that refuses the whole log."""
    cfg, d = short_run
    run = _copy(d, tmp_path)
    list_checkpoints(run)[-1][1].unlink()  # back to step 10, as if killed before the step-20 checkpoint
    with open(run / "metrics.jsonl", "ab") as fh:
        fh.write(b'{"step": 20, "loss": 0.5')
    out = train(cfg, run, resume=True)
    err = capsys.readouterr().err
    assert out["status"] == "completed" and "torn last line" in err and "metrics.jsonl" in err
    assert _metrics_without_timing(run) == _metrics_without_timing(d)


@pytest.mark.parametrize("line", [b"garbage", b"\xff\xfe{}", b"[1, 2]", b'{"loss": 1.0}', b'{"step": "3"}',
                                  b'{"step": -1}'])
def test_damaged_metrics_line_is_refused_naming_file_and_line(short_run, tmp_path, line):
    """A line before the last that is not a record with an integer step (a hand edit, bad bytes) refuses the
    resumption with a message naming the file and the line number, and leaves the log untouched. Catches a
    reader that silently skips such lines and then rewrites the log without them."""
    cfg, d = short_run
    run = _copy(d, tmp_path)
    lines = _metrics_bytes(run).split(b"\n")
    lines[1] = line
    (run / "metrics.jsonl").write_bytes(b"\n".join(lines))
    before = _metrics_bytes(run)
    with pytest.raises(ValueError, match=r"metrics\.jsonl' line 2 ") as err:
        train(cfg, run, resume=True)
    assert "\n" not in str(err.value)
    assert _metrics_bytes(run) == before


def _tiny(**kw):
    return TrainConfig(task="argmax", model={"d_model": 16, "n_heads": 2}, steps=12, batch_size=8,
                       checkpoint_every=6, log_every=4, **kw)


def test_full_disk_while_checkpointing_loses_nothing_and_exits_1(tmp_path, monkeypatch, capsys):
    """The second checkpoint write fails with ENOSPC after writing part of its data: `varsim train` prints one line
    and exits 1, the step-6 checkpoint is intact and no temporary file is left; once there is room again, --resume
    ends bitwise equal to a run never interrupted. Catches a non-atomic write (the previous checkpoint truncated), a
    traceback from the CLI, or a leftover .tmp file."""
    import errno

    from varsim.cli import main
    from varsim.train import checkpoint as ckpt_mod

    cfg = _tiny()
    cfg_file = tmp_path / "cfg.json"
    cfg_file.write_text(json.dumps(cfg.to_dict()))
    real_savez = np.savez
    calls = []

    def savez_then_full(fh, **arrays):
        calls.append(1)
        if len(calls) == 2:
            fh.write(b"PK partial")
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_savez(fh, **arrays)

    monkeypatch.setattr(ckpt_mod.np, "savez", savez_then_full)
    run = tmp_path / "run"
    code = main(["train", "--config", str(cfg_file), "--outdir", str(run)])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1 and "No space left on device" in err and "Traceback" not in err
    assert [s for s, _ in list_checkpoints(run)] == [6]
    read_checkpoint(list_checkpoints(run)[0][1])  # intact: checksum verified
    assert not list(run.glob(".*.tmp"))
    monkeypatch.setattr(ckpt_mod.np, "savez", real_savez)
    assert main(["train", "--config", str(cfg_file), "--outdir", str(run), "--resume"]) == 0
    ref = tmp_path / "ref"
    train(cfg, ref)
    _, a = _final_arrays(run)
    _, b = _final_arrays(ref)
    assert all(a[k].tobytes() == b[k].tobytes() for k in b)


@pytest.mark.parametrize("failure", ["non_finite_loss", "value_error", "interrupt"])
@pytest.mark.parametrize("existing", [False, True])
def test_run_refused_before_its_first_checkpoint_leaves_nothing_behind(tmp_path, monkeypatch, failure, existing):
    """A run stopped at update 1 (a non-finite loss, a ValueError raised inside the loop after the directory was
    created, Ctrl-C) removes what it wrote, and the directory when it created it; the same command then runs.
    Catches config.json left behind, so that the rerun is refused with 'already holds a run'."""
    from varsim.nn.model import Transformer as _T

    real = _T.loss_and_grads

    def broken(self, batch):
        if failure == "non_finite_loss":
            loss, acc, grads = real(self, batch)
            return float("nan"), acc, grads
        raise ValueError("bad batch") if failure == "value_error" else KeyboardInterrupt

    run = tmp_path / "run"
    if existing:
        run.mkdir()
    monkeypatch.setattr(_T, "loss_and_grads", broken)
    if failure == "non_finite_loss":
        out = train(_tiny(), run)
        assert out["status"] == "non_finite" and out["checkpoint"] is None and "cleared" in out["message"]
    else:
        with pytest.raises(ValueError if failure == "value_error" else KeyboardInterrupt):
            train(_tiny(), run)
    assert run.exists() == existing and (not existing or not any(run.iterdir()))
    monkeypatch.setattr(_T, "loss_and_grads", real)
    assert train(_tiny(), run)["status"] == "completed"


def test_a_second_process_on_a_run_directory_is_refused_until_the_first_dies(short_run, tmp_path, capsys):
    """While another process holds the run directory (here a child holding varsim's run lock), `varsim train`
    (new or --resume) is refused with one line naming the holder, and nothing in the directory changes; once the
    holder is SIGKILLed its lock is released and --resume runs. Catches unlocked runs (they interleave metrics) and
    a lock file that outlives its process."""
    from varsim.cli import main

    cfg, d = short_run
    run = _copy(d, tmp_path)
    list_checkpoints(run)[-1][1].unlink()
    cfg_file = tmp_path / "cfg.json"
    cfg_file.write_text(json.dumps(cfg.to_dict()))
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom varsim._common.runlock import run_lock\n"
         "with run_lock(sys.argv[1], 'holder-test'):\n    print('held', flush=True)\n    time.sleep(600)\n", str(run)],
        stdout=subprocess.PIPE, cwd=REPO,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])},
    )
    try:
        assert holder.stdout.readline().strip() == b"held"
        before = {p.name: p.read_bytes() for p in run.iterdir() if p.name != ".lock"}
        capsys.readouterr()
        for extra in (["--resume"], []):
            code = main(["train", "--config", str(cfg_file), "--outdir", str(run), *extra])
            err = capsys.readouterr().err
            assert code == 2 and err.count("\n") == 1 and "in use" in err and "holder-test" in err, err
        assert {p.name: p.read_bytes() for p in run.iterdir() if p.name != ".lock"} == before
    finally:
        holder.kill()
        holder.wait()
    assert main(["train", "--config", str(cfg_file), "--outdir", str(run), "--resume"]) == 0
    _, a = _final_arrays(run)
    _, b = _final_arrays(d)
    assert all(a[k].tobytes() == b[k].tobytes() for k in b)
