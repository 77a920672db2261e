"""What each part of the long-N accuracy predictor contributes (issue 46), computed from the committed analyses of its
pre-registered test (``varsim/figures/data/prediction/analysis_test.json`` and ``analysis_trained.json``, written by
:mod:`varsim.experiments.prediction`).

The predictor has two parts: the **ranking** part (long sets composed from the measured logits at the training
length, so that the correct item's chance of being on top falls with N from the empirical tail of those logits) and
the **readout/variance** part (an example whose correct item is on top is answered with probability
``(1 - lapse) Phi((w_c - kappa tau) / (sigma sqrt(S2)))``, S2 the finite-N sum of squared weights, kappa a fitted
scale). The **ranking-only predictor** keeps the first and drops the second: no readout, no variance term, no fitted
constant; an example is answered when its correct item is on top, and at chance otherwise, as the full predictor
scores it. Its accuracy is ``r + (1 - r) chance``, ``r`` the predicted ranking-correct fraction that every per-run
row of the analyses holds at the primary length (it does not depend on kappa).

Reported, each as the per-seed mean over the held-out runs with a Student-t 95% interval over seeds (the registered
metric): the ranking-only predictor's MAE at N = 1024 and its paired difference from each registered baseline; the
readout/variance part's contribution, the full predictor's MAE minus the ranking-only one (kappa fitted, and kappa = 1);
the same contribution for each trained remedy (kappa frozen); and, secondary, the ranking-correct fraction itself
taken as the accuracy (chance not added). Written with the commit and time that made it and the SHA-256 of the two
analyses it read, so a test notices when one of them changes and this file is not made again.

Run: ``python -m varsim.experiments.prediction_credit`` (writes ``analysis_credit.json`` and ``analysis_credit.md``
beside the analyses).
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import numpy as np

__all__ = ["DATA_DIR", "INPUTS", "ranking_only", "credit", "render_credit", "make_credit", "write_credit"]

DATA_DIR = Path(__file__).resolve().parents[1] / "figures" / "data" / "prediction"
#: the committed analyses this file reads
INPUTS = ("analysis_test.json", "analysis_trained.json")
CREDIT_FORMAT = "varsim.prediction.credit/1"
_BASELINES = ("carry", "logistic", "gaussian")


def ranking_only(row: dict) -> float:
    """The ranking-only predictor's accuracy at the primary length for one per-run row of an analysis."""
    from varsim.tasks import chance_level

    r, chance = row["ranking_correct"]["predicted"], chance_level(row["task"])
    return r + (1.0 - r) * chance


def _abs_errors(rows: list, li: int) -> dict:
    """Per run, each method's absolute error at the primary length (index ``li`` of the per-N lists)."""
    out = []
    for x in rows:
        truth = x["measured"][li]
        err = {m: abs(p[li] - truth) for m, p in x["predictions"].items()}
        err["ranking_only"] = abs(ranking_only(x) - truth)
        err["ranking_fraction"] = abs(x["ranking_correct"]["predicted"] - truth)
        out.append((x["seed"], err))
    return out


def _seed_means(errors: list, seeds: list, fn) -> list:
    return [float(np.mean([fn(e) for s, e in errors if s == sd])) for sd in seeds]


def _t(values) -> dict:
    from varsim.experiments.stats import t_interval

    r = t_interval(np.asarray(values, float))
    return {"mean": r["mean"], "ci_low": r["ci_low"], "ci_high": r["ci_high"], "n": int(r["n"])}


def _held_out(test: dict, li: int) -> dict:
    errors, seeds = _abs_errors(test["per_run"], li), test["seeds"]
    methods = ("ranking_only", "ranking_fraction", "predictor", "predictor_kappa1", *_BASELINES)
    mae = {m: _t(_seed_means(errors, seeds, lambda e, m=m: e[m])) for m in methods}

    def diff(a, b):
        return _t(_seed_means(errors, seeds, lambda e: e[a] - e[b]))

    return {"runs": len(errors), "seeds": seeds, "kappa": test["kappa"]["measured"], "mae": mae,
            "ranking_only_minus": {b: diff("ranking_only", b) for b in _BASELINES},
            "readout_contribution": {"kappa_fitted": diff("predictor", "ranking_only"),
                                     "kappa_1": diff("predictor_kappa1", "ranking_only")},
            "dispersion_underpredicted_cells": _dispersion_cells(test["per_run"])}


def _dispersion_cells(rows: list) -> dict:
    """Per cell, the mean measured and predicted dispersion error at the primary length, and how many cells are
    under-predicted."""
    cells: dict = {}
    for x in rows:
        cells.setdefault(f"{x['task']} {x['encoding'] or ''} {x['recipe']}".replace("  ", " "), []).append(
            (x["dispersion_error"]["measured"], x["dispersion_error"]["predicted"]))
    per = {c: {"measured": float(np.mean([m for m, _ in v])), "predicted": float(np.mean([p for _, p in v]))}
           for c, v in cells.items()}
    return {"cells": len(per), "under": sum(d["predicted"] < d["measured"] for d in per.values()), "per_cell": per}


