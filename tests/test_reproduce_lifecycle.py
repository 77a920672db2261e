"""Concurrency and faults of ``varsim reproduce``: one process per results directory, and worker processes that
do not outlive a killed parent."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from varsim._common.runlock import RunLocked
from varsim.experiments import ReproductionSettings, run_reproduction

ONE_RUN = dict(seeds=1, tasks=("argmax",), norms=("none",))


def _python(code: str, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)


def test_second_reproduction_on_one_directory_is_refused(tmp_path, capsys):
    """While another process holds the directory, run_reproduction and the CLI refuse at once, write nothing, and
    name the holder; once it has exited the same call runs. Catches a missing lock (two processes interleaving
    their records) and a lock taken after settings.json is written."""
    from varsim.cli import main

    out = tmp_path / "repro"
    out.mkdir()
    holder = _python(f"""
        import time
        from varsim._common.runlock import run_lock
        with run_lock({str(out)!r}, "varsim reproduce"):
            print("locked", flush=True)
            time.sleep(120)
    """)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(RunLocked, match=rf"in use by pid {holder.pid} .*varsim reproduce"):
            run_reproduction(out, quick=True, workers=1, progress=False, **ONE_RUN)
        assert main(["reproduce", str(out), "--quick", "--workers", "1", "--seeds", "1"]) == 2
        err = capsys.readouterr().err
        assert "in use by" in err and len(err.strip().splitlines()) == 1
        assert not (out / "settings.json").exists() and not list((out / "runs").glob("*.json"))
    finally:
        holder.kill()
        holder.wait()
    report = run_reproduction(out, quick=True, workers=1, progress=False, **ONE_RUN)  # a dead holder's lock is free
    assert len(report["completed"]) == 1


def _descendants(pid: int):
    psutil = pytest.importorskip("psutil")
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def _alive(proc) -> bool:
    import psutil

    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _long_grid(out):
    """A reproduction (two workers, two runs whose training takes hours) in a child process, once both workers are
    training: ``(parent, its descendants)``. The parent exits 130 on KeyboardInterrupt, as the CLI does."""
    pytest.importorskip("psutil")
    quick = ReproductionSettings.quick()
    long_train = {**quick.train, "steps": 10**6, "checkpoint_every": 10**5}
    parent = _python(f"""
        import signal
        import sys
        from varsim.experiments import ReproductionSettings, run_reproduction
        if __name__ == "__main__":
            # Ctrl-C as at a terminal: a test run started in the background by a non-interactive shell (``cmd &``)
            # inherits SIGINT ignored, and Python then leaves it ignored in every process it starts.
            signal.signal(signal.SIGINT, signal.default_int_handler)
            settings = ReproductionSettings.quick(seeds=2, tasks=("argmax",), norms=("none",), train={long_train!r})
            try:
                run_reproduction({str(out)!r}, settings=settings, workers=2, progress=False)
            except KeyboardInterrupt:
                sys.exit(130)
    """)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # both workers have started training (their checkpoint directories exist)
            started = list((out / "checkpoints").glob("*")) if (out / "checkpoints").exists() else []
            if len(started) == 2 or parent.poll() is not None:
                break
            time.sleep(0.2)
        assert parent.poll() is None, parent.stderr.read()
        assert len(started) == 2, "the workers did not start"
        children = _descendants(parent.pid)
        assert len([c for c in children if _alive(c)]) >= 2
    except BaseException:
        parent.kill()
        parent.wait()
        raise
    return parent, children


def _survivors(children, seconds: float = 10.0) -> list[int]:
    """The pids still alive after ``seconds`` (killed, so that a failing test leaves nothing running)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(_alive(c) for c in children):
        time.sleep(0.1)
    survivors = [c.pid for c in children if _alive(c)]
    for pid in survivors:
        os.kill(pid, signal.SIGKILL)
    return survivors


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_workers_exit_when_the_reproduction_is_killed(tmp_path):
    """SIGKILL the coordinating process while its two workers train runs that take minutes: every process it
    started is gone within a few seconds. Catches workers that finish (or keep waiting on) their job after their
    parent died."""
    parent, children = _long_grid(tmp_path / "repro")
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    assert _survivors(children) == []


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to one process")
def test_interrupted_reproduction_stops_its_runs_in_flight(tmp_path):
    """SIGINT to the coordinating process alone (``kill -INT``; a terminal's Ctrl-C signals the workers too): it
    exits within seconds, and so do its workers. Catches a parent that cancels the queue but waits for the runs in
    flight (hours here) before it exits. A resume redoes those runs (tests/test_reproduce.py)."""
    parent, children = _long_grid(tmp_path / "repro")
    os.kill(parent.pid, signal.SIGINT)
    try:
        rc = parent.wait(timeout=30)
    except subprocess.TimeoutExpired:
        parent.kill()
        parent.wait()
        rc = None
    survivors = _survivors(children)
    assert rc == 130, parent.stderr.read()
    assert survivors == []
