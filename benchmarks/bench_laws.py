"""Exact theory of every logit law (``varsim.theory.laws``) on a 10^5-point (N, beta) grid, issue 47's goal: at
most 1 CPU second per law after a one-time setup.

    python benchmarks/bench_laws.py                    # ~1-3 minutes on a shared 2-core machine
    python benchmarks/bench_laws.py --betas 50 --ns 2000 --repeats 1

The grid: ``--betas`` values of beta evenly spaced in [0.05, 5] times ``--ns`` values of N geometrically spaced in
[2, 1e300]. Per law, "setup" is the first call from an empty cache (it builds the law's node measure and the inner
integrals on the u grid, once per beta); "evaluation" is the best of ``--repeats`` further calls of the same grid
(the per-N outer sums only). Both are CPU seconds of this process (``time.process_time``).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

GOAL_S = 1.0
LAWS = (("gaussian", {}), ("sphere", {"d": 64}), ("sphere", {"d": 8}), ("rademacher", {"d": 64}),
        ("uniform", {"d": 8}), ("student_t", {"nu": 3.0}), ("student_t", {"nu": 30.0}),
        ("empirical", {"sample": "normal-1000"}))


def _law(name, params):
    from varsim.theory.laws import logit_law

    if name == "empirical":
        return logit_law(name, sample=np.random.default_rng(0).standard_normal(1000))
    return logit_law(name, **params)


def _cpu(call) -> float:
    t0 = time.process_time()
    call()
    return time.process_time() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--betas", type=int, default=100)
    parser.add_argument("--ns", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    from varsim.theory import ipr
    from varsim.theory.laws import exact, law_ipr

    betas = np.linspace(0.05, 5.0, args.betas)
    ns = np.geomspace(2.0, 1e300, args.ns)
    print(f"grid: {betas.size} beta in [{betas[0]:g}, {betas[-1]:g}] x {ns.size} N in [2, 1e300] = "
          f"{betas.size * ns.size} points; CPU seconds; evaluation best of {args.repeats}")
    print()
    print("| law | setup (first call) s | evaluation s | goal (<= 1 s after setup) |")
    print("|---|---:|---:|---|")
    for name, params in LAWS:
        law = _law(name, params)
        exact._CACHE.clear()
        ipr._CACHE.clear()
        setup = _cpu(lambda: law_ipr(law, ns, betas[:, None]))
        best = min(_cpu(lambda: law_ipr(law, ns, betas[:, None])) for _ in range(args.repeats))
        label = f"{name} {params}" if params else name
        verdict = "met" if best <= GOAL_S else "missed"
        print(f"| {label} | {setup:.2f} | {best:.2f} | {verdict} |")


if __name__ == "__main__":
    main()
