"""What a training run or an evaluation will cost, estimated from its sizes before anything is allocated.

``train`` and ``evaluate`` call :func:`check_training_cost` / :func:`check_evaluation_cost` first, so that a size
typed wrong by a few orders of magnitude (``--d-model 1000000000``, ``--batch 1e9``, ``--steps 1e12``,
``--lengths 1e9``) is refused at once with a one-line ``ValueError`` that names the parameter, the estimated cost
and the bound, instead of a MemoryError traceback minutes later or a run that would not end this year.

Two costs:

- **peak memory** (bytes): the parameters with their gradients and Adam moments (and the checkpoint being written),
  the activations one forward/backward pass keeps (per token: the input features, the item MLP's layers, the
  full-attention blocks' projections, T x T attention matrices and MLP), and the NumPy arrays of one batch. The
  bound is the machine's memory (:func:`varsim._common.validate.memory_limit_bytes`). Tests check that the
  estimate lies above the peak that ``tracemalloc`` measures and within a small factor of it.
- **time** (seconds): the multiply-adds of forward (and backward: x3 for a training step) passes over every token
  at :data:`FLOP_RATE`, plus the elementwise work per token (activations, masks, features; it dominates for small
  widths) at :data:`ELEMENT_RATE`, plus :data:`STEP_OVERHEAD_S` per training step, divided by the cores the job
  may use (training: one; an evaluation: its worker threads times their BLAS threads, at most the machine's). The
  rates are above what one core can reach (``benchmarks/bench_evaluate.py`` prints measured / estimated), so the
  estimate is a lower bound and only runs that surely take longer than ``max_hours`` are refused. Training is
  checkpointed and resumable, so its default bound is longer.

The per-example formulas are the architecture's (``cost`` of its :mod:`varsim.nn.architectures` entry, e.g.
:mod:`varsim.nn.set_cost`, which the model itself uses to refuse and chunk batches) and the task's
(:meth:`varsim.tasks.Task.batch_bytes`); this module adds them up over a run and refuses what is beyond the bounds.

The parameter named in an error is the one of the sizes that drive the exceeded cost that lies furthest above its
default (``batch_size=1000000000`` rather than ``d_model=64``).
"""

from __future__ import annotations

import dataclasses

from varsim._common.validate import check_real, format_bytes, format_seconds, memory_limit_bytes
from varsim.nn.architectures import get_architecture
from varsim.tasks import get_key_encoding

__all__ = [
    "Cost",
    "FLOP_RATE",
    "ELEMENT_RATE",
    "STEP_OVERHEAD_S",
    "TRAIN_MAX_HOURS",
    "EVALUATE_MAX_HOURS",
    "training_cost",
    "evaluation_cost",
    "check_training_cost",
    "check_evaluation_cost",
    "PREDICT_MAX_HOURS",
    "prediction_cost",
    "check_prediction_cost",
]

# Rates this NumPy code does not reach on one core, so that estimated times lie below the real ones and only runs
# that surely take too long are refused. With rates 5x lower, benchmarks/bench_evaluate.py measured 0.5-1.1x the
# estimate on the idle 2-core machine (AVX-512; the 2-block training step, almost all gemm, at 0.5x: about twice the
# old FLOP_RATE); FLOP_RATE is now above a core's float32 peak (2 FMA units x 16 lanes x 2 flop at 3.5 GHz = 224
# Gflop/s), and the script measures 2.6-5.5x.
FLOP_RATE = 2.5e11
ELEMENT_RATE = 1.0e10  # elementwise operations per second
STEP_OVERHEAD_S = 2e-4  # Python and NumPy call overhead of one training step (measured: about 1 ms for a tiny model)
TRAIN_MAX_HOURS = 24.0  # a training run is checkpointed and resumable: refuse only what surely takes a day
EVALUATE_MAX_HOURS = 2.0  # an evaluation starts again from scratch when interrupted
PREDICT_MAX_HOURS = 2.0  # so does a prediction (varsim.train.predict)
#: elementwise operations per simulated set, per item of the measured pool it draws from (the draw without
#: replacement and the pool's logits under the set's query: ``D + PREDICT_POOL_OPS`` per item), per item of the set
#: and weight map (the map and its statistics), and per measurement example and likelihood evaluation of the readout
#: fit (``PREDICT_FIT_EVALUATIONS`` evaluations over the ``len(TEMPERATURES)`` interventions). Below what the code
#: does: benchmarks/bench_predict.py prints measured / estimated (7.6-15.8x on the shared 2-core machine)
PREDICT_POOL_OPS = 8.0
PREDICT_MAP_OPS = 20.0
PREDICT_FIT_OPS = 20.0
PREDICT_FIT_EVALUATIONS = 2000.0


