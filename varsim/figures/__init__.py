"""The varsim figures: one module per figure, a registry, and :func:`make` behind ``varsim figures``.

Each figure module in :data:`FIGURES` provides

- ``SOURCE`` (optional): the name of the data source it draws, a key of :data:`SOURCES` (``"reproduction"``,
  ``"probe"``, ``"remedies"``, ``"decoder"``, ``"prediction"``); a module without one computes its own data (simulator
  and theory);
- ``compute(quick=False, seed=0, *, progress=False, source=None) -> dict``: runs the simulator and the theory (or
  reads ``source``, the object its ``SOURCE`` names, e.g. a :class:`varsim.figures.reproduction.ReproductionSource`)
  and returns plain data, including a ``footer`` saying where the numbers come from;
- ``draw(data) -> matplotlib Figure`` (:func:`plot` saves it as PNG + PDF).
- ``PARAMS`` (optional): the parameters that shape the figure, each a :class:`varsim.figures.params.Param` with its
  default and bounds, which ``compute`` takes as keywords and checks with :func:`varsim.figures.params.resolve`
  (``varsim figures --only NAME --param name=value``; ``--param list`` prints them).

Each data source class has ``from_options(options)`` (built from :func:`make`'s keyword arguments), ``load()`` and
``prepare(names, *, explicit, replot, outdir)``, which checks it before any drawing (a ValueError naming the option)
or names the figures to skip, with the reason, when all figures are drawn and the source has no data in this build;
beside it, ``OPTIONS`` (the keyword options of :func:`make` it reads, each with its ``varsim figures`` flag) and
``GALLERY`` (its section of the documentation's gallery), which :func:`make`, the command line and the docs read
(:mod:`varsim.figures.source_spec`). Adding a figure: its module and one line in :data:`FIGURES`; adding a data
source: its class and one line in :data:`SOURCES`.

The reproduction figures (``fig_repro_*``) are drawn from the compact records of the last full reproduction that
ship with the package (``varsim/figures/data/reproduction``, see :mod:`varsim.figures.reproduction`), so a fresh
install draws every figure in minutes; ``--results DIR`` reads a ``varsim reproduce`` directory instead and
``--rerun`` runs (or resumes) the full reproduction into it first. Quick mode runs a tiny reproduction whose models
do not learn: every quick figure is stamped "smoke test, not results".

The real-model figures (``fig_probe_*``) are drawn from the ``varsim probe-model`` results of the two shipped models
and of three trained decoders of the decoder grid, which ship with the package (``varsim/figures/data/probe``, see
:mod:`varsim.figures.probe`); ``--probe-results FILE ...`` draws a user's own probe files instead. They need no
computation, so quick mode draws the same real data (no smoke-test stamp).
The remedies figures (``fig_remedies_*``, :mod:`varsim.figures.remedies`) are drawn from the summary of the last full
remedies run that ships with the package (``varsim/figures/data/remedies``), or from a ``varsim reproduce DIR
--preset remedies`` directory given as ``--remedies-results DIR``. A build without that summary skips them with one
line on stderr and draws the others (naming one of them explicitly with ``--only`` is an error instead). The decoder
figures (``fig_decoder_*``, :mod:`varsim.figures.decoder`) likewise, from ``varsim/figures/data/decoder`` or
``--decoder-results DIR [DIR ...]`` (``varsim reproduce DIR --preset decoder`` or ``decoder_constant`` directories, one
per training recipe). The prediction figure (``fig_prediction``, :mod:`varsim.figures.prediction`) draws the committed
analysis of the long-N accuracy predictor's pre-registered test (``varsim/figures/data/prediction``) with the measured
accuracies of the committed remedies summary.

Each figure's data is stored next to it as ``<name>.json``, so ``--replot`` redraws without recomputing. Importing
this package loads neither Matplotlib nor NumPy.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from pathlib import Path

__all__ = ["FIGURES", "SOURCES", "DEFAULT_OUTDIR", "load", "data_source", "plot", "make", "register", "run_args",
           "main", "figure_main", "figure_line", "read_stored", "draw_stored", "source_args",
           "figure_values", "source_class", "source_options", "gallery_groups"]

#: The registry: figure name -> module (inside this package), in the order they are made. Add new figures here.
FIGURES: dict[str, str] = {
    "fig_variance_vs_n": "varsim.figures.fig_variance_vs_n",
    "fig_decay_exponent": "varsim.figures.fig_decay_exponent",
    "fig_random_query": "varsim.figures.fig_random_query",
    "fig_law_sphere": "varsim.figures.fig_law_sphere",
    "fig_law_uniform": "varsim.figures.fig_law_uniform",
    "fig_law_rademacher": "varsim.figures.fig_law_rademacher",
    "fig_law_empirical": "varsim.figures.fig_law_empirical",
    "fig_repro_accuracy": "varsim.figures.fig_repro_accuracy",
    "fig_repro_std": "varsim.figures.fig_repro_std",
    "fig_repro_hist": "varsim.figures.fig_repro_hist",
    "fig_repro_global": "varsim.figures.fig_repro_global",
    "fig_repro_attention": "varsim.figures.fig_repro_attention",
    "fig_probe_std": "varsim.figures.fig_probe_std",
    "fig_probe_slopes": "varsim.figures.fig_probe_slopes",
    "fig_probe_decomposition": "varsim.figures.fig_probe_decomposition",
    "fig_probe_layers": "varsim.figures.fig_probe_layers",
    "fig_variants_ipr": "varsim.figures.fig_variants_ipr",
    "fig_remedies_primary": "varsim.figures.fig_remedies_primary",
    "fig_remedies_decomposition": "varsim.figures.fig_remedies_decomposition",
    "fig_remedies_accuracy": "varsim.figures.fig_remedies_accuracy",
    "fig_decoder_primary": "varsim.figures.fig_decoder_primary",
    "fig_decoder_accuracy": "varsim.figures.fig_decoder_accuracy",
    "fig_prediction": "varsim.figures.fig_prediction",
}
#: The data sources a figure module may name as its ``SOURCE``: name -> (module, class), in the gallery's order;
#: :func:`make` builds each with ``cls.from_options(options)``, ``options`` being its own keyword arguments (those the
#: classes declare in ``OPTIONS``).
SOURCES: dict[str, tuple[str, str]] = {
    "reproduction": ("varsim.figures.reproduction", "ReproductionSource"),
    "remedies": ("varsim.figures.remedies", "RemediesSource"),
    "probe": ("varsim.figures.probe", "ProbeSource"),
    "decoder": ("varsim.figures.decoder", "DecoderSource"),
    "prediction": ("varsim.figures.prediction", "PredictionSource"),
}

#: Where the figures go by default: ``figures/out`` under the current directory (the checkout's root, usually).
DEFAULT_OUTDIR = Path("figures") / "out"


def load(name: str):
    """Import the figure module ``name`` (a key of :data:`FIGURES`); unknown names raise ValueError."""
    from varsim._common.registry import lookup

    return importlib.import_module(lookup(FIGURES, name, param="figure"))


def data_source(name: str) -> str | None:
    """The data source figure ``name`` draws (its module's ``SOURCE``, a key of :data:`SOURCES`), or None when it
    computes its own data; an unknown ``SOURCE`` raises ValueError."""
    from varsim._common.registry import lookup

    kind = getattr(load(name), "SOURCE", None)
    if kind is not None:
        try:
            lookup(SOURCES, kind, param="data source")
        except ValueError as exc:
            raise ValueError(f"figure {name!r}: {exc}") from None
    return kind


def plot(name: str, data: dict, outdir, *, with_data: bool = False) -> list[Path]:
    """Draw figure ``name`` from its ``compute`` data into ``outdir``; return the PNG and PDF paths. With
    ``with_data`` the data's JSON is written too, in one set with the pictures (all replaced or none)."""
    from ._style import draw_and_save

    return draw_and_save(load(name).draw, data, outdir, name, with_data=with_data)


def _log(enabled: bool, message: str) -> None:
    if enabled:
        print(message, file=sys.stderr, flush=True)


def read_stored(path: Path) -> dict:
    """The stored data of one figure (``--replot``), or a ValueError naming the file and what is wrong with it."""
    from varsim._common.jsonio import read_json

    if not path.is_file():
        raise ValueError(f"replot: no stored data {str(path)!r}; run without --replot first")
    data = read_json(path, what="replot: stored figure data")
    if data.get("name") != path.stem:
        raise ValueError(f"replot: {str(path)!r} does not hold the data of figure {path.stem!r}")
    return data


def draw_stored(name: str, data: dict, path: Path, outdir, *, style=None, footer: bool = False) -> list[Path]:
    """Draw figure ``name`` from the stored data read from ``path`` (``--replot``, in any style): data its ``draw``
    cannot read (a field missing or of the wrong type: the file was edited or damaged) is a ValueError naming the
    file."""
    from ._style import draw_and_save

    try:
        return draw_and_save(load(name).draw, data, outdir, name, style=style, footer=footer)
    except (KeyError, TypeError, IndexError, AttributeError, ValueError) as exc:
        import matplotlib.pyplot as plt

        plt.close("all")
        raise ValueError(f"replot: {str(path)!r} does not hold valid data of figure {name!r} "
                         f"({type(exc).__name__}: {exc}); run without --replot to recompute it") from None


def make(
    names=None,
    *,
    outdir=DEFAULT_OUTDIR,
    quick: bool = False,
    seed: int = 0,
    progress: bool | None = None,
    replot: bool = False,
    on_figure=None,
    jobs: int = 1,
    on_start=None,
    max_work: float | None = None,
    params: dict | None = None,
    texts=None,
    style=None,
    footer: bool = False,
    flags: dict | None = None,
    **sources,
) -> dict[str, list[Path]]:
    """Compute and plot the figures ``names`` (default: all) into ``outdir``; return the written files.

    ``on_figure(name, data_from, seconds, paths)`` is called after each figure (``data_from``: where its numbers
    came from, e.g. ``"committed records"`` or ``"simulated"``); ``varsim figures`` prints its summary table from it
    (and its total: with ``on_figure``, the progress lines end without one). ``on_start(names, jobs)`` is called
    once every check has passed, before the first figure is computed (``jobs``: the processes used).

    Before any work, the figures that compute their own data and declare ``work(quick, **params)`` (their estimated
    key-coordinates, :func:`varsim.sim.simulate_work`) are summed; a total above ``max_work`` (default
    :data:`varsim.sim.DEFAULT_FIGURE_MAX_WORK`, about ten minutes on 2 cores) is a ValueError naming each figure's
    share: raise ``max_work`` (``--max-work``) for a deliberately long run.

    ``progress`` (default: stderr is a terminal) prints one status line per figure and lets the simulator show
    its own progress. ``replot`` reuses ``<outdir>/<name>.json`` from an earlier run. The reproduction figures
    read the committed records (default), the ``varsim reproduce`` directory ``results``, or, with ``rerun``, a
    full reproduction run (or resumed) into ``results`` (default ``results/reproduce``) first; ``quick`` runs a
    tiny one instead (smoke test). The real-model figures (``fig_probe_*``) read the committed probe results, or
    the ``varsim probe-model`` JSON files ``probe_results``. The remedies figures read the committed remedies
    summary or the remedies results directory ``remedies_results``, the decoder figures (``fig_decoder_*``) the
    committed decoder summaries or the decoder results directories ``decoder_results`` (one per training recipe);
    when there is neither they are skipped with one line on stderr when ``names`` is None (all figures), and refused
    (ValueError) when named.

    ``jobs`` (default 1: one figure after the other, in this process) computes independent figures in that many
    worker processes (``0``: one per core this process may use, see :func:`varsim.jobs.executor.default_workers`):
    each figure that computes its own data is one job, the figures of one data source together are another (the
    source is loaded once). Each job is seeded as in a serial run, so the files are the same; ``on_figure`` and the
    progress lines come as each job ends, and the returned dict is in the order of ``names``.

    The data sources' options (``results``, ``rerun``, ``probe_results``, ``remedies_results``, ``decoder_results``:
    those the classes of :data:`SOURCES` declare) come as keywords; another keyword is a ValueError naming it.

    Figures with the user's parameters and style (``varsim figures --only NAME --param tau=0.8 --style column``):
    ``params`` (name -> value, None entries ignored) and ``texts`` (``(name, text)`` pairs, ``--param name=text``)
    set the parameters the named figures declare (:mod:`varsim.figures.params`), each checked against every named
    figure's declaration before any work (:func:`figure_values`; ``flags`` says how the caller
    names a parameter in messages, default ``--param NAME``); ``style`` (:data:`varsim.figures._style.STYLES` or a
    dict of rcParams) and ``footer`` how each is drawn, ``replot`` included. With any of them, ``names`` must be
    given and ``jobs`` must be 1.
    """
    from varsim._common.atomic import check_writable
    from varsim._common.validate import check_int

    from ._style import style_spec

    explicit = names is not None
    names = list(FIGURES) if names is None else list(names)
    if not names:
        raise ValueError("names must not be empty")
    kinds = {name: data_source(name) for name in names}  # validates every name before any work
    seed = check_int("seed", seed, minimum=0)
    jobs = check_int("jobs", jobs, minimum=0)
    style_spec(style)  # an unknown style fails before any work
    custom = bool(params or texts or style is not None or footer)
    if custom and not explicit:
        raise ValueError("only: name the figures to draw with parameters or a style (--only NAME ...)")
    if custom and jobs != 1:
        raise ValueError("jobs: figures with parameters, a style or a footer are drawn one after the other "
                         "(jobs=1)")
    values = figure_values(names, params, texts, flags=flags, replot=replot)
    if not replot:
        _check_work(names, kinds, values, quick, max_work)
    options = _source_options(quick, seed, progress, sources)
    built = {kind: _source(kind, options) for kind in SOURCES}
    names = _prepare_sources(built, names, kinds, explicit=explicit, replot=replot, outdir=outdir)
    outdir, stored = _prepare_outdir(outdir, names, replot)
    if not names:
        return {}
    check_writable(outdir / f"{names[0]}.png", "outdir")  # fail now, not after minutes of simulation
    show = sys.stderr.isatty() if progress is None else bool(progress)
    done: dict[str, tuple[str, float, list[Path]]] = {}

    def finished(name: str, data_from: str, seconds: float, paths: list[Path]) -> None:
        done[name] = (data_from, seconds, paths)
        _log(show, f"[{len(done)}/{len(names)}] {name}: done in {seconds:.1f} s")
        if on_figure is not None:
            on_figure(name, data_from, seconds, paths)

    groups = _job_groups(names, kinds)
    if jobs == 0:
        from varsim.jobs.executor import default_workers

        jobs = default_workers()
    jobs = 1 if replot else max(1, min(jobs, len(groups)))
    start = time.perf_counter()
    if on_start is not None:
        on_start(list(names), jobs)
    if jobs <= 1:
        for i, name in enumerate(names, 1):
            if not replot:
                _log(show, f"[{i}/{len(names)}] {name}: computing ({'quick' if quick else 'full'} mode)")
            finished(name, *_make_one(name, kinds[name], built.get(kinds[name]), outdir, quick=quick, seed=seed,
                                      progress=show, stored=stored.get(name), params=values[name], style=style,
                                      footer=footer))
    else:
        _log(show, f"computing {len(names)} figures ({'quick' if quick else 'full'} mode) in {jobs} processes")
        _make_groups(groups, kinds, options, outdir, jobs, finished)
    _log(show and len(names) > 1 and on_figure is None,
         f"all {len(names)} figures in {time.perf_counter() - start:.1f} s wall time -> {outdir}")
    return {name: [outdir / f"{name}.json", *done[name][2]] for name in names}



def _prepare_sources(sources: dict, names: list, kinds: dict, *, explicit: bool, replot: bool, outdir) -> list:
    """Let each data source prepare its figures (``prepare``); ``names`` without those it skips, each skip told on
    stderr."""
    for kind, src in sources.items():
        skipped, why = src.prepare([n for n in names if kinds[n] == kind], explicit=explicit, replot=replot,
                                   outdir=outdir)
        if skipped:
            print(f"varsim figures: skipping {', '.join(skipped)}: {why}", file=sys.stderr)
            names = [name for name in names if name not in skipped]
    return names


def _prepare_outdir(outdir, names: list, replot: bool) -> tuple[Path, dict]:
    """``outdir`` checked and created, and with ``replot`` the data each figure stored there before."""
    if isinstance(outdir, str) and not outdir.strip():
        raise ValueError("outdir must not be empty")
    outdir = Path(outdir)
    if outdir.exists() and not outdir.is_dir():
        raise ValueError(f"outdir {str(outdir)!r} is not a directory")
    stored = {name: read_stored(outdir / f"{name}.json") for name in names} if replot else {}
    try:
        outdir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"outdir {str(outdir)!r} cannot be created ({exc.strerror})") from None
    return outdir, stored


