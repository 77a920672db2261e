"""``varsim theory``: table and JSON output, and one-line errors naming the parameter."""

import json
import math
import subprocess
import sys

import pytest

from varsim import theory as T
from varsim.cli import main


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
    try:
        code = main(["theory"] + argv)
    except SystemExit as exc:
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and name in err[0]


def test_python_m_varsim_theory():
    """``python -m varsim theory`` works end to end (one subprocess)."""
    res = subprocess.run([sys.executable, "-m", "varsim", "theory", "--n", "64", "--beta", "2", "--json"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["rows"][0]["ipr"] == pytest.approx(0.160735, abs=5e-7)
