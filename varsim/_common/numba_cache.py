"""Numba's on-disk cache (``cache=True``), made to notice the modules a kernel compiles in.

Numba keys a cached kernel by the source of the file that defines it, but a kernel also compiles in the functions and
module-level constants it takes from other modules (the sim kernels inline their draw routines from
``_kernels_draws.py``, the generator from ``_kernels_rng.py``, the ziggurat tables' sizes from ``_ziggurat.py``):
editing one of those left every cached kernel stale, silently computing with the old code. The locators here stamp a
kernel's cache with the contents of its file *and* of every module of the same package it imports, transitively
(relative imports, read with ``ast``), so any such edit recompiles.

:func:`install` puts them in front of Numba's own locators; a kernel module calls it before it decorates its
kernels (the locator is chosen when ``@njit(cache=True)`` runs). Files outside varsim fall through to Numba's
locators, as does a kernel whose ``__pycache__`` is not writable (Numba then caches per user, with its own stamp).
"""

from __future__ import annotations

import ast
import functools
import hashlib
import os
from pathlib import Path

from numba.core import caching

__all__ = ["install", "source_stamp", "package_imports"]

_VARSIM = Path(__file__).resolve().parents[1]


@functools.lru_cache(maxsize=None)
def _imports_of(path: str, mtime: float, size: int) -> tuple[str, ...]:
    """Files of the same package that ``path`` imports relatively (``from .x import y``, ``from . import x``)."""
    here = Path(path).parent
    out = []
    for node in ast.walk(ast.parse(Path(path).read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            names = [node.module] if node.module else [a.name for a in node.names]
            out += [str(here / f"{name.replace('.', '/')}.py") for name in names]
    return tuple(p for p in out if os.path.isfile(p))


def package_imports(path) -> list[str]:
    """``path`` and every file of its package it imports relatively, transitively, sorted."""
    seen, todo = set(), [str(Path(path).resolve())]
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        st = os.stat(p)
        todo.extend(_imports_of(p, st.st_mtime, st.st_size))
    return sorted(seen)


@functools.lru_cache(maxsize=None)
def _file_digest(path: str, mtime: float, size: int) -> bytes:
    return hashlib.sha256(Path(path).read_bytes()).digest()


def source_stamp(path) -> bytes:
    """The digest of ``path`` and of every module of its package it imports: what a cached kernel depends on."""
    h = hashlib.sha256()
    for p in package_imports(path):
        st = os.stat(p)
        h.update(p.encode())
        h.update(_file_digest(p, st.st_mtime, st.st_size))
    return h.digest()


def _is_varsim(py_file: str) -> bool:
    try:
        return Path(py_file).resolve().is_relative_to(_VARSIM)
    except OSError:
        return False


class _DependencyStamp:
    def get_source_stamp(self):
        return source_stamp(self._py_file)

    @classmethod
    def from_function(cls, py_func, py_file):
        if not _is_varsim(py_file):
            return None
        return super().from_function(py_func, py_file)


_BASES = [getattr(caching, name, None) or getattr(caching, "_" + name, None)
          for name in ("UserProvidedCacheLocator", "InTreeCacheLocator")]
_LOCATORS = [type(f"Varsim{base.__name__.lstrip('_')}", (_DependencyStamp, base), {})
             for base in _BASES if base is not None]


def install() -> None:
    """Put varsim's locators first (idempotent). Numba's environment override ``NUMBA_CACHE_LOCATOR_CLASSES``,
    when set, still wins."""
    impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl", None)
    if impl is None:
        return
    classes = impl._locator_classes
    if _LOCATORS and classes[:len(_LOCATORS)] != _LOCATORS:
        classes[:0] = _LOCATORS
