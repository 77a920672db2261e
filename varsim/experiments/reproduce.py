"""The paper's experiment: does normalizing the attention output help length generalization, and by how much?

Grid: task (argmax retrieval, dictionary lookup) x architecture (residual around attention on / off) x
normalization after attention (none, layernorm, standardize, layernorm_per_head by default) x seed. Every cell is
trained on set sizes up to 16, evaluated at N = 16, 32, ..., 16384 and probed for the distribution shift behind
the failure (``varsim.experiments.probes``).

Pairing: seed index ``s`` fixes the initialization seed, the training-data stream, the test sets and the probe sets
of every normalization and architecture (all derived from ``root_seed`` and ``s`` only), so "norm X minus none"
is a paired difference per seed.

Output directory layout::

    settings.json           the ReproductionSettings (a resumed run must use the same ones)
    runs/<run_id>.json      one record per finished run, written atomically by the coordinating process
    checkpoints/<run_id>/   training checkpoints (local runs; lets an interrupted run resume mid-training)
    summary.json, table.md  the aggregation (:func:`aggregate`)

Resume: a run whose record exists and validates is not redone; a record that does not parse or does not match its
run (a different spec, missing fields, accuracies outside [0, 1]) is reported, moved aside to
``runs/<run_id>.json.corrupt`` and redone. Each run is a pure function of its spec, so the records do not depend on
the executor (local processes or Dask), the number of workers or the order of completion; only ``timing`` and
``provenance`` do.
"""

from __future__ import annotations

import atexit
import dataclasses
import json
import math
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from varsim._common.atomic import atomic_write_json, atomic_write_text
from varsim._common.validate import check_choice, check_fields, check_int, check_int_grid, check_real
from varsim.tasks import TASKS

__all__ = [
    "ReproductionSettings",
    "ARCHITECTURES",
    "DEFAULT_NORMS",
    "BASELINE_NORM",
    "RESULTS_ENV",
    "run_id",
    "job_specs",
    "run_job",
    "run_reproduction",
    "aggregate",
    "render_table",
    "load_results",
    "load_run",
    "figure_results",
    "CorruptRun",
]

RUN_FORMAT = "varsim.reproduce.run/1"
SUMMARY_FORMAT = "varsim.reproduce.summary/1"
SETTINGS_FORMAT = "varsim.reproduce.settings/1"

#: architecture name -> ``ModelConfig.residual``
ARCHITECTURES = {"residual": True, "no_residual": False}
DEFAULT_NORMS = ("none", "layernorm", "standardize", "layernorm_per_head")
BASELINE_NORM = "none"

# Work keys under root_seed for each seed index s: (s, key) -> one independent stream per purpose.
_SEED_KEYS = {"init": 0, "data": 1, "eval": 2, "in_distribution": 3, "probe": 4}


def _pow2(lo: int, hi: int) -> tuple[int, ...]:
    return tuple(2**k for k in range(lo, hi + 1))


