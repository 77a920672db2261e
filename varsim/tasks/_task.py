"""What a task is: its batch schema, vocabulary, chance level, cost and input features, and the registry of tasks.

Notation: B batch, N set size (the largest in the batch when sizes vary), F input features per token.

A task is a :class:`Task` subclass instance registered once (:func:`register_task`). Everything else asks it:
:func:`varsim.tasks.make_batch` draws batches, the model validates them against ``fields`` and writes its input
features with ``write_features``, the budget reads ``batch_bytes`` and ``vocab``, the probes read ``correct_item``,
figures read ``chance``. A task never imports the model.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from varsim._common.registry import Registry
from varsim._common.validate import check_int

__all__ = ["Field", "Task", "register_task", "get_task", "TASK_REGISTRY"]


@dataclasses.dataclass(frozen=True)
class Field:
    """One batch array besides ``mask`` and ``target``: ``kind`` "float" or "id" (ids in ``range(vocab size)``),
    ``per`` "item" (B, N) or "example" (B,)."""

    name: str
    kind: str
    per: str
    vocab: str | None = None


class Task:
    """Base of every task. A subclass sets the class attributes and implements :meth:`draw`,
    :meth:`correct_item`, :meth:`n_features` and :meth:`write_features` (:meth:`batch_bytes` and
    :meth:`set_size_limit` when its defaults do not fit).

    - ``name``; ``fields``: the batch schema (every batch also has ``mask`` bool (B, N), True at real items, and
      ``target`` int64 (B,));
    - ``vocab``: its vocabulary sizes and their defaults (``{"n_classes": 10}``); ``output_vocab``: the one the
      target is drawn from (the model predicts that many classes; chance is its inverse); ``example_vocab``: small
      sizes (defaults for those it lacks) with which every set size up to 16 is valid, for examples and quick checks;
    - ``key_fields``: (item field, query field) whose ids are keys, encoded by a key encoding
      (:mod:`varsim.tasks.keys`), or None: the real items' keys are distinct and the query's is the correct item's;
      ``key_vocab``: their vocabulary;
    - ``learned_query``: the query carries no information, so the model's query token is a learned vector;
    - ``default_train_range``: (min, max) training set sizes;
    - ``item_tokens``: tokens per item (1: an item is one token; more only for sequence models, which read
      ``items`` of :meth:`write_features` as (B, N * item_tokens, F), item i at rows ``[i k, (i+1) k)``; a learned
      key table adds its row to the item's first token).
    """

    name: str = ""
    summary: str = ""
    fields: tuple[Field, ...] = ()
    vocab: dict[str, int] = {}
    output_vocab: str = ""
    example_vocab: dict[str, int] = {}
    key_fields: tuple[str, str] | None = None
    key_vocab: str | None = None
    learned_query: bool = False
    default_train_range: tuple[int, int] = (1, 16)
    item_tokens: int = 1

    # -- to implement --------------------------------------------------------------------------------------------
    def draw(self, rng: np.random.Generator, sizes: np.ndarray, mask: np.ndarray, vocab: dict) -> dict:
        """The batch for set sizes ``sizes`` (B,) and ``mask`` (B, N): the schema's arrays, ``mask`` and ``target``."""
        raise NotImplementedError

    def correct_item(self, batch: dict) -> np.ndarray:
        """(B,) index of the item that decides the answer."""
        raise NotImplementedError

    def n_features(self, vocab: dict, key_encoding: str) -> int:
        """Width of one token's input features."""
        raise NotImplementedError

    def write_features(self, arrays: dict, vocab: dict, key_encoding: str, items: np.ndarray,
                       query: np.ndarray) -> None:
        """Fill ``items`` (B, N, F) and ``query`` (B, F), zeros on entry, from a checked batch
        (:meth:`check_batch`). With ``learned_query`` the query row is left at zero. The model lays the tokens out
        in its own order (the set transformer: the query token first; a sequence model: the items, then the
        query), so a task serves every architecture."""
        raise NotImplementedError

    # -- defaults a task may override ----------------------------------------------------------------------------
    def batch_bytes(self, batch_size: int, n: int, vocab: dict) -> int:
        """Bytes :func:`varsim.tasks.make_batch` holds at once: its (B, N) int64/float64 arrays, mask and
        temporaries."""
        return 33 * batch_size * n

    def output_feature_offset(self, vocab: dict, key_encoding: str) -> int | None:
        """First column of the one-hot of the output classes among the input features (the ``n_outputs`` columns
        from there), which a tied output head reuses; None when the features hold no such one-hot."""
        return None

    def set_size_limit(self, vocab: dict) -> tuple[int, str] | None:
        """(largest N, why) when the vocabulary bounds the set size, else None."""
        return None

    # -- derived ---------------------------------------------------------------------------------------------------
    def vocab_of(self, source=None) -> dict:
        """This task's vocabulary sizes read from ``source`` (a dict, or an object with them as attributes, e.g. a
        ModelConfig), defaults for those it lacks."""
        out = {}
        for name, default in self.vocab.items():
            if isinstance(source, dict):
                out[name] = source.get(name, default)
            else:
                out[name] = getattr(source, name, default)
        return out

    def n_outputs(self, vocab: dict) -> int:
        """Number of classes of the target."""
        return int(vocab[self.output_vocab])

    def chance(self, vocab: dict | None = None) -> float:
        """Accuracy of a uniform guess: the target is uniform over ``n_outputs`` classes."""
        return 1.0 / self.n_outputs(self.vocab_of(vocab))

    def key_ids(self, arrays: dict) -> tuple[np.ndarray, np.ndarray] | None:
        """(item key ids (B, N), query key ids (B,)) of a checked batch, or None for a task without keys."""
        if self.key_fields is None:
            return None
        return arrays[self.key_fields[0]], arrays[self.key_fields[1]]

    def check_batch(self, batch, vocab: dict) -> dict:
        """The schema's arrays and ``mask`` of ``batch``, validated (ValueError naming the array): ids of padded
        items read as 0 and floats of padded items as 0.0, so padding may hold anything."""
        if not isinstance(batch, dict):
            raise ValueError(f"batch must be a dict, got {type(batch).__name__}")
        missing = [k for k in (*(f.name for f in self.fields), "mask") if k not in batch]
        if missing:
            raise ValueError(f"{self.name} batch is missing {missing}")
        mask = _check_mask(batch["mask"])
        out = {"mask": mask}
        for f in self.fields:
            out[f.name] = _check_field(f, batch[f.name], mask, vocab)
        return out

    def __repr__(self) -> str:
        return f"<task {self.name!r}>"


def _check_mask(mask) -> np.ndarray:
    mask = np.asarray(mask)
    if mask.ndim != 2 or mask.dtype != np.bool_:
        raise ValueError(f"batch['mask'] must be a bool (B, N) array, got {mask.dtype}{mask.shape}")
    if mask.shape[0] == 0 or mask.shape[1] == 0:
        raise ValueError(f"batch must have at least one example and one item, got mask shape {mask.shape}")
    if not mask.any(axis=1).all():
        raise ValueError("every example needs at least one real item (a mask row is all False)")
    return mask


def _check_field(f: Field, a, mask: np.ndarray, vocab: dict) -> np.ndarray:
    """Field ``f`` of a batch, checked against its schema; padded items' entries read as 0."""
    a = np.asarray(a)
    shape = mask.shape if f.per == "item" else mask.shape[:1]
    kind = np.floating if f.kind == "float" else np.integer
    if a.shape != shape or not np.issubdtype(a.dtype, kind):
        what = "a float" if f.kind == "float" else "an integer"
        raise ValueError(f"batch[{f.name!r}] must be {what} array of shape {shape}, got {a.dtype}{a.shape}")
    if a.ndim == 2:  # padded items may hold anything
        a = np.where(mask, a, 0.0 if f.kind == "float" else 0)
    if f.kind == "float":
        if not np.isfinite(a).all():
            raise ValueError(f"batch[{f.name!r}] has non-finite values at real items")
    elif a.size and (a.min() < 0 or a.max() >= vocab[f.vocab]):
        raise ValueError(f"batch[{f.name!r}] has ids outside [0, {vocab[f.vocab]})")
    return a


TASK_REGISTRY = Registry("task", kind=Task)


def register_task(task: Task) -> Task:
    """Add ``task`` to the registry; a name already taken, or a vocabulary size whose name another task uses with
    another default, raises ValueError."""
    if not isinstance(task, Task) or not task.name:
        raise ValueError(f"task must be a named Task instance, got {task!r}")
    for other in TASK_REGISTRY.values():
        for k, v in task.vocab.items():
            if k in other.vocab and other.vocab[k] != v:
                raise ValueError(f"task {task.name!r}: vocabulary {k!r} defaults to {v}, task {other.name!r} to "
                                 f"{other.vocab[k]}")
    if task.output_vocab not in task.vocab:
        raise ValueError(f"task {task.name!r}: output_vocab {task.output_vocab!r} is not one of its vocab")
    return TASK_REGISTRY.add(task)


#: the registered task of a name; ValueError naming ``task`` and the choices otherwise
get_task = TASK_REGISTRY.find
"""The task named ``name``; ValueError naming the parameter for an unknown name."""


def check_vocab_sizes(vocab: dict) -> dict:
    """Validate vocabulary sizes given by name (any registered task's; each an int >= 2)."""
    known = {k for t in TASK_REGISTRY.values() for k in t.vocab}
    out = {}
    for name, value in vocab.items():
        if name not in known:
            raise ValueError(f"unknown vocabulary size {name!r}; the tasks use {', '.join(sorted(known))}")
        out[name] = check_int(name, value, minimum=2)
    return out
