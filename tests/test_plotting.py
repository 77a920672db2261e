"""varsim.plotting: the helpers draw what they say (exact lines equal the theory, the heat map holds the exact
exponent, the boundaries sit at beta^2/2 and 3 beta^2/2) and refuse what they cannot draw; sweep files become flat
records and a DataFrame."""

from __future__ import annotations

import numpy as np
import pytest

from varsim import plotting
from varsim.figures import _style
from varsim.sim import simulate
from varsim.theory import decay_exponent, expected_ipr


@pytest.fixture(scope="module")
def result():
    return simulate([16, 64, 256], query_norm=2.0 * 8, sampler="logits", estimator="rao_blackwell", n_sequences=64,
                    seed=0)


def test_plot_result_draws_points_exact_line_and_asymptote(result):
    fig, ax = _style.plt.subplots()
    assert plotting.plot_result(result, ax=ax) is ax
    solid, dashed = ax.get_lines()[-2:]
    x = np.asarray(solid.get_xdata(), float)
    np.testing.assert_allclose(solid.get_ydata(), expected_ipr(x, 2.0), rtol=1e-12)
    np.testing.assert_allclose(dashed.get_ydata(), np.exp(4.0) / np.asarray(dashed.get_xdata(), float), rtol=1e-12)
    assert x.min() == 16 and x.max() == 256
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [r"$\beta = 2$"]
    _style.plt.close(fig)


def test_plot_result_scales_the_lines_by_value_scale():
    res = simulate([16, 64], query_norm=8.0, sampler="logits", estimator="rao_blackwell", n_sequences=64,
                   value_scale=3.0, seed=0)
    ax = plotting.plot_result(res, asymptote=False, style="column")
    (line,) = [ln for ln in ax.get_lines() if ln.get_linestyle() == "-" and len(ln.get_xdata()) > 2]
    np.testing.assert_allclose(line.get_ydata(), 9.0 * expected_ipr(np.asarray(line.get_xdata(), float), 1.0))
    assert ax.figure.get_figwidth() == pytest.approx(3.3)
    _style.plt.close(ax.figure)


def _lines(ax):
    """(solid, dashed) theory lines of the axes (None where absent)."""
    solid = [ln for ln in ax.get_lines() if ln.get_linestyle() == "-"]
    dashed = [ln for ln in ax.get_lines() if ln.get_linestyle() == "--"]
    return (solid[-1] if solid else None), (dashed[-1] if dashed else None)


def test_plot_result_draws_a_random_query_against_the_chi_square_mixture():
    """A random query is drawn against its own theory, the exact mixture and its limit (1 - 2 tau^2/d)^(-d/2) / N;
    catches the refusal of a random query and the fixed-query line e^{tau^2}/N drawn for it."""
    from varsim.theory import random_query_ipr, random_query_limit

    res = simulate([16, 64, 256], d_k=8, tau=1.2, query="random", sampler="logits", estimator="rao_blackwell",
                   value_scale=2.0, n_sequences=2000, seed=0)
    ax = plotting.plot_result(res)
    solid, dashed = _lines(ax)
    x = np.asarray(solid.get_xdata(), float)
    np.testing.assert_allclose(solid.get_ydata(), 4.0 * random_query_ipr(x, 8, 1.2), rtol=1e-12)
    np.testing.assert_allclose(dashed.get_ydata(), 4.0 * random_query_limit(8, 1.2) / x, rtol=1e-12)
    exact_at_points = 4.0 * random_query_ipr(res.n.astype(float), 8, 1.2)
    assert np.all(np.abs(res.var - exact_at_points) <= 5 * res.var_se + 0.01 * exact_at_points)
    assert ax.get_legend().get_texts()[0].get_text() == "random query, $d_k = 8$"
    _style.plt.close(ax.figure)


def test_plot_result_draws_coupled_values_against_their_own_asymptote():
    """Values coupled to keys (v = a k[:d_v] + eta) vary more than sigma^2 E[sum w^2]: the i.i.d. line sat a factor
    2.25 under every point here. The dashed line is the law of total variance's asymptote
    e^{beta^2}/N (c^2 + a^2 (1 + beta^2/d_k)) (THEORY.md 2.4), there is no solid line, and the legend says so; the
    points at N = 4096 lie on it within 5 SE + 3%. Catches the i.i.d. reference drawn for a coupled run."""
    res = simulate([4096], beta=1.0, d_k=4, d_v=2, coupling=1.0, n_sequences=4000, seed=3)
    ax = plotting.plot_result(res)
    solid, dashed = _lines(ax)
    assert solid is None
    level = np.e * (1 + 1 * (1 + 1 / 4))
    np.testing.assert_allclose(dashed.get_ydata(), level / np.asarray(dashed.get_xdata(), float), rtol=1e-12)
    assert abs(res.var[0] - level / 4096) <= 5 * res.var_se[0] + 0.03 * level / 4096, (res.var, res.var_se)
    assert "values coupled to keys: asymptote only" in ax.get_legend().get_texts()[0].get_text()
    _style.plt.close(ax.figure)


