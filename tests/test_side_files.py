"""Side files (a grid's ``progress.log``, a run's ``metrics.jsonl``, the JSON files a run directory reads back) and
standard output, given a FIFO, a device, a full disk or a reader that goes away: written through without blocking
(a log), refused in one line naming the file (a file read back), or one line naming the path or stream (a full
disk), never a hang and never a traceback; what was already written is kept.

Catches (issue 45) ``varsim reproduce`` blocking forever on a ``progress.log`` FIFO with no reader, its summary never
written after the FIFO's reader exited (a BrokenPipeError from the next log line), ``varsim train`` blocking on a
``metrics.jsonl`` FIFO, an output FIFO with no reader waited on forever, and "No space left on device" on standard
output or a log without saying where.
"""

from __future__ import annotations

import errno
import io
import os
import stat
import subprocess
import sys
import threading

import pytest
from cli_checks import run_cli

from varsim._common import atomic
from varsim._common.jsonio import JSONFileError, read_json
from varsim.train.metrics import scan_metrics

TIMEOUT_S = 120  # far above the slowest case here (a few seconds) on a loaded 2-core machine
REPRODUCE = ["reproduce", "--quick", "--tasks", "argmax", "--norms", "none", "--seeds", "1", "--workers", "1",
             "--no-progress"]


def _full_device(tmp_path):
    """A private copy of /dev/full (skipped where device nodes cannot be made or opened)."""
    path = tmp_path / "full"
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 7))
        os.close(os.open(path, os.O_WRONLY))
    except OSError as exc:
        pytest.skip(f"cannot make a character device here: {exc}")
    return path


def _within(call, seconds: float = 20.0):
    """``call()``'s result, or a failed test when it has not returned within ``seconds`` (a hang)."""
    box = {}

    def target():
        try:
            box["value"] = call()
        except BaseException as exc:  # handed to the test
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"blocked for more than {seconds} s")
    if "error" in box:
        raise box["error"]
    return box["value"]


def _varsim(argv, cwd):
    """``(exit status, stderr)`` of ``varsim ARGV`` in a subprocess under a timeout (a hang fails the test)."""
    try:
        done = subprocess.run([sys.executable, "-m", "varsim", *argv], cwd=cwd, capture_output=True, text=True,
                              timeout=TIMEOUT_S, env={**os.environ, "MPLBACKEND": "Agg"})
    except subprocess.TimeoutExpired:
        pytest.fail(f"varsim {argv[0]} hung: no exit within {TIMEOUT_S} s")
    return done.returncode, done.stderr


# ---------------------------------------------------------------------------------------------------------------------
# the one way a side file is appended to, and outputs written through a FIFO

def test_append_text_appends_to_a_regular_file(tmp_path):
    log = tmp_path / "log"
    assert atomic.append_text(log, "a\n") and atomic.append_text(log, "b\n")
    assert log.read_text() == "a\nb\n"


