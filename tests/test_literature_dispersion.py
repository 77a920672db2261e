"""2025-2026 results on attention dispersion, as tests (issue 47, item 3; the earlier items are in
tests/test_theory_laws_literature.py). Each test names the claim, the source (read: its abstract, through the
pages that carry it; the full texts were not read), what varsim computes and the tolerance.
docs/site/theory/laws.md ("The literature as tests") lists what could not be checked, with numbers.

Units: varsim's ``beta`` is the logit's standard deviation, ``X = beta T``; for keys and query on the unit sphere
``S^{d-1}`` the papers' inverse temperature ``beta_n`` (logit ``beta_n cos(angle)``) is ``beta sqrt(d)``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from varsim.sim import simulate
from varsim.theory import expected_ipr, frozen_ipr
from varsim.theory.laws import LAWS, annealed_limit, crossover_beta, law_ipr, logit_law
from varsim.variants import weights

# --------------------------------------------------------------------------------------------------------------------
# Bruno, Rigollet, Chen, Polyanskiy, Lin, "Scaling Limits of Long-Context Transformers", arXiv 2605.08505 (2026)


@pytest.mark.parametrize("family, d, exponent, ns", [
    ("sphere", 8, 2 / 7, (1e8, 1e12, 1e16)),
    ("sphere", 16, 2 / 15, (1e20, 1e30, 1e40)),
    ("uniform", 4, 1 / 4, (1e20, 1e30, 1e40)),
])
def test_bruno_critical_scale_is_set_by_the_local_exponent(family, d, exponent, ns):
    """Claim (abstract): for a fixed query and n i.i.d. uniform keys on ``S^{d-1}`` the critical inverse temperature
    is ``beta_n* ~ n^{2/(d-1)}``, set by the local exponent of the distance-to-query law near zero. varsim: its
    crossover scale ``beta*(n)`` (``A(beta*) = n``, a different definition of the same transition) divided by
    ``n^{2/(d-1)}`` settles to a constant (three n eight to twenty decades apart agree to 0.5%); for uniform keys
    (density vanishing like ``(t_max - t)^{d-1}`` at the top, local exponent d) the same holds with ``n^{1/d}``.
    Seen failing with the exponent of the Gaussian's ``sqrt(ln n)`` put in (the ratio drifts by > 30%)."""
    law = logit_law(family, d=d)
    ratios = [crossover_beta(law, n) / n**exponent for n in ns]
    assert max(ratios) / min(ratios) - 1 < 5e-3, ratios


def test_bruno_critical_regime_keeps_a_finite_number_of_keys():
    """Claim (abstract): at the critical scale a finite collection of nearest keys keeps macroscopic mass (no
    collapse onto one key, no uniform averaging). varsim: keys on ``S^7``, ``beta = c beta*(n)``: the exact
    ``E[sum w^2]`` (the inverse of the effective number of keys) is the same at n = 1e6 and 1e8 to 3% and lies
    strictly between 0 and 1, increasing with c (0.07, 0.33, 0.62 for c = 1/2, 1, 2). Seen failing with beta held
    fixed instead of scaled (E falls by 1000x)."""
    law = logit_law("sphere", d=8)
    limits = []
    for c in (0.5, 1.0, 2.0):
        values = [law_ipr(law, n, c * crossover_beta(law, n)) for n in (1e6, 1e8)]
        assert abs(values[0] / values[1] - 1) < 0.03, (c, values)
        limits.append(values[1])
    assert 0.05 < limits[0] < limits[1] < limits[2] < 0.95, limits


# --------------------------------------------------------------------------------------------------------------------
# The tail class sets the critical scale: Karakida, Hayase, "A Unified Framework for Critical Scaling of Inverse
# Temperature in Self-Attention", arXiv 2605.12697 (2026); with Chen, Lin, Polyanskiy, Rigollet, "Critical attention
# scaling in long-context transformers", arXiv 2510.05554 (entropy collapse above the scale, rank collapse below)


