"""Random streams keyed by the work, never by the thread, and the one normaliser of ``seed=`` / ``rng=``.

Policy (every public function that draws random numbers):

- It takes ``rng=`` (numpy SPEC 7): an int >= 0, a ``numpy.random.SeedSequence``, a ``numpy.random.Generator`` or
  None. Functions that documented ``seed=`` before keep it (an int >= 0, a ``SeedSequence`` or None; default 0,
  :data:`SEED_DEFAULT`), and giving both ``seed`` and ``rng`` is an error.
- :func:`resolve_seed` turns either into the run's one root ``SeedSequence``; nothing else interprets them.
  ``rng`` an int or ``SeedSequence`` gives the streams of ``seed`` with that value, bit for bit. A ``Generator``
  contributes 128 bits drawn from it (advancing it): the root is ``SeedSequence(that 128-bit int)``, the same for
  every function, so one Generator state gives the same streams wherever it is passed. Nothing given: ``seed``'s
  default where there is one, else fresh OS entropy (``seed=None`` likewise means fresh entropy).
- Results record ``root.entropy`` (an int; and the spawn key when the root has one): ``seed=`` or ``rng=`` that
  value reruns them.
- Independent pieces of work (a sweep point, a chunk, a training step) get their own child stream, derived from the
  root entropy and a *work key* (:func:`child_sequence`, :func:`child_generator`, :func:`child_state`), so the
  numbers do not depend on how the work is scheduled.
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
        raise ValueError("seed must be an int or a SeedSequence (a Generator goes to rng=, see resolve_seed)")
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


def resolve_seed(seed=SEED_DEFAULT, rng=None) -> np.random.SeedSequence:
    """The root ``SeedSequence`` of a run from ``seed=`` or ``rng=`` (SPEC 7); see the module docstring.

    ``seed`` counts as not given when it is :data:`SEED_DEFAULT` or None; a given ``seed`` together with ``rng`` is
    an error. Errors about ``rng`` name ``rng``.
    """
    if rng is None:
        return root_sequence(int(seed) if isinstance(seed, _DefaultSeed) else seed)
    if seed is not None and not isinstance(seed, _DefaultSeed):
        raise ValueError("give seed or rng, not both")
    if isinstance(rng, np.random.Generator):
        return np.random.SeedSequence(int.from_bytes(rng.bytes(16), "little"))
    if isinstance(rng, (np.random.SeedSequence, int, np.integer)) and not isinstance(rng, (bool, np.bool_)):
        try:
            return root_sequence(rng)
        except ValueError as exc:
            raise ValueError(str(exc).replace("seed", "rng", 1)) from None
    raise ValueError(f"rng must be a non-negative integer, a numpy.random.SeedSequence or a numpy.random.Generator, "
                     f"got {rng!r}")
