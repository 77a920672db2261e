"""Key encodings: how a task's key ids (the dictionary's keys and query) become a token's input features.

An encoding gives ``n_features(key_vocab)`` feature columns written by ``write(keys, out)``, and may ask the model
for a learned table (``learned_table``): one trained row per key id, added to the first layer's pre-activation of the
item MLP (the same as a one-hot block of ``key_vocab`` input features, without building it). The task writes the
features and names its key fields; the model reads ``learned_table`` to own the table. Adding an encoding is one
:func:`register_key_encoding` call.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

import numpy as np

from varsim._common.registry import Registry

__all__ = ["KeyEncoding", "KEY_ENCODINGS", "get_key_encoding", "register_key_encoding", "binary_key_bits"]


@dataclasses.dataclass(frozen=True)
class KeyEncoding:
    """``n_features(key_vocab)`` columns per key, filled by ``write(keys (...,) int64, out (..., n_features))``;
    ``learned_table``: the model adds a trained row per key id (parameter ``embed.key_table``)."""

    name: str
    description: str
    n_features: Callable[[int], int]
    write: Callable[[np.ndarray, np.ndarray], None]
    learned_table: bool = False


#: name -> KeyEncoding: ``register_key_encoding`` adds one (a name taken raises), ``get_key_encoding`` finds one
KEY_ENCODINGS = Registry("key_encoding", what="key encoding", kind=KeyEncoding)


def register_key_encoding(entry=None, **deprecated):
    """Add a key encoding to :data:`KEY_ENCODINGS` under its name and return it; a name already registered is
    refused. ``encoding=`` (its keyword until 0.1.0) still works with a DeprecationWarning until 0.3.0: pass the
    encoding positionally."""
    if deprecated:
        import warnings

        if set(deprecated) != {"encoding"} or entry is not None:
            raise TypeError(f"register_key_encoding() takes one key encoding, got {entry!r} and "
                            f"{', '.join(deprecated)}")
        warnings.warn("register_key_encoding(encoding=...) is deprecated since 0.2.0: pass the key encoding "
                      "positionally", DeprecationWarning, stacklevel=2)
        entry = deprecated["encoding"]
    return KEY_ENCODINGS.add(entry)


get_key_encoding = KEY_ENCODINGS.find
"""The key encoding named ``name``; ValueError naming the parameter for an unknown name."""


def binary_key_bits(key_vocab: int) -> int:
    """Number of +-1 features of the binary key code: ceil(log2 key_vocab), at least 1."""
    return max(1, (int(key_vocab) - 1).bit_length())


def _write_binary(keys: np.ndarray, out: np.ndarray) -> None:
    bits = (keys[..., None] >> np.arange(out.shape[-1])) & 1  # (..., K)
    out[...] = 2 * bits - 1


register_key_encoding(KeyEncoding(
    "binary",
    "the ceil(log2 key_vocab) bits of the key id as +-1 features: every key shares the same few weights, so a key "
    "seen once in training is still encoded sensibly",
    binary_key_bits,
    _write_binary,
))
register_key_encoding(KeyEncoding(
    "embedding",
    "a learned key table: one trained row per key id, added to the item MLP's first pre-activation",
    lambda key_vocab: 0,
    lambda keys, out: None,
    learned_table=True,
))