@dataclasses.dataclass(frozen=True)
class ReproductionSettings:
    """Everything that determines the numbers of a reproduction (stored as ``settings.json``).

    ``model`` and ``train`` are overrides of :class:`varsim.nn.model.ModelConfig` and
    :class:`varsim.train.TrainConfig` fields shared by every run (the grid sets ``task``, ``norm``, ``residual``,
    ``seed`` and ``data_seed``). A run "learned" when its accuracy at N = ``train.train_max`` on
    ``id_examples`` fresh examples is at least ``learned_threshold``.
    """

    tasks: tuple = TASKS
    architectures: tuple = tuple(ARCHITECTURES)
    norms: tuple = DEFAULT_NORMS
    seeds: int = 6
    root_seed: int = 0
    model: dict = dataclasses.field(default_factory=dict)
    train: dict = dataclasses.field(default_factory=dict)
    eval_lengths: tuple = _pow2(4, 14)
    eval_examples: int = 1024
    eval_batch_size: int = 64
    id_examples: int = 2048
    learned_threshold: float = 0.9
    probe_lengths: tuple = _pow2(4, 14)
    probe_sets: int = 256
    hist_lengths: tuple = (16, 256, 4096)
    probe_max_items: int = 1 << 18

    def __post_init__(self):
        set_ = lambda k, v: object.__setattr__(self, k, v)  # noqa: E731  (frozen dataclass)

        def names(field, allowed):
            values = getattr(self, field)
            if isinstance(values, str) or not values:
                raise ValueError(f"{field} must be a non-empty list of names, got {values!r}")
            out = tuple(check_choice(field, v, allowed) for v in values)
            if len(set(out)) != len(out):
                raise ValueError(f"{field} has duplicates: {list(out)}")
            return out

        from varsim.nn.norms import NORMS

        set_("tasks", names("tasks", TASKS))
        set_("architectures", names("architectures", ARCHITECTURES))
        set_("norms", names("norms", NORMS))
        set_("seeds", check_int("seeds", self.seeds, minimum=1))
        set_("root_seed", check_int("root_seed", self.root_seed, minimum=0))
        for field in ("model", "train"):
            if not isinstance(getattr(self, field), dict):
                raise ValueError(f"{field} must be a dict of overrides, got {type(getattr(self, field)).__name__}")
            set_(field, dict(getattr(self, field)))
        fixed = {"task", "norm", "residual"} & set(self.model)
        fixed |= {"task", "model", "seed", "data_seed"} & set(self.train)
        if fixed:
            raise ValueError(f"model/train overrides may not set {sorted(fixed)}: the grid sets them")
        for field in ("eval_lengths", "probe_lengths"):
            grid = tuple(int(v) for v in check_int_grid(field, getattr(self, field)))
            if any(b <= a for a, b in zip(grid, grid[1:])):
                raise ValueError(f"{field} must be strictly increasing, got {list(grid)}")
            set_(field, grid)
        set_("hist_lengths", tuple(int(v) for v in check_int_grid("hist_lengths", self.hist_lengths)))
        if not set(self.hist_lengths) <= set(self.probe_lengths):
            raise ValueError(f"hist_lengths {list(self.hist_lengths)} must be among probe_lengths")
        for field in ("eval_examples", "eval_batch_size", "id_examples", "probe_max_items"):
            set_(field, check_int(field, getattr(self, field), minimum=1))
        set_("probe_sets", check_int("probe_sets", self.probe_sets, minimum=2))
        set_("learned_threshold", check_real("learned_threshold", self.learned_threshold, minimum=0.0, maximum=1.0))
        for task in self.tasks:  # build one config per task now, so bad overrides fail before any work
            self.train_config(task, "none", "residual", 0)

    # ---------------------------------------------------------------------------------------------------------
    @classmethod
    def full(cls, *, seeds: int = 6, root_seed: int = 0, **changes) -> "ReproductionSettings":
        """The reported reproduction: 96 runs of 27-32 s of one core each (measured), about 25 min on 2 cores.

        Six seeds, not five: the exact sign-flip test over n seeds cannot go below 2/2**n, and 2/64 < 0.05."""
        base = dict(
            seeds=seeds,
            root_seed=root_seed,
            model={"d_model": 64, "n_heads": 4, "n_blocks": 1},
            train={"optimizer": "adamw", "lr": 1e-3, "weight_decay": 0.01, "clip_norm": 1.0,
                   "steps": 3000, "batch_size": 64, "train_max": 16, "checkpoint_every": 1000,
                   "keep_checkpoints": 1},
        )
        base.update(changes)
        return cls(**base)

    @classmethod
    def quick(cls, *, seeds: int = 2, root_seed: int = 0, **changes) -> "ReproductionSettings":
        """Tiny models, few steps, short lengths, one architecture: the whole grid in well under a minute."""
        base = dict(
            seeds=seeds,
            root_seed=root_seed,
            architectures=("residual",),
            model={"d_model": 16, "n_heads": 2, "d_hidden": 32},
            train={"lr": 3e-3, "steps": 400, "batch_size": 32, "train_max": 16, "checkpoint_every": 200,
                   "keep_checkpoints": 1, "log_every": 50},
            eval_lengths=_pow2(4, 8),
            eval_examples=128,
            id_examples=256,
            probe_lengths=_pow2(4, 8),
            probe_sets=64,
            hist_lengths=(16, 256),
        )
        base.update(changes)
        return cls(**base)

    def to_dict(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return json.loads(json.dumps(out))  # tuples -> lists: the form it has on disk

    @classmethod
    def from_dict(cls, d: dict) -> "ReproductionSettings":
        return cls(**check_fields("settings", d, cls))

    # ---------------------------------------------------------------------------------------------------------
    def seed_for(self, seed_index: int, purpose: str) -> int:
        """The integer seed of ``purpose`` (init, data, eval, in_distribution, probe) for seed index ``s``."""
        from varsim._common.seeding import child_sequence

        return int(child_sequence(self.root_seed, seed_index, _SEED_KEYS[purpose]).generate_state(1)[0])

    def train_config(self, task: str, norm: str, architecture: str, seed_index: int):
        from varsim.train import TrainConfig

        model = {**self.model, "task": task, "norm": norm, "residual": ARCHITECTURES[architecture]}
        return TrainConfig(
            **{**self.train, "task": task, "model": model,
               "seed": self.seed_for(seed_index, "init"), "data_seed": self.seed_for(seed_index, "data")}
        )


def run_id(task: str, architecture: str, norm: str, seed_index: int) -> str:
    return f"{task}-{architecture}-{norm}-s{seed_index}"


def job_specs(settings: ReproductionSettings) -> list[dict]:
    """One JSON-able spec per run, in a fixed order (task, architecture, norm, seed)."""
    specs = []
    for task in settings.tasks:
        for arch in settings.architectures:
            for norm in settings.norms:
                for s in range(settings.seeds):
                    cfg = settings.train_config(task, norm, arch, s)
                    specs.append({
                        "run_id": run_id(task, arch, norm, s),
                        "task": task,
                        "architecture": arch,
                        "norm": norm,
                        "seed_index": s,
                        "train_config": cfg.to_dict(),
                        "eval": {"lengths": list(settings.eval_lengths), "examples": settings.eval_examples,
                                 "batch_size": settings.eval_batch_size, "seed": settings.seed_for(s, "eval")},
                        "in_distribution": {"length": cfg.train_max, "examples": settings.id_examples,
                                            "seed": settings.seed_for(s, "in_distribution"),
                                            "threshold": settings.learned_threshold},
                        "probe": {"lengths": list(settings.probe_lengths), "sets": settings.probe_sets,
                                  "hist_lengths": list(settings.hist_lengths),
                                  "max_items": settings.probe_max_items, "seed": settings.seed_for(s, "probe")},
                    })
    return json.loads(json.dumps(specs))


# ---------------------------------------------------------------------------------------------------------------
# One run (executed by a worker)


def _jsonable(obj):
    """Plain JSON data; NaN and infinities become None (JSON has no NaN)."""
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if hasattr(obj, "tolist") and not isinstance(obj, (str, bytes)):
        return _jsonable(obj.tolist())
    if isinstance(obj, bool) or obj is None or isinstance(obj, (str, int)):
        return obj
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    return obj


def run_job(job) -> dict:
    """Train, evaluate and probe one run; return its record (the caller writes it).

    ``job`` is ``(spec, workdir)``: ``spec`` from :func:`job_specs`; ``workdir`` the run's checkpoint directory
    (training resumes from it if it holds a checkpoint) or None for a temporary one.
    """
    spec, workdir = job
    if workdir is None:
        with tempfile.TemporaryDirectory(prefix="varsim-repro-") as tmp:
            return _run(spec, Path(tmp))
    return _run(spec, Path(workdir))


def _run(spec: dict, workdir: Path) -> dict:
    from varsim._common.blas import limit_blas_threads
    from varsim._common.provenance import provenance
    from varsim.experiments.probes import probe_model
    from varsim.train import TrainConfig, evaluate, load_checkpoint, train

    blas = limit_blas_threads(1)  # the same rounding in every executor (see varsim._common.blas)
    t_start = time.perf_counter()
    cpu_start = time.process_time()
    config = TrainConfig.from_dict(spec["train_config"])
    summary = train(config, workdir, resume=True, progress=False)
    t_train = time.perf_counter()
    try:
        model, _, state = load_checkpoint(workdir)
    except ValueError:
        if summary["status"] == "completed":
            raise
        # Diverged before its first checkpoint: evaluate the initial model, recorded as a variant that did not
        # learn (``learned`` is False whenever training did not complete) rather than as a failed run.
        from varsim.nn.model import Transformer

        model, state = Transformer(config.model, seed=config.seed), {"step": 0}

    ev_spec = spec["eval"]
    ev = evaluate(model, ev_spec["lengths"], ev_spec["examples"], ev_spec["batch_size"], ev_spec["seed"],
                  progress=False)
    id_spec = spec["in_distribution"]
    idv = evaluate(model, [id_spec["length"]], id_spec["examples"], ev_spec["batch_size"], id_spec["seed"],
                   progress=False)
    id_correct = int(idv["correct"][0])
    id_acc = id_correct / id_spec["examples"]
    id_lo, id_hi = idv["ci_low"][0], idv["ci_high"][0]  # evaluate() gives the Wilson interval of each count
    t_eval = time.perf_counter()

    pr = spec["probe"]
    probe = probe_model(model, config.task, lengths=pr["lengths"], n_sets=pr["sets"], seed=pr["seed"],
                        hist_lengths=pr["hist_lengths"], max_items=pr["max_items"], task_kwargs=config.task_kwargs())
    t_probe = time.perf_counter()

    train_rec = {k: summary[k] for k in ("status", "steps_done", "steps", "final_loss", "train_accuracy")}
    if summary["status"] != "completed":
        train_rec["message"] = summary["message"]
    train_rec["evaluated_step"] = int(state["step"])
    return _jsonable({
        "format": RUN_FORMAT,
        "run_id": spec["run_id"],
        "spec": spec,
        "train": train_rec,
        "in_distribution": {
            "length": id_spec["length"], "examples": id_spec["examples"], "correct": id_correct,
            "accuracy": id_acc, "ci_low": id_lo, "ci_high": id_hi,
            "learned": bool(summary["status"] == "completed" and id_acc >= id_spec["threshold"]),
            "threshold": id_spec["threshold"],
        },
        "eval": {
            "lengths": ev["lengths"], "examples": ev_spec["examples"], "correct": ev["correct"],
            "accuracy": ev["accuracy"], "ci_low": ev["ci_low"], "ci_high": ev["ci_high"],
        },
        "probes": probe,
        "timing": {
            "train_s": t_train - t_start, "eval_s": t_eval - t_train, "probe_s": t_probe - t_eval,
            "total_s": t_probe - t_start, "cpu_s": time.process_time() - cpu_start,
            "train_wall_time_s": summary["wall_time_s"],
        },
        "provenance": {**provenance(), "blas_single_thread": blas},
    })


# ---------------------------------------------------------------------------------------------------------------
# Run records on disk


class CorruptRun(ValueError):
    """A run record that cannot be trusted (unreadable, truncated, or not the run it claims to be)."""


def _runs_dir(outdir) -> Path:
    return Path(outdir) / "runs"


def run_path(outdir, rid: str) -> Path:
    return _runs_dir(outdir) / f"{rid}.json"


def load_run(path, spec: dict | None = None) -> dict:
    """Read and check one run record; raise :class:`CorruptRun` saying what is wrong.

    With ``spec`` the record must be the result of exactly that spec.
    """
    p = Path(path)
    try:
        rec = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CorruptRun(f"{p.name}: unreadable ({exc})") from None
    if not isinstance(rec, dict) or rec.get("format") != RUN_FORMAT:
        raise CorruptRun(f"{p.name}: not a {RUN_FORMAT} record")
    missing = [k for k in ("run_id", "spec", "train", "in_distribution", "eval", "probes") if k not in rec]
    if missing:
        raise CorruptRun(f"{p.name}: missing {missing}")
    if spec is not None:
        if rec["run_id"] != spec["run_id"]:
            raise CorruptRun(f"{p.name}: holds run {rec['run_id']!r}, expected {spec['run_id']!r}")
        if rec["spec"] != spec:
            raise CorruptRun(f"{p.name}: was produced by a different spec (settings or code changed)")
    try:
        ev = rec["eval"]
        n_len = len(rec["spec"]["eval"]["lengths"])
        ok = ev["lengths"] == rec["spec"]["eval"]["lengths"] and all(
            len(ev[k]) == n_len for k in ("correct", "accuracy", "ci_low", "ci_high"))
        ok = ok and all(0.0 <= a <= 1.0 for a in ev["accuracy"] + [rec["in_distribution"]["accuracy"]])
        ok = ok and all(lo <= a <= hi for a, lo, hi in zip(ev["accuracy"], ev["ci_low"], ev["ci_high"]))
    except (KeyError, TypeError):
        ok = False
    if not ok:
        raise CorruptRun(f"{p.name}: inconsistent accuracies or intervals")
    return rec


def _read_settings(outdir) -> ReproductionSettings:
    p = Path(outdir) / "settings.json"
    try:
        d = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"outdir {str(outdir)!r} holds no reproduction (no settings.json)") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{str(p)!r} is unreadable: {exc}") from None
    if not isinstance(d, dict) or d.get("format") != SETTINGS_FORMAT:
        raise ValueError(f"{str(p)!r} is not a {SETTINGS_FORMAT} file")
    return ReproductionSettings.from_dict(d["settings"])


