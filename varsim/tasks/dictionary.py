"""Dictionary lookup: the value stored under the query key.

N (key, value) pairs, keys distinct and drawn uniformly without replacement from ``range(key_vocab)``, values drawn
uniformly from ``range(value_vocab)``; the query is one of the real keys, chosen uniformly; the target is its value.
Needs N <= key_vocab (keys must be distinct). Training starts at N = 2: a one-pair dictionary can be answered
without reading the query, so such examples would reward ignoring it.

Batch: ``key`` int64 (B, N), ``value`` int64 (B, N), ``query`` int64 (B,), ``mask`` bool (B, N), ``target`` int64
(B,). Input features: an item ``[key code, onehot(value), 0]``, the query ``[key code, 0, 1]`` (the last feature
flags the query; K + V + 1 features), the key code from the key encoding (:mod:`varsim.tasks.keys`).
"""

from __future__ import annotations

import numpy as np

from ._task import Field, Task, register_task
from .keys import get_key_encoding

__all__ = ["DICTIONARY", "distinct_keys"]


class DictionaryLookup(Task):
    name = "dictionary"
    summary = "dictionary lookup: the value stored under the query key"
    fields = (Field("key", "id", "item", "key_vocab"), Field("value", "id", "item", "value_vocab"),
              Field("query", "id", "example", "key_vocab"))
    vocab = {"key_vocab": 16384, "value_vocab": 16}
    output_vocab = "value_vocab"
    example_vocab = {"key_vocab": 32, "value_vocab": 3}
    key_fields = ("key", "query")
    key_vocab = "key_vocab"
    default_train_range = (2, 16)

    def draw(self, rng, sizes, mask, vocab):
        b, n = mask.shape
        key = distinct_keys(rng, b, n, vocab["key_vocab"])  # (B, N)
        value = rng.integers(0, vocab["value_vocab"], size=(b, n))  # (B, N)
        # The query is a uniformly chosen real item: index floor(u * size_b) < size_b.
        pick = np.minimum((rng.random(b) * sizes).astype(np.int64), sizes - 1)  # (B,)
        rows = np.arange(b)
        return {"key": key, "value": value, "query": key[rows, pick], "mask": mask, "target": value[rows, pick]}

    def correct_item(self, batch):
        hit = (batch["key"] == batch["query"][:, None]) & batch["mask"]
        if not np.all(hit.any(axis=1)):
            raise ValueError("batch: a dictionary query is missing from its set")
        return np.argmax(hit, axis=1)

    def batch_bytes(self, batch_size, n, vocab):
        """Also, at ``n * n > key_vocab``, a row of ``key_vocab`` random scores and their partial sort per example."""
        out = 33 * batch_size * n
        if n * n > vocab["key_vocab"]:
            out += 24 * batch_size * vocab["key_vocab"]
        return out

    def set_size_limit(self, vocab):
        return vocab["key_vocab"], "a dictionary of N pairs needs N distinct keys"

    def n_features(self, vocab, key_encoding):
        return get_key_encoding(key_encoding).n_features(vocab["key_vocab"]) + vocab["value_vocab"] + 1

    def output_feature_offset(self, vocab, key_encoding):
        return get_key_encoding(key_encoding).n_features(vocab["key_vocab"])

    def write_features(self, arrays, vocab, key_encoding, items, query):
        self._write_pairs(arrays, vocab, key_encoding, items, items, query)

    def _write_pairs(self, arrays, vocab, key_encoding, key_rows, value_rows, query):
        """The key codes into ``key_rows`` and ``query``, each value's one-hot into ``value_rows`` (after the key
        code's features), and the query flag."""
        enc = get_key_encoding(key_encoding)
        k0 = enc.n_features(vocab["key_vocab"])
        if k0:
            enc.write(arrays["query"], query[..., :k0])
            enc.write(arrays["key"], key_rows[..., :k0])
        np.put_along_axis(value_rows, k0 + arrays["value"][..., None], 1.0, axis=-1)
        query[..., -1] = 1.0


DICTIONARY = register_task(DictionaryLookup())


def distinct_keys(rng: np.random.Generator, b: int, n: int, vocab: int) -> np.ndarray:
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
