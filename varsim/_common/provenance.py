"""Provenance records: which code and libraries produced a result."""

from __future__ import annotations

import datetime as _dt
import platform
import subprocess
from importlib import metadata
from pathlib import Path

__all__ = ["versions", "provenance", "compute_environment", "kernel_selection", "OPENBLAS_KERNELS"]

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


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def compute_environment() -> dict:
    """What bitwise reproducibility depends on beyond the versions: the CPU model and every BLAS library NumPy
    loaded, with the kernel it chose (threadpoolctl's ``architecture``, e.g. OpenBLAS ``Haswell``) and its thread
    count. Two results agree bitwise only when these match; elsewhere only within floating-point tolerance."""
    import os

    import numpy  # noqa: F401  (threadpoolctl sees only the libraries already loaded)
    from threadpoolctl import threadpool_info

    blas = [{"library": i.get("internal_api"), "version": i.get("version"), "kernel": i.get("architecture"),
             "threads": i.get("num_threads"), "file": Path(i.get("filepath") or "").name}
            for i in threadpool_info() if i.get("user_api") == "blas"]
    env = {k: os.environ[k] for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE") if k in os.environ}
    return {"cpu": _cpu_model(), "machine": platform.machine(), "blas": blas, **({"blas_env": env} if env else {})}


#: the x86-64 kernels of OpenBLAS's dynamic-architecture builds (the wheels of NumPy and SciPy): the values its
#: ``OPENBLAS_CORETYPE`` variable accepts, which forces one at load time (a kernel the CPU lacks instructions for
#: is not taken: OpenBLAS then chooses as if the variable were unset)
OPENBLAS_KERNELS = ("Prescott", "Core2", "Penryn", "Dunnington", "Nehalem", "Atom", "Opteron", "Opteron_SSE3",
                    "Barcelona", "Bobcat", "Bulldozer", "Piledriver", "Steamroller", "Excavator", "Sandybridge",
                    "Haswell", "Zen", "SkylakeX", "Cooperlake", "SapphireRapids")


def kernel_selection(prov: dict | None) -> dict:
    """The BLAS kernel a result was made with, from its provenance, and the environment that selects it again:
    ``{"kernel", "library", "env"}``, ``env`` holding ``OPENBLAS_CORETYPE`` (OpenBLAS only) and whatever else the
    run had set (``OPENBLAS_L2_SIZE``: OpenBLAS sizes its blocks by the L2 cache it detects, so the same kernel on
    another CPU may block, and round, differently unless it is set)."""
    compute = (prov or {}).get("compute") or {}
    blas = (compute.get("blas") or [{}])[0]
    env = dict(compute.get("blas_env") or {})
    if blas.get("library") == "openblas" and blas.get("kernel"):
        env.setdefault("OPENBLAS_CORETYPE", blas["kernel"])
    return {"kernel": blas.get("kernel"), "library": blas.get("library"), "env": env}


def provenance() -> dict:
    """Versions, platform, CPU and BLAS kernel (:func:`compute_environment`), git commit and whether the tree was
    modified (when run from a checkout), UTC time."""
    return {
        "versions": versions(),
        "compute": compute_environment(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "git_commit": _git_commit(),
        "git_dirty": _git_dirty(),
        "created_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
