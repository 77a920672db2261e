"""Accuracy of a trained model at many set sizes, with Wilson 95% intervals."""

from __future__ import annotations

import time
import warnings
from pathlib import Path

import numpy as np

from varsim._common import blas as _blas
from varsim._common.intervals import wilson_interval
from varsim._common.progress import Progress
from varsim._common.provenance import provenance
from varsim._common.seeding import SEED_DEFAULT, child_generator, resolve_seed
from varsim._common.validate import check_int, check_int_grid
from varsim.jobs.executor import default_workers
from varsim.tasks import check_set_size, make_batch
from varsim.train.budget import check_evaluation_cost
from varsim.train.ranking import RankingTally

__all__ = ["evaluate", "DEFAULT_LENGTHS", "evaluation_batch"]

DEFAULT_LENGTHS = tuple(2**k for k in range(4, 15))
"""The set sizes :func:`evaluate` measures by default: 16, 32, ..., 16384 (powers of 2)."""


def evaluation_batch(model_config, length: int, chunk: int, size: int, seed) -> dict:
    """Chunk ``chunk`` (``size`` examples) of the test set at set size ``length``: keyed by (seed, length, chunk),
    so every model evaluated with the same seed sees the same examples (paired comparisons), whatever the other
    lengths or the batch size of the other chunks."""
    return make_batch(
        model_config.task,
        size,
        int(length),
        child_generator(seed, int(length), int(chunk)),
        **model_config.vocab,
    )


