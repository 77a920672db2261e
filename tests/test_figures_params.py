"""Every built-in figure is a function of its declared parameters (varsim.figures.params): the declarations match
``compute``'s signature, every bad value is one ValueError naming the parameter (exit 2 in the CLI), a figure
computed with other parameters draws other data (its theory at the new values, and Monte Carlo that agrees with it),
the defaults keep the grids the committed figures were made with, and the parameters reach the provenance."""

from __future__ import annotations

import inspect
import json
import math

import numpy as np
import pytest

from varsim import figures, plotting
from varsim.cli import main
from varsim.figures import _style
from varsim.figures.params import KINDS, Param, figure_params, resolve
from varsim.theory import decay_exponent, expected_ipr, random_query_ipr, random_query_limit

SIMULATED = ["fig_variance_vs_n", "fig_decay_exponent", "fig_random_query", "fig_variants_ipr"]
#: an absurd value of each kind of parameter, as given through the API and as text on the command line
ABSURD = {"real": (float("nan"), "nan"), "int": (-7, "-7"), "reals": (["x"], "x,1"), "ints": ([1.5], "1.5"),
          "flag": ("maybe", "maybe"), "text": ("", " ")}


def test_every_kind_has_an_absurd_value():
    assert set(ABSURD) == set(KINDS)


@pytest.mark.parametrize("name", list(figures.FIGURES))
def test_declarations_match_the_signature_of_compute(name):
    """Each declared parameter is a keyword of ``compute`` whose default is the declared one (or None, the mode's
    default), and ``compute`` takes no other parameter than the declared ones and quick, seed, progress, source,
    out. Catches a parameter added to compute and not declared (the CLI could not set it) and a default that
    differs between the two."""
    sig = inspect.signature(figures.load(name).compute).parameters
    declared = {p.name: p for p in figure_params(name)}
    assert set(sig) - {"quick", "seed", "progress", "source", "out"} == set(declared)
    for p in declared.values():
        default = sig[p.name].default
        assert default is None or default == p.default, (p.name, default, p.default)
        if p.quick is not None:
            assert default is None, f"{p.name}: a mode-dependent default must be None in the signature"


@pytest.mark.parametrize("name", SIMULATED)
def test_every_simulated_figure_takes_its_shaping_parameters(name):
    names = {p.name for p in figure_params(name)}
    assert {"n_min", "n_max", "sequences", "target_rse"} <= names
    assert names & {"betas", "d_ks", "tau"}


def _cases():
    for name in figures.FIGURES:
        for p in figure_params(name):
            yield name, p


