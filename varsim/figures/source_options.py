"""What a figure data source declares beside its class, for everything that asks the registry of sources
(:data:`varsim.figures.SOURCES`): the keyword options of :func:`varsim.figures.make` it reads, each with its
``varsim figures`` flag (:class:`SourceOption`, the class's ``OPTIONS``), and its section of the documentation's
gallery (the class's ``GALLERY``). :func:`varsim.figures.make`, ``varsim figures`` and the docs hooks read them
from here, so a new source is its class and one line in ``SOURCES``. Importing this module loads nothing heavy."""

from __future__ import annotations

import dataclasses
import importlib

__all__ = ["SourceOption", "source_class", "source_options", "gallery_groups"]


@dataclasses.dataclass(frozen=True)
class SourceOption:
    """A keyword option of :func:`varsim.figures.make` that a data source reads (``name``, e.g.
    ``"remedies_results"``), and its flag of ``varsim figures`` (``--remedies-results``): ``help``, ``nargs`` and
    ``metavar`` as argparse takes them; ``switch``: a flag without a value (``--rerun``), default False."""

    name: str
    help: str
    nargs: str | None = None
    metavar: str | None = "DIR"
    switch: bool = False

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def default(self):
        return False if self.switch else None

    def add_to(self, parser) -> None:
        """Add this option's flag to the argparse ``parser`` (or argument group)."""
        if self.switch:
            parser.add_argument(self.flag, action="store_true", help=self.help)
        else:
            parser.add_argument(self.flag, nargs=self.nargs, default=None, metavar=self.metavar, help=self.help)


def source_class(kind: str):
    """The class of the data source ``kind`` (a key of :data:`varsim.figures.SOURCES`), imported now; an unknown
    kind raises ValueError."""
    from varsim._common.registry import lookup
    from varsim.figures import SOURCES

    module, cls = lookup(SOURCES, kind, param="data source")
    return getattr(importlib.import_module(module), cls)


def source_options() -> tuple[SourceOption, ...]:
    """The options every registered data source reads, in registry order (each once)."""
    from varsim.figures import SOURCES

    seen: dict[str, SourceOption] = {}
    for kind in SOURCES:
        for option in getattr(source_class(kind), "OPTIONS", ()):
            seen.setdefault(option.name, option)
    return tuple(seen.values())


def gallery_groups(own: str = "Theory") -> tuple[tuple[str, str | None], ...]:
    """The gallery's sections in order, ``(title, source)``: ``own`` for the figures that compute their own data
    (source None), then each data source's ``GALLERY`` title in registry order."""
    from varsim.figures import SOURCES

    return ((own, None), *((source_class(kind).GALLERY, kind) for kind in SOURCES))
