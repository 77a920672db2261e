"""Sweeps of the simulator over (attention variant, variant parameters, beta, N) as one call, locally or on Dask.

A :class:`SweepGrid` names the axes: for each weight map of :mod:`varsim.variants` the values of each of its
parameters (the product is taken; parameters not listed keep their defaults), the logit scales ``beta`` and the
sequence lengths ``N``, plus the simulation settings shared by every cell (sequences per cell, sampler, estimator,
dimensions, value law). :func:`run_sweep` turns every cell ``(variant, parameters, beta, N)`` into one
:func:`varsim.sim.simulate` job (fixed query with ``beta = tau``, one ``N``) and runs the jobs through
:func:`varsim.jobs.executor.run_jobs`: local worker processes, or a Dask cluster with ``scheduler=ADDRESS``.

Randomness: cell ``c`` simulates under the ``SeedSequence`` of the root seed with the spawn key ``cell_spawn_key(c)``,
four 32-bit words of the SHA-256 of the cell's canonical key (variant, all parameters with defaults filled in, beta,
N). The numbers of a cell therefore depend neither on the executor, the number of workers, the completion order nor
on the rest of the grid (extending a grid leaves the old cells' numbers unchanged). Each job runs the simulator with
one Numba thread (one job per core), so a cell is bitwise the same on a local pool and on a Dask worker.

Output (``output=PATH``): one JSON file written atomically after each finished cell (at most once a second) and at
the end, with provenance::

    {"format": "varsim-sweep/1", "settings": {...}, "seed": ..., "cells": [cell, ...], "provenance": {...}}

where each cell record holds its axes (``attention``, ``params``, ``beta``, ``n``, ``key``), the Monte Carlo
estimates ``ipr`` = E[sum w^2], ``var`` = Var(o_j) (with ``_se``, batch-means standard errors), ``wsum``/``wsum_var``
for maps that do not sum to 1, the theory (``theory``: ``"exact"``, ``"bound"`` or None; ``exact_ipr``,
``exact_var``, ``ipr_lower``/``ipr_upper``) and the z-scores ``z_ipr``, ``z_var`` against the exact values. Theory per
variant: what the theory kind of its registry entry gives (:func:`varsim.theory.remedies.variant_theory`): softmax
with an N-dependent temperature (softmax, ssmax, logn, critical) and sigmoid exactly; topk the bound
``1/k <= sum w^2 <= 1`` (exact softmax when ``k >= N``); the others have none (Monte Carlo only).

Rerunning with the same ``output`` resumes: cells already in the file are not redone (the file's settings and seed
must match, else ``ValueError``); cells of the file outside the new grid are kept in the file. Sweeps running at
once on one ``output`` merge: each save re-reads the file and adds the cells another sweep wrote, under the lock
``.NAME.lock`` beside it (:func:`varsim._common.runlock.file_lock`), so no cell is lost. A file whose cells lack a
field of a cell record is refused before any job. A device or FIFO as ``output`` (``/dev/stdout``) is written once,
at the end.

Usage::

    from varsim.sim.sweep import SweepGrid, run_sweep
    grid = SweepGrid(variants={"ssmax": {"s": [0.25, 0.5, 1.0]}, "softmax": {}}, betas=[1, 2],
                     n_grid=[16, 256, 4096], n_sequences=4000)
    result = run_sweep(grid, output="sweep.json", seed=0)          # or scheduler="tcp://host:8786"
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path

from varsim._common.seeding import SEED_DEFAULT
from varsim._common.validate import check_choice, check_int, check_real

__all__ = ["SWEEP_FORMAT", "SweepGrid", "sweep_cells", "cell_key", "cell_spawn_key", "run_cell", "run_sweep",
           "load_sweep"]

SWEEP_FORMAT = "varsim-sweep/1"
_SAMPLERS = ("logits", "full")
_ESTIMATORS = ("rao_blackwell", "sample")
_SAVE_INTERVAL = 1.0  # seconds between intermediate writes of the results file


# ----------------------------------------------------------------------------------------------------------------------
# The grid


def _values(name: str, values) -> list:
    """A non-empty list from a scalar or a sequence (strings are scalars)."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        return [values]
    out = list(values)
    if not out:
        raise ValueError(f"{name} must not be empty")
    return out


