"""Every command that writes an output, given each kind of output: a regular file, a directory, a character device
(a private ``/dev/null``), a FIFO, a full disk (a private ``/dev/full``) and a read-only location (``/proc``). Each is
handled the same way: written through (a file output: exit 0, the device or FIFO still what it was), or one line
naming the path with exit status 1 (the system refused a write) or 2 (refused before any work), nothing replaced and
nothing left beside it, and no hang: the kinds where a hang is possible (device, FIFO, full device) run in a
subprocess under a timeout.

Catches the atomic rename that replaced ``/dev/full`` (or any device or FIFO) with a regular file and exited 0,
``varsim evaluate -o`` opening a device or FIFO as a zip (it spun the CPU on a device and blocked on a FIFO), "No
space left on device" without the path, and a symlink loop that escaped as an OSError (exit 1) instead of a one-line
error naming the output (exit 2).
"""

from __future__ import annotations

import json
import os
import select
import stat
import subprocess
import sys
import threading
import time
import uuid

import pytest
from cli_checks import run_cli

from varsim._common import atomic
from varsim.cli import COMMANDS, main

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




# ---------------------------------------------------------------------------------------------------------------------
# every output-writing command x every kind of output

KINDS = ("regular", "directory", "device", "fifo", "full", "read-only")
#: the kinds where an implementation can hang (block on a FIFO, spin on a device): run in a subprocess with a timeout
SPECIAL = ("device", "fifo", "full")
TIMEOUT_S = 120  # far above the slowest case on a loaded 2-core machine (a few seconds)
TRAIN = ["--task", "argmax", "--d-model", "16", "--heads", "2", "--steps", "2", "--batch", "4", "--checkpoint-every",
         "2"]
#: commands that write into a directory: command -> argv for the output directory OUT
DIR_COMMANDS = {
    "train": lambda out, _: ["train", *TRAIN, "--outdir", out],
    "reproduce": lambda out, _: ["reproduce", out, "--aggregate-only", "--allow-incomplete"],
    "figures": lambda out, _: ["figures", "--only", "fig_decoder_primary", "--outdir", out, "--no-progress"],
    "demo": lambda out, _: ["demo", "--copy", out, "--format", "py"],
}
#: commands that write nothing (recheck retrains in memory and prints its report; predict prints its prediction)
NO_OUTPUT = {"theory", "recheck", "predict"}


def _file_commands() -> dict:
    """command -> argv(out, inputs) for each command with an output-file flag (found by walking the parsers)."""
    from test_cli_rules import OUTPUTS

    calls = {
        "simulate": lambda i: SIM,
        "evaluate": lambda i: ["evaluate", str(i["run"]), "--lengths", "4", "--examples", "8"],
        "sweep": lambda i: ["sweep", "--n", "8", "--sequences", "32", "--workers", "1"],
        "probe-model": lambda i: ["probe-model", "--model", str(i["gguf"]), "--text", str(i["text"]), "--lengths",
                                  "8", "16", "--windows", "3", "--bootstrap", "5", "--no-progress"],
    }
    out = {}
    for command, flag, _ in OUTPUTS:
        assert command in calls, f"{command} {flag}: an output flag with no fast invocation here"
        out[command] = lambda o, i, call=calls[command], flag=flag: [*call(i), flag, o]
    return out


FILE_COMMANDS = _file_commands()
CASES = [(c, k) for c in [*FILE_COMMANDS, *DIR_COMMANDS] for k in KINDS]


def test_every_command_that_writes_has_its_cases():
    """A new command (or one that starts writing) needs its invocation here, or to be declared as writing nothing."""
    assert set(COMMANDS) == set(FILE_COMMANDS) | set(DIR_COMMANDS) | NO_OUTPUT
    assert not set(FILE_COMMANDS) & set(DIR_COMMANDS)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """What the commands read: a trained run (evaluate), a results directory with settings (reproduce
    --aggregate-only) and, with the [models] extra, a tiny GGUF model and a text (probe-model)."""
    root = tmp_path_factory.mktemp("inputs")
    assert main(["train", *TRAIN, "--outdir", str(root / "run")]) == 0
    found = {"run": root / "run"}
    try:
        import gguf  # noqa: F401 - the [models] extra
    except ImportError:
        return found
    from test_pretrained_tiny import llama_params, write_tiny_gguf

    write_tiny_gguf(root / "tiny.gguf", llama_params(0))
    (root / "text.txt").write_text(" ".join(["the cat sat on a mat"] * 300), encoding="utf-8")
    return {**found, "gguf": root / "tiny.gguf", "text": root / "text.txt"}


