"""Where the remedies figures (``fig_remedies_*``) get their numbers, and what they share.

The source is a results directory of ``varsim reproduce DIR --preset remedies``: its ``summary.json`` (written by
:func:`varsim.experiments.remedies_summary.aggregate_remedies` at the end of the run, or by ``varsim reproduce DIR
--aggregate-only``) holds every statistic the figures draw: accuracy per N with t intervals, paired differences
against softmax with Holm-adjusted p-values over the whole grid, and the weight on the correct item. No remedies
records ship with the package yet, so without ``--remedies-results DIR`` ``varsim figures`` skips these figures
with one line (and draws the others).

Style: one Okabe-Ito colour, marker and line style per variant (more variants than colours: the line style and
marker tell them apart too); trained variants are solid lines, inference-only maps (applied to the softmax runs'
weights) dashed.
"""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["RemediesSource", "variant_style", "panels_of", "panel_lines", "header", "OKABE_ITO"]

#: The eight Okabe-Ito colours (black first: the softmax baseline).
OKABE_ITO = ("#000000", "#E69F00", "#56B4E9", "#009E73", "#0072B2", "#D55E00", "#CC79A7", "#F0E442")
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "h", "*", "p")
_DASHES = ("-", "--", "-.", ":")
#: smoke-test rule: runs of at most this many training steps are the quick preset's tiny models (they do not learn)
QUICK_STEPS = 200


def variant_style(label: str, order: list, kind: str) -> dict:
    """Colour, marker and line style of the variant ``label`` (its index in ``order``, the grid's variant order)."""
    k = order.index(label) if label in order else len(order)
    first = k < len(OKABE_ITO)  # past the eighth variant the colours repeat: another dash pattern tells them apart
    ls = ("-" if first else "-.") if kind == "trained" else ("--" if first else ":")
    return {"color": OKABE_ITO[k % len(OKABE_ITO)], "marker": _MARKERS[k % len(_MARKERS)], "ls": ls}


class RemediesSource:
    """The remedies results directory of one ``varsim figures`` call (``None``: no source; the figures are skipped).

    ``quick``: the figures are stamped "smoke test, not results" (also when the directory's runs are the quick
    preset's tiny models, at most :data:`QUICK_STEPS` training steps)."""

    def __init__(self, results=None, *, quick: bool = False):
        if results is not None and not str(results).strip():
            raise ValueError("remedies_results must not be empty")
        self.results = None if results is None else Path(results)
        if self.results is not None and not self.results.is_dir():
            raise ValueError(f"remedies_results {str(self.results)!r} is not a directory (run `varsim reproduce DIR "
                             "--preset remedies` into it first)")
        self.quick = bool(quick)
        self._data: dict | None = None

    @property
    def available(self) -> bool:
        return self.results is not None

    def check(self) -> None:
        """ValueError naming ``remedies_results`` when there is no source or its summary is missing/corrupt."""
        self.load()

    def load(self) -> dict:
        """``{"summary", "settings", "footer", "smoke_test", "origin", "source"}``, read once."""
        if self._data is not None:
            return self._data
        from varsim.experiments.remedies_summary import REMEDIES_SUMMARY_FORMAT

        if self.results is None:
            raise ValueError("remedies_results: no remedies results; draw these figures from a `varsim reproduce DIR "
                             "--preset remedies` directory with --remedies-results DIR")
        path = self.results / "summary.json"
        try:
            summary = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ValueError(f"remedies_results: {str(path)!r} not found; run `varsim reproduce {self.results} "
                             "--preset remedies` (or --aggregate-only) first") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"remedies_results: {str(path)!r} cannot be read ({exc})") from None
        if not isinstance(summary, dict) or summary.get("format") != REMEDIES_SUMMARY_FORMAT:
            got = summary.get("format") if isinstance(summary, dict) else type(summary).__name__
            raise ValueError(f"remedies_results: {str(path)!r} is not a remedies summary (format {got!r}, expected "
                             f"{REMEDIES_SUMMARY_FORMAT!r}; a paper-grid directory goes to --results)")
        st = summary["settings"]
        tiny = int(st.get("train", {}).get("steps", QUICK_STEPS + 1)) <= QUICK_STEPS
        runs = summary.get("runs", {})
        prov = summary.get("provenance") or {}
        commit = prov.get("git_commit")
        footer = (f"remedies results directory {self.results}: {runs.get('found', '?')} runs, {st['seeds']} seeds"
                  + (f", aggregated at commit {commit[:10]}" if commit else "")
                  + (f" ({str(prov.get('created_utc', ''))[:10]})" if prov.get("created_utc") else "")
                  + (f"; {len(runs['missing'])} runs missing" if runs.get("missing") else ""))
        self._data = {"summary": summary, "settings": st, "footer": footer, "source": str(self.results),
                      "origin": "remedies results directory", "smoke_test": self.quick or tiny}
        return self._data


def header(src: dict, quick: bool) -> dict:
    """The fields every remedies figure's data carries: provenance footer and smoke-test flag."""
    steps = src["settings"].get("train", {}).get("steps")
    return {"quick": bool(quick), "origin": src["origin"], "source": src["source"], "footer": src["footer"],
            "smoke_test": bool(src["smoke_test"]),
            "smoke_reason": f"tiny models, {steps} training steps: they do not learn"}


def source_of(quick: bool, source) -> dict:
    """The loaded remedies source (``source`` from :func:`varsim.figures.make`)."""
    if source is None:
        source = RemediesSource(None, quick=quick)
    return source.load()


def panels_of(summary: dict) -> list[dict]:
    """One panel per (task, architecture, norm, depth) in grid order, with its title and variant order."""
    st = summary["settings"]
    keys = []
    for g in summary["groups"]:
        key = (g["task"], g["architecture"], g["norm"], g["depth"])
        if key not in keys:
            keys.append(key)
    many_arch = len({k[1] for k in keys}) > 1
    many_norm = len({k[2] for k in keys}) > 1
    order = list(st.get("attentions", {})) + list(st.get("inference_attentions", {}))
    out = []
    for task, arch, norm, depth in keys:
        title = f"{task}, {depth} block{'s' if depth > 1 else ''}"
        if many_arch:
            title += f", {arch.replace('_', ' ')}"
        if many_norm:
            title += f", norm {norm}"
        out.append({"task": task, "architecture": arch, "norm": norm, "depth": depth, "title": title,
                    "order": order})
    return out


def panel_lines(summary: dict, panel: dict, statistic: str, extra=None) -> list[dict]:
    """The panel's groups as lines of ``statistic`` (``"accuracy"``, ``"weight_correct"``): mean and interval per N,
    plus the fields ``extra(group)`` returns."""
    key = (panel["task"], panel["architecture"], panel["norm"], panel["depth"])
    return [{"variant": g["variant"], "kind": g["kind"], "n_seeds": g["n_seeds"], "mean": g[statistic]["mean"],
             "ci_low": g[statistic]["ci_low"], "ci_high": g[statistic]["ci_high"], **(extra(g) if extra else {})}
            for g in summary["groups"]
            if (g["task"], g["architecture"], g["norm"], g["depth"]) == key and statistic in g]


def chance_of(settings: dict, task: str) -> float:
    model = settings.get("model", {})
    return 1 / model.get("n_classes", 10) if task == "argmax" else 1 / model.get("value_vocab", 16)