def _write_settings(outdir: Path, settings: ReproductionSettings) -> None:
    p = outdir / "settings.json"
    if p.exists():
        old = _read_settings(outdir).to_dict()
        new = settings.to_dict()
        if old != new:
            diff = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
            raise ValueError(
                f"outdir {str(outdir)!r} holds a reproduction with other settings (differing: {', '.join(diff)}); "
                "use another outdir, or the same settings to resume"
            )
        return
    from varsim._common.provenance import provenance

    atomic_write_json(p, {"format": SETTINGS_FORMAT, "settings": settings.to_dict(), "provenance": provenance()})


# ---------------------------------------------------------------------------------------------------------------
# The driver


def _log(enabled: bool, message: str) -> None:
    if enabled:
        print(message, file=sys.stderr, flush=True)


def _check_scheduler(scheduler: str) -> None:
    """Connect to the Dask scheduler once (ValueError naming ``scheduler`` when it cannot be reached)."""
    from varsim.experiments.executor import open_executor

    with open_executor(scheduler):
        pass


def run_reproduction(
    outdir,
    *,
    quick: bool = False,
    seeds: int | None = None,
    root_seed: int = 0,
    settings: ReproductionSettings | None = None,
    tasks=None,
    architectures=None,
    norms=None,
    scheduler: str | None = None,
    workers: int | None = None,
    checkpoints: bool | None = None,
    progress: bool | None = None,
    on_run: Callable[[dict], None] | None = None,
) -> dict:
    """Run (or resume) the reproduction into ``outdir``, then aggregate it; return a report.

    ``settings`` defaults to :meth:`ReproductionSettings.quick` (``quick=True``) or :meth:`~.full`, with
    ``seeds`` (default 2 quick, 6 full), ``root_seed``, and ``tasks`` / ``architectures`` / ``norms`` restricting
    the grid. ``scheduler`` (a Dask address) or ``workers`` (local processes, default one per core) choose where
    the runs execute. ``checkpoints`` (default: on for local runs, off on Dask, whose workers may not share this
    filesystem) keeps training checkpoints in ``outdir/checkpoints`` so an interrupted run resumes mid-training.
    ``progress`` (default: stderr is a terminal) logs one line per finished run; ``on_run(record)`` is called in
    this process for each.

    Returns ``{"outdir", "runs", "skipped", "completed", "corrupt", "failed", "other_commit", "learned",
    "summary", "table", "elapsed_s"}``: ``skipped`` lists the runs already finished, ``corrupt`` the records that
    were moved aside and redone, ``failed`` the runs that raised (``{"run_id", "error"}``; re-running resumes
    them), ``other_commit`` the finished runs made at another git commit (kept: a record is trusted when its spec
    matches, so after changing the code, start a fresh ``outdir``), ``learned`` the per-variant learned counts.

    Scripts must call this under ``if __name__ == "__main__":`` (the local workers are spawned processes).
    """
    from varsim.experiments.executor import JobFailure, check_executor_args, run_jobs

    t0 = time.perf_counter()
    if settings is None:
        changes: dict[str, Any] = {}
        for name, value in (("tasks", tasks), ("architectures", architectures), ("norms", norms)):
            if value is not None:
                changes[name] = tuple(value)
        factory = ReproductionSettings.quick if quick else ReproductionSettings.full
        kw = {"root_seed": root_seed, **({} if seeds is None else {"seeds": seeds})}
        settings = factory(**kw, **changes)
    elif not isinstance(settings, ReproductionSettings):
        raise ValueError(f"settings must be a ReproductionSettings, got {type(settings).__name__}")
    elif any(v is not None for v in (seeds, tasks, architectures, norms)) or quick:
        raise ValueError("settings: pass either a ReproductionSettings or quick/seeds/tasks/..., not both")
    check_executor_args(scheduler, workers)
    if checkpoints is None:
        checkpoints = scheduler is None
    show = sys.stderr.isatty() if progress is None else bool(progress)
    if on_run is not None and not callable(on_run):
        raise ValueError("on_run must be callable or None")

    out = Path(outdir)
    if out.exists() and not out.is_dir():
        raise ValueError(f"outdir {str(out)!r} is not a directory")
    try:
        _runs_dir(out).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"outdir {str(out)!r} cannot be created: {exc}") from None
    if not os.access(_runs_dir(out), os.W_OK):
        raise ValueError(f"outdir {str(out)!r} is not writable")
    if scheduler is not None:  # fail on an unreachable cluster before the directory is pinned to these settings
        _check_scheduler(scheduler)
    _write_settings(out, settings)

    from varsim._common.provenance import provenance

    commit = provenance()["git_commit"]
    specs = job_specs(settings)
    skipped, corrupt, todo, other_code = [], [], [], []
    for spec in specs:
        path = run_path(out, spec["run_id"])
        if not path.exists():
            todo.append(spec)
            continue
        try:
            rec = load_run(path, spec)
            skipped.append(spec["run_id"])
            if (rec.get("provenance") or {}).get("git_commit") != commit:
                other_code.append(spec["run_id"])
        except CorruptRun as exc:
            os.replace(path, path.with_name(path.name + ".corrupt"))
            corrupt.append({"run_id": spec["run_id"], "reason": str(exc)})
            _log(True, f"varsim reproduce: redoing {spec['run_id']}: {exc} (moved to {path.name}.corrupt)")
            todo.append(spec)
    _log(show, f"reproduce: {len(specs)} runs, {len(skipped)} already finished, {len(todo)} to run")
    if other_code:  # kept (same spec), but the numbers may predate a code change: say so
        _log(True, f"varsim reproduce: note: {len(other_code)} finished run(s) were made at another git commit "
                   f"than the current {commit!r} (e.g. {other_code[0]}); use a fresh outdir to recompute them")

    def workdir(spec):
        return str(out / "checkpoints" / spec["run_id"]) if checkpoints else None

    done = []
    failed = []

    def finished(i: int, rec) -> None:
        spec = todo[i]
        if isinstance(rec, JobFailure):
            failed.append({"run_id": spec["run_id"], "error": f"{type(rec.error).__name__}: {rec.error}"})
            _log(True, f"varsim reproduce: run {spec['run_id']} failed: {rec.error}")
            return
        atomic_write_json(run_path(out, spec["run_id"]), rec)
        done.append(spec["run_id"])
        if on_run is not None:
            on_run(rec)
        acc = rec["eval"]["accuracy"]
        _log(show, f"[{len(skipped) + len(done)}/{len(specs)}] {spec['run_id']}: "
                   f"in-dist {rec['in_distribution']['accuracy']:.3f}, N={rec['eval']['lengths'][-1]} {acc[-1]:.3f}, "
                   f"{rec['timing']['total_s']:.1f} s")

    run_jobs(run_job, [(spec, workdir(spec)) for spec in todo], scheduler=scheduler, workers=workers,
             on_result=finished, return_exceptions=True)
    agg = aggregate(out)
    return {
        "outdir": str(out),
        "runs": len(specs),
        "skipped": skipped,
        "completed": done,
        "corrupt": corrupt,
        "failed": failed,
        "other_commit": other_code,
        "summary": str(out / "summary.json"),
        "table": str(out / "table.md"),
        "learned": agg["learned"],
        "elapsed_s": time.perf_counter() - t0,
    }


