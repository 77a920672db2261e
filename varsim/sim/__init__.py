"""Monte Carlo simulators of the softmax attention output variance.

``simulate`` samples sequences of length N with Numba kernels (a lane-parallel xoshiro256++ generator feeding a
ziggurat, fused with an online max-subtracted softmax) and reports, per N, ``Var(o_j)``, ``E[sum w^2]``, means
and the across-feature statistics, with batch-means standard errors and the log-log slope.
``measure_variance`` applies the same statistics to a user-supplied NumPy attention function.
``simulate(..., attention=NAME, **params)`` runs any weight map of :mod:`varsim.variants` (ssmax, logn, critical,
adaptive_temperature, topk, entmax15, sparsemax, sigmoid). Runs whose estimated work exceeds ``max_work`` (default
:data:`DEFAULT_MAX_WORK`) or whose memory exceeds half the machine's are refused before they start
(:func:`estimate_cost` gives the estimate).

Importing this package compiles nothing; the kernels compile (or load from the Numba cache) on first use.
"""

from ._config import (
    DEFAULT_FIGURE_MAX_WORK,
    DEFAULT_MAX_WORK,
    DISTRIBUTIONS,
    KEY_DISTRIBUTIONS,
    estimate_cost,
    simulate_work,
)
from ._driver import measure_variance, simulate
from ._result import SimulationResult

__all__ = ["simulate", "measure_variance", "SimulationResult", "DEFAULT_MAX_WORK", "estimate_cost",
           "simulate_work", "DEFAULT_FIGURE_MAX_WORK", "DISTRIBUTIONS", "KEY_DISTRIBUTIONS"]
