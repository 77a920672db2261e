"""Wilson score intervals: varsim's vectorised formula against scipy's per-count ``binomtest(...).proportion_ci``.

    python benchmarks/bench_wilson.py            # a few seconds

Prints the time per interval of each and their largest difference, for the arrays of counts the reproduction
summarises (one count per length, seed and variant).
"""

from __future__ import annotations

import time

import numpy as np
from scipy import stats

from varsim._common.intervals import wilson_interval


def main() -> None:
    rng = np.random.default_rng(0)
    n = 1024
    k = rng.integers(0, n + 1, size=2000)
    t0 = time.perf_counter()
    reps = 200
    for _ in range(reps):
        lo, hi = wilson_interval(k, np.full_like(k, n))
    t_vec = (time.perf_counter() - t0) / (reps * k.size)
    t0 = time.perf_counter()
    ref = [stats.binomtest(int(j), n).proportion_ci(0.95, method="wilson") for j in k]
    t_scipy = (time.perf_counter() - t0) / k.size
    err = max(np.max(np.abs(lo - [r.low for r in ref])), np.max(np.abs(hi - [r.high for r in ref])))
    print("| implementation | time per interval | speed-up |")
    print("|---|---:|---:|")
    print(f"| varsim wilson_interval (arrays of {k.size}) | {t_vec * 1e9:.0f} ns | {t_scipy / t_vec:.0f}x |")
    print(f"| scipy binomtest(...).proportion_ci(method='wilson') | {t_scipy * 1e6:.1f} us | 1x |")
    print(f"largest difference of the bounds: {err:.1e}")


if __name__ == "__main__":
    main()
