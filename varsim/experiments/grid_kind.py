"""What one kind of grid owns: which grids are of that kind, their summary, its format and its Markdown table.

A kind is a :class:`GridKind` defined in the module of its grid (the paper reproduction in
:mod:`~varsim.experiments.reproduction_summary`, the remedies grid in :mod:`~varsim.experiments.remedies`, the decoder
grid in :mod:`~varsim.experiments.decoder_grid`) and registered in
:data:`varsim.experiments.aggregation.GRID_KINDS`; it names the figure source that draws its summaries
(``figure_source``, a key of :data:`varsim.figures.SOURCES`).

A kind owns the validation of the settings fields it adds: its checks are a :class:`KindChecks` of
:data:`KIND_CHECKS`, registered under the kind's name where its fields are declared (the remedies kind's, which the
decoder kind refines: :mod:`~varsim.experiments.variant_axis`), and
:class:`~varsim.experiments.settings.ReproductionSettings` runs every registered kind's checks that claim the grid
(:func:`check_kind_settings`) after the checks of the fields every grid shares; :attr:`GridKind.settings_checks`
gives a kind's own. The registry sits on the grid's floor, below the settings, so that building any settings asks
it (a kind's module, above the settings, could not be imported from there). A new kind is a module, its checks
registered in :data:`KIND_CHECKS`, and one line in ``GRID_KINDS``.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

from varsim._common.registry import Registry

__all__ = ["GridKind", "kind_for", "KindChecks", "KIND_CHECKS", "check_kind_settings"]


@dataclasses.dataclass(frozen=True)
class KindChecks:
    """The settings checks a grid kind owns: ``checks``, each ``check(settings, set_)`` (``settings`` a
    :class:`~varsim.experiments.settings.ReproductionSettings` being built, ``set_(field, value)`` stores a normalized
    value; ValueError naming the field), run in order on the grids ``claims(settings)`` accepts (None: every grid, for
    checks of fields every settings object carries, whose defaults pass). ``name``: the kind's name in
    ``GRID_KINDS``."""

    name: str
    checks: tuple[Callable, ...]
    claims: Callable | None = None


#: kind name -> :class:`KindChecks`: the settings checks of each grid kind, asked by every settings object
KIND_CHECKS = Registry("grid kind", kind=KindChecks)


def check_kind_settings(settings, set_) -> None:
    """Run the checks of every kind of :data:`KIND_CHECKS` that claims ``settings`` (in registration order; a later
    check may read a field an earlier one normalized)."""
    for name in KIND_CHECKS:
        entry = KIND_CHECKS.find(name)
        if entry.claims is None or entry.claims(settings):
            for check in entry.checks:
                check(settings, set_)


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

    @property
    def settings_checks(self) -> tuple[Callable, ...]:
        """The settings checks this kind owns (:data:`KIND_CHECKS`; a refining kind adds to those of the kind it
        refines, which run on its grids too); () when it registered none."""
        return KIND_CHECKS.find(self.name).checks if self.name in KIND_CHECKS else ()


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
