"""Atomic file writes: a failed or interrupted run never truncates what was already written."""

from __future__ import annotations

import errno
import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any, Callable

__all__ = [
    "append_text",
    "atomic_write_bytes",
    "atomic_write_text",
    "atomic_write_json",
    "atomic_write_with",
    "atomic_write_files",
    "json_bytes",
    "check_writable",
    "check_writable_dir",
    "is_special_file",
]


def check_writable_dir(directory, name: str = "output") -> Path:
    """Fail early, naming ``name``, unless a file can really be created in ``directory`` (which must exist).

    Creates and removes a temporary file rather than asking ``os.access``, which says yes to root everywhere,
    including read-only filesystems and ``/proc``.
    """
    d = Path(directory)
    if not d.is_dir():
        raise ValueError(f"{name} directory {str(d)!r} does not exist")
    try:
        fd, probe = tempfile.mkstemp(prefix=".varsim-probe-", dir=d)
    except OSError as exc:
        label = name if name.endswith("dir") else f"{name} directory"
        raise ValueError(f"{label} {str(d)!r} is not writable: {exc.strerror or exc}") from None
    os.close(fd)
    try:
        os.unlink(probe)
    except OSError:
        pass
    return d


def is_special_file(path) -> bool:
    """True for an existing file that is not a regular file or a directory (a device such as ``/dev/stdout`` or
    ``/dev/full``, a FIFO, a socket): :func:`atomic_write_with` writes through it instead of replacing it."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def check_writable(path, name: str = "output") -> Path:
    """Fail early, naming ``name``, if the file ``path`` cannot be created or replaced (empty path, missing or
    unwritable directory, a directory in its place, a symlink loop). A device or FIFO is accepted as it is: it is
    written through, not replaced."""
    if not str(path).strip():
        raise ValueError(f"{name} path must not be empty")
    p = Path(path)
    parent = p.parent if str(p.parent) else Path(".")
    try:
        os.stat(p)
    except FileNotFoundError:
        pass
    except OSError as exc:  # a symlink loop, a name too long, a component that is a file
        raise ValueError(f"{name} path {str(p)!r}: {exc.strerror or exc}") from None
    if is_special_file(p):
        return p
    if p.is_dir():
        raise ValueError(f"{name} path {str(p)!r} is a directory")
    if parent.exists() and not parent.is_dir():
        raise ValueError(f"{name} path {str(p)!r} is under {str(parent)!r}, which is not a directory")
    try:
        check_writable_dir(parent, name)
    except ValueError as exc:
        raise ValueError(f"{name} path {str(p)!r}: {exc}") from None
    return p


def _current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _naming(exc: OSError, path: Path) -> OSError:
    """``exc`` naming ``path`` when the system gave no file name (a write or flush that ran out of space)."""
    if exc.errno is None or exc.filename is not None:
        return exc
    return OSError(exc.errno, exc.strerror, str(path))


#: what the system says when a FIFO is opened for writing with no process reading it (ENXIO, "No such device or
#: address", would not tell a user what to do)
NO_READER = "no process is reading this FIFO"


def _open_special(p: Path) -> int:
    """A descriptor for writing to the device or FIFO ``p``, opened without waiting for a reader: a FIFO that no
    process reads is ``OSError(ENXIO, NO_READER, p)`` at once instead of a hang. The descriptor is non-blocking."""
    try:
        return os.open(p, os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise OSError(errno.ENXIO, NO_READER, str(p)) from None
        raise _naming(exc, p) from None


def _write_temp(p: Path, writer: Callable[[Any], None]) -> str:
    """Call ``writer(fileobj)`` on a new temporary file next to ``p`` (the mode a plain ``open`` would give, or
    ``p``'s), fsynced; return its path. On failure the temporary is removed and an OSError names ``p``."""
    parent = p.parent if str(p.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=parent)
    except OSError as exc:  # a missing or unwritable folder: name the file asked for, not the temporary
        raise OSError(exc.errno, exc.strerror, str(p)) from None
    try:
        # mkstemp creates 0600; give the file the mode a plain open() would (or the old file's mode)
        try:
            mode = os.stat(p).st_mode & 0o7777
        except FileNotFoundError:
            mode = 0o666 & ~_current_umask()
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            writer(fh)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException as exc:
        _remove(tmp)
        if isinstance(exc, OSError):
            raise _naming(exc, p) from None
        raise
    return tmp


def _remove(tmp: str) -> None:
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass


def _sync_dir(parent: Path) -> None:
    """Make the renames in ``parent`` durable where the platform allows it."""
    try:
        dfd = os.open(parent if str(parent) else ".", os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass


def _write_through(p: Path, writer: Callable[[Any], None]) -> Path:
    """Write a device or FIFO in place (it cannot be replaced by a regular file); a FIFO must have its reader
    already (none: ``OSError`` "no process is reading this FIFO", never a hang); errors (``/dev/full``: no space
    left; a reader gone: broken pipe) name ``p``."""
    try:
        fd = _open_special(p)  # a FIFO with no reader fails at once (NO_READER) instead of hanging
        os.set_blocking(fd, True)  # a slow reader gets the whole file
        with os.fdopen(fd, "wb") as fh:
            writer(fh)
            fh.flush()
    except OSError as exc:
        raise _naming(exc, p) from None
    return p


def atomic_write_with(path, writer: Callable[[Any], None]) -> Path:
    """Call ``writer(fileobj)`` on a temporary binary file next to ``path``, fsync it, then rename over ``path``.

    A device or FIFO at ``path`` (``/dev/stdout``, ``/dev/full``, a pipe) is written through, never replaced by a
    regular file; a write error there (``/dev/full``: no space left) propagates as the ``OSError`` it is, naming
    ``path``.
    """
    p = Path(path)
    if is_special_file(p):
        return _write_through(p, writer)
    tmp = _write_temp(p, writer)
    try:
        os.replace(tmp, p)
    except OSError as exc:
        _remove(tmp)
        raise _naming(exc, p) from None
    _sync_dir(p.parent)
    return p


def atomic_write_files(contents: dict) -> list[Path]:
    """Write several files as one set: ``contents`` maps each path to its bytes; all are written to temporaries
    next to their paths first and renamed over them only when every one was written, so a failure (a full disk, an
    unwritable file) leaves every old file as it was and no temporary behind; the OSError names the path whose
    write failed. Returns the paths, in order. (Each rename is atomic; the set is replaced file by file after all
    are safely on disk.) A device or FIFO among the paths is written through, after the regular files."""
    paths = [Path(p) for p in contents]
    data = list(contents.values())
    regular = [(p, d) for p, d in zip(paths, data) if not is_special_file(p)]
    temps: list[tuple[str, Path]] = []
    try:
        for p, d in regular:
            temps.append((_write_temp(p, lambda fh, d=d: fh.write(d)), p))
    except BaseException:
        for tmp, _ in temps:
            _remove(tmp)
        raise
    for k, (tmp, p) in enumerate(temps):
        try:
            os.replace(tmp, p)
        except OSError as exc:
            for left, _ in temps[k:]:
                _remove(left)
            raise _naming(exc, p) from None
    for parent in {p.parent for p, _ in regular}:
        _sync_dir(parent)
    for p, d in zip(paths, data):
        if is_special_file(p):
            _write_through(p, lambda fh, d=d: fh.write(d))
    return paths


def atomic_write_bytes(path, data: bytes) -> Path:
    return atomic_write_with(path, lambda fh: fh.write(data))


def atomic_write_text(path, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def json_bytes(obj: Any, *, indent: int | None = 2) -> bytes:
    """``obj`` as the bytes :func:`atomic_write_json` writes (no NaN: JSON has none)."""
    return (json.dumps(obj, indent=indent, sort_keys=False, allow_nan=False) + "\n").encode("utf-8")


def atomic_write_json(path, obj: Any, *, indent: int | None = 2) -> Path:
    return atomic_write_bytes(path, json_bytes(obj, indent=indent))


def append_text(path, text: str) -> bool:
    """Append ``text`` to the side file ``path`` (a progress or metrics log), flushed; return whether it was written.

    A regular file (created if missing) is opened in append mode. A device or FIFO is written through without ever
    blocking the run: a FIFO that no process reads, a pipe that is full, or a reader that has gone (EPIPE) leaves
    the text unwritten and returns False. Any other write error (a full disk, ``/dev/full``) raises the ``OSError``
    it is, naming ``path``.
    """
    p = Path(path)
    data = text.encode("utf-8")
    try:
        if not is_special_file(p):
            with open(p, "ab") as fh:
                fh.write(data)
            return True
        try:
            fd = _open_special(p)
        except OSError as exc:
            if exc.errno == errno.ENXIO:
                return False
            raise
        try:
            return os.write(fd, data) == len(data)
        except (BlockingIOError, BrokenPipeError):
            return False
        finally:
            os.close(fd)
    except OSError as exc:
        raise _naming(exc, p) from None