@pytest.mark.parametrize("gamma", [1.5, 2.0, 4.0])
def test_gaussian_logits_critical_scale_is_sqrt_log_n(gamma):
    """Claim (Karakida-Hayase, abstract): the critical inverse-temperature scale is set by how many competitors lie
    within each gap from the maximum; the laws in use range from ``(log n)^{1/2}`` to ``log n`` and ``(log n)^2``.
    For Gaussian logits varsim gives ``(log n)^{1/2}``: at ``beta = gamma sqrt(2 ln n)``, ``n = 1e300``, the exact
    ``E[sum w^2]`` is ``1 - 1/gamma`` (the random-energy-model freezing) to 0.005 for gamma > 1: the entropy stays
    O(1) (entropy collapse); below the scale (gamma = 0.5, 0.8) it is below 1e-10 (dispersion). Seen failing with
    the scale taken as ``ln n`` (E = 0.96 at gamma = 1.5)."""
    n = 1e300
    scale = math.sqrt(2 * math.log(n))
    assert expected_ipr(n, gamma * scale) == pytest.approx(1 - 1 / gamma, abs=5e-3)
    for below in (0.5, 0.8):
        assert expected_ipr(n, below * scale) < 1e-10


def test_log_n_scaling_overshoots_gaussian_logits_and_undershoots_keys_on_the_sphere():
    """The same ``beta_n = gamma ln n`` (Chen et al.'s critical scaling for their simplex of tokens with a fixed gap
    between the top score and the rest, checked in tests/test_theory_laws_literature.py) is not critical for
    other score laws. Gaussian logits (``gamma = 1/2``): ``E[sum w^2]`` rises towards 1 with n (0.33 at 1e6, 0.89 at
    1e300, equal to the frozen formula ``1 - a_n/beta`` to 0.01): entropy collapse. Keys on ``S^7`` (logit
    ``gamma ln(n) cos(angle)``, ``gamma = 1``): it falls towards 0 (``N E`` tends to the finite ``A``): dispersion.
    Seen failing with the sphere's logit scale divided by d instead of sqrt(d) (E stays above 0.5)."""
    gauss = [expected_ipr(n, 0.5 * math.log(n)) for n in (1e6, 1e100, 1e300)]
    assert gauss[0] < gauss[1] < gauss[2] and gauss[2] > 0.85
    assert gauss[2] == pytest.approx(frozen_ipr(1e300, 0.5 * math.log(1e300)), abs=0.01)
    sphere = logit_law("sphere", d=8)
    ns = np.array([1e3, 1e6, 1e12])
    e = np.array([law_ipr(sphere, n, math.log(n) / math.sqrt(8)) for n in ns])
    assert np.all(np.diff(e) < 0) and e[-1] < 1e-6
    assert ns[-1] * e[-1] == pytest.approx(annealed_limit(sphere, math.log(1e12) / math.sqrt(8)), rel=0.01)


# --------------------------------------------------------------------------------------------------------------------
# Xu, Fang, "Self-Attention as a Covariance Readout: A Unified View of In-Context Learning and Repetition",
# arXiv 2605.10466 (2026)


def test_xu_fang_coupled_values_output_tends_to_the_covariance_readout():
    """Claim (abstract): with elliptical inputs the softmax attention output converges almost surely to
    ``Theta_V Sigma Theta_K^T Theta_Q x``, a linear readout of the input covariance. In varsim's setting (keys
    ``k ~ N(0, I_d)``, logits ``beta q^.k``, values ``v = A k``) that limit is the tilted mean ``beta A q^``.
    Computed with varsim's softmax map over 64 sequences of 20 000 keys: the mean output is within 5 standard errors
    of ``beta A q^`` in every coordinate. Seen failing with the untilted limit 0 (values independent of the query's
    direction)."""
    rng = np.random.default_rng(2605)
    d, beta = 6, 0.8
    q_hat = np.ones(d) / math.sqrt(d)
    a = rng.standard_normal((3, d)) / math.sqrt(d)
    outs = []
    for _ in range(64):
        k = rng.standard_normal((20_000, d))
        outs.append(weights("softmax", beta * k @ q_hat) @ (k @ a.T))
    outs = np.array(outs)
    mean, se = outs.mean(axis=0), outs.std(axis=0, ddof=1) / math.sqrt(len(outs))
    target = beta * a @ q_hat
    assert np.all(np.abs(mean - target) <= 5 * se), (mean, target, se)
    assert np.max(np.abs(target)) > 10 * np.max(se)  # the limit is resolved: 0 would fail


