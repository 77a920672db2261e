"""The training loop: deterministic, checkpointed, resumable bit for bit.

Run directory layout (``outdir``)::

    config.json        the TrainConfig and provenance of the run
    ckpt-XXXXXXXX.npz  the last ``keep_checkpoints`` checkpoints (see varsim.train.checkpoint)
    metrics.jsonl      one JSON record per ``log_every`` updates: step, loss, accuracy, lr, grad_norm, steps_per_s
    summary.json       written when the run ends (completed, or stopped on a non-finite loss)
    .lock              held (flock) by the process running the run: a second train on the directory is refused

Determinism: the batch of update k (0-based) is ``make_batch(..., rng=child_generator(data_seed, k))``, the model
and the optimizer are deterministic, and a checkpoint holds every other piece of state (parameters, moments, update
count, the metrics window in progress). So a run killed at any moment and resumed from its latest checkpoint
replays exactly the updates it lost and ends with bitwise the same parameters as a run never interrupted.
BLAS runs single-threaded during training (``varsim._common.blas``): faster for these small matrices, and it keeps
the rounding of matrix products independent of the machine's core count. A run uses several cores through its
configuration's ``shards`` (:mod:`varsim.nn.shards`): each batch cut into that many shards, their passes on
``threads`` threads, the gradients summed in shard order, so the bits depend on ``shards`` and never on
``threads``; ``shards=1`` (the default) is the unsplit pass. Several trainings also run as processes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from varsim._common.atomic import atomic_write_json, check_writable_dir
from varsim._common.blas import blas_threads
from varsim._common.jsonio import read_json
from varsim._common.progress import Progress
from varsim._common.provenance import provenance
from varsim._common.runlock import LOCK_NAME, run_lock
from varsim._common.seeding import child_generator
from varsim._common.validate import check_positive_int
from varsim.jobs.executor import default_workers
from varsim.nn.architectures import build_model
from varsim.nn.optim import make_optimizer
from varsim.tasks import make_batch
from varsim.train.budget import check_training_cost
from varsim.train.checkpoint import (
    checkpoint_path,
    latest_checkpoint,
    list_checkpoints,
    load_checkpoint,
    save_checkpoint,
)
from varsim.train.config import TrainConfig
from varsim.train.metrics import MetricsLog

__all__ = ["train", "training_batch"]


def training_batch(config: TrainConfig, step: int) -> dict:
    """The batch of update ``step`` (0-based) of a run: a pure function of ``(config, step)``.

    Parameters
    ----------
    config : TrainConfig
        The run.
    step : int
        The update, from 0.

    Returns
    -------
    dict
        The task's batch arrays (for ``argmax``: ``priority``, ``label``, ``mask`` of shape ``(batch_size, set
        size)`` and ``target``), the same at every call.

    Examples
    --------
    >>> import numpy as np
    >>> from varsim.train import TrainConfig, training_batch
    >>> cfg = TrainConfig(task="argmax", batch_size=16)
    >>> a, b = training_batch(cfg, 3), training_batch(cfg, 3)
    >>> a["target"].shape, all(np.array_equal(a[k], b[k]) for k in a)
    ((16,), True)
    """
    return make_batch(
        config.task,
        config.batch_size,
        config.train_range,
        child_generator(config.effective_data_seed, step),
        **config.task_kwargs(),
    )


class _Window:
    """Running sums over the current logging window; saved in checkpoints so resumed logs match exactly."""

    def __init__(self, d: dict | None = None):
        d = d or {}
        self.n = int(d.get("n", 0))
        self.loss = float(d.get("loss", 0.0))
        self.acc = float(d.get("acc", 0.0))
        self.grad_norm = float(d.get("grad_norm", 0.0))

    def add(self, loss: float, acc: float, grad_norm: float) -> None:
        self.n += 1
        self.loss += loss
        self.acc += acc
        self.grad_norm += grad_norm

    def to_dict(self) -> dict:
        return {"n": self.n, "loss": self.loss, "acc": self.acc, "grad_norm": self.grad_norm}


def _prepare_outdir(outdir) -> tuple[Path, list[Path]]:
    """The run directory, created if needed and checked writable; also the directories this call created (deepest
    first), so that a run refused before its first checkpoint can take them away again."""
    if not str(outdir).strip():
        raise ValueError("outdir must not be empty (give a run directory, e.g. --outdir runs/x)")
    out = Path(outdir)
    if out.exists() and not out.is_dir():
        raise ValueError(f"outdir {str(out)!r} exists and is not a directory")
    created = [d for d in (out, *out.parents) if not d.exists()]  # deepest first
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"outdir {str(out)!r} cannot be created: {exc.strerror or exc}") from None
    try:
        check_writable_dir(out, "outdir")
    except ValueError:
        _remove_empty(created)
        raise
    return out, created


def _remove_empty(dirs) -> None:
    for d in dirs:
        try:
            d.rmdir()  # only when empty: never takes anything another process put there
        except OSError:
            return


def _check_same_config(config: TrainConfig, other: TrainConfig, where: str) -> None:
    diffs = config.differences(other)
    if diffs:
        listed = "; ".join(f"{k}: {b!r} there, {a!r} now" for k, (a, b) in diffs.items())
        raise ValueError(f"cannot resume: the config differs from the one in {where} ({listed})")


def train(config, outdir, *, resume: bool = False, progress: bool | None = None,
          max_hours: float | None = None, threads: int | None = None) -> dict:
    """Train a model as ``config`` says, writing checkpoints and metrics into ``outdir``; return a summary.

    Parameters
    ----------
    config : TrainConfig, dict or path
        The run: a :class:`TrainConfig`, a dict of its fields, or a JSON file path.
    outdir : path
        The run directory: ``config.json``, checkpoints ``ckpt-XXXXXXXX.npz``, ``metrics.jsonl``,
        ``summary.json``.
    resume : bool
        False: the directory must not already hold a run. True: continue from its latest checkpoint (or start, if
        there is none yet) after checking that the config is the same; a finished run returns its summary at once.
    progress : bool, optional
        Show loss, accuracy and steps/s on stderr (default: when it is a terminal).
    max_hours : float, optional
        Refuse a run estimated to take longer (default ``varsim.train.budget.TRAIN_MAX_HOURS``).
    threads : int, optional
        Threads running the shards of a batch (``config.shards``; default: one per shard, at most one per core);
        never changes a number. Ignored with one shard.

    Returns
    -------
    dict
        ``status`` (``"completed"`` or ``"non_finite"``), ``message``, ``steps_done``, ``steps``, ``final_loss``
        and ``train_accuracy`` (means over the last logging window), ``wall_time_s`` (summed over resumptions),
        ``checkpoint`` (the latest good checkpoint) and ``outdir``.

    Raises
    ------
    ValueError
        Refused up front, naming the parameter: sizes whose memory exceeds the machine's or whose estimated time
        exceeds ``max_hours``, an empty or unwritable ``outdir``, a run directory another process is using.

    See Also
    --------
    evaluate : accuracy of the trained model at other set sizes.
    load_checkpoint : the model, its config and the optimizer state.

    Notes
    -----
    A non-finite loss or gradient stops the run before the bad update is applied; no checkpoint is written after
    it, so the last good one remains. A run that started in an empty directory and stops (non-finite values, an
    error, an interrupt) before its first checkpoint leaves nothing behind: its files, and the directory if this
    call created it, are removed, so the same command can simply be run again. On resumption a torn last line of
    ``metrics.jsonl`` is dropped with a notice on stderr; a damaged line before it is refused.

    Examples
    --------
    >>> import tempfile
    >>> from varsim.train import TrainConfig, evaluate, train
    >>> run = tempfile.mkdtemp() + "/argmax"
    >>> cfg = TrainConfig(task="argmax", steps=20, batch_size=16, checkpoint_every=20, log_every=10)
    >>> summary = train(cfg, run, progress=False)
    >>> summary["status"], summary["steps_done"]
    ('completed', 20)
    >>> evaluate(run, lengths=(8, 32), n_examples=64, progress=False)["lengths"]
    [8, 32]
    """
    config = TrainConfig.coerce(config)
    threads = min(config.shards, default_workers()) if threads is None else check_positive_int("threads", threads)
    check_training_cost(config, max_hours=max_hours)
    out, created = _prepare_outdir(outdir)
    fresh = False
    try:
        with run_lock(out, "varsim train"):
            fresh = latest_checkpoint(out) is None and not (out / "config.json").exists()
            try:
                rec = _train_locked(config, out, resume, progress, threads)
            except BaseException:
                if fresh and latest_checkpoint(out) is None:
                    _discard_run(out)
                raise
            if fresh and rec["checkpoint"] is None:  # stopped before its first checkpoint: nothing to resume
                _discard_run(out)
                rec["message"] += "; the run directory was cleared"
    except BaseException:
        if fresh or not any(out.iterdir()):
            _remove_empty(created)
        raise
    if fresh and rec["checkpoint"] is None:
        _remove_empty(created)
    return rec


def _discard_run(out: Path) -> None:
    """Remove what a run writes (called under the run lock, with no checkpoint in ``out``)."""
    for name in ("config.json", "metrics.jsonl", "summary.json", LOCK_NAME):
        (out / name).unlink(missing_ok=True)


@dataclasses.dataclass
class _RunState:
    """What a run carries from one update to the next (all of it saved in a checkpoint)."""

    model: object
    optimizer: object
    step: int = 0
    window: _Window = dataclasses.field(default_factory=_Window)
    elapsed: float = 0.0
    last_log: dict | None = None


def _train_locked(config: TrainConfig, out: Path, resume: bool, progress, threads: int = 1) -> dict:
    """The body of :func:`train`, run while holding the run directory's lock."""
    for stale in out.glob(".ckpt-*.tmp"):  # left by a run killed while writing a checkpoint
        stale.unlink(missing_ok=True)
    config_file = out / "config.json"
    latest = latest_checkpoint(out)
    if not resume and (latest is not None or config_file.exists()):
        raise ValueError(
            f"outdir {str(out)!r} already holds a run; pass resume=True (--resume) to continue it "
            "or choose another outdir"
        )
    state = _restore(config, latest, config_file)
    metrics = MetricsLog(out / "metrics.jsonl")
    torn = metrics.truncate_after(state.step)  # before anything is written: a damaged log refuses the resumption
    if torn is not None:
        print(f"varsim train: notice: dropped the torn last line ({torn}) of {str(metrics.path)!r}, left by an "
              f"interrupted write; the steps after the checkpoint at {state.step} are logged again", file=sys.stderr)
    prov = provenance()  # once per call: it runs git; every checkpoint of this call reuses it
    done = state.step >= config.steps
    if not (done and config_file.exists()):  # resuming a finished run changes no byte of it (created_utc kept)
        atomic_write_json(config_file, {"config": config.to_dict(), "provenance": prov})
    if done:  # its summary is written only where a run stopped before writing it
        return _summary(out, config, state, prov, "completed", f"run already complete at step {state.step}",
                        write=not (out / "summary.json").exists())
    status, message = _run_updates(config, out, state, metrics, prov, progress, threads)
    return _summary(out, config, state, prov, status, message)


