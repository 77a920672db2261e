"""SIGTERM to a command running a pool of worker processes (``varsim.jobs``: ``reproduce --workers 2``, ``sweep
--workers 2``): the workers are stopped, their semaphores released, and the command ends with one line and status 143
(128 + SIGTERM), no traceback and no "leaked semaphore" warning from the resource tracker; the sweep's file keeps
the cell that finished before the signal.

Catches (issue 45) the default SIGTERM disposition, which ended the process without any clean-up, so that
multiprocessing's resource tracker printed "There appear to be N leaked semaphore objects to clean up at shutdown".
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_checks import assert_terminated, terminate_when

START_S = 90  # far above a spawned pool's start on a loaded 2-core machine (a few seconds)

#: command -> argv (given the temporary directory) of a run that lasts well beyond its pool's start
POOL_COMMANDS = {
    "reproduce": lambda tmp: ["reproduce", str(tmp / "out"), "--quick", "--workers", "2", "--no-progress"],
    # the cell of smallest N runs first in this process (it compiles the kernel); the two long ones on the pool
    "sweep": lambda tmp: ["sweep", "--n", "16", "32768", "65536", "--sequences", "1e6", "--max-work", "1e16",
                          "--workers", "2", "--no-progress", "-o", str(tmp / "sweep.json")],
}


def _spawned_workers(pid: int) -> int:
    """How many of ``pid``'s children are multiprocessing ``spawn`` workers (not its resource tracker)."""
    count = 0
    for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
        try:
            cmd = Path(f"/proc/{child}/cmdline").read_bytes()
        except OSError:
            continue
        count += b"spawn_main" in cmd
    return count


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc for the pool's workers")
@pytest.mark.parametrize("command", sorted(POOL_COMMANDS))
def test_sigterm_stops_the_pool_cleanly(tmp_path, command):
    def pool_started(proc):
        deadline = time.monotonic() + START_S
        while _spawned_workers(proc.pid) < 2:
            assert proc.poll() is None, f"varsim {command} ended before its pool started: {proc.stderr.read()}"
            assert time.monotonic() < deadline, f"varsim {command}: no pool of 2 workers within {START_S} s"
            time.sleep(0.05)
        time.sleep(0.5)  # the workers take their first jobs

    code, _, err = terminate_when(POOL_COMMANDS[command](tmp_path), pool_started, cwd=tmp_path,
                                  stdout=subprocess.DEVNULL, env={**os.environ, "MPLBACKEND": "Agg"})
    assert_terminated(code, err, command)
    if command == "sweep":
        from varsim.sim.sweep import load_sweep

        assert len(load_sweep(tmp_path / "sweep.json")["cells"]) >= 1
