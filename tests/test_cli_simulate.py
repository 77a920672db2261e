"""``varsim simulate``: table and JSON output, atomic ``-o``, and one-line errors for bad input."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest
from cli_checks import BAD_VARIANT_FLAGS, refused, run_cli

from varsim.cli import main
from varsim.cli._options import parse_grid

# A cheap, well-conditioned setting (annealed phase, beta = 1): Var(o_j) = E[sum w^2] exactly.
CHEAP = ["--n", "16", "64", "--d-k", "16", "--d-v", "8", "--sequences", "3000", "--no-progress"]


def _run(capsys, *argv):
    return run_cli(capsys, ["simulate", *argv])


def test_parse_grid_lists_and_ranges():
    assert parse_grid(["64", "16", "16"]) == [16, 64]
    assert parse_grid(["16:256:x4"]) == [16, 64, 256]
    assert parse_grid(["16:100:x4"]) == [16, 64]
    assert parse_grid(["10:30:10", "1e2"]) == [10, 20, 30, 100]
    for bad in (["0"], ["2.5"], ["abc"], ["64:16:x2"], ["16:64:x1"], ["16:64:0"]):
        with pytest.raises(ValueError, match="n"):
            parse_grid(bad)


def test_table_lists_every_n_with_exact_column_and_slope(capsys):
    rc, out, err = _run(capsys, *CHEAP, "--beta", "1", "--seed", "3")
    assert rc == 0, err
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:1] == ["N"])
    assert "exact" in lines[header]
    assert [line.split()[0] for line in lines[header + 1 : header + 3]] == ["16", "64"]
    assert any(line.startswith("log-log slope") for line in lines)


def test_json_rows_match_theory_and_carry_config(capsys):
    """Var(o_j) from the CLI equals sigma_v^2 E[sum w^2](beta) within 5 SE + 1%.

    ``--beta 1 --tau 2 --d-k 16`` must become |q| = beta sqrt(d_k) / tau = 2. Catches a CLI that
    converts beta with 1/d_k instead of 1/sqrt(d_k) (beta 0.5: Var 16% lower at N = 64) or ignores tau
    (beta 2: 4x higher), and a scale flag that is not passed through (sigma_v = 1.5 gives 2.25x).
    """
    from varsim.theory import expected_ipr

    rc, out, err = _run(capsys, *CHEAP, "--beta", "1", "--tau", "2", "--value-scale", "1.5", "--seed", "11",
                        "--json")
    assert rc == 0, err
    rec = json.loads(out)
    for key in ("rows", "slope", "slope_se", "config", "seed", "versions"):
        assert key in rec
    assert rec["config"]["tau"] == 2.0 and rec["config"]["d_k"] == 16 and rec["config"]["d_v"] == 8
    assert math.isclose(rec["config"]["query_norm"], 2.0)
    assert rec["seed"] is not None and "numpy" in rec["versions"]
    assert [r["n"] for r in rec["rows"]] == [16, 64]
    for row in rec["rows"]:
        for key in ("n", "var", "var_se", "ipr", "mean", "global_mean", "global_var"):
            assert row[key] is not None and math.isfinite(row[key]), key
        exact = 1.5**2 * expected_ipr(row["n"], 1.0)
        assert math.isclose(row["exact_var"], exact, rel_tol=1e-9)
        assert abs(row["var"] - exact) <= 5 * row["var_se"] + 0.01 * exact
        assert abs(row["ipr"] - exact / 1.5**2) <= 5 * row["ipr_se"] + 0.01 * exact / 1.5**2
        assert abs(row["mean"]) <= 5 * row["mean_se"] + 1e-12
        # the across-feature variance misses the (1/d_v) share of its mean: about (1 - 1/d_v) Var
        assert 0 < row["global_var"] < row["var"]
    assert -1.2 < rec["slope"] < -0.7 and rec["slope_se"] > 0


def test_output_file_equals_stdout_json(tmp_path, capsys):
    path = tmp_path / "run.json"
    rc, out, err = _run(capsys, *CHEAP, "--sampler", "logits", "--estimator", "rao_blackwell", "--json",
                        "-o", str(path))
    assert rc == 0, err
    assert json.loads(path.read_text()) == json.loads(out)
    row = json.loads(out)["rows"][0]
    assert row["var"] > 0 and row["mean"] is None  # logits + Rao-Blackwell never forms o


def test_vector_and_matrix_flags_reach_the_simulator(capsys, tmp_path):
    """--query-vector, a per-coordinate --value-mean and --coupling (inline, scalar, @FILE) are parsed."""
    small = ["--n", "8", "--d-k", "3", "--d-v", "2", "--sequences", "64", "--json", "--no-progress"]
    rc, out, err = _run(capsys, *small, "--query-vector", "1,2,2", "--value-mean", "1,-1",
                        "--coupling", "1 0 0; 0 1 0")
    assert rc == 0, err
    rec = json.loads(out)
    cfg = rec["config"]
    assert cfg["query_vector"] == [1.0, 2.0, 2.0] and cfg["value_mean"] == [1.0, -1.0]
    assert cfg["coupling"] == [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    assert rec["rows"][0]["beta"] == pytest.approx(3 / math.sqrt(3))  # tau |q| / sqrt(d_k)
    assert rec["rows"][0]["exact_var"] is None  # values depend on keys: no exact theory value
    matrix = tmp_path / "a.txt"
    matrix.write_text("0.5 0 0\n0 0.5 0\n")
    for spec, expected in (("0.5", 0.5), (f"@{matrix}", [[0.5, 0.0, 0.0], [0.0, 0.5, 0.0]])):
        rc, out, err = _run(capsys, *small, "--coupling", spec)
        assert rc == 0, err
        assert json.loads(out)["config"]["coupling"] == expected
    for spec in ("1 0; 0 1", "a,b", "@/nonexistent-varsim.txt"):
        rc, _, err = _run(capsys, *small, "--coupling", spec)
        assert rc == 2 and "coupling" in err and len(err.strip().splitlines()) == 1


def test_failed_run_does_not_truncate_existing_output(tmp_path, capsys):
    path = tmp_path / "keep.json"
    path.write_text('{"previous": true}\n')
    rc, out, err = _run(capsys, *CHEAP, "--tau", "nan", "-o", str(path))
    assert rc == 2 and out == ""
    assert path.read_text() == '{"previous": true}\n'


@pytest.mark.parametrize(
    "argv, name",
    [
        (["--n", "0"], "n"),
        (["--n", "16", "-5"], "n"),
        (["--n", "2.5"], "n"),
        (["--d-k", "0"], "--d-k"),
        (["--d-v", "-1"], "--d-v"),
        (["--tau", "nan"], "tau"),
        (["--tau", "inf"], "tau"),
        (["--value-scale", "inf"], "--value-scale"),
        (["--key-dist", "cauchy"], "key_dist"),
        (["--value-dist", "normal"], "value_dist"),
        (["--sampler", "fast"], "sampler"),
        (["--estimator", "median"], "estimator"),
        (["--sampler", "logits", "--key-dist", "uniform"], "logits"),
        (["--sequences", "1"], "sequences"),
        (["--query", "learned"], "query"),
        (["--query", "random", "--beta", "1"], "beta"),
        (["--sequences", "50", "--chunk-size", "4"], "chunk_size"),
        (["-o", "/nonexistent-varsim-dir/out.json"], "output"),
    ],
)
def test_bad_input_is_one_line_exit_2_naming_the_parameter(argv, name, capsys):
    line = refused(capsys, ["simulate", *CHEAP, *argv], name)
    assert line.startswith("varsim simulate: error:"), line


def test_output_path_is_checked_before_simulating(tmp_path, capsys, monkeypatch):
    import varsim.sim

    def fail(*args, **kwargs):
        raise AssertionError("simulate() ran before the output path was checked")

    monkeypatch.setattr(varsim.sim, "simulate", fail)
    rc, _, err = _run(capsys, *CHEAP, "-o", str(tmp_path))  # a directory, not a file
    assert rc == 2 and "output" in err


def test_python_dash_m_varsim_simulate(tmp_path):
    res = subprocess.run(
        [sys.executable, "-m", "varsim", "simulate", "--n", "8", "32", "--d-k", "8", "--d-v", "4",
         "--sequences", "256", "--json"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
    )
    assert res.returncode == 0, res.stderr
    rec = json.loads(res.stdout)
    assert [r["n"] for r in rec["rows"]] == [8, 32]
    bad = subprocess.run([sys.executable, "-m", "varsim", "simulate", "--n", "0"], capture_output=True,
                         text=True, timeout=300, cwd=tmp_path)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def test_exact_column_is_dropped_beyond_the_quadratures_range(capsys):
    """A logit scale the simulator accepts but the quadrature refuses (beta > varsim.theory.BETA_MAX) still prints
    the simulation, with no exact value. Catches exact_variance letting the theory's ValueError end the command
    after the (possibly long) simulation, so its results are lost."""
    from varsim.theory import BETA_MAX

    rc, out, err = _run(capsys, "--n", "16", "--d-k", "4", "--d-v", "2", "--sequences", "64", "--no-progress",
                        "--tau", str(2 * BETA_MAX), "--json")
    assert rc == 0, err
    row = json.loads(out)["rows"][0]
    assert row["exact_var"] is None and row["ipr"] > 0.99  # frozen: nearly one-hot weights


def test_cli_json_output_loads_as_a_simulation_result(tmp_path):
    """``varsim simulate -o FILE`` writes a file that ``SimulationResult.from_json`` reads back with the same
    numbers (one JSON format for the command line and the API)."""
    from varsim.sim import SimulationResult

    path = tmp_path / "r.json"
    assert main(["simulate", "--n", "16", "64", "--sequences", "64", "--seed", "3", "--d-k", "8", "--d-v", "4",
                 "-o", str(path)]) == 0
    res = SimulationResult.from_json(path)
    record = json.loads(path.read_text())
    assert list(res.n) == [16, 64]
    assert [r["var"] for r in record["rows"]] == list(res.var)
    assert res.slope == record["slope"]


@pytest.mark.parametrize(
    "argv, names",
    [
        (["--n", "1e12"], ("n_grid", "max_work")),
        (["--n", "1e30"], ("n_grid", "max_work")),
        (["--sequences", "1e12"], ("n_sequences",)),
        (["--d-k", "1e9"], ("d_k", "memory")),
        (["--n", "1024", "--sequences", "1e8", "--chunk-size", "64"], ("n_sequences", "--max-work")),
    ],
)
def test_sizes_too_big_are_refused_in_one_line(argv, names, capsys):
    """--n 1e12, --n 1e30, --sequences 1e12, --d-k 1e9: exit 2 with one line giving the estimate and the bound and
    naming the sizes, immediately (never OverflowError, MemoryError or a run that would take hours)."""
    line = refused(capsys, ["simulate", "--no-progress", *argv], *names)
    assert line.startswith("varsim simulate: error:"), line


def test_max_work_flag_allows_a_long_run(capsys):
    """--max-work lowers or raises the bound (the documented override)."""
    small = ["--n", "64", "--d-k", "8", "--d-v", "4", "--sequences", "64", "--no-progress"]
    rc, _, err = _run(capsys, *small, "--max-work", "1000")
    assert rc == 2 and "max_work=1e+03" in err
    rc, _, err = _run(capsys, *small, "--max-work", "1e6")
    assert rc == 0, err


def test_empty_query_vector_file_one_line_no_numpy_warning(tmp_path):
    """An empty --query-vector @file: exactly one line on stderr (no NumPy 'input contained no data' warning
    printed before it), exit 2, naming query_vector and the file."""
    empty = tmp_path / "q.txt"
    empty.write_text("")
    res = subprocess.run([sys.executable, "-m", "varsim", "simulate", "--n", "8", "--d-k", "3", "--sequences", "64",
                          "--query-vector", f"@{empty}"], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "query_vector" in lines[0] and "no numbers" in lines[0], res.stderr


def test_attention_variant_flags(capsys):
    """--attention ssmax --ssmax-s 0.5 and --attention topk --topk 4 reach the simulator (recorded in the config),
    the exact column follows the variant (ssmax: E[sum w^2] at beta s ln N; topk: none) and sigmoid reports sum w.
    Catches flags that are parsed but silently ignored (ssmax's exact value would then be softmax's)."""
    from varsim.theory.remedies import variant_ipr

    small = ["--n", "16", "256", "--d-k", "8", "--d-v", "4", "--sequences", "2000", "--no-progress", "--json",
             "--sampler", "logits", "--estimator", "rao_blackwell"]
    rc, out, err = _run(capsys, *small, "--attention", "ssmax", "--ssmax-s", "0.5")
    assert rc == 0, err
    rec = json.loads(out)
    assert rec["config"]["attention"] == "ssmax" and rec["config"]["s"] == 0.5
    for row in rec["rows"]:
        exact = variant_ipr("ssmax", row["n"], 1.0, s=0.5)
        assert row["exact_var"] == pytest.approx(exact, rel=1e-9)
        assert abs(row["var"] - exact) <= 5 * row["var_se"] + 0.01 * exact
    rc, out, err = _run(capsys, *small, "--attention", "topk", "--topk", "4")
    assert rc == 0, err
    rec = json.loads(out)
    assert rec["config"]["k"] == 4 and all(r["exact_var"] is None and r["ipr"] >= 0.25 for r in rec["rows"])
    rc, out, err = _run(capsys, *small[:-4], "--attention", "sigmoid", "--value-mean", "2")
    assert rc == 0, err
    rec = json.loads(out)
    assert all(r["wsum"] is not None and r["exact_var"] is not None for r in rec["rows"])


@pytest.mark.parametrize("argv, needle", BAD_VARIANT_FLAGS)
def test_bad_variant_flags_are_one_line(argv, needle, capsys):
    """A flag of another variant, an unknown variant or a bad value is one line naming it."""
    refused(capsys, ["simulate", *CHEAP, *argv], needle)


def test_help_lists_every_key_and_value_law(capsys):
    """``--key-dist`` and ``--value-dist`` name every law the simulator draws (the key help lacked ``sphere``)."""
    from varsim.cli import main
    from varsim.sim import DISTRIBUTIONS, KEY_DISTRIBUTIONS

    try:
        main(["simulate", "--help"])
    except SystemExit:
        pass
    text = " ".join(capsys.readouterr().out.split())
    assert f"--key-dist DIST {' | '.join(KEY_DISTRIBUTIONS)}," in text
    assert f"--value-dist DIST {' | '.join(DISTRIBUTIONS)}," in text
