"""Summarize a results directory into ``summary.json`` and ``table.md``: the paper grid's summary or the remedies
grid's, chosen by the directory's settings."""

from __future__ import annotations

from pathlib import Path

from varsim._common.atomic import atomic_write_json, atomic_write_text
from varsim.experiments.records import load_results
from varsim.experiments.remedies_summary import summarize_remedies
from varsim.experiments.report import render_remedies_table, render_table
from varsim.experiments.reproduction_summary import summarize_reproduction

__all__ = ["aggregate"]

#: does the grid have the remedies axis -> (summary of its runs, Markdown table of that summary)
_SUMMARIES = {False: (summarize_reproduction, render_table), True: (summarize_remedies, render_remedies_table)}


def aggregate(outdir, *, confidence: float = 0.95) -> dict:
    """Summarize the finished runs of ``outdir`` into ``summary.json`` and ``table.md``; return the summary.

    Paper grid (:func:`~varsim.experiments.reproduction_summary.summarize_reproduction`): per task, architecture,
    norm and N, the mean accuracy over seeds with a Student-t interval and the pooled Wilson interval; per norm
    against ``none``, the paired difference over the seeds both have, with its t interval, the paired t-test p-value
    and the exact sign-flip p-value. Remedies grid: :func:`~varsim.experiments.remedies_summary.summarize_remedies`.
    """
    res = load_results(outdir)
    summarize, render = _SUMMARIES[res["settings"].remedies]
    summary = summarize(outdir, res, confidence=confidence)
    out = Path(outdir)
    atomic_write_json(out / "summary.json", summary)
    atomic_write_text(out / "table.md", render(summary))
    return summary
