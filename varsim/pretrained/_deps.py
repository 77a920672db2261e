"""Optional dependencies of :mod:`varsim.pretrained` (the ``[models]`` extra), imported only when needed."""

from __future__ import annotations

import importlib

__all__ = ["require"]

EXTRA_HINT = "pip install 'varsim[models]'"


def require(module: str, purpose: str):
    """Import ``module`` or raise a one-line ``ValueError`` saying which optional dependency is missing and why."""
    try:
        return importlib.import_module(module)
    except ImportError:
        top = module.split(".")[0]
        raise ValueError(
            f"{purpose} needs the optional dependency {top!r}, which is not installed ({EXTRA_HINT})"
        ) from None
