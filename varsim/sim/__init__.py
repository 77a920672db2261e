"""Monte Carlo simulators of the softmax attention output variance.

``simulate`` samples sequences of length N with Numba kernels (a lane-parallel xoshiro256++ generator feeding a
ziggurat, fused with an online max-subtracted softmax) and reports, per N, ``Var(o_j)``, ``E[sum w^2]``, means
and the across-feature statistics, with batch-means standard errors and the log-log slope.
``measure_variance`` applies the same statistics to a user-supplied NumPy attention function.

Importing this package compiles nothing; the kernels compile (or load from the Numba cache) on first use.
"""

from ._driver import measure_variance, simulate
from ._result import SimulationResult

__all__ = ["simulate", "measure_variance", "SimulationResult"]
