"""Data-parallel training passes with the same bits on any number of threads: a batch cut into a fixed number of
shards, each shard's forward and backward computed alone, the gradients summed in shard order.

Notation: a batch of ``B`` examples is cut into ``S`` consecutive shards of ``b_s`` examples (``numpy.array_split``
sizes: the first ``B mod S`` shards hold one more), ``S`` fixed by the run's configuration (``TrainConfig.shards``),
never by the thread count. Shard ``s`` runs the model's ``forward`` on its examples (padded to the full batch's set
size, as they were in the batch), the mean cross-entropy ``L_s`` over them and ``backward`` from
``dL/dlogits = (b_s / B) dL_s/dlogits``, so its gradients ``g_s`` are those of ``(b_s / B) L_s``. The pass returns

    loss = sum_s (b_s / B) L_s,   accuracy = (correct predictions) / B,   grads = ((g_0 + g_1) + g_2) + ...

each sum taken left to right in shard order after every shard has finished. Which thread ran a shard cannot enter
any of these numbers: the shards are the same arrays whatever the pool, a shard's pass depends on nothing but its
examples and the parameters (the model keeps no state between passes), and the reduction order is fixed. Bits equal
across thread counts need the BLAS thread count fixed too (training runs in ``blas_threads(1)``). ``S = 1`` is the
model's unsplit pass, bit for bit.
"""

from __future__ import annotations

import numpy as np

from varsim._common.validate import check_positive_int

from .layers import softmax_cross_entropy_backward, softmax_cross_entropy_forward

__all__ = ["shard_ranges", "shard_batch", "sharded_loss_and_grads"]


def shard_ranges(batch_size: int, shards: int) -> list[tuple[int, int]]:
    """``[(start, stop), ...]``: the ``shards`` consecutive example ranges of a batch (``numpy.array_split`` sizes)."""
    batch_size = check_positive_int("batch_size", batch_size)
    shards = check_positive_int("shards", shards)
    if shards > batch_size:
        raise ValueError(f"shards ({shards}) must be at most the batch size ({batch_size})")
    base, extra = divmod(batch_size, shards)
    stops = np.cumsum([base + (s < extra) for s in range(shards)])
    return [(int(a), int(b)) for a, b in zip(np.r_[0, stops[:-1]], stops)]


def shard_batch(batch: dict, shards: int) -> list[dict]:
    """The batch's shards: each array's examples ``start:stop`` along its first axis (scalars kept)."""
    if not isinstance(batch, dict) or "target" not in batch:
        raise ValueError("batch must be a dict with a 'target' entry")
    b = int(np.shape(batch["target"])[0]) if np.ndim(batch["target"]) >= 1 else 0
    return [{k: (np.asarray(v)[start:stop] if np.ndim(v) >= 1 else v) for k, v in batch.items()}
            for start, stop in shard_ranges(b, shards)]


def _shard_pass(model, part: dict, weight: float, errstate: dict):
    """One shard: ``(L_s, correct predictions, gradients of weight * L_s)``, under the caller's floating-point error
    handling (``np.errstate`` does not reach a pool's threads by itself)."""
    with np.errstate(**errstate):
        target = model._target(part)
        logits, cache = model.forward(part)
        loss, ce_cache = softmax_cross_entropy_forward(logits, target)
        correct = int(np.count_nonzero(np.argmax(logits, axis=1) == target))
        return loss, correct, model.backward(softmax_cross_entropy_backward(weight, ce_cache), cache)


def sharded_loss_and_grads(model, batch: dict, shards: int, pool=None) -> tuple[float, float, dict]:
    """``(loss, accuracy, grads)`` of ``model`` on ``batch`` cut into ``shards`` shards (module docstring); ``pool``
    a ``concurrent.futures.Executor`` that runs the shards (None: one after the other, in this thread)."""
    parts = shard_batch(batch, shards)
    b = sum(int(np.shape(p["target"])[0]) for p in parts)
    weights = [int(np.shape(p["target"])[0]) / b for p in parts]
    errstate = np.geterr()
    if pool is None:
        results = [_shard_pass(model, p, w, errstate) for p, w in zip(parts, weights)]
    else:
        n = len(parts)
        results = list(pool.map(_shard_pass, [model] * n, parts, weights, [errstate] * n))
    loss = 0.0
    correct = 0
    grads = results[0][2]
    for s, (loss_s, correct_s, grads_s) in enumerate(results):  # shard order, whatever order they finished in
        loss += weights[s] * loss_s
        correct += correct_s
        if s:
            for k, g in grads.items():
                g += grads_s[k]
    return float(loss), correct / b, grads
