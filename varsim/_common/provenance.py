"""Provenance records: which code and libraries produced a result."""

from __future__ import annotations

import datetime as _dt
import platform
import subprocess
from importlib import metadata
from pathlib import Path

__all__ = ["versions", "provenance"]

_PACKAGES = ("varsim", "numpy", "scipy", "numba", "llvmlite", "matplotlib")


def versions() -> dict[str, str]:
    from varsim import __version__

    out = {"python": platform.python_version()}
    for name in _PACKAGES:
        if name == "varsim":  # the distribution is named varsim-attention ("varsim" on PyPI is another project)
            out[name] = __version__
            continue
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def _git(*args: str) -> str | None:
    here = Path(__file__).resolve().parents[2]
    if not (here / ".git").exists():
        return None
    try:
        res = subprocess.run(
            ["git", "-C", str(here), *args], capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return res.stdout if res.returncode == 0 else None


def _git_commit() -> str | None:
    out = _git("rev-parse", "HEAD")
    return (out or "").strip() or None


def _git_dirty() -> bool | None:
    """True when tracked files differ from the commit (the result may not be reproducible from it alone)."""
    out = _git("status", "--porcelain", "--untracked-files=no")
    return None if out is None else bool(out.strip())


def provenance() -> dict:
    """Versions, platform, git commit and whether the tree was modified (when run from a checkout), UTC time."""
    return {
        "versions": versions(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "git_commit": _git_commit(),
        "git_dirty": _git_dirty(),
        "created_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
