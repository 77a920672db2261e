"""Argmax retrieval (after Velickovic et al.): the label of the item with the largest priority.

N items, each with a priority drawn i.i.d. from uniform(0, 1) and a class label drawn uniformly from C classes
(``n_classes``); the target is the label of the item with the largest priority among the real items. Any N >= 1.

Batch: ``priority`` float64 (B, N), ``label`` int64 (B, N), ``mask`` bool (B, N), ``target`` int64 (B,).
Input features of an item: ``[priority, onehot(label)]`` (1 + C); the query carries nothing, so the model's query
token is a learned vector.
"""

from __future__ import annotations

import numpy as np

from ._task import Field, Task, register_task

__all__ = ["ARGMAX"]


class ArgmaxRetrieval(Task):
    name = "argmax"
    summary = "argmax retrieval: the label of the item with the largest priority"
    fields = (Field("priority", "float", "item"), Field("label", "id", "item", "n_classes"))
    vocab = {"n_classes": 10}
    output_vocab = "n_classes"
    example_vocab = {"n_classes": 3}
    learned_query = True
    default_train_range = (1, 16)

    def draw(self, rng, sizes, mask, vocab):
        b, n = mask.shape
        priority = rng.random((b, n))  # (B, N) in [0, 1)
        label = rng.integers(0, vocab["n_classes"], size=(b, n))  # (B, N)
        best = np.argmax(np.where(mask, priority, -np.inf), axis=1)  # (B,)
        target = label[np.arange(b), best]
        return {"priority": priority, "label": label, "mask": mask, "target": target}

    def correct_item(self, batch):
        return np.argmax(np.where(batch["mask"], batch["priority"], -np.inf), axis=1)

    def n_features(self, vocab, key_encoding):
        return 1 + vocab["n_classes"]

    def output_feature_offset(self, vocab, key_encoding):
        return 1

    def write_features(self, arrays, vocab, key_encoding, items, query):
        items[..., 0] = arrays["priority"]
        np.put_along_axis(items, 1 + arrays["label"][..., None], 1.0, axis=-1)


ARGMAX = register_task(ArgmaxRetrieval())