def _make_groups(groups: list, kinds: dict, options: dict, outdir: Path, jobs: int, finished) -> None:
    """Make the figures of ``groups`` in ``jobs`` worker processes, one job per group; ``finished(name, data_from,
    seconds, paths)`` after each figure, as each job ends."""
    from varsim.jobs.executor import run_jobs

    work = [{"names": group, "kind": kinds[group[0]], "options": {**options, "progress": False},
             "outdir": str(outdir)} for group in groups]

    def group_done(_, rows):
        for name, row in rows:
            finished(name, *row)

    run_jobs(_make_group, work, workers=jobs, on_result=group_done)

def figure_values(names, params: dict | None = None, texts=None, *, flags: dict | None = None,
                  replot: bool = False) -> dict[str, dict]:
    """``{name: {parameter: value}}`` for the figures ``names``: ``params`` (not None) and ``texts`` (``(name,
    text)`` pairs, each parsed by the figure's declaration), every one declared by every figure named; ``flags``:
    how the caller names a parameter in its messages (``{"betas": "--beta"}``; default ``--param NAME``). A
    parameter given twice, unknown to a figure, with a bad value, or given with ``replot`` is a ValueError."""
    params = {k: v for k, v in (params or {}).items() if v is not None}
    texts = list(texts or ())
    flag = lambda p: (flags or {}).get(p, f"--param {p}")  # noqa: E731
    given = [*params, *(name for name, _ in texts)]
    repeated = sorted({n for n in given if given.count(n) > 1})
    if repeated:
        raise ValueError(f"{flag(repeated[0])}: given more than once")
    per_figure = {}
    for name in names:
        accepted = {p.name: p for p in getattr(load(name), "PARAMS", ())} if given else {}
        unknown = [p for p in given if p not in accepted]
        if unknown:
            raise ValueError(f"{flag(unknown[0])}: figure {name!r} takes no such parameter (it takes: "
                             f"{', '.join(map(flag, accepted)) or 'none'})")
        values = dict(params)
        for key, text in texts:
            try:
                values[key] = accepted[key].parse(text)
            except ValueError as exc:
                raise ValueError(f"--param {exc}") from None
        per_figure[name] = values
    if replot and given:
        raise ValueError(f"replot: redraws stored data, so it takes no figure parameters "
                         f"({', '.join(map(flag, given))})")
    return per_figure


