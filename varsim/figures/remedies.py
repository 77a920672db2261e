"""Where the remedies figures (``fig_remedies_*``) get their numbers, and what they share.

The source is a results directory of ``varsim reproduce DIR --preset remedies``: its ``summary.json`` (format
:data:`varsim.experiments.remedies_summary.REMEDIES_SUMMARY_FORMAT`, written by
:func:`varsim.experiments.remedies_summary.summarize_remedies` at the end of the run, or by ``varsim reproduce DIR
--aggregate-only``) holds every statistic the figures draw: the pre-registered primary endpoint (``primary``, Holm
over its own family) and the controls (``controls``) at N = 1024, and per group (task x recipe x key encoding) and
variant the accuracy and the ranking/dispersion decomposition per N with t intervals.

The summary of the last full remedies run ships with the package (:data:`COMMITTED_DIR`, written by
``python -m varsim.figures.remedies RESULTS_DIR``: ``summary.json``, ``table.md``, ``settings.json``): that is what
``varsim figures`` draws by default; ``--remedies-results DIR`` draws another run. The figures need no computation,
so quick mode draws the committed numbers too (unstamped); a results directory of the quick preset's tiny models is
stamped "smoke test, not results".

Panels: one per task and key encoding (argmax; dictionary with binary keys; dictionary with learned keys), the
remedies in two families (trained with the variant; inference-only maps on the softmax weights), each drawn in its own
row so no panel has more than about six series. Style: every series (softmax, each remedy, each control) in its
colour, marker and legend label from the series registry (:mod:`varsim.figures.series`: the same in every figure);
trained remedies solid, inference-only maps dashed, the positive control dotted (the oracle is the ceiling), the null
controls dash-dotted (softmax in distribution: they must sit at 0).
"""

from __future__ import annotations

from pathlib import Path

from varsim.tasks import chance_level

from .source_spec import SourceOption

__all__ = ["GridSummarySource", "RemediesSource", "grid_of", "grid_summary",
           "COMMITTED_DIR", "COMMITTED_FILES", "write_committed", "read_summary", "header",
           "source_of", "chance_of", "panels_of", "panel_key", "PANEL_KEYS", "recipes_of", "recipe_label",
           "FAMILIES", "family_of", "family_variants", "variant_style", "variant_label", "groups_by_key",
           "grid_params", "series_labels", "LINE_STYLES", "FAIL_COLOR", "log2_axis", "draw_gain",
           "significance_entries"]

#: The summary of the last full remedies run, shipped with the package.
COMMITTED_DIR = Path(__file__).resolve().parent / "data" / "remedies"
#: what :func:`write_committed` copies from a results directory (each must be there)
COMMITTED_FILES = ("summary.json", "table.md", "settings.json")
#: files an older format committed that the current one does not have: removed from the destination on commit
OBSOLETE_FILES = ("selection.json",)
#: smoke-test rule: runs of at most this many training steps are the quick preset's tiny models (they do not learn)
QUICK_STEPS = 200

#: the fields of a group that make a panel (the recipe is the x axis or a column, the variant a series)
PANEL_KEYS = ("task", "architecture", "norm", "depth", "encoding")
#: a key encoding in the words of a panel title
ENCODING_WORDS = {"binary": "binary keys", "embedding": "learned keys"}

#: the remedy families, each drawn in its own row of panels: (kind, what the row's titles say)
FAMILIES = (("trained", "trained remedies"), ("inference", "inference-only maps"))
#: the line style of a series by role (a remedy's by kind: trained solid, inference-only dashed)
LINE_STYLES = {"baseline": "-", "positive_control": ":", "negative_control": "-."}
#: the colour of a control that fails its own test (red: no series of the registry has it)
FAIL_COLOR = "#FF0000"
#: the controls in words, by role (a label of its own first)
CONTROL_WORDS = {"oracle": "positive control: all weight on the correct item, the ceiling",
                 "softmax_replicate": "null control",
                 "permuted_softmax": "null control: softmax summed in another key order",
                 "positive_control": "positive control", "negative_control": "null control"}


