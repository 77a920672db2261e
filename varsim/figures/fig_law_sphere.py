"""Keys and query on the unit sphere (QK-norm, d = 64) against Gaussian logits of the same standard deviation:
``N E[sum w^2]``, the local exponent, and the crossover scale ``beta*(N)`` (``A(beta*) = N``) for d = 8 to 256.

The logit ``beta sqrt(d) cos(angle)`` is bounded, so ``N E[sum w^2]`` always tends to the finite
``A(beta) = E[e^{2X}] / E[e^X]^2`` (the 1/N law), reached once ``N >> A``; below that the weights are frozen on
the top keys. ``A`` grows only like ``beta^{(d-1)/2}``, far slower than the Gaussian ``e^{beta^2}``, so the
crossover scale grows like ``N^{2/(d-1)}`` against the Gaussian's ``sqrt(ln N)`` (:mod:`varsim.figures.laws`).
"""

from varsim.figures import figure_main

from .laws import LawFigure

NAME = "fig_law_sphere"
FIGURE = LawFigure(NAME, "sphere", "d", 64, (8, 16, 64, 256), betas=(1.0, 2.0, 3.0, 4.0))
PARAMS, draw = FIGURE.params, FIGURE.draw


def compute(quick: bool = False, seed: int = 0, *, progress: bool = False, source=None, betas=(1.0, 2.0, 3.0, 4.0),
            d: int = 64, members=(8, 16, 64, 256), n_max=None, out=None) -> dict:
    """The figure's exact theory (:meth:`varsim.figures.laws.LawFigure.compute`; parameters in ``PARAMS``)."""
    return FIGURE.compute(quick, seed, betas=betas, d=d, members=members, n_max=n_max, out=out)


main = figure_main(NAME, __name__)  # python -m varsim.figures.NAME: this figure alone
