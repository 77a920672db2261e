"""Helpers of the command-line tests (tests/test_cli_*.py, tests/test_output_paths.py, tests/test_sweep.py,
tests/test_signals.py, tests/test_figures_work.py)."""

from __future__ import annotations

import signal
import subprocess
import sys

from varsim.cli import main

#: Bad variant flags (``varsim.cli._options``' generator of them), which ``theory``, ``simulate`` and ``sweep`` each
#: refuse in one line: (flags, a piece of that line).
BAD_VARIANT_FLAGS = [
    (["--attention", "nope"], "unknown attention 'nope'"),
    (["--attention", "softmaxx"], "unknown attention 'softmaxx'"),
    (["--attention", "softmax", "--ssmax-s", "0.5"], "--ssmax-s applies to --attention ssmax"),
    (["--attention", "ssmax", "--ssmax-s", "-1"], "ssmax parameter 's'"),
    (["--attention", "ssmax", "--ssmax-s", "x"], "--ssmax-s"),
    (["--attention", "topk", "--topk", "2.5"], "topk parameter 'k'"),
    (["--attention", "topk", "--topk", "0"], "topk parameter 'k'"),
    (["--attention", "logn", "--logn-n0", "1"], "logn parameter 'n0'"),
]


def run_cli(capsys, argv) -> tuple[int, str, str]:
    """``varsim ARGV`` in-process: ``(exit status, stdout, stderr)``; argparse's own errors (SystemExit) included."""
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line(code, err, *names, status=2) -> None:
    """A refusal as users see it: exit ``status`` (2: their mistake) and exactly one line on stderr, with no
    traceback or warning before it, naming each of ``names``."""
    assert code == status, (code, err)
    assert err.count("\n") == 1 and err.endswith("\n"), err
    assert "Traceback" not in err and "Warning" not in err, err
    for name in names:
        assert name in err, (name, err)


def refused(capsys, argv, *names, status=2) -> str:
    """``varsim ARGV`` in-process is refused (:func:`assert_one_line`) and prints nothing on stdout; its line."""
    code, out, err = run_cli(capsys, argv)
    assert_one_line(code, err, *names, status=status)
    assert out == "", out
    return err.strip()


def terminate_when(argv, started, *, timeout=60, **popen) -> tuple[int, str, str]:
    """``python -m varsim ARGV`` in a subprocess (stdout and stderr piped unless ``popen`` says otherwise), sent
    SIGTERM once ``started(proc)`` returns (it waits for the work to be under way and asserts the process still
    runs): ``(exit status, stdout, stderr)``. The process is killed after ``timeout`` s, or when ``started`` fails,
    so none outlives the test."""
    popen = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True, **popen}
    proc = subprocess.Popen([sys.executable, "-m", "varsim", *argv], **popen)
    try:
        started(proc)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, out, err


def assert_terminated(code, err, command) -> None:
    """A command ended by SIGTERM: status 128 + SIGTERM and varsim's one line naming it, no traceback and nothing
    from the resource tracker (leaked semaphores) or the workers (their parent died)."""
    assert code == 128 + signal.SIGTERM, (code, err)
    assert err.count("\n") == 1 and err.startswith(f"varsim {command}: terminated"), err
    assert "Traceback" not in err and "leaked" not in err and "parent process died" not in err, err