class GridSummarySource:
    """The numbers of one ``varsim figures`` call from the summary of a grid of kind :attr:`KIND` (a name of
    :data:`varsim.experiments.aggregation.GRID_KINDS` whose ``figure_source`` is :attr:`SOURCE`): the results
    directory ``results``, else the committed summary ``committed`` when this build has one, else none (the figures are
    skipped). A summary of another kind is refused (ValueError naming :attr:`OPTION`).

    ``quick``: the figures of a results directory are stamped "smoke test, not results" (also when its runs are
    the quick preset's tiny models, at most :data:`QUICK_STEPS` training steps); the committed numbers are real
    results in either mode.

    A subclass per kind sets :attr:`KIND`, :attr:`SOURCE`, :attr:`OPTION` and :attr:`PRESET` (its messages follow),
    ``OPTIONS`` (the flag of :attr:`OPTION`, :class:`varsim.figures.source_spec.SourceOption`) and ``GALLERY``,
    and :meth:`committed_label` (:class:`RemediesSource`, :class:`varsim.figures.decoder.DecoderSource`)."""

    #: the grid kind whose summaries this source draws, and this source's key in varsim.figures.SOURCES (the one the
    #: kind names as its figure_source)
    KIND = "remedies"
    SOURCE = "remedies"
    #: the option of :func:`varsim.figures.make` (and, with dashes, of ``varsim figures``) that names a results dir
    OPTION = "remedies_results"
    #: the ``varsim reproduce --preset`` that makes the data
    PRESET = "remedies"

    def __init__(self, results=None, *, quick: bool = False, committed=None):
        self.results = None if results is None else self.checked_dir(results)
        self.committed = Path(committed)
        self.quick = bool(quick)
        self._data: dict | None = None

    @classmethod
    def checked_dir(cls, results) -> Path:
        """``results`` as a Path; ValueError naming :attr:`OPTION` when it is empty or not a directory."""
        if not str(results).strip():
            raise ValueError(f"{cls.OPTION} must not be empty")
        if not Path(results).is_dir():
            raise ValueError(f"{cls.OPTION} {str(results)!r} is not a directory (run `varsim reproduce DIR "
                             f"--preset {cls.PRESET}` into it first)")
        return Path(results)

    def committed_label(self) -> str:
        """How footers name the committed summary: its place in the repository."""
        return f"varsim/figures/data/{self.PRESET}"

    @property
    def from_committed(self) -> bool:
        return self.results is None and (self.committed / "summary.json").is_file()

    @property
    def available(self) -> bool:
        return self.results is not None or self.from_committed

    def check(self) -> None:
        """ValueError naming :attr:`OPTION` when there is no source or its summary is missing/corrupt."""
        self.load()

    @classmethod
    def from_options(cls, options: dict) -> GridSummarySource:
        """The source :func:`varsim.figures.make`'s arguments ``options`` ask for."""
        return cls(options[cls.OPTION], quick=options["quick"])

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
                self.check()  # ValueError naming OPTION: missing source, summary or format
            return [], ""
        flag = "--" + self.OPTION.replace("_", "-")
        return wanted, (f"no {self.PRESET} {'stored data' if replot else 'results'} (draw them with {flag} DIR, a "
                        f"`varsim reproduce DIR --preset {self.PRESET}` directory)")

    def load(self) -> dict:
        """``{"summary", "settings", "footer", "smoke_test", "origin", "source"}``, read once."""
        if self._data is not None:
            return self._data
        if not self.available:
            raise ValueError(f"{self.OPTION}: no {self.PRESET} results in this build; draw these figures from a "
                             f"`varsim reproduce DIR --preset {self.PRESET}` directory with "
                             f"--{self.OPTION.replace('_', '-')} DIR")
        committed = self.from_committed
        where = self.committed if committed else self.results
        summary = read_summary(where, self.OPTION, preset=self.PRESET)
        st = summary["settings"]
        if source_of_grid(summary) != self.SOURCE:
            raise ValueError(f"{self.OPTION}: {str(where)!r} is not a {self.KIND} summary (its grid trains "
                             f"{', '.join(map(str, st.get('architectures') or []))}); give a `varsim reproduce DIR "
                             f"--preset {self.PRESET}` directory")
        tiny = int(st.get("train", {}).get("steps", QUICK_STEPS + 1)) <= QUICK_STEPS
        runs = summary.get("runs", {})
        prov = summary.get("provenance") or {}
        commit = prov.get("git_commit")
        origin = f"committed {self.PRESET} results" if committed else f"{self.PRESET} results directory"
        shown = self.committed_label() if committed else str(self.results)
        footer = (f"{origin} {shown}: {runs.get('found', '?')} runs, {st['seeds']} seeds"
                  + (f", aggregated at commit {commit[:10]}" if commit else "")
                  + (f" ({str(prov.get('created_utc', ''))[:10]})" if prov.get("created_utc") else "")
                  + (f"; {len(runs['missing'])} runs missing" if runs.get("missing") else ""))
        self._data = {"summary": summary, "settings": st, "footer": footer, "source": str(where),
                      "origin": origin, "smoke_test": tiny or (self.quick and not committed)}
        return self._data


