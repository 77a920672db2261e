"""One process at a time per run directory: an advisory lock that dies with its holder; and a short blocking lock
on one file, for processes that merge into it in turn (:func:`file_lock`).

``with run_lock(directory, "varsim train"):`` takes an exclusive ``fcntl.flock`` on ``directory/.lock``. The
kernel releases a flock when its process exits for any reason (normal exit, exception, SIGKILL), so a lock file
left behind by a dead process is stale by construction and is simply taken again; its text (pid, command, start
time) only serves the error message of a process that is refused while the holder is alive.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
from pathlib import Path

__all__ = ["LOCK_NAME", "RunLocked", "run_lock", "file_lock"]

LOCK_NAME = ".lock"


class RunLocked(ValueError):
    """Another live process holds the run directory (a user error: exit status 2, one line)."""


def _holder(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return "another process"
    return text or "another process"


def _open_lock(path: Path) -> int:
    """A descriptor of the lock file ``path`` (created if missing). A FIFO or device in its place (which cannot be
    locked, and which opening could block on) is a ``ValueError`` naming it, before it is opened."""
    from varsim._common.atomic import is_special_file

    if is_special_file(path):
        raise ValueError(f"lock file {str(path)!r} is not a regular file (a FIFO or device); remove it")
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_NONBLOCK, 0o644)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(path)) from None


@contextlib.contextmanager
def run_lock(directory, command: str):
    """Hold ``directory/.lock`` exclusively for the ``with`` block; raise :class:`RunLocked` if it is taken.

    ``directory`` must exist. Non-blocking: a second process is refused at once with a message that names the
    directory and the holder (pid, host, command, start time).
    """
    import fcntl

    path = Path(directory) / LOCK_NAME
    fd = _open_lock(path)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RunLocked(
                f"run directory {str(directory)!r} is in use by {_holder(path)}; wait for it to finish "
                f"(a lock held by a process that has died is released automatically)"
            ) from None
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()} ({command}, since {stamp})\n".encode(), 0)
        try:
            yield path
        finally:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


@contextlib.contextmanager
def file_lock(target):
    """Hold an exclusive lock for the file ``target`` during the ``with`` block, waiting for another holder.

    For read-merge-write cycles of several processes on one file (``varsim sweep -o FILE`` run twice at once): the
    lock is a ``flock`` on the companion file ``.NAME.lock`` beside ``target`` (not on ``target`` itself, which an
    atomic write replaces by a new inode), kept afterwards so that every process locks the same inode. Released when
    the block ends or its process dies. A ``target`` that is a device or FIFO (``-o /dev/stdout``) needs no lock.
    """
    import fcntl

    from varsim._common.atomic import is_special_file

    p = Path(target)
    if is_special_file(p):
        yield None
        return
    path = p.with_name(f".{p.name}.lock")
    fd = _open_lock(path)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield path
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
