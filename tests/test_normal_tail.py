"""The normal generator's tail, where the physics lives: tail probabilities against the exact erfc, the maximum of N
draws against Phi(x)^N, both through the ziggurat and through the logits sampler, and independence across the
streams keyed by work item. Each statistical check is shown failing on planted defects (``rng_mutants``)."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from varsim._common.jsonio import read_json
from varsim.sim import _kernels_rng as K
from varsim.sim import _kernels_tail as KT
from varsim.sim import _normal_tail as NT
from varsim.sim import _twins_rng as T
from varsim.sim import _twins_tail as TT
from varsim.sim._kernel_args import LogitsSampler
from varsim.sim._rngstate import FIX, LANES, new_state
from varsim.sim._ziggurat import kernel_tables, ziggurat_tables

sys.path.insert(0, str(Path(__file__).parent))
from rng_mutants import R_256, mutant_kernels  # noqa: E402

TABLES = kernel_tables()
R_EDGE = ziggurat_tables()[0]
ROOT = Path(__file__).resolve().parents[1]
CERT = ROOT / "benchmarks" / "certificates" / "normal_tail.json"
SEED = 20260
DRAWS, Z_MAX = 4 * 10**8, 5.5  # the default suite's smaller certificate (~3 s on 2 cores)
REPS = {1 << k: max(64, (1 << 25) >> k) for k in range(10, 21, 2)}  # maxima per N: 2^25 draws per N, >= 64 maxima
KS_FLOOR = 1e-4


def _tail_failures(kernels=None) -> list[dict]:
    hist = NT.tail_histogram(SEED, DRAWS, 8, threads=2, kernels=kernels)
    assert hist.sum() == DRAWS
    return NT.failures(NT.tail_rows(hist, Z_MAX))


def _max_failures(kernels=None) -> list[dict]:
    pits = [NT.max_pit(m, n) for n, m in NT.maxima_by_n(SEED, REPS, threads=2, kernels=kernels).items()]
    return [p for p in pits if p["ks_pvalue"] < KS_FLOOR or abs(p["z_score"]) > 5]


def _logits_sampler(n_keys):
    return LogitsSampler(n_keys, 1.0, False, 1, 1.0, K.GAUSSIAN, np.empty(0), 1.0)


def test_tail_kernels_match_twins_bitwise():
    """The counting kernels and their NumPy twins give identical histograms and maxima from one state, over
    ragged request sizes (n not a multiple of the request), and leave the state equal; the logits sampler's maxima
    and histogram equal the replay of ``_twins_draws.sample_logits`` (blocks of 1024 logits, a ragged last block)."""
    for n in (1, 1000, KT.REQUEST + 77):
        a = new_state(3, n)
        b = a.copy()
        assert np.array_equal(KT.tail_histogram(a, n, 8.0, 512, *TABLES), TT.tail_histogram(b, n, 8.0, 512, *TABLES))
        assert np.array_equal(KT.maxima(a, n, 3, *TABLES), TT.maxima(b, n, 3, *TABLES))
        assert np.array_equal(a, b)
    p = _logits_sampler(3000)
    a = new_state(4)
    b = a.copy()
    got, want = KT.logits_maxima(a, p, 3, TABLES, 8.0, 512), TT.logits_maxima(b, p, 3, TABLES, 8.0, 512)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1]) and np.array_equal(a, b)


def test_tail_rows_statistics():
    """A histogram made by hand: the counts above each threshold, the exact binomial p-value and the z-score. A
    count equal to its expectation has p = 1; one far above it fails; small expectations (0.01) with a count of 0
    pass (a z-score rule would not matter there, the exact p-value does)."""
    n = 10**6
    hist = np.zeros((2, 513), np.int64)
    hist[0, 0] = hist[1, 0] = n // 2
    rows = NT.tail_rows(hist, 1.0)
    assert [r["z"] for r in rows[::3]] == [b / 8 for b in range(1, 9)]
    assert all(r["count"] == 0 and r["p_value"] < NT.P_FLOOR for r in rows)  # nothing above 1/8: all fail
    q = 0.5 * math.erfc(6.0 / math.sqrt(2))
    rows = NT.tail_rows(hist, 6.0)
    assert rows[-3]["expected"] == pytest.approx(n * q) and rows[-1]["p_value"] == 1.0  # 0 seen, 0.002 expected
    hist[0, 8] = int(round(n * 0.5 * math.erfc(1 / math.sqrt(2))))  # X >= 1 exactly as often as expected
    hist[0, 0] -= hist[0, 8]
    row = NT.tail_rows(hist, 1.0)[-3]
    assert abs(row["z_score"]) < 0.01 and row["p_value"] > 0.99
    hist[0, 8] += 6 * int(row["se"])
    hist[0, 0] -= 6 * int(row["se"])
    assert NT.tail_rows(hist, 1.0)[-3]["p_value"] < NT.P_FLOOR


def test_tail_probabilities_match_erfc():
    """4e8 ziggurat draws: the counts of X >= z, X <= -z and |X| >= z for z = 1/8 ... 5.5 each within the exact
    binomial p-value floor (5 standard errors) of n Q(z). Planted defects that this fails on: see
    ``test_planted_tail_defects_fail``."""
    assert _tail_failures() == []


def test_maximum_of_n_draws_matches_phi_power():
    """The maximum M of N = 2^10, 2^12, ..., 2^20 draws (2^25 draws per N, at least 64 maxima): U = Phi(M)^N passes
    a KS test (p >= 1e-4) and the mean of -ln U is 1 within 5 standard errors (1/sqrt(reps))."""
    assert _max_failures() == []


@pytest.mark.parametrize("defect, max_fails", [
    ("r of the 256-layer table", True),
    ("r 1% too large", True),
    ("r 0.5% too large", False),
    ("r 0.5% too small", False),
    ("tail r + Exp(r), no rejection", False),
])
def test_planted_tail_defects_fail(defect, max_fails):
    """The real ``_draw``/``_zig_slow`` recompiled with the tail sampler's edge set wrong (tables unchanged) or the
    tail drawn from its exponential envelope: the tail counts fail for every one (power: a 0.5% error in r, the
    envelope in place of the normal tail); the maxima's check fails for the larger errors (measured: a 0.5% error
    leaves the maxima's KS p-values at 2e-3 .. 0.7, and the envelope at 7e-4 at N = 2^20)."""
    kw = {"r of the 256-layer table": dict(tail_edge=R_256), "r 1% too large": dict(tail_edge=1.01 * R_EDGE),
          "r 0.5% too large": dict(tail_edge=1.005 * R_EDGE), "r 0.5% too small": dict(tail_edge=0.995 * R_EDGE),
          "tail r + Exp(r), no rejection": dict(wrong_law=True)}[defect]
    mutant = mutant_kernels(**kw)
    assert _tail_failures(mutant) != []
    if max_fails:
        assert _max_failures(mutant) != []