@dataclass(frozen=True)
class SweepGrid:
    """The axes of a sweep and the simulation settings shared by its cells.

    ``variants``: weight map name -> {parameter name -> value or list of values} (``{}``: defaults only); the cells
    of a variant are the product of its parameter lists. ``betas``: logit scales ``beta >= 0`` (fixed query, logits
    ``beta g_i`` with ``g_i ~ N(0, 1)``). ``n_grid``: sequence lengths. ``sampler``: ``"logits"`` (default, exact for
    the Gaussian keys used here) or ``"full"`` (draws q, K, V with ``d_k``, ``d_v``); ``estimator``:
    ``"rao_blackwell"`` (default; ``Var(o_j) = sigma_v^2 E[sum w^2] (+ mu_v^2 Var(sum w))``) or ``"sample"``.
    ``max_work``: bound on the whole sweep's estimated work (default :data:`varsim.sim.DEFAULT_MAX_WORK`).
    ``target_rse``: stop each cell once ``var_se / var`` is at most this (``simulate(target_rse=...)``; then
    ``n_sequences`` is the cap per cell and each cell record gives the ``sequences`` it used); None: always
    ``n_sequences``. ``max_cell_logits``: a cell of length N runs at most ``max_cell_logits // N`` sequences,
    and at least the 32 its standard error needs (a budget in logits, so the longest cells do not take most of the
    sweep); None: ``n_sequences`` at every N.
    """

    variants: dict
    betas: tuple
    n_grid: tuple
    n_sequences: int = 4000
    sampler: str = "logits"
    estimator: str = "rao_blackwell"
    d_k: int = 64
    d_v: int = 64
    value_mean: float = 0.0
    value_scale: float = 1.0
    max_work: float | None = field(default=None, compare=False)
    target_rse: float | None = None
    max_cell_logits: int | None = None

    def __post_init__(self):
        from varsim.variants import get_variant

        if not isinstance(self.variants, dict) or not self.variants:
            raise ValueError(f"variants must be a non-empty dict name -> {{parameter: values}}, got {self.variants!r}")
        variants = {}
        for name, params in self.variants.items():
            spec = get_variant(name)
            params = {} if params is None else params
            if not isinstance(params, dict):
                raise ValueError(f"variants[{name!r}] must be a dict parameter -> values, got {params!r}")
            lists = {p: _values(f"variants[{name!r}][{p!r}]", v) for p, v in params.items()}
            spec.check_params({p: v[0] for p, v in lists.items()})  # unknown names raise here
            for p, vals in lists.items():  # every value, each error naming the variant and the parameter
                lists[p] = [spec.check_params({p: v})[p] for v in vals]
            variants[name] = lists
        object.__setattr__(self, "variants", variants)
        from varsim._common.argtypes import MAX_ABS  # each beta runs as the simulator's tau: name it as given

        betas = tuple(check_real("beta", b, minimum=0.0, maximum=MAX_ABS) for b in _values("betas", self.betas))
        object.__setattr__(self, "betas", tuple(dict.fromkeys(betas)))
        n_grid = tuple(check_int("n", n, minimum=1) for n in _values("n_grid", self.n_grid))
        object.__setattr__(self, "n_grid", tuple(sorted(set(n_grid))))
        object.__setattr__(self, "n_sequences", check_int("n_sequences", self.n_sequences, minimum=1))
        object.__setattr__(self, "sampler", check_choice("sampler", self.sampler, _SAMPLERS))
        object.__setattr__(self, "estimator", check_choice("estimator", self.estimator, _ESTIMATORS))
        object.__setattr__(self, "d_k", check_int("d_k", self.d_k, minimum=1))
        object.__setattr__(self, "d_v", check_int("d_v", self.d_v, minimum=1))
        object.__setattr__(self, "value_mean", check_real("value_mean", self.value_mean))
        object.__setattr__(self, "value_scale", check_real("value_scale", self.value_scale, minimum=0.0,
                                                           strict_min=True))
        if self.max_work is not None:
            object.__setattr__(self, "max_work", check_real("max_work", self.max_work, minimum=0.0, strict_min=True))
        if self.target_rse is not None:
            object.__setattr__(self, "target_rse", check_real("target_rse", self.target_rse, minimum=0.0,
                                                              strict_min=True, maximum=1.0))
        if self.max_cell_logits is not None:
            object.__setattr__(self, "max_cell_logits", check_int("max_cell_logits", self.max_cell_logits, minimum=1))

    def settings(self) -> dict:
        """The simulation settings shared by every cell (a resumed file must have the same); ``target_rse`` and
        ``max_cell_logits`` only when set, so files of fixed-count sweeps keep their settings."""
        out = {"n_sequences": self.n_sequences, "sampler": self.sampler, "estimator": self.estimator,
               "d_k": self.d_k, "d_v": self.d_v, "value_mean": self.value_mean, "value_scale": self.value_scale}
        if self.target_rse is not None:
            out["target_rse"] = self.target_rse
        if self.max_cell_logits is not None:
            out["max_cell_logits"] = self.max_cell_logits
        return out

    def to_dict(self) -> dict:
        return {"variants": self.variants, "betas": list(self.betas), "n_grid": list(self.n_grid),
                **self.settings(), "max_work": self.max_work}


