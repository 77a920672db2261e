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


def test_plot_result_refuses_theory_it_does_not_have():
    res = simulate([16, 64], query="random", sampler="logits", estimator="rao_blackwell", n_sequences=64, seed=0)
    with pytest.raises(ValueError, match="exact/asymptote"):
        plotting.plot_result(res)
    ax = plotting.plot_result(res, exact=False, asymptote=False)
    _style.plt.close(ax.figure)
    with pytest.raises(ValueError, match="result"):
        plotting.plot_result({"n": [1]})


def test_phase_diagram_holds_the_exact_exponent_and_the_boundaries():
    ln_n, betas = np.linspace(0, 10, 11), np.linspace(0.5, 3, 6)
    fig, ax = _style.plt.subplots()
    plotting.phase_diagram(ln_n, betas, ax=ax)
    mesh = ax.collections[0]
    np.testing.assert_allclose(np.asarray(mesh.get_array()).reshape(6, 11),
                               decay_exponent(np.exp(ln_n), betas[:, None]), rtol=1e-12)
    lo, hi = ax.get_lines()[:2]
    np.testing.assert_allclose(lo.get_xdata(), betas**2 / 2)
    np.testing.assert_allclose(hi.get_xdata(), 1.5 * betas**2)
    assert {"frozen", "intermediate", "annealed"} <= {t.get_text() for t in ax.texts}
    _style.plt.close(fig)
    with pytest.raises(ValueError, match="betas"):
        plotting.phase_diagram(ln_n, [2.0, 1.0])


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
