"""Worker processes that die with their parent.

A ``ProcessPoolExecutor`` worker whose parent is killed (SIGKILL: no clean-up runs) would finish the job it holds,
possibly minutes of training, and only then notice. :func:`exit_with_parent` starts a daemon thread that waits on
the parent's sentinel (``multiprocessing.parent_process().sentinel``: a pipe end that becomes readable when the
parent dies, on every OS) and ends this process at once with ``os._exit``; without a sentinel (a process not
started by multiprocessing) it polls ``os.getppid()``, which changes when the parent dies on POSIX.

:func:`worker_initializer` is the initializer of varsim's local worker processes: one thread per pool (see
``varsim._common.blas.single_threaded_worker``), then the lifeline. Like ``blas``, this module imports only the
standard library, so a spawned worker can run it before NumPy loads.
"""

from __future__ import annotations

import os
import sys
import threading
import time

from varsim._common.blas import single_threaded_worker

__all__ = ["exit_with_parent", "worker_initializer", "EXIT_STATUS"]

#: Exit status of a worker that ended because its parent died.
EXIT_STATUS = 70

_started = False


def _die() -> None:
    try:
        sys.stderr.write(f"varsim worker {os.getpid()}: parent process died; exiting\n")
        sys.stderr.flush()
    finally:
        os._exit(EXIT_STATUS)


def _watch_sentinel(sentinel) -> None:
    from multiprocessing.connection import wait

    wait([sentinel])  # returns only when the parent has exited
    _die()


def _watch_ppid(parent: int, poll_s: float) -> None:
    while os.getppid() == parent:
        time.sleep(poll_s)
    _die()


def exit_with_parent(poll_s: float = 0.5) -> None:
    """End this process as soon as its parent dies (idempotent; see the module docstring)."""
    global _started
    if _started:
        return
    import multiprocessing

    parent = multiprocessing.parent_process()
    sentinel = getattr(parent, "sentinel", None) if parent is not None else None
    if sentinel is not None:
        target, args = _watch_sentinel, (sentinel,)
    else:
        target, args = _watch_ppid, (os.getppid(), float(poll_s))
    threading.Thread(target=target, args=args, name="varsim-lifeline", daemon=True).start()
    _started = True


def worker_initializer() -> None:
    """Initializer of a local worker process: single-threaded pools, and exit when the parent dies."""
    single_threaded_worker()
    exit_with_parent()
