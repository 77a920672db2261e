"""Where ``-o`` points at something that is not a regular file, the output is written through it, never replaced.

Catches the atomic rename that replaced ``/dev/full`` (or any device or FIFO) with a regular file and exited 0, and a
symlink loop that escaped as an OSError (exit 1) instead of a one-line error naming the output (exit 2).
"""

from __future__ import annotations

import os
import stat

import pytest
from cli_checks import run_cli

from varsim._common import atomic
from varsim.cli import main

SIM = ["simulate", "--n", "8", "16", "--sequences", "32", "--d-k", "4", "--d-v", "2", "--seed", "1"]


def _device(tmp_path, name: str, minor: int):
    """A private copy of /dev/null (minor 3) or /dev/full (minor 7) in ``tmp_path``: a regression replaces it, not
    the system's device. Skipped where device nodes cannot be made or opened (not root, a nodev mount)."""
    path = tmp_path / name
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, minor))
        os.close(os.open(path, os.O_WRONLY))
    except OSError as exc:
        pytest.skip(f"cannot make a character device here: {exc}")
    return path


def test_full_device_reports_a_full_disk_and_stays_a_device(tmp_path, capsys):
    full = _device(tmp_path, "full", 7)
    code, _, err = run_cli(capsys, [*SIM, "-o", str(full)])
    assert code == 1, err
    assert err.count("\n") == 1 and "No space left on device" in err and "Traceback" not in err
    assert stat.S_ISCHR(os.stat(full).st_mode), "the device was replaced by a regular file"


def test_fifo_is_written_through(tmp_path, capsys):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader exists, so the writer's open does not block
    try:
        code, _, err = run_cli(capsys, [*SIM, "-o", str(fifo)])
        assert code == 0, err
        assert stat.S_ISFIFO(os.stat(fifo).st_mode), "the FIFO was replaced by a regular file"
        data = os.read(reader, 1 << 16)  # the JSON is far smaller than the pipe's buffer
    finally:
        os.close(reader)
    assert b'"rows"' in data


def test_symlink_loop_is_a_bad_output_path(tmp_path, capsys):
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    code, _, err = run_cli(capsys, [*SIM, "-o", str(tmp_path / "a")])
    assert code == 2 and err.count("\n") == 1 and "output" in err and "symbolic links" in err, err


def test_atomic_write_through_a_character_device_keeps_it(tmp_path):
    null = _device(tmp_path, "null", 3)
    atomic.atomic_write_text(null, "x")
    assert stat.S_ISCHR(os.stat(null).st_mode)
    assert atomic.is_special_file(null) and not atomic.is_special_file(tmp_path)
    assert not atomic.is_special_file(tmp_path / "missing")


def _fast_invocations(tmp_path) -> dict:
    """A quick, successful invocation of each command that writes an output file, without its ``-o``."""
    run = tmp_path / "run"
    assert main(["train", "--task", "argmax", "--d-model", "16", "--heads", "2", "--steps", "2", "--batch", "4",
                 "--checkpoint-every", "2", "--outdir", str(run)]) == 0
    calls = {
        "simulate": SIM,
        "evaluate": ["evaluate", str(run), "--lengths", "4", "--examples", "8"],
        "sweep": ["sweep", "--n", "8", "--sequences", "32", "--workers", "1"],
    }
    gguf = pytest.importorskip("gguf")  # noqa: F841 - the [models] extra
    from test_pretrained_tiny import llama_params, write_tiny_gguf

    write_tiny_gguf(tmp_path / "tiny.gguf", llama_params(0))
    text = tmp_path / "text.txt"
    text.write_text(" ".join(["the cat sat on a mat"] * 300), encoding="utf-8")
    calls["probe-model"] = ["probe-model", "--model", str(tmp_path / "tiny.gguf"), "--text", str(text), "--lengths",
                            "8", "16", "--windows", "3", "--bootstrap", "5", "--no-progress"]
    return calls


def test_every_output_flag_writes_through_a_device(tmp_path, capsys):
    """Each command with an output-file flag (found by walking the parsers) writes through a private null device:
    exit 0, the device still a device, nothing created beside it (no temporary or .partial file). Catches a command
    whose output bypasses the atomic writer's device rule, and a new output flag without a case here."""
    from test_cli_rules import OUTPUTS

    calls = _fast_invocations(tmp_path)
    assert {c for c, _, _ in OUTPUTS} <= set(calls), "a command with an output flag has no fast invocation here"
    devdir = tmp_path / "dev"
    devdir.mkdir()
    null = _device(devdir, "null", 3)
    for command, flag, _ in OUTPUTS:
        code, _, err = run_cli(capsys, [*calls[command], flag, str(null)])
        assert code == 0, (command, err)
        assert stat.S_ISCHR(os.stat(null).st_mode), f"{command} replaced the device"
        assert [p.name for p in devdir.iterdir()] == ["null"], (command, list(devdir.iterdir()))
