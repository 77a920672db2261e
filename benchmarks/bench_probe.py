"""Time and memory of the pretrained-model probe (not run by the tests).

    python benchmarks/bench_probe.py                       # one SmolLM2 window per N, layers 0-1, N up to 8192
    python benchmarks/bench_probe.py --model minilm --lengths 128 512

Prints, per N: seconds for one forward pass up to the deepest probed layer (single-threaded BLAS, as the probe
runs), the tracemalloc peak of NumPy allocations during it, and the process's peak RSS so far. Attention is computed
one head and one block of query rows at a time, so memory grows like T * block per head, not T^2 * heads.
"""

from __future__ import annotations

import argparse
import resource
import time
import tracemalloc

import numpy as np


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--layers", type=int, nargs="+", default=[0, 1])
    ap.add_argument("--lengths", type=int, nargs="+", default=[256, 1024, 4096, 8192])
    args = ap.parse_args(argv)
    from varsim._common.blas import blas_threads
    from varsim.pretrained import load_model

    t0 = time.perf_counter()
    m = load_model(args.model)
    print(f"load {time.perf_counter() - t0:.1f} s  ({m.spec.name}, context {m.spec.context_length})")
    rng = np.random.default_rng(0)
    m.run(rng.integers(0, m.spec.vocab_size, 16), layers=args.layers, query_positions=[-1])  # dequantize once
    print(f"{'N':>6} {'seconds':>8} {'tracemalloc peak MB':>20} {'peak RSS MB':>12}")
    with blas_threads(1):
        for n in args.lengths:
            if n > m.spec.context_length:
                print(f"{n:>6} skipped: beyond the context length")
                continue
            ids = rng.integers(0, m.spec.vocab_size, n)
            tracemalloc.start()
            t = time.perf_counter()
            m.run(ids, layers=args.layers, query_positions=[-1])
            dt = time.perf_counter() - t
            peak = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            print(f"{n:>6} {dt:>8.2f} {peak:>20.1f} {rss:>12.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