def _logit_failures(kernels=KT) -> tuple[list, list]:
    """The logits sampler: the maxima of N = 2^10 .. 2^20 logits (2^23 logits per N, >= 16 sequences) and the tail
    counts of all ~5e7 logits up to z = 5."""
    reps = {1 << k: max(16, (1 << 23) >> k) for k in range(10, 21, 2)}
    tables = kernel_tables()
    hist = np.zeros((2, 513), np.int64)
    bad = []
    for n, r in reps.items():
        best, h = kernels.logits_maxima(new_state(SEED, n, 0), _logits_sampler(n), r, tables, NT.INV_STEP, 512)
        hist += h
        pit = NT.max_pit(best, n)
        if pit["ks_pvalue"] < KS_FLOOR or abs(pit["z_score"]) > 5:
            bad.append(pit)
    return bad, NT.failures(NT.tail_rows(hist, 5.0))


def test_logits_sampler_maximum_and_tail():
    """Through ``simulate(sampler="logits")``'s own sampler (blocks of 1024 Gaussian logits, beta = 1): the maximum
    of N logits against Phi(x)^N and the logits' tail counts against erfc; both fail when the sampler's draws carry
    the 256-layer r (the logits sampler recompiled on the planted generator)."""
    assert _logit_failures() == ([], [])
    bad_max, bad_tail = _logit_failures(mutant_kernels(tail_edge=R_256))
    assert bad_max and bad_tail


# -- independence across the streams keyed by work item (simulate keys chunk c at length N as (N, c)) ----------------

N_STREAM = 1 << 15
N_KEYS = 64


def _streams(states) -> np.ndarray:
    return np.stack([K.draw_variates(s, N_STREAM, K.GAUSSIAN, *TABLES) for s in states]).astype(np.float64)


