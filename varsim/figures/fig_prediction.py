"""Prediction figure: a trained model's accuracy vs set size N, measured and predicted from the training length alone.

The pre-registered test of the long-N accuracy predictor (``docs/experiments/prediction.md``): one panel per held-out
cell (task and key encoding x training recipe; the development recipe, on which the predictor's one constant kappa was
fitted, is not drawn), each showing one softmax run of the cell, by default the run whose predictor error at
N = 1024 is the cell's median (the upper median of its seeds: the worse of the two middle ones), so the panels are
neither the best nor the worst case (``--param run=worst`` draws each cell's worst run, ``run=best`` its best). Black
points: the measured accuracy with its binomial standard error (512 test sets per N up to 1024, 256 beyond). Blue:
the predictor, which measures the model on sets of the training length (16) only and builds longer sets from the
measured items; the other lines are the pre-registered baselines: the accuracy at N = 16 carried over (grey dotted),
a logistic fit in ln N on the measured accuracies at N = 16, 32 and 64 (vermillion dashed; it sees four times longer
sets than the predictor) and the predictor with Gaussian logits (green dash-dot). Each title gives the run's seed and
the predictor's absolute error at N = 1024 with the range over the cell's seeds. The dotted horizontal line is chance,
the grey vertical one the pre-registered test length N = 1024. Numbers: ``varsim/figures/data/prediction/``.
"""

from __future__ import annotations

from varsim.figures import figure_main

from . import _style
from .params import Param, resolve
from .prediction import METHODS, source_of
from .remedies import ENCODING_WORDS, chance_of, log2_axis, recipe_label

NAME = "fig_prediction"
SOURCE = "prediction"  # the data it draws: a key of varsim.figures.SOURCES
#: the length of the pre-registered test
PRIMARY_LENGTH = 1024
#: which run of each cell a panel shows, by the predictor's absolute error at :data:`PRIMARY_LENGTH`
PICKS = ("median", "worst", "best")
PARAMS = (Param("run", "text", "median", "which run of each held-out cell a panel draws, by the predictor's error at "
                f"N = {PRIMARY_LENGTH}: {', '.join(PICKS)} (median: the upper median of the cell's seeds)"),)
#: how each method is drawn: colour, line style
_STYLE = {"predictor": (_style.COLORS[0], "-"), "carry": ("0.45", ":"), "logistic": (_style.COLORS[1], "--"),
          "gaussian": (_style.COLORS[2], "-.")}
#: the chance line: long dashes with two dots, unlike every method's line (the carry-forward line is dotted)
_CHANCE = (0, (7, 2, 1, 2, 1, 2))


