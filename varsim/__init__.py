"""varsim: vanishing variance of softmax attention, measured and tested.

Subpackages (imported lazily; nothing is compiled at import time), from the bottom floor up (a part imports only
from the floors below it; ``tests/test_import_graph.py`` checks this):

- ``varsim._common``     one home per shared concept: validation, seeding, atomic writes, JSON files, fits,
  intervals, run locks, BLAS threads, provenance, progress.
- ``varsim.variants``    the registries of attention weight maps and output normalizations.
- ``varsim.tasks``       the synthetic tasks (argmax retrieval, dictionary lookup, associative recall).
- ``varsim.jobs``        independent jobs on local processes or a Dask cluster, results directories resumed.
- ``varsim.pretrained``  real pretrained models in NumPy and the ``varsim probe-model`` probe.
- ``varsim.style``       the figure styles as data (rcParams and sizes), applied by a context manager.
- ``varsim.theory``      exact and asymptotic theory (NumPy/SciPy only).
- ``varsim.nn``          two small models with hand-written backprop: the set transformer and the causal decoder.
- ``varsim.sim``         Monte Carlo simulators of the attention output variance, and sweeps over their grid.
- ``varsim.train``       training, checkpoints, evaluation and the probes of a trained model.
- ``varsim.experiments`` grids of training runs: the paper reproduction, the remedies grid and the decoder grid.
- ``varsim.testing``     helpers for users' test suites (Hypothesis strategies, variance assertions).
- ``varsim.figures``     the figures (``varsim figures``).
- ``varsim.plotting``    quick plots of simulator results and sweeps, in the figures' styles.
- ``varsim.notebooks``   the teaching notebooks (they may draw with the figures' helpers).
- ``varsim.cli``         the ``varsim`` command, one module per subcommand.
"""

__version__ = "0.2.0.dev0"

__all__ = ["__version__"]
