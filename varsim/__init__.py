"""varsim: vanishing variance of softmax attention, measured and tested.

Subpackages (imported lazily; nothing is compiled at import time):

- ``varsim.sim``     Monte Carlo simulators of the attention output variance.
- ``varsim.theory``  exact and asymptotic theory (NumPy/SciPy only).
- ``varsim.nn``      a small transformer with hand-written backprop.
- ``varsim.tasks``   the synthetic tasks (argmax retrieval, dictionary lookup).
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