def _check_work(names: list, kinds: dict, values: dict, quick: bool, max_work) -> None:
    """Refuse (ValueError naming ``max_work``) figures whose summed estimated work exceeds ``max_work``."""
    from varsim._common.validate import check_real
    from varsim.sim import DEFAULT_FIGURE_MAX_WORK

    bound = DEFAULT_FIGURE_MAX_WORK if max_work is None else check_real("max_work", max_work, minimum=0.0,
                                                                        strict_min=True)
    shares = {name: float(load(name).work(quick, **values[name])) for name in names
              if kinds[name] is None and hasattr(load(name), "work")}
    total = sum(shares.values())
    if total > bound:
        worst = ", ".join(f"{n} {w:.3g}" for n, w in sorted(shares.items(), key=lambda kv: -kv[1]))
        raise ValueError(f"max_work: the figures' estimated work {total:.3g} key-coordinates ({worst}) exceeds "
                         f"max_work={bound:.3g} (about {10 * total / DEFAULT_FIGURE_MAX_WORK:.0f} min on 2 cores, "
                         f"the bound about 10 min); lower n_max or sequences, set a target_rse, or raise --max-work "
                         f"for a deliberately long run")


def source_class(kind: str):
    """The class of the data source ``kind`` (a key of :data:`varsim.figures.SOURCES`), imported now; an unknown
    kind raises ValueError."""
    from varsim._common.registry import lookup

    module, cls = lookup(SOURCES, kind, param="data source")
    return getattr(importlib.import_module(module), cls)