def _restore(config: TrainConfig, latest: Path | None, config_file: Path) -> _RunState:
    """The run's state: from its latest checkpoint, or a fresh model and optimizer (after checking that a
    ``config.json`` left by a run stopped before its first checkpoint holds the same config)."""
    if latest is not None:
        model, saved, ckpt = load_checkpoint(latest)
        _check_same_config(config, saved, str(latest))
        header = ckpt["header"]
        optimizer = make_optimizer(config.optimizer, model.params, **config.optimizer_kwargs())
        optimizer.load_state_dict(ckpt["optimizer"])
        return _RunState(model, optimizer, ckpt["step"], _Window(header.get("window")),
                         float(header.get("elapsed_s", 0.0)), header.get("last_log"))
    if config_file.exists():
        recorded = read_json(config_file, what="run config")
        if "config" not in recorded:
            raise ValueError(f"run config {str(config_file)!r} has no 'config' entry")
        recorded = TrainConfig.from_dict_in(recorded["config"], f"run config {str(config_file)!r}")
        _check_same_config(config, recorded, str(config_file))
    model = build_model(config.model, seed=config.seed)
    return _RunState(model, make_optimizer(config.optimizer, model.params, **config.optimizer_kwargs()))


def _run_updates(config: TrainConfig, out: Path, state: _RunState, metrics: MetricsLog, prov: dict,
                 progress, threads: int = 1) -> tuple[str, str]:
    """Run the updates from ``state.step`` to ``config.steps``, logging and checkpointing as the config says;
    return (status, message). A non-finite loss, gradient or parameter stops the run before it is applied or
    saved."""
    status, message = "completed", f"completed {config.steps} steps"
    t_start = t_window = time.perf_counter()
    timed = 0  # updates since t_window (a restored window may hold updates from before the resumption)
    elapsed_at_start = state.elapsed
    label = f"train {config.task}" + (f" (resumed at {state.step})" if state.step else "")
    with blas_threads(1), _shard_pool(config.shards, threads) as pool, \
            Progress(config.steps - state.step, label, enabled=progress) as bar:
        while state.step < config.steps:
            loss, acc, info = _update(state, training_batch(config, state.step), config.shards, pool)
            if info is None:
                what = "loss" if not math.isfinite(loss) else "gradient"
                metrics.append({"step": state.step + 1, "event": f"non-finite {what}", "loss": loss})
                return "non_finite", _stop_message(what, state.step + 1, out)
            state.step += 1
            timed += 1
            state.window.add(loss, acc, info["grad_norm"])
            state.elapsed = elapsed_at_start + (time.perf_counter() - t_start)
            if state.step % config.log_every == 0 or state.step == config.steps:
                now = time.perf_counter()
                state.last_log = _log_record(state, info, timed / max(now - t_window, 1e-12))
                metrics.append(state.last_log)
                state.window, t_window, timed = _Window(), now, 0
            bar.update(1, _progress_text(state.last_log))
            if state.step % config.checkpoint_every == 0 or state.step == config.steps:
                if not all(np.isfinite(p).all() for p in state.model.params.values()):
                    metrics.append({"step": state.step, "event": "non-finite parameter"})
                    return "non_finite", _stop_message("parameter", state.step, out)
                _save(out, config, state, prov)
    return status, message


