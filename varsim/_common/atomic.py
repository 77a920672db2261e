"""Atomic file writes: a failed or interrupted run never truncates what was already written."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Callable

__all__ = ["atomic_write_bytes", "atomic_write_text", "atomic_write_json", "atomic_write_with", "check_writable"]


def check_writable(path, name: str = "output") -> Path:
    """Fail early, naming ``name``, if ``path`` cannot be created (missing or read-only directory)."""
    p = Path(path)
    parent = p.parent if str(p.parent) else Path(".")
    if p.exists() and p.is_dir():
        raise ValueError(f"{name} path {str(p)!r} is a directory")
    if not parent.exists():
        raise ValueError(f"{name} directory {str(parent)!r} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"{name} directory {str(parent)!r} is not writable")
    return p


def _current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write_with(path, writer: Callable[[Any], None], *, binary: bool = True) -> Path:
    """Call ``writer(fileobj)`` on a temporary file next to ``path``, fsync it, then rename over ``path``."""
    p = Path(path)
    parent = p.parent if str(p.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=parent)
    try:
        # mkstemp creates 0600; give the file the mode a plain open() would (or the old file's mode)
        try:
            mode = os.stat(p).st_mode & 0o7777
        except FileNotFoundError:
            mode = 0o666 & ~_current_umask()
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb" if binary else "w", **({} if binary else {"encoding": "utf-8"})) as fh:
            writer(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, p)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    try:  # make the rename itself durable where the platform allows it
        dfd = os.open(parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass
    return p


def atomic_write_bytes(path, data: bytes) -> Path:
    return atomic_write_with(path, lambda fh: fh.write(data))


def atomic_write_text(path, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path, obj: Any, *, indent: int | None = 2) -> Path:
    return atomic_write_text(path, json.dumps(obj, indent=indent, sort_keys=False, allow_nan=False) + "\n")