def source_options() -> tuple:
    """The options every registered data source reads (:class:`varsim.figures.source_spec.SourceOption`), in
    registry order (each once)."""
    seen: dict = {}
    for kind in SOURCES:
        for option in getattr(source_class(kind), "OPTIONS", ()):
            seen.setdefault(option.name, option)
    return tuple(seen.values())


def gallery_groups(own: str = "Theory") -> tuple[tuple[str, str | None], ...]:
    """The gallery's sections in order, ``(title, source)``: ``own`` for the figures that compute their own data
    (source None), then each data source's ``GALLERY`` title in registry order."""
    return ((own, None), *((source_class(kind).GALLERY, kind) for kind in SOURCES))


def _source_options(quick: bool, seed: int, progress, given: dict) -> dict:
    """The options every data source is built from: the mode and seed, and each option the sources declare (its
    default where not ``given``); a keyword no source declares is a ValueError naming it."""
    declared = {o.name: o.default for o in source_options()}
    unknown = sorted(set(given) - set(declared))
    if unknown:
        raise ValueError(f"{unknown[0]}: no data source takes this option (they take: {', '.join(declared)})")
    return {"quick": quick, "seed": seed, "progress": progress, **declared, **given}


def _source(kind: str, options: dict):
    """The data source ``kind`` (a key of :data:`SOURCES`) built from :func:`make`'s options."""
    return source_class(kind).from_options(options)