@dataclasses.dataclass(frozen=True)
class Cost:
    """Estimated work of a whole job (``flops`` multiply-add flops, ``element_ops`` elementwise operations,
    ``steps`` training steps) and memory: ``peak_bytes`` (largest in use at once) and its parts ``state_bytes``
    (parameters, gradients, optimizer moments) and ``step_bytes`` (one batch's arrays and activations); ``cores``:
    how many cores the job may use at once."""

    flops: float
    element_ops: float
    steps: float
    state_bytes: int
    step_bytes: int
    cores: int = 1

    @property
    def peak_bytes(self) -> int:
        return self.state_bytes + self.step_bytes

    @property
    def seconds(self) -> float:
        """A lower estimate of the wall time on ``cores`` cores."""
        return (self.flops / FLOP_RATE + self.element_ops / ELEMENT_RATE + self.steps * STEP_OVERHEAD_S) / self.cores


# ----------------------------------------------------------------------------------------------------------------------
# What the architecture and the task say


def _cost(mcfg):
    """The cost module of the model's architecture (:mod:`varsim.nn.architectures`)."""
    return get_architecture(mcfg.architecture).cost


def _batch_bytes(mcfg, b: int, n: int) -> int:
    """Bytes of one batch of the model's task (:meth:`varsim.tasks.Task.batch_bytes`)."""
    return mcfg.task_spec.batch_bytes(b, n, mcfg.vocab)


# ----------------------------------------------------------------------------------------------------------------------
# Costs


def training_cost(config) -> Cost:
    """The :class:`Cost` of training as ``config`` (a :class:`varsim.train.TrainConfig`) says, at its largest
    training set size ``train_max`` (the padded width of a batch in the worst case)."""
    mcfg = config.model
    n = config.train_range[1]
    b = config.batch_size
    # parameters, gradients, two Adam moments, and the checkpoint's payload copies while it is written
    cost = _cost(mcfg)
    state, _ = cost.state(mcfg, copies=6)
    step = cost.activation_bytes(mcfg, b, n + 1, training=True) + _batch_bytes(mcfg, b, n)
    flops = 3.0 * b * cost.forward_flops(mcfg, n + 1) * config.steps  # backward ~ twice the forward
    elements = 3.0 * b * cost.element_ops(mcfg, n + 1) * config.steps
    return Cost(flops=flops, element_ops=elements, steps=float(config.steps), state_bytes=state, step_bytes=step)