class RemediesSource(GridSummarySource):
    """The remedies numbers: a ``varsim reproduce DIR --preset remedies`` directory, else the committed summary
    (:data:`COMMITTED_DIR`)."""

    KIND = PRESET = SOURCE = "remedies"
    OPTION = "remedies_results"
    OPTIONS = (SourceOption(OPTION, "draw the remedies figures (fig_remedies_*) from this `varsim reproduce DIR "
                                    "--preset remedies` directory instead of the committed summary of the last full "
                                    "remedies run"),)
    GALLERY = "Remedies"

    def __init__(self, results=None, *, quick: bool = False, committed=None):
        super().__init__(results, quick=quick, committed=COMMITTED_DIR if committed is None else committed)


def source_of_grid(summary: dict) -> str | None:
    """The figure source (a key of :data:`varsim.figures.SOURCES`) that the grid kind of a summary's settings names
    (its ``figure_source``)."""
    from varsim.experiments.aggregation import kind_of

    return kind_of(summary["settings"]).figure_source


def grid_of(summary: dict) -> str:
    """The name of the grid kind (:func:`varsim.experiments.aggregation.kind_of`) of a summary's settings."""
    from varsim.experiments.aggregation import kind_of

    return kind_of(summary["settings"]).name


def read_summary(directory, name: str = "results", *, preset: str = "remedies") -> dict:
    """The ``summary.json`` of ``directory``; ValueError naming ``name`` (and the ``varsim reproduce --preset`` that
    writes it) when it is missing, unreadable or not of the summary format of the grid kind ``preset``."""
    from varsim._common.jsonio import read_json
    from varsim.experiments.aggregation import grid_kind

    expected = grid_kind(preset).summary_format
    path = Path(directory) / "summary.json"
    if not path.is_file():
        raise ValueError(f"{name}: {str(path)!r} not found; run `varsim reproduce {directory} --preset {preset}` "
                         "(or --aggregate-only) first")
    summary = read_json(path, what=f"{name}: {preset} summary", expect=None)
    if not isinstance(summary, dict) or summary.get("format") != expected:
        got = summary.get("format") if isinstance(summary, dict) else type(summary).__name__
        raise ValueError(f"{name}: {str(path)!r} is not a {preset} summary (format {got!r}, expected "
                         f"{expected!r}; a paper-grid directory goes to --results)")
    return summary