def test_plot_result_draws_a_variant_against_its_exact_theory():
    """ssmax at a fixed query: the solid line is variant_theory's E[sum w^2] (softmax at the scale s ln N beta), not
    softmax's; the points agree with it. Catches softmax's line drawn for a rescaled map."""
    from varsim.theory import variant_theory

    res = simulate([16, 64, 256], beta=1.0, attention="ssmax", s=0.5, sampler="logits", estimator="rao_blackwell",
                   n_sequences=2000, seed=0)
    ax = plotting.plot_result(res)
    solid, dashed = _lines(ax)
    assert dashed is None
    x = np.asarray(solid.get_xdata(), float)
    np.testing.assert_allclose(solid.get_ydata(), variant_theory("ssmax", x, 1.0, s=0.5).ipr, rtol=1e-12)
    ref = np.array(variant_theory("ssmax", res.n.astype(float), 1.0, s=0.5).ipr)
    assert np.all(np.abs(res.var - ref) <= 5 * res.var_se + 0.01 * ref)
    assert not np.allclose(ref, expected_ipr(res.n.astype(float), 1.0), rtol=0.05)
    _style.plt.close(ax.figure)


def test_plot_result_draws_no_line_where_there_is_no_theory():
    res = simulate([16, 64], beta=1.0, attention="topk", k=4, sampler="logits", estimator="rao_blackwell",
                   n_sequences=64, seed=0)
    ax = plotting.plot_result(res)
    assert _lines(ax) == (None, None)
    assert "no theory line for attention 'topk'" in ax.get_legend().get_texts()[0].get_text()
    _style.plt.close(ax.figure)
    with pytest.raises(ValueError, match="result"):
        plotting.plot_result({"n": [1]})


def test_phase_diagram_holds_the_exact_exponent_and_the_boundaries():
    ln_n, betas = np.linspace(0, 10, 11), np.linspace(0.5, 3, 6)
    fig, ax = _style.plt.subplots()
    pd = plotting.phase_diagram(ln_n, betas, ax=ax)
    assert pd.ax is ax and pd.contours is None
    mesh = ax.collections[0]
    exact = decay_exponent(np.exp(ln_n), betas[:, None])
    np.testing.assert_allclose(np.asarray(mesh.get_array()).reshape(6, 11), exact, rtol=1e-12)
    np.testing.assert_allclose(pd.values, exact, rtol=1e-12)
    np.testing.assert_array_equal(pd.ln_n, ln_n)
    np.testing.assert_array_equal(pd.betas, betas)
    lo, hi = ax.get_lines()[:2]
    np.testing.assert_allclose(lo.get_xdata(), betas**2 / 2)
    np.testing.assert_allclose(hi.get_xdata(), 1.5 * betas**2)
    assert {"frozen", "intermediate", "annealed"} <= {t.get_text() for t in ax.texts}
    _style.plt.close(fig)
    with pytest.raises(ValueError, match="betas"):
        plotting.phase_diagram(ln_n, [2.0, 1.0])


def test_phase_diagram_maps_any_quantity_with_contours():
    """A registered quantity, a callable and contour levels: the map holds the quantity's values and the contour
    lines sit at the levels asked for; bad quantities and levels are one ValueError naming them."""
    from varsim.theory import effective_exponent, random_query_decay_exponent

    ln_n, betas = np.linspace(0, 8, 17), np.linspace(0.5, 3, 11)
    pd = plotting.phase_diagram(ln_n, betas, quantity="rule_exponent", levels=[-0.5], colorbar=False)
    np.testing.assert_allclose(pd.values, effective_exponent(np.exp(ln_n), betas[:, None]))
    assert list(pd.levels) == [-0.5] and len(pd.contours.allsegs[0]) >= 1
    seg = np.concatenate(pd.contours.allsegs[0])  # the rule is -1/2 on ln N = beta^2
    np.testing.assert_allclose(seg[:, 0], seg[:, 1] ** 2, atol=0.15)
    _style.plt.close(pd.figure)

    def random_query(n, beta):  # the y axis standing for tau
        return np.array([random_query_decay_exponent(n.ravel(), 16, float(b)) for b in beta.ravel()])

    pd = plotting.phase_diagram(ln_n, betas, quantity=random_query, levels=3, label="random q")
    assert pd.quantity == "random_query" and pd.values.shape == (11, 17)
    assert pd.ax.figure.axes[-1].get_ylabel() == "random q"
    _style.plt.close(pd.figure)
    for kwargs, name in (({"quantity": "nope"}, "quantity"), ({"quantity": lambda n, b: n}, "quantity"),
                         ({"levels": [0.0, -1.0]}, "levels"), ({"levels": 0}, "levels")):
        with pytest.raises(ValueError, match=name):
            plotting.phase_diagram(ln_n, betas, **kwargs)
    _style.plt.close("all")


