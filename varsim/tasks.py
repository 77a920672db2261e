"""Synthetic set tasks for the length-generalization experiments (see ../shared/spec/PAPER.md).

Notation: B batch, N set size (the largest in the batch when sizes vary), C classes, V key vocabulary.

Two tasks, both permutation invariant (the position of an item carries no information):

- ``"argmax"`` (argmax retrieval, after Velickovic et al.): N items, each with a priority drawn i.i.d. from
  uniform(0, 1) and a class label drawn uniformly from C classes; the target is the label of the item with the
  largest priority among the real items.
- ``"dictionary"`` (dictionary lookup): N (key, value) pairs, keys distinct and drawn uniformly without replacement
  from ``range(key_vocab)``, values drawn uniformly from ``range(value_vocab)``; the query is one of the real keys,
  chosen uniformly; the target is its value.

A batch is a dict of NumPy arrays; ``mask`` is True at real items. When set sizes vary within a batch, example b
has its ``size_b`` real items at positions ``[0, size_b)`` and the rest is padding that holds valid (random) ids
and priorities, so a model that ignores the mask gets wrong answers rather than index errors.

Set-size domain: any N >= 1 for both tasks (N = 1 is a well-defined, if trivial, instance), and N <= key_vocab
for the dictionary (keys must be distinct). Training defaults (``DEFAULT_TRAIN_RANGE``) start at 1 for argmax
retrieval and at 2 for dictionary lookup: a one-pair dictionary can be answered without reading the query, so
such examples would reward ignoring it.
"""

from __future__ import annotations

import numbers

import numpy as np

from varsim._common.validate import check_choice, check_int, format_bytes, memory_limit_bytes

__all__ = ["TASKS", "DEFAULT_TRAIN_RANGE", "make_batch", "check_set_size", "batch_bytes"]

TASKS = ("argmax", "dictionary")

# (min, max) training set sizes when the caller does not choose them.
DEFAULT_TRAIN_RANGE = {"argmax": (1, 16), "dictionary": (2, 16)}


def check_set_size(task: str, set_size, *, key_vocab: int = 16384, name: str = "set_size") -> tuple[int, int]:
    """Validate an int N or a (lo, hi) range for ``task``; return it as ``(lo, hi)`` (``lo == hi`` for a fixed N)."""
    check_choice("task", task, TASKS)
    if isinstance(set_size, (tuple, list)):
        if len(set_size) != 2:
            raise ValueError(f"{name} must be an integer or a (lo, hi) pair, got {set_size!r}")
        lo = check_int(f"{name}[0]", set_size[0], minimum=1)
        hi = check_int(f"{name}[1]", set_size[1], minimum=1)
        if lo > hi:
            raise ValueError(f"{name} range must have lo <= hi, got ({lo}, {hi})")
    elif isinstance(set_size, numbers.Real) and not isinstance(set_size, (bool, np.bool_)):
        lo = hi = check_int(name, set_size, minimum=1)
    else:
        raise ValueError(f"{name} must be an integer or a (lo, hi) pair, got {set_size!r}")
    if task == "dictionary" and hi > key_vocab:
        raise ValueError(
            f"{name} {hi} exceeds key_vocab {key_vocab}: a dictionary of N pairs needs N distinct keys"
        )
    return lo, hi


