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
  widths) at :data:`ELEMENT_RATE`, plus :data:`STEP_OVERHEAD_S` per training step. The rates are several times
  what this code reaches on one core (``benchmarks/bench_evaluate.py`` prints measured / estimated), so the
  estimate is a lower bound and only runs that surely take longer than ``max_hours`` are refused. Training is
  checkpointed and resumable, so its default bound is longer.

The parameter named in an error is the one of the sizes that drive the exceeded cost that lies furthest above its
default (``batch_size=1000000000`` rather than ``d_model=64``).
"""

from __future__ import annotations

import dataclasses
import math

from varsim._common.validate import check_real, format_bytes, format_seconds, memory_limit_bytes
from varsim.tasks import batch_bytes

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
]

# A rate (flop/s) this NumPy code does not reach: measured 2.5-10 Gflop/s on training steps and 3-15 Gflop/s on
# evaluation batches on one core (benchmarks/bench_evaluate.py); several times the best keeps estimated
# times below the real ones, so only runs that surely take too long are refused.
FLOP_RATE = 5.0e10
ELEMENT_RATE = 2.0e9  # elementwise operations per second (measured: 0.3-0.6e9 per token element on one core)
STEP_OVERHEAD_S = 1e-3  # Python and NumPy call overhead of one training step (measured: 4-5 ms for a tiny model)
TRAIN_MAX_HOURS = 24.0  # a training run is checkpointed and resumable: refuse only what surely takes a day
EVALUATE_MAX_HOURS = 2.0  # an evaluation starts again from scratch when interrupted
_GIB = 1024**3


@dataclasses.dataclass(frozen=True)
class Cost:
    """Estimated work of a whole job (``flops`` multiply-add flops, ``element_ops`` elementwise operations,
    ``steps`` training steps) and memory: ``peak_bytes`` (largest in use at once) and its parts ``state_bytes``
    (parameters, gradients, optimizer moments) and ``step_bytes`` (one batch's arrays and activations)."""

    flops: float
    element_ops: float
    steps: float
    state_bytes: int
    step_bytes: int

    @property
    def peak_bytes(self) -> int:
        return self.state_bytes + self.step_bytes

    @property
    def seconds(self) -> float:
        """A lower estimate of the wall time on one core."""
        return self.flops / FLOP_RATE + self.element_ops / ELEMENT_RATE + self.steps * STEP_OVERHEAD_S


# ----------------------------------------------------------------------------------------------------------------------
# Sizes of the model


def _state(mcfg, copies: int) -> tuple[int, int]:
    """(bytes of ``copies`` float copies of every parameter, plus the float64 draw of the largest at init; number
    of parameters). Blocks all have the same parameters, so the table is built for one and two blocks only."""
    from varsim.nn.model import parameter_shapes

    one = [math.prod(s) for s in parameter_shapes(dataclasses.replace(mcfg, n_blocks=1)).values()]
    two = [math.prod(s) for s in parameter_shapes(dataclasses.replace(mcfg, n_blocks=2)).values()]
    count = sum(one) + (mcfg.n_blocks - 1) * (sum(two) - sum(one))
    itemsize = 4 if mcfg.dtype == "float32" else 8
    return copies * itemsize * count + 8 * max(one), count


def _embed_dims(mcfg) -> list[int]:
    from varsim.nn.model import parameter_shapes

    shapes = parameter_shapes(dataclasses.replace(mcfg, n_blocks=1))  # the item MLP does not depend on the blocks
    return [shapes["embed.0.w"][0]] + [shapes[f"embed.{i}.w"][1] for i in range(mcfg.item_mlp_depth)]


def _forward_flops(mcfg, t: int) -> float:
    """Multiply-adds (x2) of one example's forward pass with ``t`` tokens (the query token and ``t - 1`` items)."""
    d, f, h = mcfg.d_model, mcfg.hidden, mcfg.n_heads
    dims = _embed_dims(mcfg)
    per_token = 2.0 * sum(a * b for a, b in zip(dims[:-1], dims[1:]))  # the item MLP on every token
    full = 2.0 * (3 * d * d + 2 * t * d + d * d + 2 * d * f)  # a block before the last, per token
    per_token += (mcfg.n_blocks - 1) * full
    per_token += 4.0 * d * h  # the last block: the query row's scores and weighted mean over the token
    head = 2.0 * (2 * d * f + d * d)  # the last block's projections and MLP, and the predictor, on the query row
    return t * per_token + mcfg.n_blocks * head


def _element_ops(mcfg, t: int) -> float:
    """Elementwise operations of one example's forward pass with ``t`` tokens (features, activations, masks,
    softmax): a few passes over every width a token goes through."""
    d, h = mcfg.d_model, mcfg.n_heads
    per_token = 2 * sum(_embed_dims(mcfg)) + (mcfg.n_blocks - 1) * (12 * d + 4 * mcfg.hidden + 4 * h * t)
    per_token += 4 * d + 4 * h
    return float(t * per_token)


def _activation_bytes(mcfg, b: int, t: int, *, training: bool) -> int:
    """Bytes of the activations of ``b`` examples of ``t`` tokens: kept for the backward pass (training) or the
    few largest temporaries alive at once (evaluation)."""
    d, f, h = mcfg.d_model, mcfg.hidden, mcfg.n_heads
    itemsize = 4 if mcfg.dtype == "float32" else 8
    dims = _embed_dims(mcfg)
    if training:
        per_token = dims[0] + 3 * sum(dims[1:])  # features; each layer's pre-activation, activation and grad
        per_token += (mcfg.n_blocks - 1) * (14 * d + 4 * f)  # projections, residuals, norms, MLP, their grads
        per_token += 4 * d + 4 * h  # the last block's query-row caches over the tokens
        attention = (mcfg.n_blocks - 1 + 2) * h * t if mcfg.n_blocks > 1 else 0  # T x T weights (model's formula)
        return int(itemsize * b * t * (2 * per_token + attention))
    per_token = dims[0] + 2 * max(dims[1:]) + (mcfg.n_blocks - 1) * (6 * d + 2 * f + 2 * h * t) + 2 * d + 2 * h
    return int(itemsize * b * t * per_token)


def _batch_bytes(mcfg, b: int, n: int) -> int:
    """Bytes of one batch from :func:`varsim.tasks.make_batch` (arrays and their largest temporaries)."""
    return batch_bytes(mcfg.task, b, n, key_vocab=mcfg.key_vocab)


def _eval_chunk(mcfg, n: int) -> int:
    """Examples per chunk of ``Transformer.predict`` at set size ``n`` (EVAL_CHUNK_TOKENS tokens per chunk)."""
    from varsim.nn.model import EVAL_CHUNK_TOKENS

    return max(1, EVAL_CHUNK_TOKENS // (n + 1))


# ----------------------------------------------------------------------------------------------------------------------
# Costs


def training_cost(config) -> Cost:
    """The :class:`Cost` of training as ``config`` (a :class:`varsim.train.TrainConfig`) says, at its largest
    training set size ``train_max`` (the padded width of a batch in the worst case)."""
    mcfg = config.model
    n = config.train_range[1]
    b = config.batch_size
    # parameters, gradients, two Adam moments, and the checkpoint's payload copies while it is written
    state, _ = _state(mcfg, copies=6)
    step = _activation_bytes(mcfg, b, n + 1, training=True) + _batch_bytes(mcfg, b, n)
    flops = 3.0 * b * _forward_flops(mcfg, n + 1) * config.steps  # backward ~ twice the forward
    elements = 3.0 * b * _element_ops(mcfg, n + 1) * config.steps
    return Cost(flops=flops, element_ops=elements, steps=float(config.steps), state_bytes=state, step_bytes=step)


def evaluation_cost(model_config, lengths, n_examples: int, batch_size: int) -> Cost:
    """The :class:`Cost` of :func:`varsim.train.evaluate` of a model with ``model_config``: ``n_examples`` at each
    set size in ``lengths``, generated in batches of ``batch_size`` and run through the model in chunks."""
    mcfg = model_config
    b = min(int(batch_size), int(n_examples))
    state, _ = _state(mcfg, copies=1)
    step = 0
    flops = elements = 0.0
    for n in lengths:
        n = int(n)
        chunk = min(b, _eval_chunk(mcfg, n))
        step = max(step, _batch_bytes(mcfg, b, n) + _activation_bytes(mcfg, chunk, n + 1, training=False))
        flops += float(n_examples) * _forward_flops(mcfg, n + 1)
        elements += float(n_examples) * _element_ops(mcfg, n + 1)
    return Cost(flops=flops, element_ops=elements, steps=0.0, state_bytes=state, step_bytes=step)


# ----------------------------------------------------------------------------------------------------------------------
# Checks


def _culprit(candidates: dict[str, tuple[float, float]]) -> str:
    """``name=value`` of the candidate furthest above its default (``{name: (value, default)}``)."""
    name = max(candidates, key=lambda k: candidates[k][0] / candidates[k][1])
    value = candidates[name][0]
    return f"{name}={int(value) if float(value).is_integer() else value}"


def _model_sizes(mcfg) -> dict[str, tuple[float, float]]:
    out = {"d_model": (mcfg.d_model, 64), "n_blocks": (mcfg.n_blocks, 1), "item_mlp_depth": (mcfg.item_mlp_depth, 2),
           "predictor_depth": (mcfg.predictor_depth, 2)}
    if mcfg.d_hidden is not None:
        out["d_hidden"] = (mcfg.d_hidden, 2 * mcfg.d_model)
    if mcfg.task == "argmax":
        out["n_classes"] = (mcfg.n_classes, 10)
    else:
        out["value_vocab"] = (mcfg.value_vocab, 16)
        if mcfg.key_encoding == "embedding":
            out["key_vocab"] = (mcfg.key_vocab, 16384)
    return out


def _max_seconds(max_hours, default: float) -> float:
    hours = default if max_hours is None else check_real("max_hours", max_hours, minimum=0.0, strict_min=True,
                                                         allow_inf=True)  # inf: no time bound
    return 3600.0 * hours


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
                      "n_heads": (mcfg.n_heads, 4), **sizes}
        if mcfg.task == "dictionary":
            step_sizes["key_vocab"] = (mcfg.key_vocab, 16384)
        raise ValueError(
            f"{_culprit(step_sizes)} is too large: a training step (batch {config.batch_size} of up to "
            f"{config.train_range[1]} items) needs about {format_bytes(cost.peak_bytes)} of memory, more than the "
            f"{format_bytes(limit)} of this machine"
        )
    max_seconds = _max_seconds(max_hours, TRAIN_MAX_HOURS)
    if cost.seconds > max_seconds:
        time_sizes = {"steps": (config.steps, 2000), "batch_size": (config.batch_size, 64),
                      "train_max": (config.train_range[1], 16), **sizes}
        raise ValueError(
            f"{_culprit(time_sizes)} is too large: the run would take at least {format_seconds(cost.seconds)} "
            f"({cost.flops:.2g} flop, {cost.element_ops:.2g} elementwise operations), more than "
            f"max_hours={max_seconds / 3600:g} "
            "(raise max_hours, --max-hours, to run it anyway)"
        )
    return cost


def check_evaluation_cost(model_config, lengths, n_examples: int, batch_size: int, *, max_hours: float | None = None,
                          memory_bytes: int | None = None) -> Cost:
    """Refuse (``ValueError`` naming the parameter) an evaluation that needs more memory than ``memory_bytes``
    (default: the machine's) or surely takes longer than ``max_hours`` (default :data:`EVALUATE_MAX_HOURS`)."""
    lengths = [int(n) for n in lengths]
    cost = evaluation_cost(model_config, lengths, n_examples, batch_size)
    limit = memory_limit_bytes() if memory_bytes is None else int(memory_bytes)
    longest = max(lengths)
    if cost.peak_bytes > limit:
        b = min(int(batch_size), int(n_examples))
        sizes = {"lengths": (longest, 16384), "batch_size": (b, 64)}
        if model_config.task == "dictionary":
            sizes["key_vocab"] = (model_config.key_vocab, 16384)
        raise ValueError(
            f"{_culprit(sizes)} is too large: evaluating a batch of {b} examples at N = {longest} needs about "
            f"{format_bytes(cost.peak_bytes)} of memory, more than the {format_bytes(limit)} of this machine"
        )
    max_seconds = _max_seconds(max_hours, EVALUATE_MAX_HOURS)
    if cost.seconds > max_seconds:
        sizes = {"lengths": (longest, 16384), "n_examples": (n_examples, 1024)}
        raise ValueError(
            f"{_culprit(sizes)} is too large: the evaluation would take at least {format_seconds(cost.seconds)} "
            f"({cost.flops:.2g} flop, {cost.element_ops:.2g} elementwise operations), more than "
            f"max_hours={max_seconds / 3600:g} "
            "(raise max_hours, --max-hours, to run it anyway)"
        )
    return cost
