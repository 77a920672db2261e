"""Key coordinates uniform on ``[-sqrt 3, sqrt 3]`` under the all-ones query (d = 8) against Gaussian logits of the
same standard deviation: ``N E[sum w^2]``, the local exponent, and the crossover scale ``beta*(N)`` for d = 2 to 32.

The logit is a standardised Irwin-Hall sum, bounded by ``beta sqrt(3 d)``: ``N E[sum w^2]`` tends to the finite
``A(beta)`` (the 1/N law) once ``N >> A``, frozen before. ``A`` grows like ``beta^d``, so the crossover scale grows
like ``N^{1/d}``; as d grows the law and its crossover approach the Gaussian's (:mod:`varsim.figures.laws`).
"""

from varsim.figures import figure_main

from .laws import LawFigure

NAME = "fig_law_uniform"
FIGURE = LawFigure(NAME, "uniform", "d", 8, (2, 4, 8, 32), betas=(1.0, 2.0, 3.0, 4.0), param_max=64)
PARAMS, draw = FIGURE.params, FIGURE.draw


def compute(quick: bool = False, seed: int = 0, *, progress: bool = False, source=None, betas=(1.0, 2.0, 3.0, 4.0),
            d: int = 8, members=(2, 4, 8, 32), n_max=None, out=None) -> dict:
    """The figure's exact theory (:meth:`varsim.figures.laws.LawFigure.compute`; parameters in ``PARAMS``)."""
    return FIGURE.compute(quick, seed, betas=betas, d=d, members=members, n_max=n_max, out=out)


main = figure_main(NAME, __name__)  # python -m varsim.figures.NAME: this figure alone