def grid_summary(results, preset: str) -> dict:
    """The summary of the results directory ``results`` (:func:`read_summary`), refused (ValueError naming
    ``results``) when its grid is not of the kind ``preset``."""
    summary = read_summary(results, "results", preset=preset)
    if grid_of(summary) != preset:
        raise ValueError(f"results: {results} is not a {preset} grid (architectures "
                         f"{', '.join(map(str, summary['settings'].get('architectures') or []))}); run `varsim "
                         f"reproduce {results} --preset {preset}` into a directory of its own")
    return summary


def write_committed(results, dest=COMMITTED_DIR, *, allow_incomplete: bool = False,
                    preset: str = "remedies") -> list[Path]:
    """Copy the remedies summary of the results directory ``results`` with its table and settings to ``dest``
    (default: the package data, :data:`COMMITTED_DIR`), remove the files of an older format there
    (:data:`OBSOLETE_FILES`); return the written paths. Refused (ValueError, nothing written) for a directory that is
    not a grid of the kind ``preset`` (its summary format and its settings) or lacks one of :data:`COMMITTED_FILES`,
    and for a summary with missing or corrupt runs unless ``allow_incomplete``. ``preset``: the grid kind, and the
    ``varsim reproduce --preset`` the messages name."""
    from varsim._common.atomic import atomic_write_bytes

    src = Path(results)
    summary = grid_summary(src, preset)
    runs = summary.get("runs", {})
    if (runs.get("missing") or runs.get("corrupt")) and not allow_incomplete:
        raise ValueError(f"results: {src} has {len(runs.get('missing', []))} missing and "
                         f"{len(runs.get('corrupt', []))} corrupt runs; finish it with `varsim reproduce {src} "
                         f"--preset {preset}`")
    absent = [name for name in COMMITTED_FILES if not (src / name).is_file()]
    if absent:
        raise ValueError(f"results: {src} has no {', '.join(absent)}; rerun `varsim reproduce {src} --preset {preset} "
                         "--aggregate-only`")
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    written = [atomic_write_bytes(dest / name, (src / name).read_bytes()) for name in COMMITTED_FILES]
    for name in OBSOLETE_FILES:
        (dest / name).unlink(missing_ok=True)
    return written


def header(src: dict, quick: bool) -> dict:
    """The fields every remedies figure's data carries: provenance footer and smoke-test flag."""
    steps = src["settings"].get("train", {}).get("steps")
    return {"quick": bool(quick), "origin": src["origin"], "source": src["source"], "footer": src["footer"],
            "smoke_test": bool(src["smoke_test"]),
            "smoke_reason": f"tiny models, {steps} training steps: they do not learn"}


def accuracy_fields(src: dict) -> dict:
    """The fields of a figure of accuracy vs N from a loaded source: the seeds, the lengths, the longest training
    set and the confidence of the intervals."""
    summary, st = src["summary"], src["settings"]
    return {"seeds": st["seeds"], "lengths": summary["lengths"], "train_max": st["train"].get("train_max", 16),
            "confidence": summary.get("confidence", 0.95)}


def source_of(quick: bool, source) -> dict:
    """The loaded remedies source (``source`` from :func:`varsim.figures.make`)."""
    if source is None:
        source = RemediesSource(None, quick=quick)
    return source.load()


def chance_of(settings: dict, task: str) -> float:
    """Accuracy of a uniform guess at ``task`` with the settings' vocabulary sizes (the task's ``chance``)."""
    return chance_level(task, settings.get("model", {}))


def panel_key(entry: dict) -> tuple:
    """The panel a group, paired, primary or control row of the summary belongs to (:data:`PANEL_KEYS`)."""
    return tuple(entry.get(k) for k in PANEL_KEYS)