def _trained(trained: dict, li: int) -> dict:
    out = {}
    for v, d in trained["variants"].items():
        if not d.get("per_run"):
            continue
        errors, seeds = _abs_errors(d["per_run"], li), d["seeds"]
        out[v] = {"runs": len(errors), "seeds": seeds,
                  "mae": {m: _t(_seed_means(errors, seeds, lambda e, m=m: e[m]))
                          for m in ("ranking_only", "predictor", "predictor_kappa1")},
                  "readout_contribution": {
                      "kappa_frozen": _t(_seed_means(errors, seeds, lambda e: e["predictor"] - e["ranking_only"])),
                      "kappa_1": _t(_seed_means(errors, seeds, lambda e: e["predictor_kappa1"] - e["ranking_only"]))}}
    return out


def credit(test: dict, trained: dict) -> dict:
    """The ranking-only baseline and the readout/variance part's contribution (module docstring) from the two
    analyses (as :mod:`varsim.experiments.prediction` writes them)."""
    from varsim.experiments.prediction import LENGTHS, PRIMARY_LENGTH

    li = list(LENGTHS).index(PRIMARY_LENGTH)
    return {"format": CREDIT_FORMAT, "length": PRIMARY_LENGTH, "held_out": _held_out(test, li),
            "trained": _trained(trained, li), "kappa_trained": trained["kappa"]["measured"]}


def _fmt(d: dict, sign: str = "") -> str:
    return f"{d['mean']:{sign}.3f} [{d['ci_low']:{sign}.3f}, {d['ci_high']:{sign}.3f}]"


def render_credit(res: dict) -> str:
    """Markdown tables of :func:`credit`'s result."""
    h = res["held_out"]
    names = {"ranking_only": "ranking only (no readout, no variance term, no fitted constant)",
             "ranking_fraction": "ranking-correct fraction as the accuracy (secondary: chance not added)",
             "predictor": f"full predictor, kappa {h['kappa']:g} (fitted)", "predictor_kappa1": "full predictor, "
             "kappa = 1", "carry": "(a) carry-over", "logistic": "(b) logistic in ln N", "gaussian": "(c) Gaussian "
             "logits"}
    from varsim.experiments.prediction import provenance_lines

    lines = [*provenance_lines(res),
             "Read: " + ", ".join(f"{k} (sha256 {v[:12]})" for k, v in (res.get("inputs") or {}).items())
             + ".", "",
             f"Held out: {h['runs']} softmax runs, seeds {h['seeds']}; MAE at N = {res['length']}, per-seed means "
             "[95% t over seeds].", "", "| predictor | MAE | minus ranking only |", "|---|---|---|"]
    minus = {"predictor": h["readout_contribution"]["kappa_fitted"],
             "predictor_kappa1": h["readout_contribution"]["kappa_1"],
             **{b: _neg(h["ranking_only_minus"][b]) for b in _BASELINES}}
    for m, d in h["mae"].items():
        lines.append(f"| {names[m]} | {_fmt(d)} | {_fmt(minus[m], '+') if m in minus else ''} |")
    wins = [b for b in _BASELINES if h["ranking_only_minus"][b]["ci_high"] < 0]
    lines += ["", "The ranking-only predictor beats (interval of the paired difference below 0): "
              + (", ".join(wins) or "none") + f"; of {len(_BASELINES)} registered baselines.",
              f"Dispersion error under-predicted in {h['dispersion_underpredicted_cells']['under']} of "
              f"{h['dispersion_underpredicted_cells']['cells']} held-out cells (cell means).", "",
              f"Trained remedies (kappa frozen at {res['kappa_trained']:g}): MAE at N = {res['length']}.", "",
              "| variant | runs | ranking only | full predictor | full minus ranking only | kappa = 1 minus ranking "
              "only |", "|---|---|---|---|---|---|"]
    for v, d in res["trained"].items():
        c = d["readout_contribution"]
        lines.append(f"| {v} | {d['runs']} | {_fmt(d['mae']['ranking_only'])} | {_fmt(d['mae']['predictor'])} | "
                     f"{_fmt(c['kappa_frozen'], '+')} | {_fmt(c['kappa_1'], '+')} |")
    return "\n".join(lines) + "\n"


def _neg(d: dict) -> dict:
    """A paired difference a - b as b - a."""
    return {**d, "mean": -d["mean"], "ci_low": -d["ci_high"], "ci_high": -d["ci_low"]}


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def make_credit(data_dir=DATA_DIR) -> dict:
    """:func:`credit` of the analyses in ``data_dir``, with the SHA-256 of each (``inputs``); no provenance."""
    from varsim._common.jsonio import read_json

    data_dir = Path(data_dir)
    test, trained = (read_json(data_dir / name, what="prediction analysis", expect=dict) for name in INPUTS)
    return {**credit(test, trained), "inputs": {name: _sha256(data_dir / name) for name in INPUTS}}


def write_credit(data_dir=DATA_DIR) -> dict:
    """Write ``analysis_credit.json`` (with the provenance: commit, time) and ``analysis_credit.md`` into
    ``data_dir``; return the result."""
    from varsim.experiments.prediction import write_analysis_files

    return write_analysis_files(data_dir, "analysis_credit", make_credit(data_dir), render_credit)


def main(argv=None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m varsim.experiments.prediction_credit",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=str(DATA_DIR), help="the directory of the analyses (default: the package's)")
    args = ap.parse_args(argv)
    print(render_credit(write_credit(args.data)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
