"""Remedies figure: test accuracy vs set size N per remedy, for one training recipe, per task and key encoding.

For the recipe :data:`RECIPE` (warmup then cosine decay, peak lr 1e-3; the grid's first recipe when it has not
that one): the accuracy of softmax, of each remedy and of the oracle (the positive control: all weight on the
correct item, the ceiling of any attention-side remedy; dotted), each in its colour, marker and label of the series
registry (:mod:`varsim.figures.series`), mean over the seeds with the 95% Student-t
interval as a band (cut to [0, 1]), at every evaluated N up to 16384. Upper row: trained remedies (solid); lower
row: inference-only maps on the softmax models' own weights (dashed). The dotted black line is chance, the dashed
grey one the longest training set. The gains at N = 1024 under every recipe, with their tests, are
``fig_remedies_primary``'s.
"""

from __future__ import annotations

from varsim.figures import figure_main

from . import _style, remedies
from .params import Param, resolve

NAME = "fig_remedies_accuracy"
SOURCE = "remedies"  # the data it draws: a key of varsim.figures.SOURCES
#: the recipe drawn (a key of the settings' ``recipes``)
RECIPE = "cosine_lr1e3"
#: the parameters of :func:`compute` (``varsim figures --only fig_remedies_accuracy --param recipe=KEY``); the data
#: come from the remedies source (``--remedies-results``), as for every remedies figure
PARAMS = (Param("recipe", "text", None, f"the training recipe drawn, a key of the grid's recipes (default {RECIPE} "
                "where the grid has it, else its first)"),)


def compute(quick: bool = False, seed: int = 0, *, progress: bool = False, source=None, recipe=None) -> dict:
    """Per (task, key encoding), at ``recipe`` (default :data:`RECIPE`, else the grid's first): accuracy vs N of
    softmax, every remedy and the positive controls, with intervals."""
    recipe = resolve(PARAMS, quick, recipe=recipe)["recipe"]
    src = remedies.source_of(quick, source)
    summary, st = src["summary"], src["settings"]
    recipes = {r["key"]: r for r in remedies.recipes_of(summary)}
    if recipe is not None and recipe not in recipes:
        raise ValueError(f"recipe {recipe!r}: expected one of {', '.join(recipes)}")
    chosen = recipe or (RECIPE if RECIPE in recipes else next(iter(recipes)))
    groups = remedies.groups_by_key(summary)
    families = remedies.family_variants(summary)
    wanted = ["softmax", *(v for k, _ in remedies.FAMILIES for v in families[k])]
    wanted += list(dict.fromkeys(g["variant"] for g in summary["groups"] if g["role"] == "positive_control"))
    panels = remedies.panels_of(summary)
    for p in panels:
        p["chance"] = remedies.chance_of(st, p["task"])
        p["lines"] = []
        for v in wanted:
            g = groups.get((remedies.panel_key(p), chosen, v))
            if g is None or "accuracy" not in g:
                continue
            p["lines"].append(remedies.accuracy_line(g))
    return {"name": NAME, **remedies.header(src, quick), **remedies.accuracy_fields(src), "recipe": chosen,
            "recipe_label": recipes[chosen]["label"], "families": families, "labels": remedies.series_labels(summary),
            "panels": panels}


def draw(data: dict, ax=None, *, style=None, footer: bool = False):
    """Rows: trained remedies, inference-only maps (each with softmax and the oracle); columns: task and key
    encoding; one legend below."""
    n = _style.array(data["lengths"])
    conf = int(round(100 * data["confidence"]))
    fams = [(k, words) for k, words in remedies.FAMILIES if data["families"].get(k)]
    with _style.style(style):
        fig, axes = _style.subplots(len(fams), len(data["panels"]), ax=ax, style=style, width=3.6, height=3.1,
                                    sharex=True, sharey=True)
        handles = {}
        for (kind, words), axrow in zip(fams, axes):
            for a, p in zip(axrow, data["panels"]):
                a.set_title(f"{p['title']}: {words}")
                remedies.log2_axis(a, data["lengths"])
                for ln in p["lines"]:
                    if ln["role"] == "remedy" and ln["kind"] != kind:
                        continue
                    sty = remedies.variant_style(ln["variant"], ln["kind"], ln["role"])
                    label = data["labels"][ln["variant"]]
                    h = remedies.accuracy_band(a, n, ln, sty, label,
                                               lw=1.2 if ln["role"] == "positive_control" else None)
                    handles.setdefault(ln["variant"], h)
                handles.update(remedies.guide_lines(a, data["train_max"], p["chance"]))
                a.set_ylim(0, 1.02)
        _style.label_last_row(axes, "set size $N$")
        _style.label_first_column(axes, "test accuracy")
        guides = [handles.pop(k) for k in ("chance", "train")]
        ceilings = [h for v, h in handles.items() if any(ln["variant"] == v and ln["role"] == "positive_control"
                                                         for p in data["panels"] for ln in p["lines"])]
        lines = [h for h in handles.values() if h not in ceilings]
        _style.legend_below(fig, [*lines, *ceilings, *guides], fontsize="small",
                            title="solid: trained with the remedy; dashed: inference-only map on the softmax "
                                  "weights; dotted: the oracle (the ceiling)", title_fontsize="small")
        _style.suptitle(fig, f"Accuracy vs N under one training recipe ({data['recipe_label']}): mean and {conf}% t "
                        f"interval over {data['seeds']} seeds")
        return _style.finish(fig, data, footer=footer)


#: ``python -m varsim.figures.fig_remedies_accuracy --remedies-results DIR``: make just this figure
main = figure_main(NAME, __name__)