def _job_groups(names: list[str], kinds: dict) -> list[list[str]]:
    """The independent jobs of a parallel :func:`make`: each figure that computes its own data alone (first: they
    take longest), the figures of one data source together (the source is loaded once); each in ``names`` order."""
    own = [[name] for name in names if kinds[name] is None]
    by_source: dict[str, list[str]] = {}
    for name in names:
        if kinds[name] is not None:
            by_source.setdefault(kinds[name], []).append(name)
    return own + list(by_source.values())


def _make_one(name: str, kind: str | None, src, outdir: Path, *, quick: bool, seed: int, progress: bool,
              stored: dict | None = None, params: dict | None = None, style=None,
              footer: bool = False) -> tuple[str, float, list[Path]]:
    """Compute (or, given its ``stored`` data, redraw) figure ``name`` with ``params`` into ``outdir`` in ``style``:
    where its numbers came from, its seconds and its PNG and PDF paths (its data is ``outdir/<name>.json``)."""
    from ._style import draw_and_save, jsonable

    t0 = time.perf_counter()
    data_path = outdir / f"{name}.json"
    if stored is not None:
        data = stored
        paths = draw_stored(name, data, data_path, outdir, style=style, footer=footer)
    else:
        module = load(name)
        data = jsonable(module.compute(quick, seed, progress=progress, source=src, **(params or {})))
        # the JSON, PNG and PDF replaced together or not at all
        paths = draw_and_save(module.draw, data, outdir, name, style=style, footer=footer, with_data=True)
    return _data_from(data, kind, quick, stored is not None), time.perf_counter() - t0, paths


