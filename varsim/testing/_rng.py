"""SPEC 7 ``rng=`` arguments: a seed int, a ``SeedSequence`` or a ``Generator``, normalised to one ``SeedSequence``.

varsim's simulators are keyed by work item under a ``SeedSequence`` (``varsim._common.seeding``), which a
``Generator`` cannot provide reproducibly; a ``Generator`` therefore contributes one 63-bit integer drawn from it, and
that integer is what a failure message prints to reproduce the run.
"""

from __future__ import annotations

import numbers

import numpy as np

from varsim._common.seeding import root_sequence

__all__ = ["as_seed_sequence", "describe_seed"]


def as_seed_sequence(rng) -> np.random.SeedSequence:
    """``rng`` as a ``SeedSequence``: an int >= 0 or a ``SeedSequence`` as for ``seed=``; a ``Generator`` gives
    ``SeedSequence(int drawn from it)`` (advancing it, so two calls with one Generator get different streams);
    ``None`` gives fresh OS entropy (printed by failure messages, so a failure is still reproducible)."""
    if isinstance(rng, np.random.Generator):
        return np.random.SeedSequence(int(rng.integers(0, 2**63)))
    if isinstance(rng, numbers.Integral) and not isinstance(rng, (bool, np.bool_)) and int(rng) < 0:
        raise ValueError(f"rng must be a non-negative integer, a SeedSequence or a Generator, got {rng!r}")
    try:
        return root_sequence(rng)
    except ValueError:
        raise ValueError(
            f"rng must be a non-negative integer, a numpy.random.SeedSequence or a numpy.random.Generator, got {rng!r}"
        ) from None


def describe_seed(seq: np.random.SeedSequence) -> str:
    """The shortest ``rng=`` value that recreates ``seq`` (an int when it has no spawn key)."""
    if not seq.spawn_key and isinstance(seq.entropy, int):
        return str(seq.entropy)
    return f"numpy.random.SeedSequence({seq.entropy!r}, spawn_key={tuple(seq.spawn_key)!r})"
