"""``varsim theory``: table and JSON output, and one-line errors naming the parameter."""

import json
import math
import subprocess
import sys

import pytest
from cli_checks import refused

from varsim import theory as T
from varsim.cli import main
from varsim.cli import theory as cli_theory


def _json(capsys, argv):
    assert main(argv + ["--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_fixed_beta_json(capsys):
    """Exact values, N*E, exponent, series, e^{beta^2}/N, phase and 1 - a_N/beta per N."""
    out = _json(capsys, ["theory", "--n", "16", "64", "1024", "--beta", "1"])
    assert out["model"] == {"query": "fixed", "beta": 1.0}
    rows = out["rows"]
    assert [r["n"] for r in rows] == [16, 64, 1024]
    assert rows[1]["ipr"] == pytest.approx(0.0388042, abs=5e-8)
    assert rows[1]["n_ipr"] == pytest.approx(64 * rows[1]["ipr"])
    assert rows[1]["exponent"] == pytest.approx(-0.9271, abs=5e-5)
    assert rows[2]["series"] == pytest.approx(T.ipr_series(1024, 1.0))
    assert rows[2]["asymptote"] == pytest.approx(math.e / 1024)
    assert [r["phase"] for r in rows] == ["annealed"] * 3
    assert all(r["frozen_ipr"] is None for r in rows)  # beta < a_N: the frozen predictor does not apply
    frozen = _json(capsys, ["theory", "--n", "16", "--beta", "6"])["rows"][0]
    assert frozen["phase"] == "frozen" and frozen["frozen_ipr"] == pytest.approx(T.frozen_ipr(16, 6.0))


def test_d_tau_fixed_and_random_query(capsys):
    """--d/--tau: a fixed query (|q| = sqrt d) has beta = tau; a random query gives THEORY's mixture values."""
    fixed = _json(capsys, ["theory", "--n", "64", "--d", "16", "--tau", "2"])
    assert fixed["model"]["beta"] == 2.0
    assert fixed["rows"][0]["ipr"] == pytest.approx(0.160735, abs=5e-7)
    rand = _json(capsys, ["theory", "--n", "64", "512", "--d", "16", "--tau", "1", "--query", "random"])
    assert [r["n_ipr"] for r in rand["rows"]] == pytest.approx([2.53779, 2.82852], abs=5e-6)
    assert rand["rows"][0]["asymptote"] == pytest.approx(T.random_query_limit(16) / 64)
    assert rand["rows"][0]["phase"] is None and rand["rows"][0]["series_order"] == 3


def test_table_output(capsys):
    assert main(["theory", "--n", "16", "1e300", "--beta", "1"]) == 0
    out = capsys.readouterr().out
    assert "E[sum w^2]" in out and "0.132452" in out and "annealed" in out and "1e+300" in out


@pytest.mark.parametrize("argv, name", [
    (["--n", "0", "--beta", "1"], "n"),
    (["--n", "64", "--beta", "nan"], "beta"),
    (["--n", "64", "--d", "0"], "d"),
    (["--n", "64", "--d", "16", "--tau", "inf"], "tau"),
    (["--n", "64", "--d", "16", "--query", "both"], "query"),
    (["--n", "64", "--beta", "1", "--query", "random"], "query"),
    (["--n", "64", "--beta", "1", "--d", "16"], "beta"),
    (["--n", "64"], "beta"),
    (["--n", "x", "--beta", "1"], "n"),
])
def test_bad_input_is_one_line(capsys, argv, name):
    """Exit status 2 and exactly one stderr line naming the parameter, no traceback (library ValueErrors
    come back from main(); argparse type errors leave through SystemExit(2))."""
    refused(capsys, ["theory", *argv], name)


def test_python_m_varsim_theory():
    """``python -m varsim theory`` works end to end (one subprocess)."""
    res = subprocess.run([sys.executable, "-m", "varsim", "theory", "--n", "64", "--beta", "2", "--json"],
                         capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["rows"][0]["ipr"] == pytest.approx(0.160735, abs=5e-7)


GRID_N = [1.0, 2.0, 16.0, 64.0, 1e6, 1e300]
GRID_BETA = [0.0, 1e-9, 0.5, 1.0, 2.0, 5.2, 27.0]


def _assert_cells(rows):
    for r in rows:
        for key in ("ipr", "n_ipr", "exponent", "series", "asymptote", "rem_exponent", "frozen_ipr"):
            v = r.get(key)
            assert v is None or (isinstance(v, float) and math.isfinite(v)), (r["n"], key, v)


@pytest.mark.parametrize("beta", GRID_BETA)
def test_every_cell_is_a_number_or_the_mark(beta):
    """Over N in [1, 1e300] and |beta| up to 27 (300 and 1e4 in the slow test) every value is a finite number or None
    (printed as the mark), and the table prints. Catches the OverflowError of e^{beta^2}/N at beta = 27 and a
    series printed where its terms grow (N = 64, beta = 2 gave -5.6e10)."""
    model = cli_theory._model(type("A", (), {"query": "fixed", "beta": beta, "d": None, "tau": None})())
    rows = cli_theory.compute(model, GRID_N)
    _assert_cells(rows)
    table = cli_theory._table(model, rows)
    assert "nan" not in table and "inf" not in table
    for r in rows:
        assert (r["series"] is not None) == r["series_valid"]
        if r["series"] is not None:  # shown only where it is close to the exact value
            assert r["series"] == pytest.approx(r["ipr"], rel=0.05)


def test_series_is_marked_outside_its_range(capsys):
    """N = 64, beta = 2: the series column shows the mark, not -5.6e10; N = 1024, beta = 1 shows a number."""
    rows = _json(capsys, ["theory", "--n", "64", "--beta", "2"])["rows"]
    assert rows[0]["series"] is None and rows[0]["series_valid"] is False
    assert main(["theory", "--n", "64", "--beta", "2"]) == 0
    out = capsys.readouterr().out
    assert "e+10" not in out and "series c1..c4" not in out  # undefined in every row: the column is left out
    assert main(["theory", "--n", "64", "1e12", "--beta", "2"]) == 0
    out = capsys.readouterr().out
    assert "series c1..c4" in out and cli_theory.MARK in out and "e+10" not in out
    ok = _json(capsys, ["theory", "--n", "1024", "--beta", "1"])["rows"][0]
    assert ok["series_valid"] and ok["series"] == pytest.approx(ok["ipr"], rel=1e-5)


def test_random_query_rows_are_numbers_or_the_mark():
    """Random query with d <= 2 tau^2 (no limit, no series) and d > 2 tau^2 at N up to 1e30."""
    for d, tau in ((2, 1.0), (16, 1.0)):
        rows = cli_theory.compute({"query": "random", "d": d, "tau": tau}, [1.0, 64.0, 1e30])
        _assert_cells(rows)
        cli_theory._table({"query": "random", "d": d, "tau": tau}, rows)


@pytest.mark.slow
def test_beta_at_the_documented_limit():
    """|beta| = 300 and 1e4 (BETA_MAX) at N = 2 and 1e300: numbers or the mark, no exception."""
    for beta in (300.0, T.BETA_MAX):
        _assert_cells(cli_theory.compute({"query": "fixed", "beta": beta}, [2.0, 1e300]))


def test_cli_stderr_is_empty():
    """A subprocess run over overflow-prone arguments (beta = 27 at N = 1 ... 1e300, a random query with
    d < 2 tau^2) writes nothing to stderr: no RuntimeWarning reaches the terminal."""
    for argv in (["--n", "1", "16", "1e300", "--beta", "27"],
                 ["--n", "64", "--d", "1", "--tau", "1.5", "--query", "random"]):
        res = subprocess.run([sys.executable, "-m", "varsim", "theory", *argv], capture_output=True, text=True,
                             timeout=600, check=False)
        assert res.returncode == 0 and res.stderr == "", res.stderr


# ----------------------------------------------------------------------------------------------------------------------
# --law NAME [--law-param KEY=VALUE]: the exact theory of a logit law (varsim.theory.laws)


def test_law_rows_are_the_laws_exact_theory(capsys):
    """``--law sphere --law-param d=64``: every row is the sphere's exact ``E``, ``N E``, exponent; ``A/N`` where
    ``N >= A``; ``beta*(N)`` from ``crossover_beta``. Seen failing with ``--law-param`` dropped (the law built with
    its d ignored: the Gaussian table printed)."""
    from varsim.theory.laws import annealed_limit, crossover_beta, law_ipr_and_exponent, logit_law

    out = _json(capsys, ["theory", "--n", "1e3", "1e6", "1e9", "--beta", "4", "--law", "sphere", "--law-param",
                         "d=64"])
    law = logit_law("sphere", d=64)
    a = annealed_limit(law, 4.0)
    assert out["model"] == {"query": "fixed", "beta": 4.0, "law": {"name": "sphere", "d": 64}, "annealed_limit": a}
    ipr, exponent = law_ipr_and_exponent(law, [1e3, 1e6, 1e9], 4.0)
    for row, n, e, g in zip(out["rows"], [1e3, 1e6, 1e9], ipr, exponent):
        assert row["ipr"] == pytest.approx(e, rel=1e-12) and row["exponent"] == pytest.approx(g, rel=1e-12)
        assert row["n_ipr"] == pytest.approx(n * e, rel=1e-12)
        assert row["asymptote"] == (pytest.approx(a / n) if n >= a else None)
        assert row["crossover_beta"] == pytest.approx(crossover_beta(law, n), rel=1e-12)
    assert main(["theory", "--n", "1e3", "1e6", "--beta", "4", "--law", "sphere", "--law-param", "d=64"]) == 0
    table = capsys.readouterr().out
    assert "law sphere d=64" in table and f"{a:.6g}" in table and "beta*(N)" in table


def test_law_rademacher_has_no_crossover_beyond_its_top_atom(capsys):
    """Rademacher keys, d = 16: ``A <= 2^16``, so at N = 1e6 no beta reaches ``A = N`` (null, printed as the mark)."""
    rows = _json(capsys, ["theory", "--n", "1e3", "1e6", "--beta", "4", "--law", "rademacher", "--law-param",
                          "d=16"])["rows"]
    assert rows[0]["crossover_beta"] == pytest.approx(3.7563, abs=1e-4) and rows[1]["crossover_beta"] is None


def test_law_empirical_reads_its_sample_from_a_file(capsys, tmp_path):
    import numpy as np

    from varsim.theory.laws import law_ipr, logit_law

    sample = np.random.default_rng(0).standard_normal(300)
    np.save(tmp_path / "s.npy", sample)
    out = _json(capsys, ["theory", "--n", "100", "--beta", "1", "--law", "empirical", "--law-param",
                         f"sample=@{tmp_path / 's.npy'}"])
    assert out["model"]["law"] == {"name": "empirical", "size": 300}
    assert out["rows"][0]["ipr"] == pytest.approx(law_ipr(logit_law("empirical", sample=sample), 100, 1.0),
                                                  rel=1e-12)


def test_law_gaussian_is_the_default_table(capsys):
    """``--law gaussian`` prints byte for byte what no ``--law`` prints."""
    assert main(["theory", "--n", "16", "1e5", "--beta", "2"]) == 0
    plain = capsys.readouterr().out
    assert main(["theory", "--n", "16", "1e5", "--beta", "2", "--law", "gaussian"]) == 0
    assert capsys.readouterr().out == plain


@pytest.mark.parametrize("argv, name", [
    (["--law", "nope"], "law"),
    (["--law", "sphere"], "law_param"),
    (["--law", "sphere", "--law-param", "d"], "law_param"),
    (["--law", "sphere", "--law-param", "=3"], "law_param"),
    (["--law", "sphere", "--law-param", "d=1"], "law_param"),
    (["--law", "sphere", "--law-param", "d=x"], "law_param"),
    (["--law", "sphere", "--law-param", "d=nan"], "law_param"),
    (["--law", "sphere", "--law-param", "d=8", "--law-param", "d=9"], "law_param"),
    (["--law", "sphere", "--law-param", "d=8", "--law-param", "e=9"], "law_param"),
    (["--law", "uniform", "--law-param", "d=1e9"], "law_param"),
    (["--law", "empirical", "--law-param", "sample=@/nonexistent/x.npy"], "law_param"),
    (["--law-param", "d=8"], "law_param"),
    (["--law", "sphere", "--law-param", "d=8", "--attention", "ssmax"], "law"),
])
def test_bad_law_input_is_one_line(capsys, argv, name):
    """Exit 2, one stderr line naming the flag's parameter, no traceback."""
    try:
        code = main(["theory", "--n", "64", "--beta", "1"] + argv)
    except SystemExit as exc:
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"error: {name}" in err[0], err


def test_law_refuses_d_tau(capsys):
    assert main(["theory", "--n", "64", "--d", "16", "--tau", "1", "--law", "sphere", "--law-param", "d=16"]) == 2
    assert "error: law:" in capsys.readouterr().err


def test_law_help_lists_every_registered_law(capsys):
    """The --law help names every law of LAWS (a law registered later included)."""
    from varsim.theory.laws import LAWS

    with pytest.raises(SystemExit):
        main(["theory", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert all(name in text for name in LAWS)