class _Drain:
    """A reader on a FIFO from before the command starts (so its open does not block), draining it until stopped."""

    def __init__(self, fifo):
        self.fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        self.data = bytearray()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while True:
            ready, _, _ = select.select([self.fd], [], [], 0.05)
            chunk = b""
            if ready:
                try:
                    chunk = os.read(self.fd, 1 << 16)
                except BlockingIOError:
                    pass
            self.data += chunk
            if not chunk:
                if self.done.is_set():
                    return
                time.sleep(0.01)  # no writer yet (or any more): a FIFO then reads as end of file at once

    def stop(self) -> bytes:
        self.done.set()
        self.thread.join(10)
        os.close(self.fd)
        return bytes(self.data)


def _run(argv, cwd, *, subprocess_: bool, capsys):
    """``(exit status, stderr)`` of ``varsim ARGV``: in a subprocess under a timeout (a hang fails the test), or in
    this process."""
    if not subprocess_:
        code, _, err = run_cli(capsys, argv)
        return code, err
    env = {**os.environ, "MPLBACKEND": "Agg"}
    try:
        done = subprocess.run([sys.executable, "-m", "varsim", *argv], cwd=cwd, env=env, capture_output=True,
                              text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"varsim {argv[0]} hung: no exit within {TIMEOUT_S} s")
    return done.returncode, done.stderr


def _output(tmp_path, kind: str, writes_dir: bool):
    """The output path of ``kind`` (made here), and the folder that must hold nothing else afterwards."""
    if kind == "regular":
        path = tmp_path / "existing"
        path.write_text("keep\n")
        return path, tmp_path
    if kind == "directory":
        path = tmp_path / "outdir"
        path.mkdir()
        return path, tmp_path
    if kind == "read-only":  # /proc: no file can be created there, not even by root
        return f"/proc/varsim-test-{uuid.uuid4().hex}" + ("" if writes_dir else ".json"), None
    devdir = tmp_path / "dev"
    devdir.mkdir()
    if kind == "fifo":
        os.mkfifo(devdir / "pipe")
        return devdir / "pipe", devdir
    return _device(devdir, kind, {"device": 3, "full": 7}[kind]), devdir


def _is_kind(path, kind: str) -> bool:
    mode = os.stat(path).st_mode
    return {"device": stat.S_ISCHR, "full": stat.S_ISCHR, "fifo": stat.S_ISFIFO}[kind](mode)


@pytest.mark.parametrize("command, kind", CASES, ids=[f"{c}-{k}" for c, k in CASES])
def test_every_output_kind_is_written_through_or_refused_naming_it(inputs, tmp_path, capsys, command, kind):
    writes_dir = command in DIR_COMMANDS
    if command == "probe-model" and "gguf" not in inputs:
        pytest.skip("needs the [models] extra (gguf)")
    out, folder = _output(tmp_path, kind, writes_dir)
    if writes_dir and kind == "directory" and command == "reproduce":  # a results directory to aggregate
        from varsim.experiments.records import write_settings
        from varsim.experiments.settings import ReproductionSettings

        write_settings(out, ReproductionSettings.quick())
    argv = (DIR_COMMANDS if writes_dir else FILE_COMMANDS)[command](str(out), inputs)
    before = sorted(p.name for p in folder.iterdir()) if folder is not None else None
    drain = _Drain(out) if kind == "fifo" else None
    try:
        code, err = _run(argv, tmp_path, subprocess_=kind in SPECIAL, capsys=capsys)
    finally:
        data = drain.stop() if drain is not None else None
    one_line = err.count("\n") == 1 and "Traceback" not in err and str(out) in err
    written = not writes_dir and kind in ("regular", "device", "fifo")
    if writes_dir and kind == "directory":
        assert code == 0, err
    elif written:
        if command == "sweep" and kind == "regular":  # merges into a sweep file: another file is refused, kept
            assert code == 2 and one_line and "sweep file" in err, err
            assert out.read_text() == "keep\n"
        else:
            assert code == 0, err
            if kind == "regular":
                assert json.loads(out.read_text())
            if kind == "fifo":
                assert json.loads(data.decode()), "the FIFO did not receive the whole JSON"
    elif kind == "full" and not writes_dir:
        assert code == 1 and one_line and "No space left on device" in err, err
    else:
        assert code == 2 and one_line, err
    if kind == "regular" and (writes_dir or code != 0):
        assert out.read_text() == "keep\n", "a refused output was replaced"
    if kind == "directory" and not writes_dir:
        assert list(out.iterdir()) == [], "a directory given as an output file was written into"
    if kind in SPECIAL:
        assert _is_kind(out, kind), f"{command} replaced the {kind} with a regular file"
        assert sorted(p.name for p in folder.iterdir()) == before, "something was created beside the output"
    if kind == "read-only":
        assert not os.path.exists(out)