def test_xu_fang_coupled_values_become_deterministic_at_rate_one_over_n():
    """Claim (abstract): the state reaches its deterministic limit at the parametric ``1/t`` rate (t the context
    length; read here as the output's variance, which the abstract does not name). varsim's simulator with values
    coupled to keys (``v = a k_[:d_v] + eta``): ``N Var(o_j)`` at N = 256 and 4096 agree within 5 SE + 3% (a variance
    falling like 1/N), and equal the large-N law of total variance ``e^{beta^2} (1 + a^2 (1 + beta^2/d_k))``
    (THEORY.md 2.4) within 5 SE + 5% (measured 1.56 +- 0.04 and 1.63 +- 0.04 against 1.615). Seen failing with the
    coupling's share left out (the level 1.28 instead of 1.615)."""
    beta, d_k, a = 0.5, 8, 0.5
    res = simulate([256, 4096], beta=beta, d_k=d_k, d_v=4, coupling=a, sampler="full", n_sequences=1024, seed=7)
    n = np.asarray(res.n, float)
    level, level_se = n * res.var, n * res.var_se
    assert abs(level[0] - level[1]) <= 5 * math.hypot(*level_se) + 0.03 * level[1]
    theory = math.exp(beta**2) * (1 + a * a * (1 + beta**2 / d_k))
    assert abs(level[1] - theory) <= 5 * level_se[1] + 0.05 * theory, (level, theory)


# --------------------------------------------------------------------------------------------------------------------
# Velickovic, Perivolaropoulos, Barbero, Pascanu, "softmax is not enough (for sharp out-of-distribution)",
# arXiv 2410.01104 (v3: "Softmax is not Enough (for Sharp Size Generalisation)")


@pytest.mark.parametrize("n", [10, 1_000, 100_000])
def test_velickovic_max_retrieval_weight_disperses_like_one_over_n(n):
    """Claim (abstract; Lemma 2.1 as summarised): with logits in a bounded range the softmax coefficients are
    Theta(1/n), so even the weight on the maximum disperses as n grows. Elementary form: logits in ``[m, M]``,
    spread ``delta``, give every weight ``<= e^delta / (e^delta + n - 1)``, attained by one key at M and n - 1 at m.
    varsim's softmax map gives that value to 1e-13 (delta = 4: 0.858 at n = 10, 0.052 at 1000, 5.5e-4 at 1e5)."""
    delta = 4.0
    z = np.zeros(n)
    z[0] = delta
    bound = math.exp(delta) / (math.exp(delta) + n - 1)
    assert weights("softmax", z)[0] == pytest.approx(bound, rel=1e-13)


@pytest.mark.parametrize("name", sorted(n for n in LAWS if LAWS[n].tail == "bounded" and n != "empirical"))
def test_velickovic_bound_holds_for_every_bounded_law(name):
    """Every bounded law of LAWS (the empirical law aside: its support is its sample's): ``E[sum w^2] <= E[max w] <=
    e^delta/(e^delta + n - 1)`` with ``delta = beta (t_max - t_min)``, and ``N E[sum w^2]`` tends to the finite
    ``A(beta)`` (Theta(1/n)). Exact theory, d = 4, beta = 1.5, n from 10 to 1e9."""
    law = logit_law(name, d=4)
    beta = 1.5
    lo, hi = law.support(beta)
    ns = np.array([10.0, 1e3, 1e6, 1e9])
    e = law_ipr(law, ns, beta)
    assert np.all(e <= np.exp(hi - lo) / (np.exp(hi - lo) + ns - 1))
    assert ns[-1] * e[-1] == pytest.approx(annealed_limit(law, beta), rel=1e-3)