def cell_key(cell: dict) -> str:
    """Canonical text of a cell's axes: ``{"attention", "beta", "n", "params"}`` as sorted compact JSON."""
    return json.dumps({"attention": cell["attention"], "params": cell["params"], "beta": cell["beta"],
                       "n": cell["n"]}, sort_keys=True, separators=(",", ":"))


def cell_spawn_key(cell: dict) -> tuple[int, ...]:
    """The cell's spawn key under the root seed: four 32-bit words of the SHA-256 of :func:`cell_key`."""
    digest = hashlib.sha256(cell_key(cell).encode("utf-8")).digest()
    return tuple(int.from_bytes(digest[4 * i: 4 * i + 4], "little") for i in range(4))


def sweep_cells(grid: SweepGrid) -> list[dict]:
    """Every cell ``{"attention", "params", "beta", "n"}`` of ``grid`` (parameters complete, defaults filled in), in
    the order variant, parameter product, beta, N."""
    from varsim.variants import get_variant

    cells = []
    for name, lists in grid.variants.items():
        spec = get_variant(name)
        names = sorted(lists)
        for combo in itertools.product(*(lists[p] for p in names)):
            params = spec.check_params(dict(zip(names, combo)))
            for beta in grid.betas:
                for n in grid.n_grid:
                    cells.append({"attention": name, "params": params, "beta": beta, "n": n})
    return cells


# ----------------------------------------------------------------------------------------------------------------------
# One cell (the job)


