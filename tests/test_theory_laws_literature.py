"""Published results on attention dispersion, reproduced with varsim (issue 47, item 3). Each test names the claim,
the source, what varsim computes and the tolerance; docs/site/theory/laws.md lists what could not be checked.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from varsim.theory import expected_ipr, phase_boundaries
from varsim.theory.laws import annealed_limit, crossover_beta, law_decay_exponent, law_ipr, logit_law
from varsim.variants import weights


def _figure1_input(n: int) -> np.ndarray:
    z = np.full(n, -2.0)
    z[-1] = 3.0
    return z


@pytest.mark.parametrize("n", [2, 10, 100, 1000, 100_000])
def test_nakanishi_ssmax_figure1_closed_form(n):
    """Nakanishi, "Scalable-Softmax Is Superior for Attention" (arXiv 2501.19399, 2025), Figure 1: input -2 in every
    entry but the last, which is +3; SSMax with s = 0.43 (setup from the figure's caption). Closed forms:
    softmax's largest weight ``1/(1 + (n-1) e^-5)``, SSMax's ``1/(1 + (n-1) n^{-5 s})``. varsim's ``softmax`` and
    ``ssmax`` references give them to 1e-13. (The figure's plotted values themselves were not read.)"""
    z = _figure1_input(n)
    soft = weights("softmax", z)[-1]
    ss = weights("ssmax", z, s=0.43)[-1]
    assert soft == pytest.approx(1.0 / (1.0 + (n - 1) * math.exp(-5.0)), rel=1e-13)
    assert ss == pytest.approx(1.0 / (1.0 + (n - 1) * n ** (-5.0 * 0.43)), rel=1e-13)


def test_nakanishi_ssmax_keeps_the_maximum_near_one():
    """The caption's claim: softmax's largest weight decays with n (attention fading) while SSMax keeps it close to
    1 regardless of n. In closed form, with 5 s = 2.15 > 1, SSMax's largest weight is at least 0.81 for every n in
    [2, 1e6] (its minimum is at n = 2) and tends to 1; softmax's falls below 0.01 by n = 2e4."""
    ns = np.unique(np.geomspace(2, 1e6, 400).astype(int))
    ss = 1.0 / (1.0 + (ns - 1) * ns ** (-2.15))
    assert ss.min() >= 0.81 and ss[-1] > 0.999
    assert 1.0 / (1.0 + (2e4 - 1) * math.exp(-5.0)) < 0.01


def _simplex_self_weight(n: int, gamma: float, rho: float) -> float:
    """Self-attention weight of token 0 among n unit tokens with pairwise inner products rho, scores
    ``beta_n <y_0, y_j>`` with ``beta_n = gamma ln n``: the tokens built explicitly, the weight from varsim's
    ``ssmax`` reference (which is softmax of ``s ln(n) z``, ``s = gamma``)."""
    y = np.sqrt(1.0 - rho) * np.eye(n, n + 1) + np.sqrt(rho) * np.eye(1, n + 1, n)  # rows: unit vectors
    scores = y @ y[0]
    return float(weights("ssmax", scores, s=gamma)[0])


@pytest.mark.parametrize("rho", [0.0, 0.5])
def test_chen_critical_log_scaling_simplex(rho):
    """Chen, Lin, Polyanskiy, Rigollet, "Critical attention scaling in long-context transformers" (arXiv 2510.05554,
    ICLR 2026): with ``beta_n = gamma log n`` the critical scaling is ``beta_n ~ log n``; summaries of the paper give
    ``gamma_c = 1/(1 - rho)`` for tokens with pairwise inner product rho. What varsim verifies is the elementary
    simplex case only: the self weight is ``1/(1 + (n-1) n^{-gamma (1-rho)})`` (1e-12), so it tends to 1 above
    gamma_c (attention becomes the identity), to 0 below (uniform averaging), and to 1/2 at gamma_c."""
    gamma_c = 1.0 / (1.0 - rho)
    for n in (50, 400, 3000):
        for gamma in (0.5 * gamma_c, gamma_c, 1.5 * gamma_c):
            closed = 1.0 / (1.0 + (n - 1) * n ** (-gamma * (1.0 - rho)))
            assert _simplex_self_weight(n, gamma, rho) == pytest.approx(closed, rel=1e-12)
    big = 1e12
    below, at, above = (1.0 / (1.0 + (big - 1) * big ** (-g * (1.0 - rho))) for g in (0.9 * gamma_c, gamma_c,
                                                                                     1.1 * gamma_c))
    assert below < 0.1 and at == pytest.approx(0.5, rel=1e-9) and above > 0.9


@pytest.mark.parametrize("name", ["sphere", "rademacher", "uniform"])
def test_bounded_logits_limit_is_mgf_ratio(name):
    """Bounded logits (elementary; docs/site/theory/laws.md gives the proof): ``N E[sum w^2] -> E[e^{2X}]/E[e^X]^2``
    and the local exponent -> -1. At N = 1e300, beta = 3 the exact theory equals the closed-form limit to 1e-10 and
    its exponent is -1 to 1e-10."""
    law = logit_law(name, d=16)
    assert 1e300 * law_ipr(law, 1e300, 3.0) == pytest.approx(annealed_limit(law, 3.0), rel=1e-10)
    assert law_decay_exponent(law, 1e300, 3.0) == pytest.approx(-1.0, abs=1e-10)


def test_rem_freezing_cross_check_per_law():
    """Gaussian REM (THEORY.md 3): frozen for ``ln N < beta^2/2``, annealed for ``ln N > 3 beta^2/2``. varsim's
    crossover scale of the Gaussian law (``A(beta*) = N``, ``A = e^{beta^2}``) is ``beta* = sqrt(ln N)``, which lies
    between the two boundaries for every N; the finite-d laws tend to the Gaussian theory as d grows (their relative
    difference at N = 1e6, beta = 1.5 shrinks like 1/d: d times it changes by less than 10% from d = 256 to 1024)."""
    for n in (1e3, 1e12, 1e100):
        b = crossover_beta("gaussian", n)
        frozen_below, annealed_above = phase_boundaries(b)
        assert frozen_below < math.log(n) < annealed_above
    gauss = expected_ipr(1e6, 1.5)
    for name in ("sphere", "rademacher"):
        dev = [law_ipr(logit_law(name, d=d), 1e6, 1.5) / gauss - 1.0 for d in (256, 1024)]
        assert abs(dev[1]) < 0.02
        assert 256 * dev[0] == pytest.approx(1024 * dev[1], rel=0.1)
