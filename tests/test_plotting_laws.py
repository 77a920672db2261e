"""``law=`` in varsim.plotting: the Gaussian default draws exactly what the helpers drew before laws existed (the
same pixels, values and records), another law draws its own exact theory (values equal to
``varsim.theory.laws``, the boundary at its crossover ``ln N = ln A(beta)``), and bad laws are refused by name.
Every law of ``LAWS`` is drawn, so a law added later is drawn too."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from varsim import plotting
from varsim.figures import _style
from varsim.sim import simulate
from varsim.theory import decay_exponent, expected_ipr, phase_boundaries
from varsim.theory.laws import (
    LAWS,
    annealed_limit,
    law_decay_exponent,
    law_ipr,
    law_ipr_and_exponent,
    logit_law,
)

LN_N = np.linspace(0.0, 9.0, 19)
BETAS = np.linspace(0.3, 3.0, 10)
SPHERE = {"d": 8}


def _pixels(fig) -> np.ndarray:
    fig.canvas.draw()
    return np.asarray(fig.canvas.buffer_rgba()).copy()


def _white_dashed(ax):
    return [ln for ln in ax.get_lines() if ln.get_color() == "white" and ln.get_linestyle() == "--"]


def test_gaussian_phase_diagram_is_unchanged_by_law():
    """The default, ``law="gaussian"`` and the Gaussian LogitLaw draw the same pixels, hold the exact Gaussian
    exponent bit for bit, draw the REM boundaries, carry no title and record no law. Seen failing with the
    Gaussian sent through the crossover-line branch (one white line at ln N = beta^2 instead of two)."""
    drawn = []
    for law in (None, "gaussian", logit_law("gaussian")):
        kwargs = {} if law is None else {"law": law}
        pd = plotting.phase_diagram(ln_n=LN_N, betas=BETAS, levels=[-0.75, -0.5], **kwargs)
        np.testing.assert_array_equal(pd.values, decay_exponent(np.exp(LN_N)[None, :], BETAS[:, None]))
        lo, hi = phase_boundaries(BETAS)
        lines = _white_dashed(pd.ax)
        assert len(lines) == 2
        np.testing.assert_array_equal(lines[0].get_xdata(), lo)
        np.testing.assert_array_equal(lines[1].get_xdata(), hi)
        assert pd.ax.get_title() == "" and pd.law == "gaussian"
        assert "law" not in pd.figure._varsim_drawn[0]["phase_diagram"]
        drawn.append(_pixels(pd.figure))
        _style.plt.close(pd.figure)
    for other in drawn[1:]:
        np.testing.assert_array_equal(other, drawn[0])


def test_phase_diagram_of_another_law_holds_its_exact_exponent_and_crossover():
    """Keys on the sphere: the map is ``law_decay_exponent`` of the sphere (not the Gaussian's: they differ by more
    than 0.05 somewhere on the grid), the one white line is ``ln A(beta)``, the title and record name the law.
    Seen failing with ``law`` ignored (the Gaussian map drawn)."""
    law = logit_law("sphere", **SPHERE)
    pd = plotting.phase_diagram(ln_n=LN_N, betas=BETAS, law="sphere", law_params=SPHERE)
    expected = law_decay_exponent(law, np.exp(LN_N)[None, :], BETAS[:, None])
    np.testing.assert_allclose(pd.values, expected, rtol=1e-12)
    assert np.max(np.abs(pd.values - decay_exponent(np.exp(LN_N)[None, :], BETAS[:, None]))) > 0.05
    (line,) = _white_dashed(pd.ax)
    np.testing.assert_allclose(line.get_xdata(), np.log(annealed_limit(law, BETAS)), rtol=1e-12)
    assert pd.law == "sphere d=8" and "sphere d=8" in pd.ax.get_title()
    assert pd.figure._varsim_drawn[0]["phase_diagram"]["law"] == {"name": "sphere", "d": 8}
    values = plotting.phase_diagram(ln_n=LN_N, betas=BETAS, law=law, quantity="log10_n_ipr").values
    np.testing.assert_allclose(values, np.log10(np.exp(LN_N)[None, :] * law_ipr(law, np.exp(LN_N)[None, :],
                                                                                  BETAS[:, None])), rtol=1e-12)
    _style.plt.close("all")


@pytest.mark.parametrize("kwargs, match", [
    ({"law": "nope"}, "unknown law 'nope'"),
    ({"law": "sphere"}, "law_params: .*'d'"),
    ({"law": "sphere", "law_params": {"d": 1}}, "law_params: d must be >= 2"),
    ({"law": "sphere", "law_params": {"d": 8, "e": 1}}, "law_params: .*'e'"),
    ({"law": "sphere", "law_params": [8]}, "law_params: expected a dict"),
    ({"law": logit_law("sphere", d=8), "law_params": {"d": 8}}, "law_params: give the parameters"),
    ({"law": 3}, "law: expected a name"),
    ({"law": "sphere", "law_params": SPHERE, "quantity": "rule_exponent"}, "quantity: 'rule_exponent'"),
    ({"law": "sphere", "law_params": SPHERE, "quantity": lambda n, b: n + b}, "law: a callable quantity"),
])
def test_phase_diagram_refuses_a_bad_law_by_name(kwargs, match):
    with pytest.raises(ValueError, match=match):
        plotting.phase_diagram(ln_n=LN_N, betas=BETAS, **kwargs)


@pytest.mark.parametrize("quantity", sorted(plotting.THEORY_CURVES))
def test_plot_theory_draws_the_exact_curves_asymptote_and_crossover(quantity):
    """Uniform keys (d = 4): each curve is the law's exact quantity, the dashed line ``A/N`` (``A`` for N E) where
    ``N >= A``, the dot at ``N = A``. Seen failing with the Gaussian theory drawn for every law."""
    law = logit_law("uniform", d=4)
    ns = np.geomspace(2, 1e9, 40)
    betas = [1.0, 3.0]
    ax = plotting.plot_theory(ns, betas, quantity=quantity, law="uniform", law_params={"d": 4})
    lines = ax.get_lines()
    for beta in betas:
        ipr, exponent = law_ipr_and_exponent(law, ns, beta)
        want = {"ipr": ipr, "n_ipr": ns * ipr, "exponent": exponent}[quantity]
        curve = next(ln for ln in lines if ln.get_label() == rf"$\beta = {beta:.3g}$")
        np.testing.assert_allclose(curve.get_ydata(), want, rtol=1e-12)
        a = annealed_limit(law, beta)
        same = [ln for ln in lines if ln.get_color() == curve.get_color() and ln is not curve]
        dots = [ln for ln in same if ln.get_marker() == "o"]
        assert len(dots) == 1 and float(dots[0].get_xdata()[0]) == pytest.approx(a)
        dashed = [ln for ln in same if ln.get_linestyle() == "--"]
        assert len(dashed) == (0 if quantity == "exponent" else 1)
        if dashed:
            x = np.asarray(dashed[0].get_xdata(), float)
            assert x.min() >= a
            np.testing.assert_allclose(dashed[0].get_ydata(), a / x if quantity == "ipr" else a + 0 * x, rtol=1e-12)
    assert ax.get_title() == "uniform d=4"
    assert ax.figure._varsim_drawn[-1]["plot_theory"]["law"] == {"name": "uniform", "d": 4}
    _style.plt.close("all")


def test_plot_theory_gaussian_default_is_expected_ipr():
    ns = np.geomspace(1, 1e6, 30)
    ax = plotting.plot_theory(ns, 2.0)
    np.testing.assert_array_equal(ax.get_lines()[0].get_ydata(), expected_ipr(ns, 2.0))
    assert ax.get_title() == "gaussian"
    _style.plt.close("all")


@pytest.mark.parametrize("kwargs, match", [
    ({"ns": [4, 2]}, "ns: expected an increasing"),
    ({"ns": [0.5, 2]}, "ns:"),
    ({"betas": [np.nan]}, "betas:"),
    ({"quantity": "var"}, "quantity: expected one of"),
    ({"law": "nope"}, "unknown law 'nope'"),
])
def test_plot_theory_refuses_bad_input_by_name(kwargs, match):
    with pytest.raises(ValueError, match=match):
        plotting.plot_theory(**kwargs)


@pytest.fixture(scope="module")
def run():
    return simulate([16, 64, 256], query_norm=1.5 * 8, sampler="logits", estimator="rao_blackwell", n_sequences=64,
                    seed=0)


def test_plot_result_gaussian_law_draws_what_it_drew(run):
    """``law="gaussian"`` on a Gaussian run: the same pixels, lines and record as no ``law``."""
    drawn = []
    for kwargs in ({}, {"law": "gaussian"}):
        fig, ax = _style.plt.subplots()
        plotting.plot_result(run, ax=ax, **kwargs)
        assert "law" not in fig._varsim_drawn[0]["plot_result"]
        drawn.append(([ln.get_ydata().copy() for ln in ax.get_lines()], _pixels(fig)))
        _style.plt.close(fig)
    for a, b in zip(drawn[0][0], drawn[1][0]):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(drawn[0][1], drawn[1][1])


def test_plot_result_with_a_law_draws_that_law(run):
    """``law="rademacher", law_params={"d": 4}``: the exact line is ``law_ipr`` of that law at the run's beta, the
    asymptote ``A/N``, the legend names the law; refused for coupled values. Seen failing with the law's line
    drawn at beta = 1 instead of the run's."""
    law = logit_law("rademacher", d=4)
    fig, ax = _style.plt.subplots()
    plotting.plot_result(run, ax=ax, law="rademacher", law_params={"d": 4})
    solid, dashed = ax.get_lines()[-2:]
    x = np.asarray(solid.get_xdata(), float)
    np.testing.assert_allclose(solid.get_ydata(), law_ipr(law, x, 1.5), rtol=1e-12)
    np.testing.assert_allclose(dashed.get_ydata(), annealed_limit(law, 1.5) / x, rtol=1e-12)
    assert "rademacher d=4" in ax.get_legend().get_texts()[0].get_text()
    assert fig._varsim_drawn[0]["plot_result"]["law"] == {"name": "rademacher", "d": 4}
    coupled = simulate([16, 64], beta=1.0, d_k=8, d_v=4, coupling=0.5, n_sequences=64, seed=0)
    with pytest.raises(ValueError, match="law: the theory of a logit law"):
        plotting.plot_result(coupled, law="sphere", law_params=SPHERE)
    with pytest.raises(ValueError, match="unknown law 'nope'"):
        plotting.plot_result(run, law="nope")
    _style.plt.close("all")