def panels_of(summary: dict) -> list[dict]:
    """One panel per (task, architecture, norm, depth, key encoding) in grid order: its keys and title (the
    architecture, norm and depth only when the grid has more than one of them)."""
    keys = list(dict.fromkeys(panel_key(g) for g in summary["groups"]))
    varies = {k: len({key[i] for key in keys}) > 1 for i, k in enumerate(PANEL_KEYS)}
    out = []
    for key in keys:
        p = dict(zip(PANEL_KEYS, key))
        parts = [p["task"]]
        if p["encoding"]:
            parts.append(ENCODING_WORDS.get(p["encoding"], f"{p['encoding']} keys"))
        if varies["architecture"]:
            parts.append(str(p["architecture"]).replace("_", " "))
        if varies["norm"]:
            parts.append(f"norm {p['norm']}")
        if varies["depth"]:
            parts.append(f"{p['depth']} block{'s' if p['depth'] != 1 else ''}")
        out.append({**p, "title": ", ".join(parts)})
    return out


def recipe_label(spec: dict, sep: str = ", ") -> str:
    """A training recipe (``{"schedule", "lr"}``) in words: ``cosine, lr 1e-3``."""
    lr = spec.get("lr")
    lr_text = "?" if lr is None else f"{lr:.0e}".replace("e-0", "e-")
    return f"{spec.get('schedule', '?')}{sep}lr {lr_text}"


def recipes_of(summary: dict) -> list[dict]:
    """The recipes of the grid in the settings' order, each ``{"key", "label"}``."""
    specs = summary["settings"].get("recipes") or {}
    present = list(dict.fromkeys(g["recipe"] for g in summary["groups"]))
    keys = [k for k in specs if k in present] + [k for k in present if k not in specs]
    return [{"key": k, "label": recipe_label(specs[k]) if k in specs else str(k)} for k in keys]


def groups_by_key(summary: dict) -> dict:
    """The summary's groups by (panel key, recipe, variant)."""
    return {(panel_key(g), g["recipe"], g["variant"]): g for g in summary["groups"]}


def accuracy_line(g: dict) -> dict:
    """A summary group as a line of its accuracy vs N: mean and interval, with what styles and labels it."""
    return {"variant": g["variant"], "kind": g["kind"], "role": g["role"], "n_seeds": g["n_seeds"],
            **{k: g["accuracy"][k] for k in ("mean", "ci_low", "ci_high")}}


def family_of(kind: str) -> str:
    """The family (a kind of :data:`FAMILIES`) of a variant of kind ``kind`` (``"trained"`` or ``"inference"``)."""
    kinds = [k for k, _ in FAMILIES]
    if kind not in kinds:
        raise ValueError(f"kind {kind!r}: expected one of {', '.join(kinds)}")
    return kind


def family_variants(summary: dict) -> dict:
    """``{kind: [remedy, ...]}``: the pre-registered remedies of each family in the endpoint's order."""
    roles = {g["variant"]: (g["kind"], g["role"]) for g in summary["groups"]}
    endpoint = (summary.get("primary_endpoint") or {}).get("variants") or [
        v for v, (_, r) in roles.items() if r == "remedy"]
    out = {k: [] for k, _ in FAMILIES}
    for v in endpoint:
        if v in roles:
            out[family_of(roles[v][0])].append(v)
    return out


def variant_style(name: str, kind: str, role: str, families: dict | None = None) -> dict:
    """Colour and marker of the series ``name`` from the series registry
    (:func:`varsim.figures.series.series_style`: the same in every figure), and its line style by role: trained
    remedies and the baseline solid, inference-only maps dashed, the positive control dotted, the null controls
    dash-dotted. ``families`` (which gave a remedy its colour by position until 0.1.0) is ignored, with a
    DeprecationWarning, until 0.3.0."""
    from .series import series_style

    if families is not None:
        _deprecated("variant_style(..., families) is ignored: colours and markers come from the series registry "
                    "(varsim.figures.series); drop the argument")

    sty = series_style(name)
    ls = LINE_STYLES.get(role, "-" if kind == "trained" else "--")
    return {"color": sty["color"], "marker": sty["marker"], "ls": ls}


