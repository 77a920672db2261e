"""Where ``fig_prediction`` gets its numbers: the committed analysis of the pre-registered test of the long-N accuracy
predictor (:mod:`varsim.train.predict`, :mod:`varsim.experiments.prediction`, ``docs/experiments/prediction.md``).

The analysis ships with the package (:data:`COMMITTED_DIR`, one copy in the repository: here):
``analysis_test.json`` (what ``python -m varsim.experiments.prediction analyze DIR`` writes: per held-out run the
measured accuracy and every method's prediction at each N, the fitted readout scale kappa, the primary metric),
``analysis_test.md`` (its tables, included by the docs page), ``analysis_explore_readout_any.json`` (the
exploratory readout, not pre-registered) and ``analysis_trained.json`` / ``.md`` (the trained remedies' held-out
test, amendment 2: ``python -m varsim.experiments.prediction analyze-trained DIR``). The measured accuracies in the
analysis are those of the committed remedies summary (:data:`varsim.figures.remedies.COMMITTED_DIR`), which also
gives the lengths, the test-set size at each length (for the binomial standard errors) and the chance levels:
:class:`PredictionSource` reads both and refuses an analysis whose measured accuracies are not the summary's (a stale
copy). Drawing needs no computation, so quick mode draws the same numbers (no smoke-test stamp).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["COMMITTED_DIR", "COMMITTED_FILES", "ANALYSIS_FILE", "METHODS", "method_labels", "read_analysis",
           "PredictionSource", "source_of"]

#: The committed analysis of the predictor's pre-registered test, shipped with the package.
COMMITTED_DIR = Path(__file__).resolve().parent / "data" / "prediction"
#: the held-out analysis the figure draws
ANALYSIS_FILE = "analysis_test.json"
COMMITTED_FILES = (ANALYSIS_FILE, "analysis_test.md", "analysis_explore_readout_any.json", "analysis_trained.json",
                   "analysis_trained.md")


def method_labels(train_max: int, fit_lengths) -> dict:
    """The predictions of each run, in the analysis's keys, with how the figure names them: the predictor and the
    three pre-registered baselines (carry-over of the accuracy at the training maximum ``train_max``, the logistic fit
    on ``fit_lengths``)."""
    return {"predictor": "predictor (measured logits)",
            "carry": f"accuracy at N = {int(train_max)} carried over",
            "logistic": f"logistic in ln N, fitted on N = {', '.join(str(int(n)) for n in fit_lengths)}",
            "gaussian": "predictor with Gaussian logits"}


def _train_max() -> int:
    """The analysis's first length: the training maximum, whose accuracy the carry-over baseline carries
    (:class:`PredictionSource` checks it against the remedies summary's ``train_max``)."""
    from varsim.experiments.prediction import LENGTHS

    return LENGTHS[0]


def _methods() -> dict:
    from varsim.experiments.prediction import LOGISTIC_FIT_LENGTHS

    return method_labels(_train_max(), LOGISTIC_FIT_LENGTHS)


#: :func:`method_labels` of the analysis's training maximum and the logistic baseline's fit lengths
METHODS = _methods()
_RUN_FIELDS = ("run_id", "task", "recipe", "encoding", "seed", "measured", "predictions")


def read_analysis(path=None) -> dict:
    """The held-out analysis at ``path`` (default: the committed one), checked: every run has the fields the figure
    reads and a prediction of every method of :data:`METHODS` at each length of its measurements; a one-line
    ValueError naming the file otherwise."""
    from varsim._common.jsonio import read_json

    path = COMMITTED_DIR / ANALYSIS_FILE if path is None else Path(path)
    data = read_json(path, what="prediction analysis")
    try:
        for key in ("kappa", "seeds", "cells", "per_run", "primary"):
            if key not in data:
                raise ValueError(f"missing field {key!r}")
        if not isinstance(data["per_run"], list) or not data["per_run"]:
            raise ValueError("per_run must be a non-empty list of runs")
        for i, run in enumerate(data["per_run"]):
            absent = [k for k in _RUN_FIELDS if k not in run]
            if absent:
                raise ValueError(f"per_run[{i}] lacks {', '.join(absent)}")
            n = len(run["measured"])
            for m in METHODS:
                if len(run["predictions"].get(m) or []) != n:
                    raise ValueError(f"per_run[{i}] has no {m!r} prediction at each of its {n} lengths")
    except (ValueError, TypeError, AttributeError) as exc:
        raise ValueError(f"prediction analysis {str(path)!r} is not a complete analysis of `python -m "
                         f"varsim.experiments.prediction analyze`: {exc}") from None
    return data


class PredictionSource:
    """The numbers of ``fig_prediction``, read once per ``varsim figures`` call: the committed held-out analysis
    (:data:`COMMITTED_DIR`) and the committed remedies summary its measured accuracies come from.

    ``load()`` returns ``{"analysis", "summary", "settings", "footer", "origin", "source", "smoke_test"}``; it raises
    ValueError when the analysis's measured accuracies are not the summary's softmax accuracies of the same runs."""

    #: no option of varsim.figures.make (the committed analysis only); its gallery section
    OPTIONS = ()
    GALLERY = "Predicting long-N accuracy"

    def __init__(self, analysis=None):
        self.path = COMMITTED_DIR / ANALYSIS_FILE if analysis is None else Path(analysis)
        self.committed = analysis is None
        self._data: dict | None = None

    @property
    def available(self) -> bool:
        return self.path.is_file()

    @classmethod
    def from_options(cls, options: dict) -> PredictionSource:
        """The committed analysis (``varsim figures`` has no option for another: ``python -m
        varsim.experiments.prediction analyze DIR`` writes one, to commit here)."""
        return cls()

    def prepare(self, names: list[str], *, explicit: bool, replot: bool, outdir) -> tuple[list[str], str]:
        """Before :func:`varsim.figures.make` draws the figures ``names``: read and check the data (a ValueError
        before any drawing). Never skips: returns ``([], "")``."""
        if names and not replot:
            self.load()
        return [], ""

    def load(self) -> dict:
        if self._data is not None:
            return self._data
        from .remedies import RemediesSource

        analysis = read_analysis(self.path)
        remedies = RemediesSource().load()
        summary = remedies["summary"]
        train_max = summary["settings"]["train"].get("train_max", summary["lengths"][0])
        if int(train_max) != _train_max():
            raise ValueError(f"prediction analysis {str(self.path)!r}: the remedies summary's training maximum N = "
                             f"{train_max} is not the analysis's first length N = {_train_max()}")
        softmax = {(g["task"], g["recipe"], g["encoding"]): g for g in summary["groups"]
                   if g["variant"] == "softmax" and g.get("depth", 1) == 1}
        for run in analysis["per_run"]:
            g = softmax.get((run["task"], run["recipe"], run["encoding"]))
            if g is None or run["seed"] not in g["seeds"] or len(run["measured"]) != len(summary["lengths"]) \
                    or g["accuracy"]["per_seed"][g["seeds"].index(run["seed"])] != run["measured"]:
                raise ValueError(f"prediction analysis {str(self.path)!r}: the measured accuracies of run "
                                 f"{run['run_id']} are not those of the remedies summary {remedies['source']!r} "
                                 "(rerun `python -m varsim.experiments.prediction analyze DIR` on it)")
        where = "varsim/figures/data/prediction/" + ANALYSIS_FILE if self.committed else str(self.path)
        recipes = {r["recipe"] for r in analysis["per_run"]}
        footer = (f"committed prediction analysis {where}: {len(analysis['per_run'])} held-out runs "
                  f"({len(recipes)} recipes x {len(analysis['seeds'])} seeds), kappa {analysis['kappa']['measured']:g} "
                  f"fitted on {analysis.get('n_dev', '?')} development runs; measured accuracies: {remedies['footer']}")
        self._data = {"analysis": analysis, "summary": summary, "settings": summary["settings"], "footer": footer,
                      "origin": "committed records", "source": str(self.path), "smoke_test": False}
        return self._data


def source_of(source) -> dict:
    """The loaded prediction source (``source`` from :func:`varsim.figures.make`, else the committed data)."""
    return (source if source is not None else PredictionSource()).load()