def make_batch(
    task: str,
    batch_size: int,
    set_size,
    rng: np.random.Generator,
    *,
    n_classes: int = 10,
    key_vocab: int = 16384,
    value_vocab: int = 16,
) -> dict:
    """One batch of ``task`` examples drawn from ``rng``.

    ``set_size`` is an int (every example has N items, ``mask`` all True) or a ``(lo, hi)`` pair (each example's
    size uniform on ``lo..hi`` inclusive, padded to the batch maximum). Callers derive ``rng`` from a seed and a
    work key (``varsim._common.seeding.child_generator(seed, step)``), so a batch is a pure function of them.

    Returns, for ``"argmax"``: ``priority`` float64 (B, N), ``label`` int64 (B, N), ``mask`` bool (B, N),
    ``target`` int64 (B,); for ``"dictionary"``: ``key`` int64 (B, N), ``value`` int64 (B, N), ``query`` int64 (B,),
    ``mask`` bool (B, N), ``target`` int64 (B,).
    """
    check_choice("task", task, TASKS)
    batch_size = check_int("batch_size", batch_size, minimum=1)
    n_classes = check_int("n_classes", n_classes, minimum=2)
    key_vocab = check_int("key_vocab", key_vocab, minimum=2)
    value_vocab = check_int("value_vocab", value_vocab, minimum=2)
    lo, hi = check_set_size(task, set_size, key_vocab=key_vocab)
    need = batch_bytes(task, batch_size, hi, key_vocab=key_vocab)
    if need > memory_limit_bytes():
        raise ValueError(
            f"batch_size={batch_size} x set_size={hi} is too large: the batch needs about {format_bytes(need)}, more "
            f"than the {format_bytes(memory_limit_bytes())} of memory of this machine"
        )
    if not isinstance(rng, np.random.Generator):
        raise ValueError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")

    if lo == hi:
        sizes = np.full(batch_size, lo, dtype=np.int64)
    else:
        sizes = rng.integers(lo, hi, size=batch_size, endpoint=True)
    n = int(sizes.max())
    mask = np.arange(n)[None, :] < sizes[:, None]  # (B, N)

    if task == "argmax":
        priority = rng.random((batch_size, n))  # (B, N) in [0, 1)
        label = rng.integers(0, n_classes, size=(batch_size, n))  # (B, N)
        best = np.argmax(np.where(mask, priority, -np.inf), axis=1)  # (B,)
        target = label[np.arange(batch_size), best]
        return {"priority": priority, "label": label, "mask": mask, "target": target}

    key = _distinct_keys(rng, batch_size, n, key_vocab)  # (B, N)
    value = rng.integers(0, value_vocab, size=(batch_size, n))  # (B, N)
    # The query is a uniformly chosen real item: index floor(u * size_b) < size_b.
    pick = np.minimum((rng.random(batch_size) * sizes).astype(np.int64), sizes - 1)  # (B,)
    rows = np.arange(batch_size)
    return {"key": key, "value": value, "query": key[rows, pick], "mask": mask, "target": value[rows, pick]}


def batch_bytes(task: str, batch_size: int, n: int, *, key_vocab: int = 16384) -> int:
    """Bytes :func:`make_batch` holds at once for ``batch_size`` examples of up to ``n`` items: its int64/float64
    arrays and mask, and their largest temporaries (for the dictionary at ``n * n > key_vocab``, a row of
    ``key_vocab`` random scores and their partial sort per example)."""
    out = 33 * batch_size * n
    if task == "dictionary" and n * n > key_vocab:
        out += 24 * batch_size * key_vocab
    return out


def _distinct_keys(rng: np.random.Generator, b: int, n: int, vocab: int) -> np.ndarray:
    """(b, n) int64: each row an ordered sample of n distinct keys from range(vocab), uniform over such samples.

    Small n (n^2 <= vocab, so a row has a repeat with probability <= ~1/2): draw with replacement and redraw the
    rows that repeat a key; conditioned on no repeat, i.i.d. draws are a uniform ordered sample. Costs O(b n).
    Large n: the n smallest of vocab i.i.d. uniform scores form a uniform subset, and ordering them by score gives
    a uniform order; O(b vocab) via argpartition.
    """
    if n * n <= vocab:
        keys = rng.integers(0, vocab, size=(b, n))
        while True:
            srt = np.sort(keys, axis=1)
            bad = np.flatnonzero((srt[:, 1:] == srt[:, :-1]).any(axis=1))
            if bad.size == 0:
                return keys
            keys[bad] = rng.integers(0, vocab, size=(bad.size, n))
    scores = rng.random((b, vocab))  # (b, V)
    if n < vocab:
        chosen = np.argpartition(scores, n - 1, axis=1)[:, :n]  # (b, n) unordered subset
    else:
        chosen = np.broadcast_to(np.arange(vocab), (b, vocab))
    order = np.argsort(np.take_along_axis(scores, chosen, axis=1), axis=1)
    return np.take_along_axis(chosen, order, axis=1).astype(np.int64)
