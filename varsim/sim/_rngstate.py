"""Layout of the in-kernel random generator state, shared by the Numba kernels and their NumPy twins.

Each chunk of work owns ``LANES + 1`` independent xoshiro256++ generators (Blackman & Vigna, 2018): ``LANES``
bulk lanes advanced together (one vector step yields ``LANES`` 64-bit words, which lets the compiler use SIMD
instructions), plus one scalar *fix-up* lane that feeds the rare slow path of the ziggurat (tail and wedge
tests). The state is a ``(4, LANES + 1)`` uint64 array seeded from ``SeedSequence.generate_state`` for the work
key ``(N, chunk)``; it never depends on which thread runs the chunk.
"""

from __future__ import annotations

import numpy as np

from varsim._common.seeding import child_state

__all__ = ["LANES", "FIX", "new_state", "padded_words"]

LANES = 32
FIX = LANES  # column of the fix-up lane
# A lane whose four words are all zero would stay zero forever (probability 2^-256 per lane); replace word 0.
_ZERO_GUARD = np.uint64(0x9E3779B97F4A7C15)


def new_state(seed, *key: int) -> np.ndarray:
    """Fresh generator state for the work item ``key`` under ``seed`` (a ``(4, LANES + 1)`` uint64 array)."""
    words = child_state(seed, *key, words=4 * (LANES + 1))
    state = np.ascontiguousarray(words.reshape(LANES + 1, 4).T)
    dead = ~state.any(axis=0)
    state[0, dead] = _ZERO_GUARD
    return state


def padded_words(n_variates: int) -> int:
    """64-bit words consumed by one request for ``n_variates`` (two 32-bit variates per word, whole vector steps)."""
    steps = -(-n_variates // (2 * LANES))
    return steps * LANES