# ---------------------------------------------------------------------------------------------------------------
# Aggregation


def load_results(outdir) -> dict:
    """``{"settings", "runs": {run_id: record}, "missing": [run_id], "corrupt": [{"run_id", "reason"}]}``."""
    out = Path(outdir)
    settings = _read_settings(out)
    runs, missing, corrupt = {}, [], []
    for spec in job_specs(settings):
        path = run_path(out, spec["run_id"])
        if not path.exists():
            missing.append(spec["run_id"])
            continue
        try:
            runs[spec["run_id"]] = load_run(path, spec)
        except CorruptRun as exc:
            corrupt.append({"run_id": spec["run_id"], "reason": str(exc)})
    return {"settings": settings, "runs": runs, "missing": missing, "corrupt": corrupt}


def _by_cell(settings: ReproductionSettings, runs: dict) -> dict:
    cells = {}
    for task in settings.tasks:
        for arch in settings.architectures:
            for norm in settings.norms:
                cells[(task, arch, norm)] = {
                    s: runs[rid] for s in range(settings.seeds) if (rid := run_id(task, arch, norm, s)) in runs
                }
    return cells


def _clip_interval(d: dict, lo: float, hi: float) -> dict:
    """An accuracy lies in [0, 1] (a difference of two in [-1, 1]): a t interval reaching past that is cut there."""
    out = dict(d)
    for k in ("ci_low", "ci_high"):
        if out[k] is not None and math.isfinite(out[k]):
            out[k] = min(max(out[k], lo), hi)
    return out


