"""What a figure data source declares beside its class, for everything that asks the registry of sources
(:data:`varsim.figures.SOURCES`): the keyword options of :func:`varsim.figures.make` it reads, each with its
``varsim figures`` flag (:class:`SourceOption`, the class's ``OPTIONS``), and its section of the documentation's
gallery (the class's ``GALLERY``). :func:`varsim.figures.make`, ``varsim figures`` and the docs hooks read them
through :func:`varsim.figures.source_spec` and :func:`varsim.figures.gallery_groups`, so a new source is its
class and one line in ``SOURCES``. Importing this module loads nothing heavy."""

from __future__ import annotations

import dataclasses

__all__ = ["SourceOption"]


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