def _independence_stats(x: np.ndarray, max_lag: int = 256) -> dict:
    """Against the exact law (mean 0, variance 1): every pair's lag-0 correlation, ``n sum r^2`` against chi^2 of
    (pairs) degrees of freedom as a z-score; the largest |r| sqrt(n) over neighbouring keys' cross-correlations at
    lags -max_lag..max_lag (circular, by FFT); and the joint exceedances |x| > 2 of every pair at the same index
    against n p^2 (z-score)."""
    m, n = x.shape
    c = (x @ x.T) / n
    iu = np.triu_indices(m, 1)
    chi = n * np.sum(c[iu] ** 2)
    df = iu[0].size
    f = np.fft.rfft(x, axis=1)
    cross = np.fft.irfft(f[:-1].conj() * f[1:], n=n, axis=1) / n
    lags = np.r_[0 : max_lag + 1, n - max_lag : n]
    e = (np.abs(x) > 2).astype(np.float64)
    p2 = (2 * stats.norm.sf(2.0)) ** 2
    joint = np.sum((e @ e.T)[iu])
    return {"chi_z": (chi - df) / math.sqrt(2 * df), "max_lagged": float(np.abs(cross[:, lags]).max() * math.sqrt(n)),
            "joint_z": (joint - df * n * p2) / math.sqrt(df * n * p2 * (1 - p2))}


def _independent(s: dict) -> bool:
    # 63 * 513 lagged correlations: P(max |N(0,1)| > 6) ~ 6e-5
    return abs(s["chi_z"]) <= 5 and s["max_lagged"] <= 6.0 and abs(s["joint_z"]) <= 5


def test_streams_keyed_by_work_item_are_independent():
    """64 streams keyed (4096, c) as ``simulate`` keys its chunks: no pairwise correlation, no lagged
    cross-correlation between neighbouring keys, no joint tail exceedances beyond chance. Fails on planted key
    defects: a repeated key (two chunks on one stream), a stream overlapping its neighbour one vector step later, and
    one bulk lane shared between neighbours (1/32 of the variates equal)."""
    states = [new_state(SEED, 4096, c) for c in range(N_KEYS)]
    assert _independent(_independence_stats(_streams([s.copy() for s in states])))
    repeated = [s.copy() for s in states]
    repeated[1] = repeated[0].copy()
    shifted = [s.copy() for s in states]
    shifted[1] = shifted[0].copy()
    T.fill_words(shifted[1], LANES)  # one vector step ahead of its neighbour: the same variates 64 positions later
    shared = [s.copy() for s in states]
    for c in range(1, N_KEYS):
        shared[c][:, 5] = shared[c - 1][:, 5] if c % 2 else shared[c][:, 5]
    for planted in (repeated, shifted, shared):
        assert not _independent(_independence_stats(_streams(planted)))
    assert all(s[:, FIX].any() for s in states)


@pytest.mark.slow
def test_certificate_reruns_bit_for_bit():
    """The committed certificate's tail counts (>= 1e10 draws) rerun from its recorded seed and items equal the
    committed histogram exactly, and every row passes (a few minutes on 2 cores)."""
    cert = read_json(CERT)
    hist = NT.tail_histogram(cert["seed"], cert["draws"], cert["items"], threads=2)
    assert hist.tolist() == cert["tail_histogram"]
    assert NT.failures(NT.tail_rows(hist, cert["z_max"])) == []


def test_committed_certificate_is_current():
    """``benchmarks/certificates/normal_tail.json``: >= 1e10 draws, thresholds up to 6.5, its rows are what the current
    ``tail_rows`` makes of its histogram (a change of the statistics without a rerun is noticed), every check passed,
    maxima at every N = 2^10 .. 2^20 for the ziggurat and the logits sampler, and the command and seed recorded."""
    cert = read_json(CERT)
    assert cert["draws"] >= 10**10 and cert["z_max"] >= 6.5 and cert["passed"]
    assert cert["command"].startswith("python benchmarks/certify_normal_tail.py") and isinstance(cert["seed"], int)
    hist = np.array(cert["tail_histogram"])
    assert hist.sum() == cert["draws"]
    rows = NT.tail_rows(hist, cert["z_max"])
    assert [(r["z"], r["side"], r["count"]) for r in rows] == [(r["z"], r["side"], r["count"]) for r in cert["tail"]]
    for key in ("expected", "se", "z_score", "p_value"):
        np.testing.assert_allclose([r[key] for r in rows], [r[key] for r in cert["tail"]], rtol=1e-9, atol=1e-300)
    assert [r["n"] for r in cert["maxima"]] == [1 << k for k in range(10, 21)]
    assert [r["n"] for r in cert["logits"]["maxima"]] == [1 << k for k in range(10, 21)]
    assert all(r["ok"] for r in cert["maxima"] + cert["logits"]["maxima"])
    spec = importlib.util.spec_from_file_location("certify", ROOT / "benchmarks" / "certify_normal_tail.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script.Z_MAX == cert["z_max"]
