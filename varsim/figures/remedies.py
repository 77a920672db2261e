"""Where the remedies figures (``fig_remedies_*``) get their numbers, and what they share.

The source is a results directory of ``varsim reproduce DIR --preset remedies``: its ``summary.json`` (written by
:func:`varsim.experiments.remedies_summary.summarize_remedies` at the end of the run, or by ``varsim reproduce DIR
--aggregate-only``) holds every statistic the figures draw: accuracy per N with t intervals, paired differences
against softmax with Holm-adjusted p-values over the whole grid, and the weight on the correct item.

The summary of the last full remedies run ships with the package (:data:`COMMITTED_DIR`, written by
``python -m varsim.figures.remedies RESULTS_DIR``: ``summary.json``, ``table.md``, ``settings.json``,
``selection.json``): that is what ``varsim figures`` draws by default; ``--remedies-results DIR`` draws another run.
The figures need no computation, so quick mode draws the committed numbers too (unstamped); a results directory of
the quick preset's tiny models is stamped "smoke test, not results".

Style: one Okabe-Ito colour, marker and line style per variant (more variants than colours: the line style and
marker tell them apart too); trained variants are solid lines, inference-only maps (applied to the softmax runs'
weights) dashed.
"""

from __future__ import annotations

from pathlib import Path

from varsim.tasks import chance_level

__all__ = ["RemediesSource", "COMMITTED_DIR", "COMMITTED_FILES", "write_committed", "variant_style", "variant_label",
           "panels_of", "panel_lines", "panel_row", "panel_grid", "family_rows", "FAMILIES", "draw_lines", "header",
           "OKABE_ITO"]

#: The summary of the last full remedies run, shipped with the package.
COMMITTED_DIR = Path(__file__).resolve().parent / "data" / "remedies"
#: what :func:`write_committed` copies from a results directory (``selection.json`` only when the grid had an lr grid)
COMMITTED_FILES = ("summary.json", "table.md", "settings.json", "selection.json")

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


def variant_label(variant: str, kind: str) -> str:
    """The legend label of a variant: inference-only maps are marked as such."""
    return variant + (" (inference-only)" if kind != "trained" else "")


#: The variant families, each drawn in its own row of panels (the baseline softmax in each row of lines), so no panel
#: has more than about six lines: (kind, what the title says)
FAMILIES = (("trained", "trained with it"), ("inference", "inference-only map"))
BASELINE = "softmax"


def family_rows(panels: list, key: str = "lines") -> list[list[dict]]:
    """``panels`` split by family: one row per family with items of its kind in ``panel[key]`` (lines also keep
    the softmax baseline), each panel's ``order`` cut to them and its title naming the family."""
    rows = []
    for kind, words in FAMILIES:
        row = []
        for p in panels:
            items = [x for x in p[key] if x["kind"] == kind or (key == "lines" and x["variant"] == BASELINE)]
            order = [v for v in p["order"] if v == BASELINE or any(x["variant"] == v for x in items)]
            row.append({**p, key: items, "order": order, "title": f"{p['title']}: {words}"})
        if any(x["variant"] != BASELINE for q in row for x in q[key]):
            rows.append(row)
    return rows


def panel_grid(rows: list, lengths, *, ax=None, style=None):
    """A figure with one row of axes per family row (:func:`family_rows`), each titled, set size N on a log2 axis
    (shared axes; call inside ``_style.style()``). Returns ``(fig, axes)``, ``axes[row][col]``."""
    from . import _style

    n = _style.array(lengths)
    fig, axes = _style.subplots(len(rows), len(rows[0]), ax=ax, style=style, width=3.9, height=3.3, sharex=True,
                                sharey=True)
    for axrow, row in zip(axes, rows):
        for a, p in zip(axrow, row):
            a.set_title(p["title"], fontsize="medium")
            a.set_xlabel("set size $N$")
            a.set_xscale("log", base=2)
            _style.log2_ticks(a, float(n.min()), float(n.max()))
    return fig, axes