@pytest.mark.parametrize("ext", ["pdf", "png", "svg"])
def test_save_writes_the_provenance_and_what_was_drawn(tmp_path, result, ext):
    """plotting.save writes the provenance (versions, commit), the runs drawn (their simulate arguments and seed)
    and the caller's record into the file, and read_provenance reads them back; a plain fig.savefig has none."""
    ax = plotting.plot_result(result)
    path = plotting.save(ax, tmp_path / f"r.{ext}", record={"beta": 2.0})
    meta = plotting.read_provenance(path)
    assert meta["record"] == {"beta": 2.0} and "numpy" in meta["provenance"]["versions"]
    drawn = meta["drawn"][0]["plot_result"]
    assert drawn["query_norm"] == 16.0 and drawn["n_grid"] == [16, 64, 256] and drawn["seed"] is not None
    ax.figure.savefig(tmp_path / f"plain.{ext}")
    with pytest.raises(ValueError, match="provenance"):
        plotting.read_provenance(tmp_path / f"plain.{ext}")
    _style.plt.close(ax.figure)
    with pytest.raises(ValueError, match="path"):
        plotting.save(ax, tmp_path / "r.jpg")
    with pytest.raises(ValueError, match="fig"):
        plotting.save("not a figure", tmp_path / "r.pdf")


def test_sweep_records_and_frame(tmp_path):
    from varsim.sim.sweep import SweepGrid, run_sweep

    grid = SweepGrid(variants={"softmax": {}, "topk": {"k": [2]}}, betas=[1.0], n_grid=[16, 64], n_sequences=64)
    out = tmp_path / "sweep.json"
    run_sweep(grid, output=out, seed=0, workers=1)
    records = plotting.sweep_records(out)
    assert len(records) == 4 and all("key" not in r and "params" not in r for r in records)
    assert {r["k"] for r in records if r["attention"] == "topk"} == {2}
    frame = plotting.sweep_frame(str(out))
    assert list(frame["n"]) == [16, 64, 16, 64] and list(frame["attention"]) == ["softmax"] * 2 + ["topk"] * 2
    np.testing.assert_allclose(frame["ipr"], [r["ipr"] for r in sorted(records, key=lambda r: (r["attention"],
                                                                                                r["n"]))])
    with pytest.raises(ValueError, match="sweep"):
        plotting.sweep_records({"cells": None})


def test_phase_diagram_result_still_works_as_the_axes_it_was_with_a_deprecation_warning():
    """0.1.0's documented script, ``ax = plotting.phase_diagram(...); ax.contour(...)``, runs on the PhaseDiagram
    that phase_diagram returns since 0.2.0: each Axes attribute reaches ``.ax`` with a DeprecationWarning naming
    the replacement; its own fields and ``figure`` warn nothing, an attribute the Axes lacks is an AttributeError,
    and the result still copies and pickles. Seen failing (AttributeError: 'PhaseDiagram' object has no attribute
    'contour') before the forwarding."""
    import copy
    import pickle
    import warnings

    pd = plotting.phase_diagram(ln_n=np.linspace(0, 6, 12), betas=np.linspace(0.2, 2, 9), colorbar=False)
    with pytest.warns(DeprecationWarning, match=r"use \.ax\.contour"):
        contours = pd.contour(pd.ln_n, pd.betas, pd.values, levels=[-0.5])
    assert contours.axes is pd.ax
    with pytest.warns(DeprecationWarning):
        assert pd.get_xlim() == pd.ax.get_xlim()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert pd.figure is pd.ax.figure and pd.values.shape == (9, 12)
        with pytest.raises(AttributeError, match="no_such_method"):
            pd.no_such_method
    assert copy.copy(pd).ax is pd.ax
    assert pickle.loads(pickle.dumps(dataclasses_replace_ax(pd))).quantity == "decay_exponent"
    _style.plt.close(pd.figure)


def dataclasses_replace_ax(pd):
    """The PhaseDiagram without its (unpicklable) Matplotlib objects."""
    import dataclasses

    return dataclasses.replace(pd, ax=None, contours=None)
