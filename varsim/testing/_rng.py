"""How a failure message names the run's random stream so that it can be rerun.

``rng=`` arguments of the checks are normalised by ``varsim._common.seeding.resolve_seed`` like every other public
function's (a ``Generator`` contributes 128 bits drawn from it, as everywhere in varsim); :func:`describe_seed` prints
the root ``SeedSequence`` as the shortest ``rng=`` value that recreates it.
"""

from __future__ import annotations

import numpy as np

__all__ = ["describe_seed"]


def describe_seed(seq: np.random.SeedSequence) -> str:
    """The shortest ``rng=`` value that recreates ``seq`` (an int when it has no spawn key)."""
    if not seq.spawn_key and isinstance(seq.entropy, int):
        return str(seq.entropy)
    return f"numpy.random.SeedSequence({seq.entropy!r}, spawn_key={tuple(seq.spawn_key)!r})"