def _interval_series(rows: list[list[float]], confidence: float) -> dict:
    from varsim.experiments.stats import t_interval

    cols = [_clip_interval(t_interval([r[j] for r in rows], confidence=confidence), 0.0, 1.0)
            for j in range(len(rows[0]))]
    return {k: [c[k] for c in cols] for k in ("mean", "sd", "ci_low", "ci_high")}


def aggregate(outdir, *, confidence: float = 0.95) -> dict:
    """Summarize the finished runs of ``outdir`` into ``summary.json`` and ``table.md``; return the summary.

    Per task, architecture, norm and N: the mean accuracy over seeds with a Student-t interval, and the pooled
    Wilson interval of all seeds' test examples. Per norm against ``none``: the paired difference over the seeds
    both have, with its t interval, the paired t-test p-value and the exact sign-flip p-value.
    """
    from varsim._common.provenance import provenance
    from varsim.experiments.stats import paired_difference, pooled_bernoulli, t_interval

    res = load_results(outdir)
    settings, runs = res["settings"], res["runs"]
    cells = _by_cell(settings, runs)
    groups, paired, learned = [], [], []
    for (task, arch, norm), by_seed in cells.items():
        seeds = sorted(by_seed)
        g = {"task": task, "architecture": arch, "norm": norm, "seeds": seeds, "n_seeds": len(seeds),
             "lengths": list(settings.eval_lengths)}
        if seeds:
            recs = [by_seed[s] for s in seeds]
            ids = [r["in_distribution"] for r in recs]
            g["in_distribution"] = {
                "length": ids[0]["length"],
                **_clip_interval(t_interval([d["accuracy"] for d in ids], confidence=confidence), 0.0, 1.0),
                "per_seed": [d["accuracy"] for d in ids],
                "learned": sum(d["learned"] for d in ids),
                "not_learned_seeds": [s for s, d in zip(seeds, ids) if not d["learned"]],
            }
            g["train_accuracy"] = [r["train"]["train_accuracy"] for r in recs]
            rows = [r["eval"]["accuracy"] for r in recs]
            g["accuracy"] = {**_interval_series(rows, confidence), "per_seed": rows}
            pooled = [pooled_bernoulli([r["eval"]["correct"][j] for r in recs],
                                       [r["eval"]["examples"] for r in recs], confidence=confidence)
                      for j in range(len(settings.eval_lengths))]
            g["pooled"] = {k: [p[k] for p in pooled] for k in ("accuracy", "ci_low", "ci_high", "successes", "trials")}
            slopes = {}
            for key in ("pre_coordinate", "post_coordinate", "pre_median", "post_median"):
                vals = [r["probes"]["slopes"][key]["slope"] for r in recs if r["probes"]["slopes"].get(key)]
                slopes[key] = t_interval(vals, confidence=confidence) if vals else None
            g["probe_slopes"] = slopes
            learned.append({"task": task, "architecture": arch, "norm": norm,
                            "learned": g["in_distribution"]["learned"], "seeds": len(seeds)})
        groups.append(g)
        if norm == BASELINE_NORM or BASELINE_NORM not in settings.norms:
            continue
        base = cells[(task, arch, BASELINE_NORM)]
        common = sorted(set(base) & set(by_seed))
        p = {"task": task, "architecture": arch, "norm": norm, "baseline": BASELINE_NORM, "seeds": common,
             "lengths": list(settings.eval_lengths)}
        if common:
            per_len = [_clip_interval(paired_difference([by_seed[s]["eval"]["accuracy"][j] for s in common],
                                                        [base[s]["eval"]["accuracy"][j] for s in common],
                                                        confidence=confidence), -1.0, 1.0)
                       for j in range(len(settings.eval_lengths))]
            for k in ("mean_diff", "sd", "ci_low", "ci_high", "p_ttest", "p_signflip"):
                p[k] = [d[k] for d in per_len]
            # The lengths where the interval excludes 0 (equivalently, the paired t-test rejects at 1 - confidence).
            p["better_at"] = [n for n, d in zip(settings.eval_lengths, per_len) if d["ci_low"] > 0]
            p["worse_at"] = [n for n, d in zip(settings.eval_lengths, per_len) if d["ci_high"] < 0]
        paired.append(p)

    summary = _jsonable({
        "format": SUMMARY_FORMAT,
        "settings": settings.to_dict(),
        "confidence": confidence,
        "methods": {
            "accuracy_interval": "mean over seeds with a two-sided Student-t interval (n_seeds - 1 df), "
                                 "cut to [0, 1]",
            "pooled_interval": "Wilson score interval of all seeds' test examples pooled (ignores seed variation)",
            "paired_difference": "per seed, norm minus none at the same N (same init seed, data, test sets); "
                                 "mean with a Student-t interval, cut to [-1, 1]",
            "p_ttest": "two-sided paired t-test over seeds",
            "p_signflip": "two-sided exact sign-flip (randomization) test over seeds; its smallest possible value "
                          "is 2 / 2**n_seeds",
            "learned": "accuracy >= learned_threshold at N = train_max on id_examples fresh examples",
        },
        "runs": {"expected": settings.seeds * len(settings.tasks) * len(settings.architectures) * len(settings.norms),
                 "found": len(runs), "missing": res["missing"], "corrupt": res["corrupt"]},
        "learned": learned,
        "groups": groups,
        "paired": paired,
        "provenance": provenance(),
    })
    out = Path(outdir)
    atomic_write_json(out / "summary.json", summary)
    atomic_write_text(out / "table.md", render_table(summary))
    return summary


