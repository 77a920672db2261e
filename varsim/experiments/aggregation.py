"""The registry of grid kinds (:data:`GRID_KINDS`) and the summary of a results directory: ``summary.json`` and
``table.md``, as the kind of the directory's grid makes them."""

from __future__ import annotations

from pathlib import Path

from varsim._common.atomic import atomic_write_json, atomic_write_text
from varsim._common.registry import lookup, register
from varsim.experiments.decoder_grid import DECODER_KIND
from varsim.experiments.grid_kind import GridKind, kind_for
from varsim.experiments.records import load_results
from varsim.experiments.remedies import REMEDIES_KIND
from varsim.experiments.reproduction_summary import REPRODUCTION

__all__ = ["GRID_KINDS", "grid_kind", "kind_of", "aggregate"]

#: name -> :class:`~varsim.experiments.grid_kind.GridKind`: the paper reproduction, the remedies grid, the decoder
#: grid. A new kind: its module (a GridKind) and one line here.
GRID_KINDS: dict[str, GridKind] = {}
for _kind in (REPRODUCTION, REMEDIES_KIND, DECODER_KIND):
    register(GRID_KINDS, _kind, what="grid kind", kind=GridKind)


def grid_kind(name: str) -> GridKind:
    """The kind ``name`` (ValueError ``unknown grid kind ...`` otherwise)."""
    return lookup(GRID_KINDS, name, param="grid kind")


def kind_of(settings) -> GridKind:
    """The kind of the grid ``settings`` (a ReproductionSettings or its dict: ``settings.json``'s, a summary's)."""
    return kind_for(settings, GRID_KINDS)


def aggregate(outdir, *, confidence: float = 0.95) -> dict:
    """Summarize the finished runs of ``outdir`` into ``summary.json`` and ``table.md``; return the summary.

    The kind of the grid (:func:`kind_of`) makes both: the paper grid
    (:func:`~varsim.experiments.reproduction_summary.summarize_reproduction`) per task, architecture, norm and N, the
    mean accuracy over seeds with a Student-t interval and the pooled Wilson interval, and per norm against ``none``
    the paired difference over the seeds both have (t interval, paired t-test and exact sign-flip p-values); the
    remedies and decoder grids :func:`~varsim.experiments.remedies_summary.summarize_remedies`.
    """
    res = load_results(outdir)
    kind = kind_of(res["settings"])
    summary = kind.summarize(outdir, res, confidence=confidence)
    out = Path(outdir)
    atomic_write_json(out / "summary.json", summary)
    atomic_write_text(out / "table.md", kind.render(summary))
    return summary
