"""Key coordinates ``+-1`` under the all-ones query (d = 16) against Gaussian logits of the same standard deviation:
``N E[sum w^2]``, the local exponent, and the crossover scale ``beta*(N)`` for d = 4 to 256.

The logit takes d + 1 values; its top value has mass ``2^-d``, so ``A(beta) <= 2^d`` at every beta: beyond
``N = 2^d`` no temperature keeps the weights frozen and the 1/N law holds (the crossover curves stop there). Below it
the law follows the Gaussian's, more closely as d grows (:mod:`varsim.figures.laws`).
"""

from varsim.figures import figure_main

from .laws import LawFigure

NAME = "fig_law_rademacher"
FIGURE = LawFigure(NAME, "rademacher", "d", 16, (4, 16, 64, 256), betas=(1.0, 2.0, 3.0, 4.0))
PARAMS, draw = FIGURE.params, FIGURE.draw


def compute(quick: bool = False, seed: int = 0, *, progress: bool = False, source=None, betas=(1.0, 2.0, 3.0, 4.0),
            d: int = 16, members=(4, 16, 64, 256), n_max=None, out=None) -> dict:
    """The figure's exact theory (:meth:`varsim.figures.laws.LawFigure.compute`; parameters in ``PARAMS``)."""
    return FIGURE.compute(quick, seed, betas=betas, d=d, members=members, n_max=n_max, out=out)


main = figure_main(NAME, __name__)  # python -m varsim.figures.NAME: this figure alone