def _fmt_ci(mean, lo, hi, digits=3) -> str:
    if mean is None:
        return "n/a"
    if lo is None or hi is None:
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def _fmt_diff(mean, lo, hi, pt, ps) -> str:
    if mean is None:
        return "n/a"
    ci = "" if lo is None or hi is None else f" [{lo:+.3f}, {hi:+.3f}]"
    pt_s = "n/a" if pt is None else f"{pt:.3g}"
    ps_s = "n/a" if ps is None else f"{ps:.3g}"
    return f"{mean:+.3f}{ci} p={pt_s} / {ps_s}"


def render_table(summary: dict) -> str:
    """The Markdown report of :func:`aggregate`'s summary."""
    st = summary["settings"]
    conf = int(round(100 * summary["confidence"]))
    lines = [
        "# varsim reproduction: accuracy vs set size N",
        "",
        f"Settings: model {json.dumps(st['model'])}; training {json.dumps(st['train'])}; "
        f"{st['seeds']} seeds (root seed {st['root_seed']}); {st['eval_examples']} test examples per N and seed; "
        f"in-distribution check at N = {st['train'].get('train_max', 16)} on {st['id_examples']} examples "
        f"(learned if accuracy >= {st['learned_threshold']}).",
        f"Runs found: {summary['runs']['found']} of {summary['runs']['expected']}"
        + (f"; missing: {', '.join(summary['runs']['missing'])}" if summary['runs']['missing'] else "")
        + (f"; corrupt: {', '.join(c['run_id'] for c in summary['runs']['corrupt'])}"
           if summary['runs']['corrupt'] else "") + ".",
        "",
        f"Accuracy: mean over seeds [{conf}% t interval]. Differences: norm minus none, paired by seed, mean "
        f"[{conf}% t interval], then p-values of the paired t-test / exact sign-flip test (sign-flip cannot go below "
        f"2/2^seeds).",
    ]
    groups = summary["groups"]
    paired = {(p["task"], p["architecture"], p["norm"]): p for p in summary["paired"]}
    for task in st["tasks"]:
        for arch in st["architectures"]:
            gs = [g for g in groups if g["task"] == task and g["architecture"] == arch]
            norms = [g["norm"] for g in gs]
            lines += ["", f"## {task}, {arch.replace('_', ' ')}", ""]
            lines.append("| | " + " | ".join(norms) + " |")
            lines.append("|---" * (len(norms) + 1) + "|")
            row = []
            for g in gs:
                d = g.get("in_distribution")
                row.append("no runs" if d is None else
                           f"{_fmt_ci(d['mean'], d['ci_low'], d['ci_high'])}, learned {d['learned']}/{g['n_seeds']}")
            lines.append("| in-distribution | " + " | ".join(row) + " |")
            for j, n in enumerate(st["eval_lengths"]):
                cells = []
                for g in gs:
                    a = g.get("accuracy")
                    cells.append("n/a" if a is None else _fmt_ci(a["mean"][j], a["ci_low"][j], a["ci_high"][j]))
                lines.append(f"| N = {n} | " + " | ".join(cells) + " |")
            others = [n for n in norms if n != BASELINE_NORM and (task, arch, n) in paired]
            if others:
                lines += ["", f"Paired differences vs {BASELINE_NORM} ({task}, {arch.replace('_', ' ')}):", ""]
                lines.append("| N | " + " | ".join(f"{n} - {BASELINE_NORM}" for n in others) + " |")
                lines.append("|---" * (len(others) + 1) + "|")
                for j, n in enumerate(st["eval_lengths"]):
                    cells = []
                    for norm in others:
                        p = paired[(task, arch, norm)]
                        if "mean_diff" not in p:
                            cells.append("n/a")
                        else:
                            cells.append(_fmt_diff(p["mean_diff"][j], p["ci_low"][j], p["ci_high"][j],
                                                   p["p_ttest"][j], p["p_signflip"][j]))
                    lines.append(f"| {n} | " + " | ".join(cells) + " |")
                lines.append("")
                for norm in others:
                    p = paired[(task, arch, norm)]
                    better, worse = p.get("better_at", []), p.get("worse_at", [])
                    lines.append(f"- {norm} vs {BASELINE_NORM}: {conf}% interval above 0 at N = "
                                 f"{', '.join(map(str, better)) or 'none'}; below 0 at N = "
                                 f"{', '.join(map(str, worse)) or 'none'}.")
            slope_cells = []
            for g in gs:
                s = (g.get("probe_slopes") or {})
                pre, post = s.get("pre_median"), s.get("post_median")
                slope_cells.append(
                    "n/a" if not pre or not post else
                    f"{pre['mean']:+.2f} -> {post['mean']:+.2f}")
            lines += ["", "Log-log slope of the per-coordinate std of the attention output vs N (median over "
                          "coordinates, mean over seeds), before -> after the normalization: "
                      + "; ".join(f"{n}: {c}" for n, c in zip(norms, slope_cells)) + "."]
    not_learned = [x for x in summary["learned"] if x["learned"] < x["seeds"]]
    lines += ["", "## Variants that did not learn", ""]
    if not_learned:
        for x in not_learned:
            lines.append(f"- {x['task']}, {x['architecture']}, {x['norm']}: learned in {x['learned']} of "
                         f"{x['seeds']} seeds")
    else:
        lines.append("None: every run reached the in-distribution threshold.")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------------------------
