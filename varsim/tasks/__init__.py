"""Synthetic tasks for the length-generalization experiments (see docs/PAPER.md).

Notation: B batch, N set size (the largest in the batch when sizes vary).

A task is one module registered once (:class:`varsim.tasks.Task`: its batch schema, vocabulary, chance level, cost
and input features); the model, the budget and the probes ask it (:func:`get_task`). Registered:

- ``"argmax"`` (:mod:`varsim.tasks.argmax`): argmax retrieval, the label of the item with the largest priority;
- ``"dictionary"`` (:mod:`varsim.tasks.dictionary`): dictionary lookup, the value stored under the query key;
- ``"recall"`` (:mod:`varsim.tasks.recall`): associative recall, key and value as separate tokens (sequence models
  only).

Argmax and dictionary are permutation invariant (the position of an item carries no information); recall binds a
value to the key token before it. A batch is a dict of NumPy
arrays; ``mask`` is True at real items. When set sizes vary within a batch, example b has its ``size_b`` real items
at positions ``[0, size_b)`` and the rest is padding that holds valid (random) ids and priorities, so a model that
ignores the mask gets wrong answers rather than index errors.

Set-size domain: any N >= 1 (N = 1 is a well-defined, if trivial, instance) within the task's vocabulary bound
(the dictionary: N <= key_vocab). Training defaults (``DEFAULT_TRAIN_RANGE``) are each task's
``default_train_range``.

Adding a task: a module here defining a :class:`Task` subclass and registering it (:func:`register_task`), and its
import below. Adding a key encoding: one :func:`register_key_encoding` call (:mod:`varsim.tasks.keys`).
"""

from __future__ import annotations

import numbers

import numpy as np

from varsim._common.validate import check_int, format_bytes, memory_limit_bytes

from . import argmax as _argmax  # noqa: F401  (registers the task)
from . import dictionary as _dictionary  # noqa: F401  (registers the task)
from . import recall as _recall  # noqa: F401  (registers the task)
from ._task import TASK_REGISTRY, Field, Task, check_vocab_sizes, get_task, register_task
from .keys import KEY_ENCODINGS, KeyEncoding, get_key_encoding, register_key_encoding

__all__ = [
    "TASKS", "DEFAULT_TRAIN_RANGE", "make_batch", "check_set_size", "batch_bytes", "correct_item", "chance_level",
    "Task", "Field", "TASK_REGISTRY", "get_task", "register_task", "KEY_ENCODINGS", "KeyEncoding", "get_key_encoding",
    "register_key_encoding",
]

#: the names of the tasks defined here (the reproduction's default grid); :data:`TASK_REGISTRY` holds every registered
#: task, including ones registered later, and :func:`get_task` reads it
TASKS = tuple(TASK_REGISTRY)

#: (min, max) training set sizes of the tasks defined here (each task's ``default_train_range``)
DEFAULT_TRAIN_RANGE = {name: task.default_train_range for name, task in TASK_REGISTRY.items()}


def check_set_size(task: str, set_size, *, name: str = "set_size", **vocab) -> tuple[int, int]:
    """Validate an int N or a (lo, hi) range for ``task`` (its vocabulary sizes in ``vocab``, defaults for those
    missing); return it as ``(lo, hi)`` (``lo == hi`` for a fixed N)."""
    t = get_task(task)
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
    limit = t.set_size_limit(t.vocab_of(vocab))
    if limit is not None and hi > limit[0]:
        vocab_name = t.key_vocab or t.output_vocab
        raise ValueError(f"{name} {hi} exceeds {vocab_name} {limit[0]}: {limit[1]}")
    return lo, hi


def make_batch(task: str, batch_size: int, set_size, rng: np.random.Generator, **vocab) -> dict:
    """One batch of ``task`` examples drawn from ``rng``.

    ``set_size`` is an int (every example has N items, ``mask`` all True) or a ``(lo, hi)`` pair (each example's
    size uniform on ``lo..hi`` inclusive, padded to the batch maximum). ``vocab``: vocabulary sizes by name
    (``n_classes``, ``key_vocab``, ``value_vocab``; each task reads its own, see its ``vocab``, defaults for those
    missing). Callers derive ``rng`` from a seed and a work key (``varsim._common.seeding.child_generator(seed,
    step)``), so a batch is a pure function of them. The arrays are the task's schema (its module's docstring).
    """
    t = get_task(task)
    batch_size = check_int("batch_size", batch_size, minimum=1)
    sizes_ = t.vocab_of(check_vocab_sizes(vocab))
    lo, hi = check_set_size(task, set_size, **sizes_)
    need = t.batch_bytes(batch_size, hi, sizes_)
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
    return t.draw(rng, sizes, mask, sizes_)


def batch_bytes(task: str, batch_size: int, n: int, **vocab) -> int:
    """Bytes :func:`make_batch` holds at once for ``batch_size`` examples of up to ``n`` items: its arrays and
    their largest temporaries (the task's ``batch_bytes``)."""
    t = get_task(task)
    return t.batch_bytes(batch_size, n, t.vocab_of(vocab))


def correct_item(task: str, batch: dict) -> np.ndarray:
    """(B,) index of the item that decides the answer (argmax: the largest real priority; dictionary: the key equal
    to the query)."""
    return get_task(task).correct_item(batch)


def chance_level(task: str, vocab=None) -> float:
    """Accuracy of a uniform guess at ``task`` with the vocabulary sizes of ``vocab`` (a dict or a config object;
    defaults for those missing)."""
    return get_task(task).chance(vocab)
