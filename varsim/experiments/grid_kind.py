"""What one kind of grid owns: which grids are of that kind, their summary, its format and its Markdown table.

A kind is a :class:`GridKind` defined in the module of its grid (the paper reproduction in
:mod:`~varsim.experiments.reproduction_summary`, the remedies grid in :mod:`~varsim.experiments.remedies`, the decoder
grid in :mod:`~varsim.experiments.decoder_grid`) and registered in
:data:`varsim.experiments.aggregation.GRID_KINDS`; it names the figure source that draws its summaries
(``figure_source``, a key of :data:`varsim.figures.SOURCES`). The fields a kind adds to the settings are validated
where they are declared (the variant axis: :mod:`~varsim.experiments.variant_axis`). A new kind is a module and one
line in ``GRID_KINDS``.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

__all__ = ["GridKind", "kind_for"]


@dataclasses.dataclass(frozen=True)
class GridKind:
    """One kind of grid.

    ``claims(settings)``: whether a settings dict (``settings.json``'s, a summary's) is a grid of this kind;
    ``refines``: the name of a kind whose grids this one narrows (where both claim a grid, this one owns it);
    ``summarize(outdir, res, *, confidence)``: the summary of a results directory (``res`` from
    :func:`varsim.experiments.records.load_results`), of format ``summary_format``; ``table(summary, title)``: its
    Markdown report, headed ``title``; ``figure_source``: the key of :data:`varsim.figures.SOURCES` whose figures
    draw its summaries (None: no figures)."""

    name: str
    title: str
    claims: Callable[[dict], bool]
    summarize: Callable[..., dict]
    summary_format: str
    table: Callable[[dict, str], str]
    refines: str | None = None
    figure_source: str | None = None

    def render(self, summary: dict) -> str:
        """The Markdown report (``table.md``) of ``summary``."""
        return self.table(summary, self.title)


def kind_for(settings, kinds: dict) -> GridKind:
    """The kind of ``kinds`` (name -> :class:`GridKind`) that owns the grid ``settings`` (a ReproductionSettings or
    its dict): the one kind that claims it and is refined by no other claiming kind; ValueError otherwise."""
    st = settings if isinstance(settings, dict) else settings.to_dict()
    claiming = [k for k in kinds.values() if k.claims(st)]
    refined = {k.refines for k in claiming}
    owners = [k for k in claiming if k.name not in refined]
    if len(owners) != 1:
        raise ValueError(f"settings: {'no grid kind' if not owners else 'several grid kinds'} claim this grid "
                         f"({', '.join(k.name for k in owners) or 'kinds: ' + ', '.join(kinds)})")
    return owners[0]