def _finite(x):
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def cell_sequences(cell: dict, settings: dict) -> int:
    """The most sequences a cell runs: ``n_sequences``, or fewer where ``max_cell_logits`` caps its ``N x sequences``
    (never below the ``2 * MIN_CHUNKS`` sequences of a batch-means standard error)."""
    from varsim.sim._config import MIN_CHUNKS

    budget = settings.get("max_cell_logits")
    if budget is None:
        return settings["n_sequences"]
    return min(settings["n_sequences"], max(2 * MIN_CHUNKS, budget // cell["n"]))


def _simulate_kwargs(cell: dict, settings: dict) -> dict:
    return dict(
        d_k=settings["d_k"], d_v=settings["d_v"], tau=cell["beta"], query="fixed",  # |q| = sqrt(d_k): beta = tau
        value_mean=settings["value_mean"], value_scale=settings["value_scale"],
        n_sequences=cell_sequences(cell, settings),
        sampler=settings["sampler"], estimator=settings["estimator"], attention=cell["attention"],
        target_rse=settings.get("target_rse"), **cell["params"],
    )


def cell_theory(cell: dict, settings: dict) -> dict:
    """The theory of one cell, from its variant's registry entry (:func:`varsim.theory.remedies.variant_theory`):
    ``theory`` ("exact" where ``E[sum w^2]`` is exact at the cell, "bound" where only a bound is, else None),
    ``exact_ipr``, ``exact_var`` (``sigma_v^2 E[sum w^2] + mu_v^2 Var(sum w)``), ``ipr_lower``, ``ipr_upper``."""
    from varsim.theory.remedies import variant_theory

    out = {"theory": None, "exact_ipr": None, "exact_var": None, "ipr_lower": None, "ipr_upper": None}
    try:
        th = variant_theory(cell["attention"], float(cell["n"]), cell["beta"], **cell["params"])
    except ValueError:  # outside the quadrature's range (e.g. |beta| > 50 for sigmoid): Monte Carlo only
        return out
    ipr = th.ipr[0]
    if ipr is not None:
        exact_var = th.exact_var(settings["value_scale"] ** 2, settings["value_mean"] ** 2)[0]
        out.update(theory="exact", exact_ipr=ipr, exact_var=exact_var, ipr_lower=ipr, ipr_upper=ipr)
    elif th.ipr_lower is not None:
        out.update(theory="bound", ipr_lower=th.ipr_lower[0], ipr_upper=th.ipr_upper[0])
    return out


def _z(est, se, ref):
    if None in (est, se, ref) or se <= 0:
        return None
    return (est - ref) / se


def _compile_first(jobs: list[dict]) -> list[int]:
    """The jobs a local pool's sweep runs in this process first: each attention map's cell of smallest N. Its kernels
    then compile once, here, and the workers load them from Numba's cache instead of each compiling them."""
    first: dict[str, int] = {}
    for i, job in enumerate(jobs):
        name = job["cell"]["attention"]
        if name not in first or job["cell"]["n"] < jobs[first[name]]["cell"]["n"]:
            first[name] = i
    return sorted(first.values())


def run_cell(job: dict) -> dict:
    """Simulate one cell (the sweep's job; top-level and picklable for the executor).

    ``job``: ``{"cell", "settings", "entropy", "spawn_key", "max_work"}``; the simulation runs under
    ``SeedSequence(entropy, spawn_key=spawn_key)`` with one thread. Returns the cell's record (see module docstring).
    """
    import numpy as np

    from varsim.sim import simulate

    cell, settings = job["cell"], job["settings"]
    seed = np.random.SeedSequence(job["entropy"], spawn_key=tuple(job["spawn_key"]))
    start = time.perf_counter()
    res = simulate([cell["n"]], seed=seed, threads=1, max_work=job.get("max_work"), **_simulate_kwargs(cell, settings))

    def first(arr):
        return None if arr is None else _finite(arr[0])

    rec = {"key": cell_key(cell), **cell, "spawn_key": list(job["spawn_key"])}
    for name in ("ipr", "ipr_se", "var", "var_se", "wsum", "wsum_se", "wsum_var", "wsum_var_se"):
        rec[name] = first(getattr(res, name))
    rec["sequences"] = int(res.sequences[0])
    rec.update(cell_theory(cell, settings))
    rec["z_ipr"] = _finite(_z(rec["ipr"], rec["ipr_se"], rec["exact_ipr"]))
    rec["z_var"] = _finite(_z(rec["var"], rec["var_se"], rec["exact_var"]))
    rec["elapsed_s"] = round(time.perf_counter() - start, 4)
    return rec


# ----------------------------------------------------------------------------------------------------------------------
# Preflight, the results file, the sweep


def _preflight(cells: list[dict], grid: SweepGrid) -> None:
    """Validate every cell with the simulator's own argument checks and size guards, and the sweep's total work
    against ``max_work``, before any job starts."""
    from varsim.sim import DEFAULT_MAX_WORK
    from varsim.sim._config import make_config

    settings = grid.settings()
    max_work = DEFAULT_MAX_WORK if grid.max_work is None else grid.max_work
    total = 0.0
    for cell in cells:
        kw = _simulate_kwargs(cell, settings)
        attention = kw.pop("attention")
        params = {p: kw.pop(p) for p in cell["params"]}
        make_config([cell["n"]], query_norm=None, query_vector=None, key_dist="gaussian", value_dist="gaussian",
                    coupling=None, coupling_noise=1.0, coordinate=0, chunk_size=None, attention=attention,
                    attention_params=params, max_work=max_work, **kw)
        total += _cell_work(cell, settings)
    if total > max_work:
        raise ValueError(f"max_work: the sweep's estimated work {total:.3g} key-coordinates ({len(cells)} cells) "
                         f"exceeds max_work={max_work:.3g} (about an hour on 2 cores); reduce the grid or "
                         f"n_sequences, or raise max_work for a deliberately long sweep")


def estimate_sweep_work(grid: SweepGrid) -> float:
    """The estimated work of the whole sweep ``grid`` in key-coordinates (:func:`varsim.sim.estimate_cost` of each
    cell at its sequence cap), what :func:`run_sweep` holds against ``max_work`` before any job starts."""
    settings = grid.settings()
    return sum(_cell_work(cell, settings) for cell in sweep_cells(grid))


def _cell_work(cell: dict, settings: dict) -> float:
    from varsim.sim import estimate_cost

    work, _ = estimate_cost([cell["n"]], d_k=settings["d_k"], d_v=settings["d_v"],
                            n_sequences=cell_sequences(cell, settings), sampler=settings["sampler"],
                            draws_values=not (settings["sampler"] == "logits"
                                              and settings["estimator"] == "rao_blackwell"))
    return work


#: What every cell record of a results file holds (``run_cell``); a file whose cells lack one is refused up front.
_CELL_FIELDS = ("key", "attention", "params", "beta", "n", "ipr", "ipr_se", "var", "var_se", "theory", "exact_ipr",
                "exact_var", "ipr_lower", "ipr_upper", "z_ipr", "z_var")


def load_sweep(path) -> dict:
    """The results file at ``path``, checked to be a sweep file whose cells hold every field of a cell record
    (``ValueError`` naming the file, and the cell and field, otherwise)."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"output: sweep file {str(p)!r} not found") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"output: {str(p)!r} is not a JSON sweep file ({exc.__class__.__name__}); "
                         f"move it away or choose another path") from None
    except OSError as exc:
        raise ValueError(f"output: {str(p)!r} cannot be read ({exc.strerror})") from None
    if (not isinstance(data, dict) or data.get("format") != SWEEP_FORMAT or not isinstance(data.get("cells"), list)
            or not all(isinstance(c, dict) and isinstance(c.get("key"), str) for c in data["cells"])):
        raise ValueError(f"output: {str(p)!r} is not a {SWEEP_FORMAT} file; move it away or choose another path")
    for i, c in enumerate(data["cells"]):
        missing = [f for f in _CELL_FIELDS if f not in c]
        if missing or not isinstance(c["params"], dict) or isinstance(c["n"], bool) or not isinstance(c["n"], int):
            what = f"lacks {missing[0]!r}" if missing else "has a malformed 'params' or 'n'"
            raise ValueError(f"output: {str(p)!r} is not a complete {SWEEP_FORMAT} file: cell {i} ({c['key']!r}) "
                             f"{what}; move it away or choose another path")
    return data


def _stored_cells(output, settings: dict, entropy) -> dict:
    """``{key: cell}`` of the results file ``output`` (empty when it does not exist yet), refused when it holds a
    sweep with other settings or another seed. Called under the file's lock."""
    if not Path(output).exists():
        return {}
    old = load_sweep(output)
    if old.get("settings") != settings:
        raise ValueError(f"output: {str(output)!r} holds a sweep with other settings {old.get('settings')}; "
                         f"choose another path to run {settings}")
    if old.get("seed") != entropy:
        raise ValueError(f"output: {str(output)!r} holds a sweep with seed {old.get('seed')}, not {entropy}; "
                         f"choose another path")
    return {c["key"]: c for c in old["cells"]}


def _record(settings: dict, entropy, cells: list[dict], grid: SweepGrid) -> dict:
    from varsim._common.provenance import provenance

    return {"format": SWEEP_FORMAT, "settings": settings, "seed": entropy, "grid": grid.to_dict(),
            "cells": cells, "provenance": provenance()}


def run_sweep(grid: SweepGrid, *, output=None, seed=SEED_DEFAULT, scheduler: str | None = None,
              workers: int | None = None, progress: bool = False, rng=None) -> dict:
    """Simulate every cell of ``grid``; returns ``{"format", "settings", "seed", "grid", "cells", "provenance",
    "resumed", "elapsed_s"}`` with the records of the grid's cells in grid order.

    ``output``: results file (JSON, atomic, resumable; see module docstring). ``seed``: root seed (int or
    ``SeedSequence``); or ``rng`` instead (SPEC 7: an int or ``SeedSequence``, the same cells bit for bit as ``seed``
    with that value, or a ``numpy.random.Generator``, from which the root entropy is drawn and recorded in "seed");
    giving both is an error. ``scheduler`` (a Dask address) or ``workers`` (local processes; default one per core,
    ``1`` runs in this process): see :func:`varsim.jobs.executor.run_jobs`; the numbers do not depend on them.
    Everything is validated before the first job: unknown variants or parameters, bad values, cells the simulator
    would refuse, a total estimated work above ``grid.max_work``, an unwritable ``output`` or one that is not a
    sweep file or was made with other settings or another seed.
    """
    from varsim._common.seeding import resolve_seed
    from varsim.jobs.executor import check_executor_args

    if not isinstance(grid, SweepGrid):
        raise ValueError(f"grid must be a SweepGrid, got {type(grid).__name__}")
    root = resolve_seed(seed, rng)
    check_executor_args(scheduler, workers)
    if not isinstance(progress, bool):
        raise ValueError(f"progress must be True or False, got {progress!r}")
    settings = grid.settings()
    cells = sweep_cells(grid)
    store = _SweepFile(output, settings, root.entropy, grid, [cell_key(c) for c in cells])
    todo = [c for c in cells if cell_key(c) not in store.done]
    _preflight(todo, grid)

    base = list(root.spawn_key)
    jobs = [{"cell": c, "settings": settings, "entropy": root.entropy,
             "spawn_key": base + list(cell_spawn_key(c)), "max_work": grid.max_work} for c in todo]
    start = time.perf_counter()
    _run_cells(jobs, store, scheduler=scheduler, workers=workers, progress=progress)
    out = _record(settings, root.entropy, [store.done[k] for k in store.grid_keys], grid)
    out["resumed"] = len(cells) - len(jobs)
    out["elapsed_s"] = round(time.perf_counter() - start, 3)
    return out


class _SweepFile:
    """A sweep's records by cell key (``done``) and their file ``output``: read to resume, saved (at most every
    :data:`_SAVE_INTERVAL` seconds unless forced) merged under its lock with what another sweep wrote there, so no
    cell is lost. A device or FIFO (``-o /dev/stdout``) is written once at the end: nothing to resume or merge."""

    def __init__(self, output, settings: dict, entropy, grid: SweepGrid, grid_keys: list):
        from varsim._common.atomic import check_writable, is_special_file
        from varsim._common.runlock import file_lock

        self.output, self.settings, self.entropy, self.grid = output, settings, entropy, grid
        self.grid_keys, self.grid_set = grid_keys, set(grid_keys)
        self.stream = output is not None and is_special_file(output)
        self.done: dict[str, dict] = {}
        if output is not None:
            check_writable(output, "output")
            if not self.stream:
                with file_lock(output):
                    self.done = _stored_cells(output, settings, entropy)
        self.extra_keys = [k for k in self.done if k not in self.grid_set]
        self.last = 0.0

    def ordered(self) -> list[dict]:
        """The records in grid order, then those of other grids found in the file."""
        return [self.done[k] for k in self.grid_keys if k in self.done] + [self.done[k] for k in self.extra_keys]

    def save(self, force: bool = False) -> None:
        """Write the records to ``output`` (none: nothing), merged with the file's."""
        from varsim._common.atomic import atomic_write_json
        from varsim._common.runlock import file_lock

        if self.output is None or (self.stream and not force):
            return
        now = time.perf_counter()
        if not force and now - self.last < _SAVE_INTERVAL:
            return
        if self.stream:
            atomic_write_json(self.output, _record(self.settings, self.entropy, self.ordered(), self.grid))
        else:  # merge with what another sweep on the same file wrote meanwhile
            with file_lock(self.output):
                for key, cell in _stored_cells(self.output, self.settings, self.entropy).items():
                    if key not in self.done:
                        self.done[key] = cell
                        if key not in self.grid_set:
                            self.extra_keys.append(key)
                atomic_write_json(self.output, _record(self.settings, self.entropy, self.ordered(), self.grid))
        self.last = now


def _run_cells(jobs: list, store: _SweepFile, *, scheduler, workers, progress: bool) -> None:
    """Simulate the cells of ``jobs`` into ``store`` (saved as they come, and once more at the end, even on an error
    or Ctrl-C); in local processes the cells that compile a kernel first run here, one per kernel."""
    from varsim._common.progress import Progress
    from varsim.jobs.executor import run_jobs

    with Progress(len(jobs), "sweep", enabled=progress) as bar:
        def on_result(i: int, rec: dict) -> None:
            store.done[rec["key"]] = rec
            bar.update()
            store.save()

        try:
            first = _compile_first(jobs) if scheduler is None and (workers is None or workers > 1) else []
            for i in first:
                on_result(i, run_cell(jobs[i]))
            rest = [job for i, job in enumerate(jobs) if i not in set(first)]
            if rest:
                run_jobs(run_cell, rest, scheduler=scheduler, workers=workers, on_result=on_result)
        finally:
            store.save(force=bool(jobs))  # keep what finished, even on an error or Ctrl-C
