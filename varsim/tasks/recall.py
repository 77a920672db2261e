"""Associative recall as a token sequence (the single-query form of Zoology's multi-query associative recall): a
key token, then its value token, for each of N pairs, then the query key; the target is the value that followed it.

The pairs are drawn as the dictionary's (:mod:`varsim.tasks.dictionary`: distinct keys from ``range(key_vocab)``,
values from ``range(value_vocab)``, the query a uniformly chosen real key), so the batch schema is the same. What
differs is the layout: key and value are separate tokens, so the value of a key is found only through the order of
the tokens (attend from the query to the matching key, then to the token after it), which a set model cannot see.
It is a task for sequence models only (``item_tokens = 2``).

Batch: ``key`` int64 (B, N), ``value`` int64 (B, N), ``query`` int64 (B,), ``mask`` bool (B, N), ``target`` int64
(B,). Input features (K + V + 1, K from the key encoding): a key token ``[key code, 0, 0]``, a value token
``[0, onehot(value), 0]``, the query ``[key code, 0, 1]``.
"""

from __future__ import annotations

from ._task import register_task
from .dictionary import DictionaryLookup

__all__ = ["RECALL"]


class AssociativeRecall(DictionaryLookup):
    name = "recall"
    summary = "associative recall: key and value as separate tokens, then the query key; the value after it"
    item_tokens = 2

    def write_features(self, arrays, vocab, key_encoding, items, query):
        # (B, N, F) views: token 2i the key, 2i+1 the value
        self._write_pairs(arrays, vocab, key_encoding, items[:, 0::2], items[:, 1::2], query)


RECALL = register_task(AssociativeRecall())