def _shard_pool(shards: int, threads: int):
    """The threads running a batch's shards for the whole run (shut down when it ends), or none (one shard, or one
    thread: the shards run in turn in this thread)."""
    if shards > 1 and threads > 1:
        return ThreadPoolExecutor(min(shards, threads), thread_name_prefix="varsim-shard")
    return contextlib.nullcontext()


def _update(state: _RunState, batch: dict, shards: int = 1, pool=None) -> tuple[float, float, dict | None]:
    """One optimizer update on ``batch`` (cut into ``shards`` shards run on ``pool``): (loss, accuracy, the
    optimizer's info, or None when the loss or the gradient is not finite and nothing was applied)."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # detected and reported by the caller
        if shards == 1:  # the unsplit pass, called as before shards existed
            loss, acc, grads = state.model.loss_and_grads(batch)
        else:
            loss, acc, grads = state.model.loss_and_grads(batch, shards=shards, pool=pool)
    loss, acc = float(loss), float(acc)
    if not math.isfinite(loss):
        return loss, acc, None
    try:
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # a non-finite parameter is caught after
            return loss, acc, state.optimizer.step(grads)
    except FloatingPointError:
        return loss, acc, None


def _log_record(state: _RunState, info: dict, steps_per_s: float) -> dict:
    w = state.window
    return {
        "step": state.step,
        "loss": w.loss / w.n,
        "accuracy": w.acc / w.n,
        "lr": info["lr"],
        "grad_norm": w.grad_norm / w.n,
        "steps_per_s": steps_per_s,
        "elapsed_s": state.elapsed,
    }


def _summary(out: Path, config: TrainConfig, state: _RunState, prov: dict, status: str, message: str, *,
             write: bool = True) -> dict:
    """The run's summary (written to ``summary.json`` with the provenance, unless not ``write``)."""
    ckpt = latest_checkpoint(out)
    last = state.last_log
    rec = {
        "status": status,
        "message": message,
        "steps_done": state.step,
        "steps": config.steps,
        "final_loss": None if last is None else last["loss"],
        "train_accuracy": None if last is None else last["accuracy"],
        "wall_time_s": state.elapsed,
        "checkpoint": None if ckpt is None else str(ckpt),
        "outdir": str(out),
    }
    if write:
        atomic_write_json(out / "summary.json", {**rec, "provenance": prov})
    return rec


