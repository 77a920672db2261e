"""Theory on an (N, beta) grid: ``expected_ipr`` and ``decay_exponent`` on 10^5 points against the goal (<= 1 CPU
second each, issue 32) and against the per-point path they replaced (``varsim.theory._ipr_reference``).

    python benchmarks/bench_theory_grid.py                 # ~1-2 minutes; --old-rows 250 times the old path on all
    python benchmarks/bench_theory_grid.py --repeats 5 --betas 250 --ns 400

The grid is a phase diagram: ``--betas`` values of beta evenly spaced in [0.02, 5] (annealed, intermediate and
frozen phases) times ``--ns`` values of N geometrically spaced in [2, 2^20]. Each timing starts from an empty
inner-integral cache and reports CPU seconds of this process (``time.process_time``, which other load inflates far
less than wall time), the best of ``--repeats`` calls. The old path is timed on ``--old-rows`` evenly spaced beta
rows and scaled to the whole grid (it costs the same per row to within its row's u range), and the two are compared
point by point on those rows.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

GOAL_S = 1.0


def _cpu(call, repeats: int) -> float:
    from varsim.theory import ipr

    best = float("inf")
    for _ in range(repeats):
        ipr._CACHE.clear()
        t0 = time.process_time()
        call()
        best = min(best, time.process_time() - t0)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--betas", type=int, default=250)
    parser.add_argument("--ns", type=int, default=400)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--old-rows", type=int, default=10, help="beta rows the old per-point path is timed on")
    args = parser.parse_args()

    from varsim.theory import decay_exponent, expected_ipr
    from varsim.theory._ipr_reference import reference_ipr_and_exponent

    betas = np.linspace(0.02, 5.0, args.betas)
    ns = np.geomspace(2.0, 2.0**20, args.ns)
    points = betas.size * ns.size
    new = {
        "expected_ipr": _cpu(lambda: expected_ipr(ns, betas[:, None]), args.repeats),
        "decay_exponent": _cpu(lambda: decay_exponent(ns, betas[:, None]), args.repeats),
    }
    e_grid = expected_ipr(ns, betas[:, None])
    g_grid = decay_exponent(ns, betas[:, None])

    rows = np.unique(np.linspace(0, betas.size - 1, min(args.old_rows, betas.size)).round().astype(int))
    old, dev_e, dev_g = {}, 0.0, 0.0
    for name, want in (("expected_ipr", False), ("decay_exponent", True)):
        t0 = time.process_time()
        refs = [reference_ipr_and_exponent(ns, float(betas[i]), want) for i in rows]
        old[name] = (time.process_time() - t0) * betas.size / rows.size
        for i, (e_ref, g_ref) in zip(rows, refs):
            dev_e = max(dev_e, float(np.max(np.abs(e_grid[i] / e_ref - 1.0))))
            if want:
                dev_g = max(dev_g, float(np.max(np.abs(g_grid[i] - g_ref))))

    print(f"grid: {betas.size} beta in [{betas[0]:g}, {betas[-1]:g}] x {ns.size} N in [2, 2^20] = {points} points; "
          f"best of {args.repeats}, empty cache each time")
    print(f"old path timed on {rows.size} of {betas.size} beta rows, scaled to the grid")
    print()
    print("| function | grid CPU s | goal (<= 1 s) | old per-point path CPU s | speed-up |")
    print("|---|---:|---:|---:|---:|")
    for name in new:
        verdict = "met" if new[name] <= GOAL_S else "missed"
        print(f"| {name} | {new[name]:.3f} | {verdict} ({new[name] / GOAL_S:.2f} of it) | {old[name]:.1f} | "
              f"{old[name] / new[name]:.0f}x |")
    print()
    print(f"largest difference from the old path on its rows: expected_ipr {dev_e:.1e} relative, "
          f"decay_exponent {dev_g:.1e} absolute")


if __name__ == "__main__":
    main()