def evaluate(
    checkpoint_or_model,
    lengths=DEFAULT_LENGTHS,
    n_examples: int = 1024,
    batch_size: int = 64,
    seed=SEED_DEFAULT,
    *,
    rng=None,
    progress: bool | None = None,
    blas_threads: int | None = 1,
    workers: int = 1,
    max_hours: float | None = None,
    attention: str | None = None,
    attention_params: dict | None = None,
) -> dict:
    """Accuracy of a trained model at each set size in ``lengths``, on ``n_examples`` fresh examples each.

    Parameters
    ----------
    checkpoint_or_model : path or Transformer
        A checkpoint file, a run directory (its latest checkpoint) or a model (:class:`varsim.nn.model.Transformer`
        or the causal decoder).
    lengths : sequence of int
        Set sizes (default ``DEFAULT_LENGTHS``).
    n_examples : int
        Examples per length.
    batch_size : int
        Examples per forward pass. Chunk ``j`` at length ``L`` is drawn from ``child_generator(root, L, j)``, so
        the test set depends only on (task settings, seed, L, n_examples, batch_size): two models evaluated with
        the same arguments are compared on identical examples.
    seed : int
        Seed of the test sets (default 0).
    rng : int, SeedSequence or Generator, optional
        SPEC 7 alternative to ``seed`` (not both).
    progress : bool, optional
        Show progress on stderr (default: when it is a terminal).
    blas_threads : int or None
        Deprecated (ignored but for the cores, until 0.3.0): evaluation runs every matrix product on one BLAS thread,
        because a multi-threaded OpenBLAS GEMM rounds the model's large products (the item MLP and the key/value
        projections over B x T rows) differently from a single-threaded one, so the outputs would depend on the
        thread count. A value other than 1 warns (DeprecationWarning) and its threads go to ``workers`` (the
        larger of the two; None: one per core), which changes no number.
    workers : int
        Threads evaluating a batch's chunks at once (:meth:`varsim.nn.base.Model.predict`), each on one BLAS thread:
        2 on two free cores evaluated 1.4-1.5 times as fast as 1 at N = 16384 (a batch at small set sizes is a single
        chunk; ``benchmarks/bench_evaluate.py``). The chunks are fixed by the batch and the model, never by
        ``workers``, so the results are the same bits for every ``workers`` (``benchmarks/check_threads.py``).
    max_hours : float, optional
        Refuse an evaluation estimated to take longer (default ``varsim.train.budget.EVALUATE_MAX_HOURS``).
    attention : str, optional
        Evaluate with another weight map of :data:`varsim.variants.WEIGHT_MAPS`, applied to the loaded weights by
        :meth:`~varsim.nn.model.Transformer.with_attention`: an inference-only map
        (:data:`varsim.variants.INFERENCE_ONLY_MAPS`) on any model, or any map on a softmax-trained model; the
        model's own map is allowed too. It may also name a control of :data:`varsim.variants.CONTROLS`:
        ``"oracle"`` (the query token attends only to each example's correct item, supplied from the task) or
        ``"permuted_softmax"``. None (default): the map the model was trained with.
    attention_params : dict, optional
        The parameters of ``attention``, validated by the registry.

    Returns
    -------
    dict
        ``task``, ``lengths``, ``accuracy``, ``correct``, ``ci_low`` and ``ci_high`` (Wilson 95%), ``n_examples``,
        ``batch_size``, ``seed``, ``time_s`` (per length), ``config``, ``checkpoint``, ``step``, ``provenance``;
        ``attention`` (the map used and its parameters; with a control, also ``control``: ``"positive"`` or
        ``"negative"``) and ``trained_attention`` (the one in the model's configuration); and ``ranking``: for a
        model with ``logits_and_weights`` (the set transformer; the causal decoder, over the last position's
        weights), per length, the decomposition of :mod:`varsim.train.ranking` for the last block's best head:
        ``best_head``, ``weight_correct`` (mean weight on the correct item), ``ranking_correct`` (fraction of
        examples whose largest weight is on the correct item), ``accuracy_given_ranking_correct`` and
        ``accuracy_given_ranking_wrong`` (None when the condition never occurs), with their counts, from the same
        forward passes as the accuracy; None for other models.

    Raises
    ------
    ValueError
        Refused before any work, naming the parameter: sizes whose memory exceeds the machine's or whose estimated
        time exceeds ``max_hours``; a map the model cannot take.

    See Also
    --------
    varsim.train.train : trains the model.
    varsim.train.wilson_interval : the accuracy intervals.

    Examples
    --------
    A model in memory (here an untrained one: its accuracy is near chance); :func:`varsim.train.train`'s example
    evaluates a run directory.

    >>> from varsim.nn import ModelConfig, build_model
    >>> from varsim.train import evaluate
    >>> ev = evaluate(build_model(ModelConfig(task="argmax")), lengths=(16, 256), n_examples=64, progress=False)
    >>> ev["lengths"], len(ev["accuracy"]), ev["attention"]["name"], ev["checkpoint"]
    ([16, 256], 2, 'softmax', None)
    """
    model, config_dict, ckpt, step = _resolve_model(checkpoint_or_model)
    trained = {"name": model.config.attention, "params": dict(model.config.attention_params)}
    control = _control(attention, attention_params, model)
    model = _override_attention(model, attention, attention_params)
    mcfg = model.config
    decompose = hasattr(model, "logits_and_weights")
    lengths = check_int_grid("lengths", lengths, minimum=1)
    for i, length in enumerate(lengths):
        check_set_size(mcfg.task, int(length), name=f"lengths[{i}]", **mcfg.vocab)
    n_examples = check_int("n_examples", n_examples, minimum=1)
    batch_size = check_int("batch_size", batch_size, minimum=1)
    seed_seq = resolve_seed(seed, rng)
    workers = check_int("workers", workers, minimum=1)
    available = default_workers()
    workers = _workers_for(blas_threads, workers, available)
    check_evaluation_cost(mcfg, lengths, n_examples, batch_size, max_hours=max_hours, workers=workers,
                          cores=min(available, workers))
    n_chunks = -(-n_examples // batch_size)
    threads = _blas.blas_threads(1)  # the products' rounding must not depend on the thread count

    acc, correct, lows, highs, times, ranking = [], [], [], [], [], []
    with threads, Progress(len(lengths) * n_chunks, f"evaluate {mcfg.task}", enabled=progress) as bar:
        for length in lengths:
            t0 = time.perf_counter()
            hits, tally = _count_hits(model, int(length), n_examples, batch_size, seed_seq, workers, decompose, bar)
            if decompose:
                ranking.append(tally.result())
            lo, hi = wilson_interval(hits, n_examples)
            acc.append(hits / n_examples)
            correct.append(hits)
            lows.append(lo)
            highs.append(hi)
            times.append(time.perf_counter() - t0)
    return {
        "task": mcfg.task,
        "lengths": [int(x) for x in lengths],
        "accuracy": acc,
        "correct": correct,
        "ci_low": lows,
        "ci_high": highs,
        "n_examples": n_examples,
        "batch_size": batch_size,
        "seed": seed_seq.entropy,
        "time_s": times,
        "attention": ({"name": mcfg.attention, "params": dict(mcfg.attention_params)} if control is None else
                      {"name": control.name, "params": {}, "control": control.kind}),
        "ranking": _columns(ranking) if decompose else None,
        "trained_attention": trained,
        "config": config_dict,
        "checkpoint": ckpt,
        "step": step,
        "provenance": provenance(),
    }


def _workers_for(blas_threads, workers: int, available: int) -> int:
    """``workers``, or the threads of a deprecated ``blas_threads`` other than 1 when there are more of them (None:
    ``available``, one per core), with a DeprecationWarning: evaluation multiplies on one BLAS thread whatever it
    says, so that no number depends on the thread count."""
    if blas_threads is not None:
        blas_threads = check_int("blas_threads", blas_threads, minimum=1)
    if blas_threads == 1:
        return workers
    warnings.warn("evaluate(blas_threads=...) is deprecated and will be removed in 0.3.0: evaluation runs its "
                  "matrix products on one BLAS thread (more would change float32 bits); its threads go to workers=",
                  DeprecationWarning, stacklevel=3)
    return max(workers, available if blas_threads is None else blas_threads)


def _count_hits(model, length, n_examples, batch_size, seed, workers, decompose, bar):
    """Correct answers of ``model`` on the ``n_examples`` test examples at set size ``length``, chunk by chunk, and
    the ranking tally of the same forward passes (empty unless ``decompose``)."""
    task = model.config.task_spec
    hits, tally = 0, RankingTally()
    for j in range(-(-n_examples // batch_size)):
        batch = evaluation_batch(model.config, length, j, min(batch_size, n_examples - j * batch_size), seed)
        if decompose:
            logits, weights = model.logits_and_weights(batch, workers=workers)
            hit = np.argmax(logits, axis=1) == batch["target"]
            tally.add(weights, task.correct_item(batch), hit)
        else:
            hit = model.predict(batch, workers=workers) == batch["target"]
        hits += int(np.count_nonzero(hit))
        bar.update(1, f"N={length}")
    return hits, tally


def _columns(rows: list[dict]) -> dict:
    """Per-length dicts -> one list per key, in length order."""
    return {k: [r[k] for r in rows] for k in rows[0]} if rows else {}


def _has_query_attention(model) -> bool:
    """True for the set transformer, whose analysis gives the query row's weights over the items in item order."""
    from varsim.nn.model import Transformer

    return isinstance(model, Transformer)


def _control(attention, attention_params, model):
    """The control of :data:`varsim.variants.CONTROLS` named ``attention``, or None when it names a weight map."""
    from varsim.variants import CONTROLS

    if not isinstance(attention, str) or attention not in CONTROLS:
        return None
    control = CONTROLS.find(attention)
    if control.weight_map is None and attention_params:
        raise ValueError(f"attention_params: the control {attention!r} takes no parameters")
    if control.needs_correct_item and not _has_query_attention(model):
        raise ValueError(f"attention {attention!r} needs a model whose query token can be pointed at one item "
                         "(the set transformer)")
    return control


def _override_attention(model, attention, attention_params):
    """``model`` itself when ``attention`` is None, else a copy evaluating with that weight map; ValueError naming
    ``attention`` for an unknown map or for a trained map on a model trained with a different map other than
    softmax (its learned weights assume their own map), ValueError naming the parameter for a bad one."""
    from varsim.variants import CONTROLS, INFERENCE_ONLY_MAPS, get_variant

    if attention is None:
        if attention_params:
            raise ValueError("attention_params given without attention (name the weight map they belong to)")
        return model
    if attention in CONTROLS:
        return model.with_attention(attention, attention_params)
    spec = get_variant(attention)  # unknown name: ValueError listing the valid ones
    if attention_params is not None and not isinstance(attention_params, dict):
        raise ValueError(f"attention_params must be a dict, got {type(attention_params).__name__}")
    own = model.config.attention
    if spec.trainable and own != "softmax" and spec.name != own:
        raise ValueError(f"attention {spec.name!r} on a model trained with {own!r}: use an inference-only map "
                         f"({', '.join(INFERENCE_ONLY_MAPS)}), the model's own map, or a softmax-trained model")
    params = spec.check_params(attention_params)
    learned = model.config.attention_spec.trained_param
    if spec.name == own and learned is not None and params[learned] != model.config.attention_params[learned]:
        raise ValueError(f"attention_params: {own!r} parameter {learned!r} is learned per head in this model; "
                         "its trained values are used, so it cannot be set at evaluation")
    return model.with_attention(spec.name, params)


def _resolve_model(obj):
    """(model, config dict, checkpoint path or None, step or None) from a checkpoint path or a model."""
    if isinstance(obj, (str, Path)):
        from varsim.train.checkpoint import load_checkpoint

        if not str(obj).strip():
            raise ValueError("checkpoint path must not be empty")

        model, config, state = load_checkpoint(obj)
        return model, config.to_dict(), str(state["path"]), state["step"]
    if hasattr(obj, "predict") and hasattr(obj, "config"):
        return obj, {"model": obj.config.to_dict()}, None, None
    raise ValueError(
        f"checkpoint_or_model must be a checkpoint path, a run directory or a Transformer, got {type(obj).__name__}"
    )
