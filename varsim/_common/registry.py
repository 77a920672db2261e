"""Registries: dicts name -> entry (an object with a ``name``), filled by ``register`` and read by ``lookup``.

Every registry of varsim (weight maps, controls, tasks, key encodings, architectures, normalizations, positions) is a
:class:`Registry`, a dict module attribute that tests may add to and delete from; a plain dict (figures, optimizers,
activations) is read with :func:`lookup`. These two functions are the one way to add to one and to find an entry in
one, so an unknown name is always ``unknown <param> 'name'; expected one of ...``.
"""

from __future__ import annotations

from .validate import check_choice

__all__ = ["Registry", "register", "lookup"]


class Registry(dict):
    """A registry: a dict name -> entry whose :meth:`add` is :func:`register` and :meth:`find` is :func:`lookup`
    (``param`` names the parameter in the error for an unknown name, ``what`` the entry in messages, ``kind`` the
    class every entry must be)."""

    def __init__(self, param: str, *, what: str | None = None, kind: type | None = None):
        super().__init__()
        self.param, self.what, self.kind = param, what or param, kind

    def add(self, entry):
        """Add ``entry`` under ``entry.name`` (:func:`register`) and return it."""
        return register(self, entry, what=self.what, kind=self.kind)

    def find(self, name):
        """The entry ``name`` (:func:`lookup`)."""
        return lookup(self, name, param=self.param)


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