@pytest.mark.parametrize("name,param", list(_cases()), ids=[f"{n}-{p.name}" for n, p in _cases()])
def test_a_bad_value_is_one_value_error_naming_the_parameter(name, param, tmp_path, capsys):
    """Through the API (before any work) and through ``--param`` (exit status 2, one line)."""
    value, text = ABSURD[param.kind]
    with pytest.raises(ValueError, match=param.name) as info:
        figures.load(name).compute(True, 0, **{param.name: value})
    assert "\n" not in str(info.value)
    rc = main(["figures", "--only", name, "--quick", "--param", f"{param.name}={text}", "--outdir", str(tmp_path),
               "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and param.name in err, err


@pytest.mark.parametrize("argv,needle", [
    (["--param", "nope=1"], "--param nope"),
    (["--param", "betas"], "NAME=VALUE"),
    (["--param", "betas=1", "--beta", "2"], "more than once"),
    (["--param", "n_min=64", "--param", "n_max=32"], "n_min"),
    (["--param", "betas=0.5,0.5"], "betas"),
])
def test_cli_parameter_errors_are_one_line(argv, needle, tmp_path, capsys):
    rc = main(["figures", "--only", "fig_variance_vs_n", "--quick", *argv, "--outdir", str(tmp_path),
               "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and needle in err, err


def test_param_list_prints_every_declared_parameter(capsys):
    assert main(["figures", "--only", "fig_random_query", "--param", "list"]) == 0
    out = capsys.readouterr().out
    assert all(f"  {p.name}=" in out for p in figure_params("fig_random_query"))


def test_resolve_fills_the_mode_defaults_and_keeps_an_explicit_none():
    params = (Param("n", "int", 100, "", quick=10, minimum=1), Param("r", "real", 0.1, "", none="no target"))
    assert resolve(params, False) == {"n": 100, "r": 0.1}
    assert resolve(params, True, n=None) == {"n": 10, "r": 0.1}
    assert resolve(params, True, r=None) == {"n": 10, "r": None}
    with pytest.raises(ValueError, match="nope"):
        resolve(params, False, nope=1)


SMALL = dict(n_max=64, sequences=64)


def _within(est, se, ref, rel=0.02):
    est, se, ref = (np.asarray(v, float) for v in (est, se, ref))
    return np.all(np.abs(est - ref) <= 5 * se + rel * ref)


def test_variance_figure_at_other_betas_and_n_range():
    data = figures.load("fig_variance_vs_n").compute(True, 0, betas=(2.5,), n_min=32, full_sampler=False, **SMALL)
    (c,) = data["curves"]
    assert c["beta"] == 2.5 and list(c["logits_rb"]["n"]) == [32]
    n = np.asarray(c["exact"]["n"], float)
    np.testing.assert_allclose(c["exact"]["var"], expected_ipr(n, 2.5), rtol=1e-12)
    assert _within(c["logits_rb"]["var"], c["logits_rb"]["var_se"], expected_ipr(32.0, 2.5))
    assert data["params"]["n_min"] == 32 and data["params"]["betas"] == [2.5] and c["full"] is None


def test_decay_figure_at_other_betas():
    data = figures.load("fig_decay_exponent").compute(True, 0, betas=(1.5,), n_max=256, sequences=200)
    (c,) = data["curves"]
    assert c["beta"] == 1.5 and list(c["mc"]["n"]) == [4, 16, 64, 256]
    x = np.asarray(c["exact"]["x"], float)
    np.testing.assert_allclose(c["exact"]["exponent"], decay_exponent(np.exp(x * 1.5**2), 1.5), rtol=1e-12)
    assert _within(c["mc"]["var"], c["mc"]["var_se"], expected_ipr(np.asarray(c["mc"]["n"], float), 1.5))


def test_random_query_figure_at_other_dimension_and_temperature():
    data = figures.load("fig_random_query").compute(True, 0, d_ks=(8,), tau=0.8, **SMALL)
    (r,) = data["random"]
    assert r["d_k"] == 8 and r["limit"] == pytest.approx(random_query_limit(8, 0.8))
    assert data["fixed"]["limit"] == pytest.approx(math.exp(0.64))
    s = r["logits_rb"]
    n = np.asarray(s["n"], float)
    assert _within(s["nvar"], s["nvar_se"], n * random_query_ipr(n, 8, 0.8))
    with pytest.raises(ValueError, match="tau"):
        figures.load("fig_random_query").compute(True, 0, d_ks=(8,), tau=2.5, **SMALL)


def test_variants_figure_at_other_betas():
    data = figures.load("fig_variants_ipr").compute(True, 0, betas=(1.5,), **SMALL)
    (panel,) = data["panels"]
    assert panel["beta"] == 1.5 and data["betas"] == [1.5]
    soft = next(s for s in panel["series"] if s["attention"] == "softmax")
    assert soft["n"] == [16, 64]
    np.testing.assert_allclose(soft["exact_at_mc"], expected_ipr(np.array([16.0, 64.0]), 1.5), rtol=1e-9)
    assert _within(soft["ipr"], soft["ipr_se"], soft["exact_at_mc"])
    critical = next(s for s in panel["series"] if s["attention"] == "critical")
    assert critical["params"]["beta0"] == 1.5


class _Stop(Exception):
    pass


def test_the_defaults_keep_the_committed_figures_grids(monkeypatch):
    """The full-mode defaults run the grids and budgets the committed figures were made with (their first
    simulation's N, cap, target and seed), so the parameters changed no default figure."""
    import varsim.sim
    import varsim.sim.sweep
    from varsim._common.seeding import child_sequence

    calls = []

    def record(n_grid, **kw):
        calls.append((list(map(int, n_grid)), kw))
        raise _Stop

    monkeypatch.setattr(varsim.sim, "simulate", record)
    expected = {
        "fig_variance_vs_n": (2 ** np.arange(4, 15), 40_000, 0.5 * 8.0, child_sequence(0, 0, 0)),
        "fig_decay_exponent": (2 ** np.arange(2, 15, 2), 6_000, 2.0 * 8.0, child_sequence(0, 0)),
        "fig_random_query": (2 ** np.arange(4, 15), 40_000, 8.0, child_sequence(0, 0, 0)),
    }
    for name, (grid, cap, norm, seed) in expected.items():
        with pytest.raises(_Stop):
            figures.load(name).compute(False, 0)
        n, kw = calls.pop()
        assert n == list(grid) and kw["n_sequences"] == cap and kw["target_rse"] == 0.01, name
        assert kw["query_norm"] == pytest.approx(norm) and kw["seed"].entropy == seed.entropy, name
        assert kw["seed"].spawn_key == seed.spawn_key, name

    def record_sweep(grid, **kw):
        calls.append(grid)
        raise _Stop

    monkeypatch.setattr(varsim.sim.sweep, "run_sweep", record_sweep)
    with pytest.raises(_Stop):
        figures.load("fig_variants_ipr").compute(False, 0)
    grid = calls.pop()
    assert list(grid.n_grid) == list(4 ** np.arange(2, 9)) and grid.n_sequences == 1000
    assert list(grid.betas) == [1.0, 2.0] and grid.target_rse == 0.02
    assert grid.variants["critical"] == {"beta0": [1.0, 2.0]}


def test_decay_figure_default_grid_ends_where_the_cap_still_resolves_the_slopes(monkeypatch):
    """The full-mode Monte Carlo grid of every beta ends at a point whose relative standard error at the cap,
    sqrt((E[Y^2] / E[Y]^2 - 1) / cap) from the exact second moment, is at most 3% (a slope SE of about 0.03), and
    beta = 2 still reaches the annealed phase. Catches a grid running to 2^20, where beta = 3 reaches only 4.7%
    and costs fifteen times the rest of the figure's Monte Carlo."""
    import types

    import varsim.sim
    from varsim.theory import ipr_second_moment

    grids = []

    def record(n_grid, **kw):
        n = np.asarray(n_grid, dtype=float)
        beta = kw["query_norm"] / math.sqrt(kw["d_k"]) * kw["tau"]
        grids.append((beta, n, kw["n_sequences"]))
        var = expected_ipr(n, beta)
        return types.SimpleNamespace(n=n, var=var, var_se=0.01 * var, sequences=np.full(n.size, kw["n_sequences"]))

    monkeypatch.setattr(varsim.sim, "simulate", record)
    data = figures.load("fig_decay_exponent").compute(False, 0)
    assert [g[0] for g in grids] == [2.0, 3.0, 4.0]
    for beta, n, cap in grids:
        top = n[-1]
        rse = math.sqrt((ipr_second_moment(top, beta) / expected_ipr(top, beta) ** 2 - 1.0) / cap)
        assert rse <= 0.03, (beta, top, rse)
    assert max(data["curves"][0]["mc"]["x_mid"]) > 1.5  # beta = 2's last slope is in the annealed phase


def test_cli_parameters_reach_the_data_and_the_files_metadata(tmp_path, capsys):
    """``--param`` values are read by the figure's declaration, computed with, and recorded: in the JSON and in the
    PNG's and PDF's metadata."""
    rc = main(["figures", "--only", "fig_random_query", "--quick", "--param", "d_ks=8", "--param", "tau=0.8",
               "--param", "target_rse=none", "--n-max", "64", "--sequences", "64", "--outdir", str(tmp_path),
               "--no-progress"])
    assert rc == 0, capsys.readouterr().err
    data = json.loads((tmp_path / "fig_random_query.json").read_text())
    assert data["params"]["d_ks"] == [8] and data["params"]["tau"] == 0.8 and data["target_rse"] is None
    assert [r["d_k"] for r in data["random"]] == [8] and data["tau"] == 0.8
    for ext in ("png", "pdf"):
        meta = plotting.read_provenance(tmp_path / f"fig_random_query.{ext}")
        assert meta["params"]["tau"] == 0.8 and meta["params"]["d_ks"] == [8]


def test_a_theorists_figure_saved_with_plotting_save_keeps_its_parameters(tmp_path):
    mod = figures.load("fig_decay_exponent")
    data = mod.compute(True, 5, betas=(2.5,), n_max=64, sequences=64)
    path = plotting.save(mod.draw(data, style="column"), tmp_path / "decay.pdf")
    meta = plotting.read_provenance(path)
    assert meta["figure"]["params"]["betas"] == [2.5] and meta["figure"]["seed"] == 5
    assert meta["figure"]["name"] == "fig_decay_exponent" and meta["provenance"]["versions"]["varsim"]
    _style.plt.close("all")


def test_the_ratio_panel_shows_every_point(monkeypatch):
    """A Monte Carlo point 50% off the exact value is inside the ratio panel's limits: the fixed +-0.2 limits
    dropped it silently."""
    mod = figures.load("fig_variance_vs_n")
    data = _style.jsonable(mod.compute(True, 0, betas=(1.0,), full_sampler=False, **SMALL))
    c = data["curves"][0]
    c["logits_rb"]["var"][0] = 1.5 * c["exact_at_mc"]["logits_rb"][0]
    fig = mod.draw(data)
    ratio = fig.axes[1]
    assert ratio.get_ylim()[1] >= 0.5 + c["logits_rb"]["var_se"][0] / c["exact_at_mc"]["logits_rb"][0]
    _style.plt.close(fig)