def example_law(name: str):
    """A small instance of the registered law ``name`` from its constructor's signature (a dimension 4, a sample
    of 200 standard normals, each parameter's default); None for a parameter of another kind."""
    family = LAWS[name]
    params = {}
    for p in list(inspect.signature(family).parameters.values()):
        if p.default is not inspect.Parameter.empty:
            continue
        if p.name == "d":
            params["d"] = max(4, getattr(family, "d_min", 1))
        elif p.name == "sample":
            params["sample"] = np.random.default_rng(0).standard_normal(200)
        elif p.name == "nu":
            params["nu"] = 4.0
        else:
            return None
    return logit_law(name, **params)


@pytest.mark.parametrize("name", sorted(LAWS))
def test_every_registered_law_is_drawn(name):
    """Every law of LAWS (a law registered later included) draws its phase diagram and curves with its exact
    theory."""
    law = example_law(name)
    if law is None:
        pytest.skip(f"no example parameters known for law {name!r}: {inspect.signature(LAWS[name])}")
    pd = plotting.phase_diagram(ln_n=LN_N[::3], betas=BETAS[::3], law=law, colorbar=False)
    np.testing.assert_allclose(pd.values, law_decay_exponent(law, np.exp(LN_N[::3])[None, :], BETAS[::3, None]),
                               rtol=1e-12)
    ax = plotting.plot_theory(np.geomspace(2, 1e6, 8), [0.5, 2.0], law=law)
    np.testing.assert_allclose(ax.get_lines()[0].get_ydata(), law_ipr(law, np.geomspace(2, 1e6, 8), 0.5),
                               rtol=1e-12)
    _style.plt.close("all")