def evaluation_cost(model_config, lengths, n_examples: int, batch_size: int, *, workers: int = 1,
                    cores: int = 1) -> Cost:
    """The :class:`Cost` of :func:`varsim.train.evaluate` of a model with ``model_config``: ``n_examples`` at each
    set size in ``lengths``, generated in batches of ``batch_size`` and run through the model in chunks, ``workers``
    chunks at once (each holding its activations), on at most ``cores`` cores."""
    mcfg = model_config
    b = min(int(batch_size), int(n_examples))
    cost = _cost(mcfg)
    state, _ = cost.state(mcfg, copies=1)
    step = 0
    flops = elements = 0.0
    for n in lengths:
        n = int(n)
        chunk = min(b, cost.eval_chunk(mcfg, n))
        at_once = min(int(workers), -(-b // chunk))
        step = max(step, _batch_bytes(mcfg, b, n)
                   + at_once * cost.activation_bytes(mcfg, chunk, n + 1, training=False))
        flops += float(n_examples) * cost.forward_flops(mcfg, n + 1)
        elements += float(n_examples) * cost.element_ops(mcfg, n + 1)
    return Cost(flops=flops, element_ops=elements, steps=0.0, state_bytes=state, step_bytes=step, cores=int(cores))


def prediction_cost(model_config, n0: int, lengths, n_sets: int, n_sim: int, n_maps: int, passes: int) -> Cost:
    """The :class:`Cost` of :func:`varsim.train.predict.predict`: ``n_sets`` measurement sets of ``n0`` items, each
    run through the model ``passes`` times (one per readout intervention) and fitted; then, at each N of ``lengths``,
    ``n_sim`` sets composed from the pool of ``n_sets n0`` measured items and ``n_maps`` weight maps applied to
    each. Memory: the measurement (the batch, the model's activations, the items' float64 states and logits) and
    the simulation's per-set records (``w_c``, ``S2``, ranking: 17 bytes per set, length and map) with the table's
    float64 temporaries, whichever is larger, above the model's parameters."""
    mcfg = model_config
    n0, n_sets, n_sim = int(n0), int(n_sets), int(n_sim)
    lengths = [int(n) for n in lengths]
    measured = evaluation_cost(mcfg, [n0], n_sets, n_sets)
    d, heads, pool = int(mcfg.d_model), int(mcfg.n_heads), float(n_sets) * n0
    states = 8.0 * n_sets * (n0 + 1) * (3 * d + 3 * heads)  # item_logits' float64 states, items, logits, weights
    per_set = sum(pool * (d + PREDICT_POOL_OPS) + n * n_maps * PREDICT_MAP_OPS for n in lengths)
    fit = PREDICT_FIT_EVALUATIONS * passes * n_sets * PREDICT_FIT_OPS
    records = float(n_sim) * len(lengths) * (17.0 * n_maps + 48.0)
    chunk = 8.0 * pool * (d + 32) + 8.0 * 32 * max(lengths) * (n_maps + 2)  # the pool's logits under a chunk's queries
    step = max(measured.step_bytes + states, records + states + chunk)
    return Cost(flops=passes * measured.flops, element_ops=passes * measured.element_ops + fit + float(n_sim) * per_set,
                steps=0.0, state_bytes=measured.state_bytes, step_bytes=int(step))


# ----------------------------------------------------------------------------------------------------------------------
# Checks


def _culprit(candidates: dict[str, tuple[float, float]]) -> str:
    """``name=value`` of the candidate furthest above its default (``{name: (value, default)}``)."""
    name = max(candidates, key=lambda k: candidates[k][0] / candidates[k][1])
    value = candidates[name][0]
    return f"{name}={int(value) if float(value).is_integer() else value}"


def _model_sizes(mcfg) -> dict[str, tuple[float, float]]:
    """The sizes the model's parameters grow with: the architecture's, and the task's vocabularies (its key
    vocabulary only when the key encoding learns a table)."""
    out = get_architecture(mcfg.architecture).sizes(mcfg)
    task, vocab = mcfg.task_spec, mcfg.vocab
    for name, default in task.vocab.items():
        if name != task.key_vocab or get_key_encoding(mcfg.key_encoding).learned_table:
            out[name] = (vocab[name], default)
    return out


def _key_sizes(mcfg) -> dict[str, tuple[float, float]]:
    """The task's key vocabulary, which a batch's memory grows with (:meth:`varsim.tasks.Task.batch_bytes`)."""
    task, name = mcfg.task_spec, mcfg.task_spec.key_vocab
    return {} if name is None else {name: (mcfg.vocab[name], task.vocab[name])}


def _max_seconds(max_hours, default: float) -> float:
    hours = default if max_hours is None else check_real("max_hours", max_hours, minimum=0.0, strict_min=True,
                                                         allow_inf=True)  # inf: no time bound
    return 3600.0 * hours


def _refuse_time(sizes: dict, what: str, cost, max_seconds: float, *, flops: bool = True) -> None:
    """Raise the ``ValueError`` (naming the size furthest above its default) of ``what`` (``"the run"``) whose
    ``cost`` surely takes longer than ``max_seconds``; nothing when it fits."""
    if cost.seconds <= max_seconds:
        return
    work = f"{cost.flops:.2g} flop, " if flops else ""
    raise ValueError(
        f"{_culprit(sizes)} is too large: {what} would take at least {format_seconds(cost.seconds)} "
        f"({work}{cost.element_ops:.2g} elementwise operations), more than max_hours={max_seconds / 3600:g} "
        "(raise max_hours, --max-hours, to run it anyway)"
    )


def check_training_cost(config, *, max_hours: float | None = None, memory_bytes: int | None = None) -> Cost:
    """Refuse (``ValueError`` naming the parameter) a training run that needs more memory than ``memory_bytes``
    (default: the machine's, :func:`varsim._common.validate.memory_limit_bytes`) or surely takes longer than
    ``max_hours`` (default :data:`TRAIN_MAX_HOURS`); return its :class:`Cost` otherwise."""
    cost = training_cost(config)
    limit = memory_limit_bytes() if memory_bytes is None else int(memory_bytes)
    mcfg = config.model
    sizes = _model_sizes(mcfg)
    if cost.state_bytes > limit:
        raise ValueError(
            f"{_culprit(sizes)} is too large: the model's parameters, gradients and Adam moments need about "
            f"{format_bytes(cost.state_bytes)}, more than the {format_bytes(limit)} of memory of this machine"
        )
    if cost.peak_bytes > limit:
        step_sizes = {"batch_size": (config.batch_size, 64), "train_max": (config.train_range[1], 16),
                      "n_heads": (mcfg.n_heads, 4), **sizes, **_key_sizes(mcfg)}
        raise ValueError(
            f"{_culprit(step_sizes)} is too large: a training step (batch {config.batch_size} of up to "
            f"{config.train_range[1]} items) needs about {format_bytes(cost.peak_bytes)} of memory, more than the "
            f"{format_bytes(limit)} of this machine"
        )
    time_sizes = {"steps": (config.steps, 2000), "batch_size": (config.batch_size, 64),
                  "train_max": (config.train_range[1], 16), **sizes}
    _refuse_time(time_sizes, "the run", cost, _max_seconds(max_hours, TRAIN_MAX_HOURS))
    return cost


def check_evaluation_cost(model_config, lengths, n_examples: int, batch_size: int, *, max_hours: float | None = None,
                          memory_bytes: int | None = None, workers: int = 1, cores: int = 1) -> Cost:
    """Refuse (``ValueError`` naming the parameter) an evaluation that needs more memory than ``memory_bytes``
    (default: the machine's) or surely takes longer than ``max_hours`` (default :data:`EVALUATE_MAX_HOURS`);
    ``workers`` and ``cores`` as in :func:`evaluation_cost`."""
    lengths = [int(n) for n in lengths]
    cost = evaluation_cost(model_config, lengths, n_examples, batch_size, workers=workers, cores=cores)
    limit = memory_limit_bytes() if memory_bytes is None else int(memory_bytes)
    longest = max(lengths)
    if cost.peak_bytes > limit:
        b = min(int(batch_size), int(n_examples))
        sizes = {"lengths": (longest, 16384), "batch_size": (b, 64), **_key_sizes(model_config)}
        raise ValueError(
            f"{_culprit(sizes)} is too large: evaluating a batch of {b} examples at N = {longest} needs about "
            f"{format_bytes(cost.peak_bytes)} of memory, more than the {format_bytes(limit)} of this machine"
        )
    _refuse_time({"lengths": (longest, 16384), "n_examples": (n_examples, 1024)}, "the evaluation", cost,
                 _max_seconds(max_hours, EVALUATE_MAX_HOURS))
    return cost


def check_prediction_cost(model_config, n0: int, lengths, n_sets: int, n_sim: int, n_maps: int, passes: int, *,
                          max_hours: float | None = None, memory_bytes: int | None = None,
                          names: dict | None = None) -> Cost:
    """Refuse (``ValueError`` naming the parameter) a prediction (:func:`prediction_cost`) whose longest N needs
    more items than the measured pool holds, that needs more memory than ``memory_bytes`` (default: the machine's)
    or surely takes longer than ``max_hours`` (default :data:`PREDICT_MAX_HOURS`); return its :class:`Cost`
    otherwise. ``names`` maps ``lengths``, ``n_sets`` and ``n_sim`` to what the caller calls them (the CLI's flags)."""
    names = {"lengths": "lengths", "n_sets": "n_sets", "n_sim": "n_sim", **(names or {})}
    longest, pool = max(int(n) for n in lengths), int(n_sets) * int(n0)
    if longest > pool:
        raise ValueError(f"{names['lengths']}: N = {longest} needs more than the {pool} measured items "
                         f"({names['n_sets']}={n_sets} sets of N = {n0}); raise {names['n_sets']} to at least "
                         f"{-(-longest // int(n0))}, or predict shorter lengths")
    cost = prediction_cost(model_config, n0, lengths, n_sets, n_sim, n_maps, passes)
    sizes = {names["lengths"]: (longest, 16384), names["n_sets"]: (n_sets, 2048), names["n_sim"]: (n_sim, 1024)}
    limit = memory_limit_bytes() if memory_bytes is None else int(memory_bytes)
    if cost.peak_bytes > limit:
        raise ValueError(
            f"{_culprit(sizes)} is too large: the prediction ({n_sets} measurement sets, {n_sim} simulated sets at "
            f"each of {len(lengths)} lengths up to N = {longest}) needs about {format_bytes(cost.peak_bytes)} of "
            f"memory, more than the {format_bytes(limit)} of this machine"
        )
    _refuse_time(sizes, "the prediction", cost, _max_seconds(max_hours, PREDICT_MAX_HOURS), flops=False)
    return cost