def _make_group(job: dict) -> list[tuple[str, tuple[str, float, list[Path]]]]:
    """One job of a parallel :func:`make` (top-level, so a worker process can run it): the figures ``job["names"]``,
    in order, with their data source built in this process."""
    from ._style import headless_backend

    headless_backend()  # a worker process only writes files
    options = job["options"]
    src = _source(job["kind"], options) if job["kind"] is not None else None
    return [(name, _make_one(name, job["kind"], src, Path(job["outdir"]), quick=options["quick"],
                             seed=options["seed"], progress=False)) for name in job["names"]]


def register(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the options of ``varsim figures`` (also ``python figures/make_all.py``, ``python -m varsim.figures``) to
    ``parser``; return it."""
    from varsim._common.argtypes import MAX_ABS, real_option, seed_option, threads_option

    parser.add_argument("--quick", action="store_true",
                        help="small runs (seconds per figure; a tiny reproduction whose models do not learn): a smoke "
                             "test, every figure is stamped as such")
    parser.add_argument("--outdir", default=None, help=f"output directory (default {DEFAULT_OUTDIR} in the current "
                                                       "directory)")
    parser.add_argument("--only", nargs="+", default=None, metavar="NAME", help=f"only these figures: "
                                                                                f"{', '.join(FIGURES)}")
    parser.add_argument("--seed", type=seed_option(), default=0, help="root seed of every simulation (default 0)")
    parser.add_argument("--replot", action="store_true", help="redraw from the stored <name>.json data")
    parser.add_argument("--max-work", type=real_option(0.0, MAX_ABS, strict_min=True), default=None, metavar="W",
                        help="refuse figures whose summed estimated work exceeds W key-coordinates (default "
                             "3.3e11, about ten minutes on 2 cores; the default figures take about a minute)")
    for option in source_options():  # each data source's options (source_options, from SOURCES)
        option.add_to(parser)
    parser.add_argument("--jobs", type=threads_option(0), default=None, metavar="J",
                        help="compute independent figures in J worker processes (default and 0: one per available "
                             "core; 1: one after the other, as figure parameters, --style and --footer always are); "
                             "the files are the same")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="live status on stderr (default: when stderr is a terminal; when stdout is not a "
                             "terminal, one line per finished figure with its seconds goes there instead)")
    return parser


def _data_from(data: dict, kind: str | None, quick: bool, replot: bool) -> str:
    """Where a figure's numbers came from, in a few words."""
    if replot:
        return "stored JSON (replot)"
    if kind is None:
        return "simulated, quick" if quick else "simulated"
    origin = data.get("origin")
    if origin is None and data.get("sources"):  # files read (probe results): committed ones by their package path
        committed = all(Path(p).parent == Path(__file__).parent / "data" / kind for p in data["sources"])
        origin = "committed records" if committed else ", ".join(Path(p).name for p in data["sources"])
    return f"{kind}: {origin}" if origin else kind


def figure_line(name: str, data_from: str, seconds: float) -> str:
    """The log line of one finished figure: ``NAME: SECONDS s (where its numbers came from)``; what ``varsim
    figures`` prints as each figure ends when its output is not a terminal, and the docs gallery hook likewise."""
    return f"{name}: {seconds:.1f} s ({data_from})"


def summary_table(rows, wall: float | None = None, jobs: int = 1) -> str:
    """``figure  data  seconds`` lines for ``(name, data_from, seconds)`` rows, and the one total: the ``wall`` time
    (default: the figures' seconds summed, which it is when they ran one after the other); with ``jobs`` > 1
    processes, also their seconds summed, which exceed the wall time."""
    rows = list(rows)
    w1 = max([len("figure"), *(len(r[0]) for r in rows)])
    w2 = max([len("data"), *(len(r[1]) for r in rows)])
    lines = [f"{'figure':<{w1}}  {'data':<{w2}}  seconds"]
    lines += [f"{n:<{w1}}  {d:<{w2}}  {s:7.1f}" for n, d, s in rows]
    summed = sum(r[2] for r in rows)
    total = f"{len(rows)} figures in {summed if wall is None else wall:.1f} s wall time"
    if jobs > 1:
        total += f" ({summed:.1f} s summed over the figures, in {jobs} processes side by side)"
    lines.append(total)
    return "\n".join(lines)


def run_args(args: argparse.Namespace) -> int:
    """Run ``varsim figures`` from parsed options: the figures, then the summary table on stdout. When stdout is not
    a terminal (a log, CI, ``| tee``) and ``--progress``/``--no-progress`` was not given, each figure also prints its
    :func:`figure_line` there as it ends (flushed), so the log shows progress throughout; a terminal keeps the live
    status on stderr."""
    rows, run = [], {}
    log = args.progress is None and not sys.stdout.isatty()
    outdir = Path(DEFAULT_OUTDIR if args.outdir is None else args.outdir)

    def on_start(names, jobs):
        run.update(start=time.perf_counter(), jobs=jobs)
        if log:  # the first line comes now, not when the first figure ends
            mode = "quick" if args.quick else "full"
            print(f"making {len(names)} figure{'s' * (len(names) != 1)} ({mode} mode, {jobs} "
                  f"process{'es' * (jobs != 1)}) into {outdir}; a line as each ends", flush=True)

    def on_figure(name, data_from, seconds, paths):
        rows.append((name, data_from, seconds))
        if log:
            print(figure_line(name, data_from, seconds), flush=True)

    written = make(
        args.only,
        outdir=DEFAULT_OUTDIR if args.outdir is None else args.outdir,
        quick=args.quick,
        seed=args.seed,
        progress=args.progress,
        replot=args.replot,
        on_figure=on_figure,
        on_start=on_start,
        max_work=getattr(args, "max_work", None),
        jobs=0 if getattr(args, "jobs", None) is None else args.jobs,
        **source_args(args),
    )
    wall = time.perf_counter() - run["start"] if run else None
    print(summary_table(rows, wall, run.get("jobs", 1)))
    print(f"wrote {sum(len(p) for p in written.values())} files (JSON, PNG, PDF per figure) into {outdir}")
    return 0


def source_args(args: argparse.Namespace) -> dict:
    """The data sources' options (:func:`source_options`) as parsed into ``args``."""
    return {o.name: getattr(args, o.name, o.default) for o in source_options()}


def main(argv=None) -> int:
    """Command-line entry point of the figure scripts (``varsim figures`` goes through ``varsim.cli``)."""
    from ._style import headless_backend

    headless_backend()  # this command only writes files
    parser = argparse.ArgumentParser(prog="varsim figures", description="Regenerate the varsim figures.")
    args = register(parser).parse_args(argv)
    try:
        return run_args(args)
    except ValueError as exc:
        print(f"varsim figures: error: {exc}", file=sys.stderr)
        return 2


def figure_main(name: str, module: str | None = None):
    """The ``main(argv=None) -> int`` of figure module ``name``: :func:`main` with ``--only name``; called as a
    figure module's last line with its ``__name__`` as ``module``, it also runs ``main`` and exits when that module
    is ``__main__`` (``python -m varsim.figures.NAME``)."""

    def main_one(argv=None) -> int:
        return main(["--only", name, *(sys.argv[1:] if argv is None else argv)])

    if module == "__main__":
        raise SystemExit(main_one())
    return main_one


if __name__ == "__main__":
    raise SystemExit(main())
