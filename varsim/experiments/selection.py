"""The learning-rate axis of a grid: choose the lr of every cell on in-distribution validation only.

A grid with an ``lr_grid`` (:class:`~varsim.experiments.settings.ReproductionSettings`) first runs the selection runs
of :func:`~varsim.experiments.settings.selection_specs` (validation accuracies only), then :func:`select_lr` picks
one lr per cell and the main runs train at it.
"""

from __future__ import annotations

from varsim.experiments.settings import ReproductionSettings, cell_key, cells

__all__ = ["SCORE_TIE", "select_lr"]

#: lr selection: scores closer than this are a tie (equal counts of correct answers summed in another order differ
#: by ~1e-16; a score's resolution is 1 / (validation examples x lengths x seeds), ~1e-4 here)
SCORE_TIE = 1e-9


def select_lr(settings: ReproductionSettings, records: dict) -> dict:
    """Choose the lr of every cell from the selection records (``{run_id: record}`` of
    :func:`~varsim.experiments.settings.selection_specs`).

    Returns ``{"chosen": {cell: lr}, "cells": {cell: {"lr": [...], "score": [...], "per_seed": [[...]], "chosen"}},
    "rule"}``; the score of an lr is the mean over the selection seeds of the mean validation accuracy over the
    validation lengths (a diverged run scores 0); the smallest lr whose score is within :data:`SCORE_TIE` of the
    best is chosen. ValueError when a record is missing.
    """
    by_cell: dict = {}
    for rec in records.values():
        spec = rec["spec"]
        by_cell.setdefault(spec["cell"], {}).setdefault(spec["lr"], {})[spec["seed_index"]] = rec["validation"]["score"]
    chosen, table = {}, {}
    for cell in cells(settings):
        key = cell_key(cell)
        got = by_cell.get(key, {})
        per_seed, scores = [], []
        for lr in settings.lr_grid:
            seeds = got.get(lr, {})
            if len(seeds) != settings.lr_select_seeds:
                raise ValueError(f"selection: cell {key} lr {lr:g} has {len(seeds)} of {settings.lr_select_seeds} "
                                 "selection runs")
            row = [seeds[s] for s in sorted(seeds)]
            per_seed.append(row)
            scores.append(sum(row) / len(row))
        top = max(scores)
        chosen[key] = min(lr for lr, score in zip(settings.lr_grid, scores) if score >= top - SCORE_TIE)
        table[key] = {"lr": list(settings.lr_grid), "score": scores, "per_seed": per_seed, "chosen": chosen[key]}
    return {"chosen": chosen, "cells": table,
            "rule": f"mean validation accuracy over N in {list(settings.validation_lengths)} and the first "
                    f"{settings.lr_select_seeds} seed(s); ties go to the smaller lr"}