def pick_run(errors: list[float], run: str) -> int:
    """The index of the run a panel draws among a cell's runs with these ``errors`` (ties: the first): the upper
    median (``"median"``: of 6 runs the 4th smallest error), the largest (``"worst"``) or the smallest (``"best"``)."""
    order = sorted(range(len(errors)), key=lambda i: (errors[i], i))
    return {"median": order[len(order) // 2], "worst": order[-1], "best": order[0]}[run]


def compute(quick: bool = False, seed: int = 0, *, progress: bool = False, source=None, run=None) -> dict:
    """Per held-out cell: the chosen run's measured accuracy with its binomial SE and every method's prediction vs N,
    and the predictor's error at N = 1024 of each run of the cell. Reads committed data only; ``quick`` and ``seed``
    change nothing."""
    run = resolve(PARAMS, quick, run=run)["run"]
    if run not in PICKS:
        raise ValueError(f"run must be one of {', '.join(PICKS)}, got {run!r}")
    import numpy as np

    src = source_of(source)
    analysis, summary, st = src["analysis"], src["summary"], src["settings"]
    lengths = list(summary["lengths"])
    li = lengths.index(PRIMARY_LENGTH)
    examples = np.asarray(summary["examples"], dtype=float)
    cells: dict[tuple, list[dict]] = {}
    for r in analysis["per_run"]:
        cells.setdefault((r["task"], r["encoding"], r["recipe"]), []).append(r)
    order = list(st.get("recipes") or {})
    panels = []
    for (task, encoding, recipe), runs in sorted(cells.items(), key=lambda kv: (
            kv[0][0], str(kv[0][1]), order.index(kv[0][2]) if kv[0][2] in order else len(order), kv[0][2])):
        runs = sorted(runs, key=lambda r: r["seed"])
        errors = [abs(r["predictions"]["predictor"][li] - r["measured"][li]) for r in runs]
        chosen = runs[pick_run(errors, run)]
        measured = np.asarray(chosen["measured"], dtype=float)
        spec = (st.get("recipes") or {}).get(recipe)
        shared = len({e for t, e, _ in cells if t == task}) == 1  # one key encoding: named in the legend
        words = task if shared or not encoding else f"{task} ({ENCODING_WORDS.get(encoding, f'{encoding} keys')})"
        panels.append({
            "task": task, "encoding": encoding, "recipe": recipe, "run_id": chosen["run_id"], "seed": chosen["seed"],
            "title": f"{words}, {recipe_label(spec, sep=' ') if spec else recipe}",
            "chance": chance_of(st, task), "measured": measured.tolist(),
            "se": np.sqrt(measured * (1.0 - measured) / examples).tolist(),
            "predictions": {m: chosen["predictions"][m] for m in METHODS},
            "error": {m: abs(chosen["predictions"][m][li] - measured[li]) for m in METHODS},
            "cell_errors": errors, "cell_seeds": [r["seed"] for r in runs],
        })
    by_task = {t: {e for u, e, _ in cells if u == t} for t, _, _ in cells}  # a task's one key encoding, in words
    encodings = sorted(f"{t}: {ENCODING_WORDS.get(e, f'{e} keys')}" for t, (e, *more) in by_task.items()
                       if e and not more)
    return {"name": NAME, "quick": bool(quick), "smoke_test": False, "origin": src["origin"], "source": src["source"],
            "footer": src["footer"], "run": run, "lengths": lengths, "examples": summary["examples"],
            "primary_length": PRIMARY_LENGTH, "train_max": st["train"].get("train_max", lengths[0]),
            "kappa": analysis["kappa"]["measured"], "encodings": encodings, "methods": METHODS, "panels": panels}


def draw(data: dict, ax=None, *, style=None, footer: bool = False):
    """A panel per held-out cell (rows: task and key encoding; columns: recipe), one legend below."""
    import numpy as np

    A = _style.array
    n = A(data["lengths"])
    panels = data["panels"]
    rows = list(dict.fromkeys((p["task"], p["encoding"]) for p in panels))
    cols = max(sum(1 for p in panels if (p["task"], p["encoding"]) == r) for r in rows)
    with _style.style(style):
        wide = (_style.style_spec(style)["width"] or 9) >= 4.5  # a narrow panel's title has no room for the range
        fig, axes = _style.subplots(len(rows), cols, ax=ax, style=style, width=3.6, height=3.0, sharex=True,
                                    sharey=True)
        used = set()
        handles = {}
        lw, ms = _style.plt.rcParams["lines.linewidth"], _style.plt.rcParams["lines.markersize"]
        for r, row in enumerate(rows):
            for c, p in enumerate(q for q in panels if (q["task"], q["encoding"]) == row):
                a = axes[r, c]
                used.add((r, c))
                log2_axis(a, data["lengths"])
                handles["chance"] = a.axhline(p["chance"], color="k", ls=_CHANCE, lw=0.9, label="chance")
                handles["primary"] = a.axvline(data["primary_length"], color="0.6", lw=0.9,
                                               label=f"pre-registered test length $N = {data['primary_length']}$")
                for m, label in data["methods"].items():
                    color, ls = _STYLE.get(m, ("0.3", "-"))
                    (handles[m],) = a.plot(n, A(p["predictions"][m]), color=color, ls=ls, label=label,
                                           lw=lw * (1.3 if m == "predictor" else 0.8),
                                           zorder=3 if m == "predictor" else 2)
                handles["measured"] = a.errorbar(n, A(p["measured"]), yerr=A(p["se"]), fmt="o", color="k", ms=0.9 * ms,
                                                 label="measured (binomial SE)", zorder=4)
                errs = p["cell_errors"]
                cell = f" (cell {min(errs):.2f}-{max(errs):.2f})" if wide else ""
                title = p["title"] if wide else p["title"].replace("constant", "const.")
                a.set_title(f"{title}\nseed {p['seed']}: error {p['error']['predictor']:.3f}{cell}",
                            fontsize=None if wide else "small")
                a.set_ylim(0, 1.03)
        for (r, c), a in np.ndenumerate(axes):
            spec = a.get_subplotspec()
            if (r, c) not in used:
                a.set_visible(False)
            elif spec is not None and not spec.is_last_row():
                a.set_xlabel("")
        _style.label_first_column(axes, "test accuracy")
        keys = f"; {'; '.join(data['encodings'])}" if data["encodings"] else ""
        cell_words = " (cell: its range over the cell's seeds)" if wide else ""
        order = ["measured", *data["methods"], "chance", "primary"]
        _style.legend_below(fig, [handles[k] for k in order if k in handles], fontsize="small",
                            title=f"error: the predictor's |predicted - measured| at N = {data['primary_length']}"
                                  f"{cell_words}{keys}; the predictor's one constant "
                                  f"$\\kappa = {data['kappa']:g}$ was fitted on the development runs",
                            title_fontsize="small")
        _style.suptitle(fig, f"Accuracy vs N, measured and predicted from N = {data['train_max']} alone: the "
                        f"{data['run']} run of each held-out cell")
        return _style.finish(fig, data, footer=footer)


#: ``python -m varsim.figures.fig_prediction``: make just this figure
main = figure_main(NAME, __name__)
