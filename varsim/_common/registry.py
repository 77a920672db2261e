"""Registries: dicts name -> entry (an object with a ``name``), filled by ``register`` and read by ``lookup``.

Every registry of varsim (tasks, key encodings, architectures, normalizations) is a plain dict module attribute, so
tests can register into a copy; these two functions are the one way to add to one and to find an entry in one.
"""

from __future__ import annotations

from .validate import check_choice

__all__ = ["register", "lookup"]


def register(registry: dict, entry, *, what: str, kind: type | None = None):
    """Add ``entry`` under ``entry.name``; ValueError when it is not a ``kind`` or the name is taken."""
    if kind is not None and not isinstance(entry, kind):
        raise ValueError(f"{what} must be a {kind.__name__}, got {type(entry).__name__}")
    if entry.name in registry:
        raise ValueError(f"{what} {entry.name!r} is already registered")
    registry[entry.name] = entry
    return entry


def lookup(registry: dict, name, *, param: str):
    """The entry ``name``; ValueError ``unknown <param> <name>; expected one of ...`` otherwise."""
    return registry[check_choice(param, name, registry)]
