"""Keys per second of the logits sampler (Rao-Blackwell estimator, no values) for each key law it draws, issue 47's
goal: at least 100 M keys/s on 2 threads for every law.

    python benchmarks/bench_logits_laws.py [--threads 2] [--repeats 3] [--n 1048576] [--sequences 64]

Per law (``key_dist`` gaussian; sphere at d_k = 8 and 64: the cosine ``sqrt(d_k) z_1/|z|`` from d_k Gaussians per
key), one warm-up call (compiles or loads the kernels), then the best of ``--repeats`` timed calls of
``simulate([n], sampler="logits", estimator="rao_blackwell", n_sequences=S, beta=1)``; keys/s = n S / wall seconds.
Only comparable within one machine under the same load.
"""

from __future__ import annotations

import argparse
import time

GOAL = 1e8
LAWS = (("gaussian", 64), ("sphere", 8), ("sphere", 64))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--n", type=int, default=2**20)
    parser.add_argument("--sequences", type=int, default=64, help="sequences per call (>= 32)")
    args = parser.parse_args()

    from varsim.sim import simulate

    print(f"logits sampler, Rao-Blackwell, N = {args.n}, {args.sequences} sequences, {args.threads} threads; "
          f"best of {args.repeats}")
    print()
    print("| key law | d_k | keys/s (M) | goal (>= 100 M/s) |")
    print("|---|---:|---:|---|")
    for key_dist, d_k in LAWS:
        kw = dict(d_k=d_k, d_v=1, beta=1.0, key_dist=key_dist, sampler="logits", estimator="rao_blackwell",
                  threads=args.threads, seed=1)
        simulate([1024], n_sequences=32, **kw)  # warm-up: compile or load the kernels
        best = float("inf")
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            simulate([args.n], n_sequences=args.sequences, **kw)
            best = min(best, time.perf_counter() - t0)
        rate = args.n * args.sequences / best
        print(f"| {key_dist} | {d_k} | {rate / 1e6:.0f} | {'met' if rate >= GOAL else 'missed'} |")


if __name__ == "__main__":
    main()