def test_append_text_to_a_fifo_without_reader_drops_the_line_at_once(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert _within(lambda: atomic.append_text(fifo, "line\n")) is False
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_append_text_to_a_fifo_with_a_reader_writes_through(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        assert atomic.append_text(fifo, "line\n")
        assert os.read(reader, 100) == b"line\n"
    finally:
        os.close(reader)


@pytest.mark.parametrize("error", [BrokenPipeError(errno.EPIPE, "Broken pipe"),
                                   BlockingIOError(errno.EAGAIN, "Resource temporarily unavailable")])
def test_append_text_to_a_fifo_whose_reader_is_gone_or_full_drops_the_line(tmp_path, monkeypatch, error):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)

    def write(fd, data):
        raise error

    monkeypatch.setattr(atomic.os, "write", write)
    try:
        assert atomic.append_text(fifo, "line\n") is False
    finally:
        os.close(reader)


def test_append_text_on_a_full_device_names_it(tmp_path):
    full = _full_device(tmp_path)
    with pytest.raises(OSError) as info:
        atomic.append_text(full, "line\n")
    assert info.value.errno == errno.ENOSPC and info.value.filename == str(full)


def test_append_text_on_a_full_disk_names_the_file(tmp_path, monkeypatch):
    """A regular log whose data cannot be flushed (ENOSPC, which the system reports without a file name)."""
    class Full(io.BytesIO):
        def close(self):
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(atomic, "open", lambda *a, **k: Full(), raising=False)
    with pytest.raises(OSError) as info:
        atomic.append_text(tmp_path / "log", "line\n")
    assert info.value.errno == errno.ENOSPC and info.value.filename == str(tmp_path / "log")


def test_output_fifo_without_reader_is_an_error_naming_it_not_a_hang(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(OSError) as info:
        _within(lambda: atomic.atomic_write_text(fifo, "{}\n"))
    assert info.value.filename == str(fifo) and "no process is reading" in str(info.value)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and os.listdir(tmp_path) == ["fifo"]


def test_files_read_back_refuse_a_fifo_naming_it(tmp_path):
    fifo = tmp_path / "settings.json"
    os.mkfifo(fifo)
    with pytest.raises(JSONFileError, match="settings.json.*not a regular file"):
        _within(lambda: read_json(fifo))
    with pytest.raises(ValueError, match="metrics log .*not a regular file"):
        _within(lambda: scan_metrics(fifo))


# ---------------------------------------------------------------------------------------------------------------------
# the commands

def test_reproduce_with_a_progress_log_fifo_nobody_reads_finishes(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / "progress.log")
    code, err = _varsim([*REPRODUCE, str(out)], tmp_path)
    assert code == 0, err
    assert read_json(out / "summary.json") and "progress.log" in err and "Traceback" not in err
    assert stat.S_ISFIFO(os.stat(out / "progress.log").st_mode)


def test_reproduce_with_a_progress_log_reader_that_exits_after_a_line_writes_its_summary(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / "progress.log")
    got = []

    def read_one_line():
        with open(out / "progress.log", "rb") as fh:  # opens once the run opens it for writing
            got.append(fh.readline())

    reader = threading.Thread(target=read_one_line, daemon=True)
    reader.start()
    code, err = _varsim([*REPRODUCE, str(out)], tmp_path)
    reader.join(10)
    assert code == 0 and "Traceback" not in err, err
    assert read_json(out / "summary.json")["learned"] is not None
    assert got and got[0].endswith(b"\n") and b"reproduce:" in got[0]


def test_reproduce_with_a_full_progress_log_is_one_line_naming_it(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    full = _full_device(tmp_path)
    os.rename(full, out / "progress.log")
    code, err = _varsim([*REPRODUCE, str(out)], tmp_path)
    assert code == 1 and err.count("\n") == 1 and "No space left on device" in err, err
    assert str(out / "progress.log") in err and "Traceback" not in err


def test_train_with_a_metrics_log_fifo_is_refused_in_one_line(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    os.mkfifo(run / "metrics.jsonl")
    code, err = _varsim(["train", "--task", "argmax", "--d-model", "16", "--heads", "2", "--steps", "2", "--batch",
                         "4", "--outdir", str(run)], tmp_path)
    assert code == 2 and err.count("\n") == 1 and "metrics.jsonl" in err and "not a regular file" in err, err


class _FailingStdout(io.StringIO):
    def __init__(self, error: int):
        super().__init__()
        self.error = error

    def write(self, text):
        raise OSError(self.error, os.strerror(self.error))


@pytest.mark.parametrize("error, code", [(errno.ENOSPC, 1), (errno.EPIPE, 141)])
def test_standard_output_write_errors_name_the_stream(monkeypatch, capsys, error, code):
    """A full disk under standard output is one line naming it (exit 1); a reader that stopped reading (``| head``)
    ends the command quietly, as a writer killed by SIGPIPE (141), without the interpreter's second message."""
    capsys.readouterr()
    monkeypatch.setattr(sys, "stdout", _FailingStdout(error))
    got, _, err = run_cli(capsys, ["theory", "--beta", "1", "--n", "16", "--json"])
    assert got == code
    if error == errno.ENOSPC:
        assert err.count("\n") == 1 and "No space left on device (writing standard output)" in err, err
    else:
        assert err == ""


def test_standard_output_on_a_full_disk_in_a_real_process(tmp_path):
    """The same through a real descriptor: one line, exit 1, and no "Exception ignored" from the exit flush."""
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    with open("/dev/full", "wb") as full:
        done = subprocess.run([sys.executable, "-m", "varsim", "theory", "--beta", "1", "--n", "16"], stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=TIMEOUT_S)
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert "writing standard output" in done.stderr


def test_a_lock_file_that_is_a_fifo_is_refused_naming_it(tmp_path):
    """``run_lock`` on a directory whose ``.lock`` is a FIFO: one ValueError naming it (it was "Invalid argument"
    without a path from the lock's truncation)."""
    from varsim._common.runlock import file_lock, run_lock

    os.mkfifo(tmp_path / ".lock")
    os.mkfifo(tmp_path / ".out.json.lock")

    def take(lock):
        with lock:
            pass

    with pytest.raises(ValueError, match=r"lock file .*\.lock' is not a regular file"):
        _within(lambda: take(run_lock(tmp_path, "varsim test")))
    with pytest.raises(ValueError, match=r"lock file .*\.out\.json\.lock' is not a regular file"):
        _within(lambda: take(file_lock(tmp_path / "out.json")))
