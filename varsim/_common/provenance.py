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
    out = {"python": platform.python_version()}
    for name in _PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def _git_commit() -> str | None:
    here = Path(__file__).resolve().parents[2]
    if not (here / ".git").exists():
        return None
    try:
        res = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return res.stdout.strip() or None if res.returncode == 0 else None


def provenance() -> dict:
    """Versions, platform, git commit (when run from a checkout) and UTC time."""
    return {
        "versions": versions(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "git_commit": _git_commit(),
        "created_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
