"""The run-directory lock: a second holder is refused while the first lives; a dead holder's lock is free."""

import os
import signal
import subprocess
import sys

import pytest

from varsim._common.runlock import RunLocked, run_lock

_HOLD = """
import sys, time
from varsim._common.runlock import run_lock
with run_lock(sys.argv[1], "test holder"):
    print("held", flush=True)
    time.sleep(60)
"""


def _holder(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", _HOLD, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_second_process_is_refused_naming_the_holder(tmp_path):
    """Catches a lock that is only checked by file existence or not taken at all (interleaved runs)."""
    proc = _holder(tmp_path)
    try:
        with pytest.raises(RunLocked, match=rf"in use by pid {proc.pid} .*test holder"):
            with run_lock(tmp_path, "second"):
                pass
    finally:
        proc.kill()
        proc.wait()


def test_lock_of_a_killed_process_is_taken_again(tmp_path):
    """Catches a stale lock file blocking the directory for ever after a SIGKILL."""
    proc = _holder(tmp_path)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert (tmp_path / ".lock").exists()
    with run_lock(tmp_path, "after crash"):
        pass


def test_lock_is_released_after_the_block_and_on_error(tmp_path):
    with pytest.raises(RuntimeError):
        with run_lock(tmp_path, "first"):
            raise RuntimeError("boom")
    with run_lock(tmp_path, "again"):
        with pytest.raises(RunLocked):  # also refused within one process (separate open file description)
            with run_lock(tmp_path, "nested"):
                pass