def panel_row(panels: list, lengths, *, ax=None, style=None):
    """A figure with one axes per panel side by side (shared axes; call inside ``_style.style()``), each titled,
    with set size N on a log2 axis over ``lengths``. Returns ``(fig, axes)``."""
    from . import _style

    n = _style.array(lengths)
    fig, axes = _style.subplots(1, len(panels), ax=ax, style=style, width=3.9, height=3.9, sharex=True,
                                    sharey=True, layout="constrained")
    for ax, p in zip(axes[0], panels):
        ax.set_title(p["title"])
        ax.set_xlabel("set size $N$")
        ax.set_xscale("log", base=2)
        _style.log2_ticks(ax, float(n.min()), float(n.max()))
    return fig, list(axes[0])


def draw_lines(ax, n, panel: dict, handles: dict, *, band_floor: float | None = None) -> None:
    """The panel's lines (:func:`panel_lines`): the mean per N with its interval as a band; the first line of each
    variant goes into ``handles`` (for one legend under all panels). ``band_floor``: the band's lower end is kept
    above it (a log axis cannot show 0)."""
    import numpy as np

    from . import _style

    for ln in panel["lines"]:
        sty = variant_style(ln["variant"], panel["order"], ln["kind"])
        (h,) = ax.plot(n, _style.array(ln["mean"]), label=variant_label(ln["variant"], ln["kind"]), **sty)
        handles.setdefault(ln["variant"], h)
        lo = _style.array(ln["ci_low"])
        if band_floor is not None:
            lo = np.maximum(lo, band_floor)
        ax.fill_between(n, lo, _style.array(ln["ci_high"]), color=sty["color"], alpha=0.12, lw=0)


class RemediesSource:
    """The remedies numbers of one ``varsim figures`` call: the results directory ``results``, else the committed
    summary (:data:`COMMITTED_DIR`) when this build has one, else none (the figures are skipped).

    ``quick``: the figures of a results directory are stamped "smoke test, not results" (also when its runs are
    the quick preset's tiny models, at most :data:`QUICK_STEPS` training steps); the committed numbers are real
    results in either mode."""

    def __init__(self, results=None, *, quick: bool = False, committed=None):
        if results is not None and not str(results).strip():
            raise ValueError("remedies_results must not be empty")
        self.results = None if results is None else Path(results)
        if self.results is not None and not self.results.is_dir():
            raise ValueError(f"remedies_results {str(self.results)!r} is not a directory (run `varsim reproduce DIR "
                             "--preset remedies` into it first)")
        self.committed = Path(COMMITTED_DIR if committed is None else committed)
        self.quick = bool(quick)
        self._data: dict | None = None

    @property
    def from_committed(self) -> bool:
        return self.results is None and (self.committed / "summary.json").is_file()

    @property
    def available(self) -> bool:
        return self.results is not None or self.from_committed

    def check(self) -> None:
        """ValueError naming ``remedies_results`` when there is no source or its summary is missing/corrupt."""
        self.load()

    @classmethod
    def from_options(cls, options: dict) -> RemediesSource:
        """The source :func:`varsim.figures.make`'s arguments ``options`` ask for."""
        return cls(options["remedies_results"], quick=options["quick"])

    def prepare(self, names: list[str], *, explicit: bool, replot: bool, outdir) -> tuple[list[str], str]:
        """Before :func:`varsim.figures.make` draws the figures ``names``: check this source (ValueError), or, when
        all figures are drawn and there is no remedies source (or, with ``replot``, no stored data in ``outdir``),
        return ``(skipped, why)``."""
        wanted = list(names)
        if replot and not explicit:  # redraw the figures whose data an earlier run stored, skip the others
            wanted = [name for name in wanted if not (Path(outdir) / f"{name}.json").is_file()]
        if not wanted:
            return [], ""
        if explicit or (self.available and not replot):
            if not replot:
                self.check()  # ValueError naming remedies_results: missing source, summary or format
            return [], ""
        return wanted, (f"no remedies {'stored data' if replot else 'results'} (draw them with --remedies-results "
                        "DIR, a `varsim reproduce DIR --preset remedies` directory)")

    def load(self) -> dict:
        """``{"summary", "settings", "footer", "smoke_test", "origin", "source"}``, read once."""
        if self._data is not None:
            return self._data
        if not self.available:
            raise ValueError("remedies_results: no remedies results in this build; draw these figures from a "
                             "`varsim reproduce DIR --preset remedies` directory with --remedies-results DIR")
        committed = self.from_committed
        where = self.committed if committed else self.results
        summary = read_summary(where, "remedies_results")
        st = summary["settings"]
        tiny = int(st.get("train", {}).get("steps", QUICK_STEPS + 1)) <= QUICK_STEPS
        runs = summary.get("runs", {})
        prov = summary.get("provenance") or {}
        commit = prov.get("git_commit")
        origin = "committed remedies results" if committed else "remedies results directory"
        shown = "varsim/figures/data/remedies" if committed else str(self.results)
        footer = (f"{origin} {shown}: {runs.get('found', '?')} runs, {st['seeds']} seeds"
                  + (f", aggregated at commit {commit[:10]}" if commit else "")
                  + (f" ({str(prov.get('created_utc', ''))[:10]})" if prov.get("created_utc") else "")
                  + (f"; {len(runs['missing'])} runs missing" if runs.get("missing") else ""))
        self._data = {"summary": summary, "settings": st, "footer": footer, "source": str(where),
                      "origin": origin, "smoke_test": tiny or (self.quick and not committed)}
        return self._data