def _stop_message(what: str, step: int, out: Path) -> str:
    ckpt = latest_checkpoint(out)
    kept = f"last good checkpoint kept: {ckpt}" if ckpt is not None else "no checkpoint was written yet"
    return f"stopped: non-finite {what} at update {step}; {kept}"


def _progress_text(last: dict | None) -> str:
    if last is None:
        return ""
    return f"loss {last['loss']:.4f} acc {last['accuracy']:.3f} {last['steps_per_s']:.1f} steps/s"


def _save(out: Path, config: TrainConfig, state: _RunState, prov: dict) -> None:
    step = state.step
    header = {
        "step": step,
        "config": config.to_dict(),
        "rng": {
            "init_seed": config.seed,
            "data_seed": config.effective_data_seed,
            "stream": "batch of update k drawn from varsim._common.seeding.child_generator(data_seed, k)",
            "next_step": step,
        },
        "window": state.window.to_dict(),
        "last_log": state.last_log,
        "elapsed_s": state.elapsed,
        "blas_threads": 1,
        "shards": config.shards,  # the numbers depend on it (in the config too when > 1), never on the threads
        "provenance": prov,
    }
    save_checkpoint(checkpoint_path(out, step), params=state.model.params,
                    optimizer_state=state.optimizer.state_dict(), header=header)
    for _, old in list_checkpoints(out)[: -config.keep_checkpoints]:
        old.unlink(missing_ok=True)

