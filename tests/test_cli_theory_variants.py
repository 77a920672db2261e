"""``varsim theory --attention NAME``: each variant's exact theory equals the library functions (parsed from --json),
Monte-Carlo-only maps print a note, and bad names or parameters give one line and exit status 2."""

import json
import math

import pytest
from cli_checks import BAD_VARIANT_FLAGS, refused

from varsim import theory as T
from varsim.cli import main


def _json(capsys, argv):
    assert main(["theory", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _fails(capsys, argv):
    return refused(capsys, ["theory", *argv])


@pytest.mark.parametrize("argv, name, params", [
    (["--attention", "ssmax", "--ssmax-s", "0.5"], "ssmax", {"s": 0.5}),
    (["--attention", "logn", "--logn-n0", "8", "--no-logn-clamp"], "logn", {"n0": 8.0, "clamp": False}),
    (["--attention", "critical", "--critical-c", "0.8", "--critical-beta0", "2"], "critical", {"c": 0.8, "beta0": 2.0}),
])
def test_scaled_softmax_values_equal_the_library(capsys, argv, name, params):
    """beta_N, E[sum w^2] and the phase are the library's at the variant's parameters. Catches E[sum w^2] evaluated
    at the plain beta instead of beta_N, a dropped option (defaults used instead of --ssmax-s 0.5) and the phase
    taken at beta."""
    ns = [4.0, 64.0, 4096.0]
    out = _json(capsys, ["--n", *map(str, ns), "--beta", "1.5", *argv])
    assert out["variant"]["attention"] == name and out["variant"]["theory"] == "exact_ipr"
    assert {k: out["variant"]["params"][k] for k in params} == params
    beta_n = T.variant_beta(name, ns, 1.5, **params)
    ipr = T.variant_ipr(name, ns, 1.5, **params)
    for r, b, e, n in zip(out["rows"], beta_n, ipr, ns):
        assert r["n"] == n and r["beta_n"] == pytest.approx(b, rel=1e-12)
        assert r["ipr"] == pytest.approx(e, rel=1e-12) and r["n_ipr"] == pytest.approx(n * e, rel=1e-12)
        assert r["phase"] == T.phase(n, b)
    assert [r["ipr"] for r in out["rows"]] != pytest.approx(list(T.expected_ipr(ns, 1.5)), rel=1e-6)
    assert main(["theory", "--n", "64", "--beta", "1.5", *argv]) == 0
    text = capsys.readouterr().out
    assert "beta_N" in text and f"{out['rows'][1]['ipr']:.6g}" in text


def test_sigmoid_values_and_variance_identity(capsys):
    """E[sum w^2], Var(sum w), E[sum w] from sigmoid_moments and Var(o_j) = sigma_v^2 E[sum w^2] + mu_v^2 Var(sum w)
    from sigmoid_variance. Catches the mean term left out (mu_v = 1.5 makes it visible) and sigma_v not squared."""
    ns = [16.0, 256.0]
    out = _json(capsys, ["--n", *map(str, ns), "--beta", "2", "--attention", "sigmoid",
                         "--value-mean", "1.5", "--value-scale", "0.5"])
    y2, var_s1, s1 = T.sigmoid_moments(ns, 2.0)
    var = T.sigmoid_variance(ns, 2.0, sigma_v=0.5, mu_v=1.5)
    for i, r in enumerate(out["rows"]):
        assert r["ipr"] == pytest.approx(y2[i], rel=1e-12) and r["wsum_var"] == pytest.approx(var_s1[i], rel=1e-12)
        assert r["wsum"] == pytest.approx(s1[i], rel=1e-12) and r["var"] == pytest.approx(var[i], rel=1e-12)
        assert r["var"] != pytest.approx(0.25 * y2[i], rel=1e-3)
    assert out["variant"]["value_mean"] == 1.5 and out["variant"]["value_scale"] == 0.5


def test_topk_bound_and_exact_when_k_covers_n(capsys):
    """The bound [1/k, 1] at every N and the exact softmax value where k >= N. Catches 1/N printed as the lower
    bound and an exact value claimed where k < N."""
    out = _json(capsys, ["--n", "4", "64", "--beta", "1", "--attention", "topk", "--topk", "8"])
    assert [(r["ipr_lower"], r["ipr_upper"]) for r in out["rows"]] == [T.topk_ipr_bounds(8)] * 2 == [(0.125, 1.0)] * 2
    assert out["rows"][0]["ipr"] == pytest.approx(T.expected_ipr(4.0, 1.0), rel=1e-12)
    assert out["rows"][1]["ipr"] is None


@pytest.mark.parametrize("name", ["entmax15", "sparsemax", "adaptive_temperature"])
def test_monte_carlo_only_variants_print_the_note(capsys, name):
    """No made-up number: the table and the JSON say Monte Carlo only and name the simulate command."""
    assert main(["theory", "--n", "64", "--beta", "1", "--attention", name]) == 0
    text = capsys.readouterr().out
    assert "Monte Carlo only" in text and f"varsim simulate --attention {name}" in text
    out = _json(capsys, ["--n", "64", "--beta", "1", "--attention", name])
    assert out["variant"]["theory"] == "none" and out["rows"] == [] and "Monte Carlo only" in out["note"]


def test_softmax_default_is_unchanged(capsys):
    """--attention softmax is the plain table (no 'variant' key), so existing output and scripts keep working."""
    plain = _json(capsys, ["--n", "64", "--beta", "1"])
    explicit = _json(capsys, ["--n", "64", "--beta", "1", "--attention", "softmax"])
    assert "variant" not in explicit and explicit["rows"] == plain["rows"]


@pytest.mark.parametrize("argv, word", [
    *BAD_VARIANT_FLAGS,
    (["--attention", "ssmax", "--value-mean", "1"], "value_mean"),
    (["--attention", "sigmoid", "--value-scale", "-1"], "--value-scale"),
])
def test_bad_variant_input_is_one_line(capsys, argv, word):
    """Unknown names, out-of-range or non-integer parameters, a flag of another variant: one line, exit 2."""
    assert word in _fails(capsys, ["--n", "64", "--beta", "1", *argv])


def test_random_query_with_a_variant_is_refused(capsys):
    line = _fails(capsys, ["--n", "64", "--d", "16", "--query", "random", "--attention", "ssmax"])
    assert "query" in line and "ssmax" in line


def test_sigmoid_at_huge_n_and_underflow_marked_not_zero(capsys):
    """At N = 1e300 E[sum w^2] ~ e^2/1e300 is printed (the scaled quadrature keeps it: E[s^2] ~ 1e-600 is never
    formed); a value below the smallest float (Var(sum w) ~ beta^2/N at beta = 1e-170) is null, not a printed 0 that
    a reader would take for the value."""
    row = _json(capsys, ["--n", "1e300", "--beta", "1", "--attention", "sigmoid"])["rows"][0]
    y2, var_s1, s1 = T.sigmoid_moments(1e300, 1.0)
    # the large-N series e^{2 beta^2}/N - 2 e^{9 beta^2/2}/N^2 (derivations/remedies_theory.py); 2nd term: 1e-300
    assert row["ipr"] == pytest.approx(y2, rel=1e-12) and row["ipr"] == pytest.approx(math.exp(2.0) / 1e300, rel=1e-10)
    assert row["wsum_var"] == pytest.approx(var_s1, rel=1e-12) and row["wsum"] == pytest.approx(s1)
    row = _json(capsys, ["--n", "16", "--beta", "1e-170", "--attention", "sigmoid", "--value-mean", "1"])["rows"][0]
    assert row["wsum_var"] is None and row["var"] is None and row["ipr"] == pytest.approx(16 / 17**2, rel=1e-12)