# Source of the reproduction figures

#: Environment variable naming the reproduction directory the figures read (overrides every default).
RESULTS_ENV = "VARSIM_REPRODUCE_DIR"
_QUICK_DIRS: dict[int, Path] = {}


def figure_results(quick: bool, seed: int = 0, *, default_dir=None, progress: bool = False) -> dict:
    """The reproduction the figures are drawn from, as :func:`load_results` returns it, plus its ``summary`` and
    ``cells`` (``{(task, architecture, norm): [run records in seed order]}``).

    Looked up in this order: the directory in ``$VARSIM_REPRODUCE_DIR``; in quick mode, a quick reproduction with
    root seed ``seed`` run once per process into a temporary directory (every figure of one ``make_all`` call
    shares it; it is removed when the process exits); otherwise ``default_dir`` (the full run, e.g.
    ``results/reproduce`` of the checkout), where the full reproduction is run or resumed first (tens of minutes
    on 2 cores the first time; nothing when it is complete).
    """
    env = os.environ.get(RESULTS_ENV)
    if env:
        outdir = Path(env)
    elif quick:
        seed = check_int("seed", seed, minimum=0)
        outdir = _QUICK_DIRS.get(seed)
        if outdir is None or not (outdir / "summary.json").is_file():
            outdir = Path(tempfile.mkdtemp(prefix=f"varsim-repro-quick-{seed}-"))
            atexit.register(shutil.rmtree, outdir, ignore_errors=True)  # a cache for this process only
            report = run_reproduction(outdir, quick=True, root_seed=seed, progress=progress)
            if report["failed"]:  # figures of a partial grid would silently miss lines
                first = report["failed"][0]
                raise ValueError(f"the quick reproduction in {str(outdir)!r} had {len(report['failed'])} failed "
                                 f"run(s), e.g. {first['run_id']}: {first['error']}")
            _QUICK_DIRS[seed] = outdir
    else:
        if default_dir is None:
            raise ValueError(f"no reproduction directory given: set ${RESULTS_ENV} or pass default_dir")
        outdir = Path(default_dir)
        # The figures are the package's main job: a missing or unfinished full reproduction is run (or resumed;
        # finished runs are never redone) rather than refused, so one command regenerates every figure.
        outdir.mkdir(parents=True, exist_ok=True)
        report = run_reproduction(outdir, root_seed=seed, progress=progress)
        if report["failed"]:
            first = report["failed"][0]
            raise ValueError(f"the reproduction in {str(outdir)!r} had {len(report['failed'])} failed run(s), "
                             f"e.g. {first['run_id']}: {first['error']}; run `varsim reproduce {outdir}` to retry")
    res = load_results(outdir)
    summary_path = outdir / "summary.json"
    try:
        summary = json.loads(summary_path.read_text(encoding="utf-8"))
        stale = summary.get("runs", {}).get("found") != len(res["runs"])
    except (OSError, json.JSONDecodeError):
        stale = True
    if stale:  # runs finished (or were added) after the last aggregation
        summary = aggregate(outdir)
    res["summary"] = summary
    res["outdir"] = str(outdir)
    # the records of each (task, architecture, norm) in seed order, so figures need not scan every run per cell
    res["cells"] = {cell: list(by_seed.values()) for cell, by_seed in _by_cell(res["settings"], res["runs"]).items()}
    return res