def variant_label(name: str, role: str, params: dict | None = None) -> str:
    """The legend label of the series ``name`` drawn at ``params`` (:func:`varsim.figures.series.series_label`);
    a control's followed by its role in words. The call of 0.1.0, ``variant_label(name, kind, role)``, still works
    with a DeprecationWarning until 0.3.0."""
    from .series import series_label

    if role in ("trained", "inference") and isinstance(params, str):
        _deprecated("variant_label(name, kind, role) is now variant_label(name, role, params=None)")
        role, params = params, None

    label = series_label(name, params)
    if role in ("positive_control", "negative_control"):
        return f"{label}: {CONTROL_WORDS.get(name, CONTROL_WORDS[role])}"
    return label


def grid_params(summary: dict) -> dict:
    """``{name: params}``: the parameters of the weight map each series of a summary's grid draws (its settings'
    ``attentions`` ``attention_params`` and ``inference_attentions`` ``params``)."""
    st = summary["settings"]
    out = {name: dict(spec.get("attention_params") or {}) for name, spec in (st.get("attentions") or {}).items()}
    out.update({name: dict(spec.get("params") or {}) for name, spec in (st.get("inference_attentions") or {}).items()})
    return out


def series_labels(summary: dict) -> dict:
    """``{name: legend label}`` of every series of a summary's groups (:func:`variant_label`); a name that is no
    registered weight map or series raises ValueError naming ``series``."""
    params = grid_params(summary)
    roles = {g["variant"]: g["role"] for g in summary["groups"]}
    return {name: variant_label(name, role, params.get(name)) for name, role in roles.items()}


def gain_series(variant: str, kind: str, role: str, got: list) -> dict:
    """A variant's paired gains over the x positions from its primary or control row at each (``got``; None where
    it has none): mean, interval and n, and a remedy's Holm test or a control's own test."""
    test = ("p_holm", "significant") if role == "remedy" else ("p_ttest", "behaves")
    return {"variant": variant, "kind": kind, "role": role,
            **{k: [None if r is None else r[k] for r in got] for k in ("mean_diff", "ci_low", "ci_high", "n", *test)}}


def dodge(j: int, k: int, slot: float) -> float:
    """The x offset of the ``j``-th of ``k`` series dodged inside a slot of width ``slot``."""
    return (j - (k - 1) / 2) * slot / max(k, 1)


def draw_gain(ax, xs, series: dict, style: dict, ms: float) -> bool:
    """Draw one series of paired gains at the x positions ``xs`` (a primary or control row per x: ``mean_diff``,
    ``ci_low``, ``ci_high``, and ``significant`` for a remedy or ``behaves`` for a control) with its intervals: a
    remedy's marker filled when Holm-significant, open when not; a control in its colour, or in :data:`FAIL_COLOR`
    where it fails its own test. Returns whether a control failed."""
    import numpy as np

    from . import _style

    m, lo, hi = _style.array(series["mean_diff"]), _style.array(series["ci_low"]), _style.array(series["ci_high"])
    err = np.vstack([m - lo, hi - m])
    if series["role"] == "remedy":
        ax.errorbar(xs, m, err, fmt="none", ecolor=style["color"], elinewidth=1.1)
        sig = np.array([bool(v) for v in series["significant"]])
        ax.plot(xs[sig], m[sig], ls="none", marker=style["marker"], color=style["color"], ms=ms)
        ax.plot(xs[~sig], m[~sig], ls="none", marker=style["marker"], color=style["color"], mfc="white", ms=ms)
        return False
    bad = np.array([v is False for v in series["behaves"]])
    for sel, color in ((~bad, style["color"]), (bad, FAIL_COLOR)):
        ax.errorbar(xs[sel], m[sel], err[:, sel], fmt=style["marker"], color=color, ms=ms, elinewidth=1.1, mew=1.5)
    return bool(bad.any())


