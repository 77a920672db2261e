"""Random streams keyed by the work, never by the thread.

Every public function in varsim takes ``seed`` (an int, a ``numpy.random.SeedSequence`` or
``None`` for fresh OS entropy). Independent pieces of work (a sweep point, a chunk, a training
step) get their own child stream, derived from the root entropy and a *work key*, so the
numbers do not depend on how the work is scheduled.

Public entry points that also follow numpy's SPEC 7 take ``rng=`` next to ``seed=`` (default
:data:`SEED_DEFAULT`) and call :func:`resolve_seed` to get their one root ``SeedSequence``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["root_sequence", "child_sequence", "child_generator", "child_state", "seed_entropy", "resolve_seed",
           "SEED_DEFAULT"]


def root_sequence(seed) -> np.random.SeedSequence:
    """Normalise ``seed`` to a ``SeedSequence``; refuse anything that would be silently ambiguous."""
    if isinstance(seed, np.random.SeedSequence):
        return seed
    if seed is None:
        return np.random.SeedSequence()
    if isinstance(seed, (bool, np.bool_)):
        raise ValueError(f"seed must be a non-negative integer or a SeedSequence, got {seed!r}")
    if isinstance(seed, (int, np.integer)):
        if int(seed) < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
        return np.random.SeedSequence(int(seed))
    if isinstance(seed, np.random.Generator):
        raise ValueError(
            "seed must be an int or a SeedSequence (a Generator cannot be split by work key reproducibly)"
        )
    raise ValueError(f"seed must be a non-negative integer or a SeedSequence, got {seed!r}")


def seed_entropy(seed) -> int | list[int]:
    """The entropy of the root sequence, for provenance records (re-creates the same streams)."""
    return root_sequence(seed).entropy


def child_sequence(seed, *key: int) -> np.random.SeedSequence:
    """The stream for the work item ``key`` (a tuple of non-negative ints) under ``seed``."""
    root = root_sequence(seed)
    return np.random.SeedSequence(root.entropy, spawn_key=tuple(root.spawn_key) + tuple(int(k) for k in key))


def child_generator(seed, *key: int) -> np.random.Generator:
    """A PCG64 generator for the work item ``key``."""
    return np.random.Generator(np.random.PCG64(child_sequence(seed, *key)))


def child_state(seed, *key: int, words: int = 4) -> np.ndarray:
    """``words`` uint64 words of state for a kernel-side generator of work item ``key``."""
    return child_sequence(seed, *key).generate_state(words, dtype=np.uint64)


class _DefaultSeed(int):
    """The default ``seed=0``, distinguishable from an explicit 0 so that ``seed`` together with ``rng`` is refused."""

    def __repr__(self):
        return "0"


SEED_DEFAULT = _DefaultSeed(0)


def resolve_seed(seed, rng) -> np.random.SeedSequence:
    """The root ``SeedSequence`` from ``seed=`` or ``rng=`` (SPEC 7); giving both is an error.

    ``rng`` may be an int or a ``SeedSequence`` (the same streams as ``seed`` with that value, bit for bit), or a
    ``numpy.random.Generator``, from which 128 bits of entropy are drawn for a fresh ``SeedSequence`` (this advances
    the generator; the result records that entropy, so ``rng=numpy.random.SeedSequence(result.seed)`` reruns it).
    """
    if rng is None:
        return root_sequence(int(seed) if isinstance(seed, _DefaultSeed) else seed)
    if not isinstance(seed, _DefaultSeed):
        raise ValueError("give seed or rng, not both")
    if isinstance(rng, np.random.Generator):
        entropy = [int(x) for x in rng.integers(0, 2**32, size=4, dtype=np.uint64)]
        return np.random.SeedSequence(entropy)
    if isinstance(rng, (np.random.SeedSequence, int, np.integer)) and not isinstance(rng, (bool, np.bool_)):
        try:
            return root_sequence(rng)
        except ValueError as exc:
            raise ValueError(str(exc).replace("seed", "rng", 1)) from None
    raise ValueError(f"rng must be an int, a numpy SeedSequence or a numpy Generator, got {type(rng).__name__}")