def read_summary(directory, name: str = "results") -> dict:
    """The remedies ``summary.json`` of ``directory``; ValueError naming ``name`` when it is missing, unreadable or
    not a remedies summary."""
    from varsim._common.jsonio import read_json
    from varsim.experiments.remedies_summary import REMEDIES_SUMMARY_FORMAT

    path = Path(directory) / "summary.json"
    if not path.is_file():
        raise ValueError(f"{name}: {str(path)!r} not found; run `varsim reproduce {directory} --preset remedies` "
                         "(or --aggregate-only) first")
    summary = read_json(path, what=f"{name}: remedies summary", expect=None)
    if not isinstance(summary, dict) or summary.get("format") != REMEDIES_SUMMARY_FORMAT:
        got = summary.get("format") if isinstance(summary, dict) else type(summary).__name__
        raise ValueError(f"{name}: {str(path)!r} is not a remedies summary (format {got!r}, expected "
                         f"{REMEDIES_SUMMARY_FORMAT!r}; a paper-grid directory goes to --results)")
    return summary


def write_committed(results, dest=COMMITTED_DIR, *, allow_incomplete: bool = False) -> list[Path]:
    """Copy the remedies summary of the results directory ``results`` (and its table, settings and lr selection)
    to ``dest`` (default: the package data, :data:`COMMITTED_DIR`); return the written paths. Refused (ValueError)
    for a summary with missing or corrupt runs unless ``allow_incomplete``."""
    from varsim._common.atomic import atomic_write_bytes

    src = Path(results)
    summary = read_summary(src, "results")
    runs = summary.get("runs", {})
    if (runs.get("missing") or runs.get("corrupt")) and not allow_incomplete:
        raise ValueError(f"results: {src} has {len(runs.get('missing', []))} missing and "
                         f"{len(runs.get('corrupt', []))} corrupt runs; finish it with `varsim reproduce {src} "
                         "--preset remedies`")
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    written = []
    for name in COMMITTED_FILES:
        if (src / name).is_file():
            atomic_write_bytes(dest / name, (src / name).read_bytes())
            written.append(dest / name)
    return written


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
    """Accuracy of a uniform guess at ``task`` with the settings' vocabulary sizes (the task's ``chance``)."""
    return chance_level(task, settings.get("model", {}))


def main(argv=None) -> int:
    """``python -m varsim.figures.remedies RESULTS_DIR [DEST]``: commit a finished remedies run's summary."""
    from ._commit import commit_main

    return commit_main(argv, prog="python -m varsim.figures.remedies", description=main.__doc__,
                       results_help="a finished `varsim reproduce DIR --preset remedies` directory",
                       default_dest=COMMITTED_DIR, write=write_committed,
                       flags=[("--allow-incomplete", "also a summary with missing runs")])

if __name__ == "__main__":
    raise SystemExit(main())