def gain_entry(series: dict, style: dict, ms: float, label: str | None = None) -> tuple:
    """The legend entry ``(handle, label)`` of a series drawn by :func:`draw_gain` (``label``: default its
    :func:`variant_label`)."""
    from matplotlib.lines import Line2D

    handle = Line2D([], [], color=style["color"], ls="none", marker=style["marker"], ms=ms,
                    mew=1.5 if series["role"] != "remedy" else 1.0)
    return handle, variant_label(series["variant"], series["role"]) if label is None else label


def significance_entries(alpha: float, failed: bool) -> list[tuple]:
    """The legend entries ``(handle, label)`` that explain :func:`draw_gain`'s markers: filled, open, and the
    failing-control colour when one failed."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    entries = [(Line2D([], [], color="0.3", marker="o", ls="none"), f"significant after Holm (p ≤ {alpha:g})"),
               (Line2D([], [], color="0.3", marker="o", mfc="white", ls="none"), "not significant after Holm")]
    if failed:
        entries.append((Patch(color=FAIL_COLOR), "control that fails its own test"))
    return entries


def accuracy_band(ax, n, line: dict, style: dict, label: str, **kw):
    """A line of :func:`accuracy_line` on ``ax``: its mean vs N (``n``) with its interval as a band; the line's
    handle."""
    from . import _style

    (h,) = ax.plot(n, _style.array(line["mean"]), color=style["color"], ls=style["ls"], marker=style["marker"],
                   label=label, **kw)
    ax.fill_between(n, _style.array(line["ci_low"]), _style.array(line["ci_high"]), color=style["color"],
                    alpha=0.12, lw=0)
    return h


def guide_lines(ax, train_max: int, chance: float | None = None) -> dict:
    """The guides of an accuracy panel: chance (dotted black, when given) and the longest training set (dashed
    grey); their handles by name."""
    out = {}
    if chance is not None:
        out["chance"] = ax.axhline(chance, color="k", ls=":", lw=1.0, label="chance")
    out["train"] = ax.axvline(train_max, color="0.5", ls="--", lw=0.8,
                              label=f"longest training set ($N = {train_max}$)")
    return out


def gain_legend(fig, entries: list, alpha: float, failed: bool, title: str):
    """The legend below a figure of paired gains: ``entries`` ``(handle, label)``, then what its markers mean
    (:func:`significance_entries`)."""
    from . import _style

    entries = [*entries, *significance_entries(alpha, failed)]
    return _style.legend_below(fig, [h for h, _ in entries], [t for _, t in entries], fontsize="small", title=title,
                               title_fontsize="small")


def log2_axis(ax, lengths) -> None:
    """Set size N on a log2 axis over ``lengths``, labelled."""
    from . import _style

    n = _style.array(lengths)
    ax.set_xscale("log", base=2)
    _style.log2_ticks(ax, float(n.min()), float(n.max()))
    ax.set_xlabel("set size $N$")


def _deprecated(message: str) -> None:
    import warnings

    warnings.warn(f"{message} (deprecated in 0.2.0, removed in 0.3.0)", DeprecationWarning, stacklevel=3)


def __getattr__(name: str):
    """``REMEDY_COLORS`` (the palette a remedy took its colour from by position until 0.1.0), with a
    DeprecationWarning until 0.3.0."""
    if name == "REMEDY_COLORS":
        _deprecated("varsim.figures.remedies.REMEDY_COLORS: a series' colour is varsim.figures.series."
                    "series_style(name)['color']")
        return ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(argv=None) -> int:
    """``python -m varsim.figures.remedies RESULTS_DIR [DEST]``: commit a finished remedies run's summary."""
    from ._commit import commit_main

    return commit_main(argv, prog="python -m varsim.figures.remedies", description=main.__doc__,
                       results_help="a finished `varsim reproduce DIR --preset remedies` directory",
                       default_dest=COMMITTED_DIR, write=write_committed,
                       flags=[("--allow-incomplete", "also a summary with missing runs")])

if __name__ == "__main__":
    raise SystemExit(main())
