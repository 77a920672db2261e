"""Measured logits: the empirical law of m standard normal draws (m = 1000) against the Gaussian law they were drawn
from: ``N E[sum w^2]``, the local exponent, and the crossover scale ``beta*(N)`` for m = 100 to 100 000.

A sample's largest atom has mass 1/m, so ``A(beta) <= m``: the sample follows the Gaussian law while ``N`` is
well below ``m`` and ``beta`` below the sample's extreme-value scale, then falls like 1/N at every beta once
``N >> m`` (the crossover curves stop at ``N = m``). A law fitted to short contexts says nothing about the tail
beyond its sample (:mod:`varsim.figures.laws`).
"""

from varsim.figures import figure_main

from .laws import LawFigure

NAME = "fig_law_empirical"
FIGURE = LawFigure(NAME, "empirical", "sample_size", 1000, (100, 1000, 10_000, 100_000), betas=(1.0, 2.0, 3.0))
PARAMS, draw = FIGURE.params, FIGURE.draw


def compute(quick: bool = False, seed: int = 0, *, progress: bool = False, source=None, betas=(1.0, 2.0, 3.0),
            sample_size: int = 1000, members=(100, 1000, 10_000, 100_000), n_max=None, out=None) -> dict:
    """The figure's exact theory (:meth:`varsim.figures.laws.LawFigure.compute`; parameters in ``PARAMS``)."""
    return FIGURE.compute(quick, seed, betas=betas, sample_size=sample_size, members=members, n_max=n_max, out=out)


main = figure_main(NAME, __name__)  # python -m varsim.figures.NAME: this figure alone
