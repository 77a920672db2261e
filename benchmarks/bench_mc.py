"""Throughput of the Monte Carlo samplers against brute force, and time to a 1% relative standard error.

    python benchmarks/bench_mc.py [--threads 2] [--seconds 1.5] [--repeats 3] [--quick]
    python benchmarks/bench_mc.py --compile     # only: CPU seconds of each chunk kernel's cold compilation

Prints keys/s (sequences x N per second of wall time, best of ``--repeats``, the repeats interleaved across the
implementations) at d_k = d_v = 64 and N in {64, 1024, 16384} for

- varsim ``full`` sampler (draws q, K, V; sample-variance estimator),
- varsim ``logits`` sampler with the Rao-Blackwell estimator (one logit per key, no values),
- a plain NumPy float64 brute force (``standard_normal`` K and V, softmax, weighted sum),
- a PyTorch CPU float32 brute force (``normal_`` into preallocated K and V, ``bmm``), if torch is installed,

then the ratios against the speed targets (:data:`TARGETS`: full >= 8x torch at 2 threads and >= 8x NumPy, logits +
RB >= 200M keys/s), the generator's limit and each varsim path's share of it, and the wall time to reach a 1%
relative SE of Var(o_j) at N = 16384 (beta = 1) for both varsim samplers.

The generator's limit: float32 Gaussian normals per second from varsim's own generator and ziggurat alone
(``_kernels_rng._draw``, requests of 2048 normals, the full sampler's block of 32 keys x 64 coordinates, no
softmax), on 1 thread and on ``--threads`` threads (one independent state per thread), per core. A path's share is
its normals per second (full: d_k + d_v = 128 per key; logits with values: 1 + d_v = 65; logits + Rao-Blackwell:
1) over the limit at the same thread count. All implementations run in this one process on the same machine with the
same thread count; the numbers are only comparable within one run.
"""

from __future__ import annotations

import argparse
import math
import os
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from _timing import PAUSE_S

D = 64
GRID = (64, 1024, 16384)
TARGETS = {"full_vs_torch": 8.0, "full_vs_numpy": 8.0, "logits_rb_keys_per_s": 200e6}
NORMALS_PER_KEY = {"full": 2 * D, "logits": 1 + D, "logits_rb": 1}  # Gaussian variates each path draws per key
REQUEST = 32 * D  # normals per request in the limit measurement (the full sampler's block of keys)


def generator_limit(threads: int, seconds: float = 1.0) -> float:
    """Float32 normals per second of wall time from the package's generator + ziggurat alone (``_draw``), on
    ``threads`` threads each with its own state; best of three runs of about ``seconds``."""
    import numba as nb

    from varsim.sim._kernels_rng import GAUSSIAN, _draw, _scratch
    from varsim.sim._rngstate import new_state
    from varsim.sim._ziggurat import kernel_tables

    @nb.njit(nogil=True)
    def draws(state, reps, zw, zk, zf):
        scratch = _scratch(REQUEST)
        out = np.empty(2 * scratch[0].size, np.float32)
        bits = out.view(np.uint32)
        total = 0.0
        for _ in range(reps):
            _draw(state, scratch, out, bits, REQUEST, GAUSSIAN, zw, zk, zf)
            total += out[0]
        return total

    tables = kernel_tables()
    states = [new_state(99, k) for k in range(threads)]
    draws(states[0], 1, *tables)
    reps = 64
    while True:  # size a run to about `seconds`
        t0 = time.perf_counter()
        draws(states[0], reps, *tables)
        elapsed = time.perf_counter() - t0
        if elapsed > seconds / 4:
            break
        reps *= 4
    reps = max(1, int(reps * seconds / elapsed))
    best = math.inf
    with ThreadPoolExecutor(max_workers=threads) as pool:
        for _ in range(3):
            t0 = time.perf_counter()
            list(pool.map(lambda st: draws(st, reps, *tables), states))
            best = min(best, time.perf_counter() - t0)
    return threads * reps * REQUEST / best


def _sequences(n: int, keys_budget: float, minimum: int = 32) -> int:
    return max(minimum, int(keys_budget // n))


def case_varsim(sampler: str, estimator: str, n: int, keys_budget: float, threads: int):
    """``(run, keys)`` for one simulate() call; compiles / loads the kernels before returning."""
    from varsim.sim import simulate

    m = _sequences(n, keys_budget)
    kwargs = dict(d_k=D, d_v=D, n_sequences=m, sampler=sampler, estimator=estimator, threads=threads)
    simulate([n], **{**kwargs, "n_sequences": 32}, seed=1)
    return (lambda: simulate([n], **kwargs, seed=2)), m * n


def case_numpy(n: int, keys_budget: float):
    """Plain NumPy float64: draw K and V, softmax over keys, weighted sum; a batch of sequences at a time."""
    m = _sequences(n, keys_budget, minimum=4)
    batch = max(1, (1 << 16) // n)
    q = np.ones(D)
    rng = np.random.default_rng(0)

    def run():
        done = 0
        while done < m:
            b = min(batch, m - done)
            K = rng.standard_normal((b, n, D))
            V = rng.standard_normal((b, n, D))
            s = K @ q / math.sqrt(D)
            w = np.exp(s - s.max(axis=1, keepdims=True))
            w /= w.sum(axis=1, keepdims=True)
            np.einsum("bn,bnd->bd", w, V)
            done += b

    return run, m * n


def case_torch(n: int, keys_budget: float, threads: int):
    """PyTorch CPU float32 brute force, in-place normal_ into preallocated buffers (None without torch)."""
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(threads)
    m = _sequences(n, keys_budget, minimum=4)
    batch = max(1, (1 << 17) // n)
    q = torch.ones(D, 1) / math.sqrt(D)
    K = torch.empty(batch, n, D)
    V = torch.empty(batch, n, D)

    def run():
        done = 0
        while done < m:
            b = min(batch, m - done)
            k, v = K[:b].normal_(), V[:b].normal_()
            w = torch.softmax(torch.matmul(k, q).squeeze(-1), dim=1)
            torch.bmm(w.unsqueeze(1), v)
            done += b

    return run, m * n


def measure(cases: dict, repeats: int) -> tuple[dict, dict]:
    """Best keys/s of wall time and of process CPU time per case. Repeats are interleaved across the cases, so a
    burst of outside load hits every implementation alike instead of all repeats of one; each after a pause of
    ``_timing.PAUSE_S``, so that the previous case's idle threads have stopped spinning."""
    wall = {k: math.inf for k in cases}
    cpu = {k: math.inf for k in cases}
    for _ in range(repeats):
        for key, (run, _keys) in cases.items():
            time.sleep(PAUSE_S)
            t0, c0 = time.perf_counter(), time.process_time()
            run()
            wall[key] = min(wall[key], time.perf_counter() - t0)
            cpu[key] = min(cpu[key], time.process_time() - c0)
    return ({k: cases[k][1] / wall[k] for k in cases}, {k: cases[k][1] / cpu[k] for k in cases})


def time_to_one_percent(sampler: str, estimator: str, threads: int, pilot: int) -> tuple[int, float, float]:
    """Sequences needed for a 1% relative SE of Var(o_j) at N = 16384: size a run from the previous run's SE
    (starting from a pilot) until the measured SE is <= 1%; returns (sequences, rel. SE, wall time) of that run."""
    from varsim.sim import simulate

    n = 16384
    kwargs = dict(d_k=D, d_v=D, sampler=sampler, estimator=estimator, threads=threads)
    m = pilot
    for attempt in range(5):
        t0 = time.perf_counter()
        res = simulate([n], n_sequences=m, seed=3 + attempt, **kwargs)
        secs = time.perf_counter() - t0
        rel = float(res.var_se[0] / res.var[0])
        if rel <= 0.01:
            return m, rel, secs
        m = max(m + 32, math.ceil(1.1 * m * (rel / 0.01) ** 2))  # the batch-means SE itself is uncertain (~13%)
    return m, rel, secs


def compile_seconds() -> None:
    """Print the CPU seconds of each sim chunk kernel's first call with an empty Numba cache (a clean clone's first
    run), in the order a first ``varsim figures`` meets them; later kernels reuse what earlier ones compiled (the
    generator's functions). Must run before Numba is imported."""
    import tempfile

    if "numba" in __import__("sys").modules:
        raise SystemExit("--compile must set NUMBA_CACHE_DIR before Numba is imported")
    os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="bench_mc_numba_")
    from varsim.sim import _kernels_attn as KA
    from varsim.sim import _kernels_map as KM
    from varsim.sim._kernel_args import FullSampler, LogitsSampler
    from varsim.sim._rngstate import new_state
    from varsim.sim._variant_codes import pack
    from varsim.sim._ziggurat import kernel_tables

    tables, state, d = kernel_tables(), new_state(1), 8
    full = FullSampler(70, np.ones(d), False, 0.3, 0, 0, False, np.zeros((3, d)), 1.0, np.zeros(3), 1.0)
    logits = LogitsSampler(70, 1.0, False, d, 0.3, 0, np.zeros(3), 1.0)
    wmap = pack("topk", {"k": 3}, 70)
    calls = {
        "full_chunk": lambda: KA.full_chunk(state, full, tables, np.empty((4, 3)), np.empty(4)),
        "logits_chunk": lambda: KA.logits_chunk(state, logits, tables, np.empty((4, 3)), np.empty(4)),
        "map_logits_chunk": lambda: KM.map_logits_chunk(state, logits, wmap, tables, np.empty((4, 3)), np.empty(4),
                                                        np.empty(4)),
        "map_full_chunk": lambda: KM.map_full_chunk(state, full, wmap, tables, np.empty((4, 3)), np.empty(4),
                                                    np.empty(4)),
    }
    print(f"cold compilation, CPU s (load average before start = {os.getloadavg()[0]:.2f})")
    total = 0.0
    for name, call in calls.items():
        t0 = time.thread_time()
        call()
        secs = time.thread_time() - t0
        total += secs
        print(f"  {name:<18} {secs:6.1f}")
    print(f"  {'total':<18} {total:6.1f}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--keys", type=float, default=None, help="keys per brute-force measurement (default 2^22)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="small sizes, one repeat (smoke test)")
    ap.add_argument("--compile", action="store_true", help="only the cold compile CPU seconds of the chunk kernels")
    args = ap.parse_args(argv)
    if args.compile:
        compile_seconds()
        return 0
    import numba

    numba.set_num_threads(args.threads)
    budget = args.keys or (2**18 if args.quick else 2**22)
    repeats = 1 if args.quick else args.repeats
    print(f"d_k = d_v = {D}, threads = {args.threads}, load average before start = {os.getloadavg()[0]:.2f}, "
          f"best of {repeats}; keys/s = sequences * N / wall time")
    labels = {
        "full": "varsim full (sample estimator)",
        "logits_rb": "varsim logits + rao_blackwell",
        "logits": "varsim logits (sample estimator)",
        "numpy": "numpy float64 brute force",
        "torch": f"torch float32 brute force ({args.threads} thr)",
    }
    wall = {k: [] for k in labels}
    cpu = {k: [] for k in labels}
    for n in GRID:
        cases = {
            "full": case_varsim("full", "sample", n, 4 * budget, args.threads),
            "logits_rb": case_varsim("logits", "rao_blackwell", n, 256 * budget, args.threads),
            "logits": case_varsim("logits", "sample", n, 4 * budget, args.threads),
            "numpy": case_numpy(n, budget / 4),
            "torch": case_torch(n, budget, args.threads),
        }
        present = {k: v for k, v in cases.items() if v is not None}
        w, c = measure(present, repeats)
        for k in labels:
            wall[k].append(w.get(k))
            cpu[k].append(c.get(k))

    def table(rates):
        print(f"{'implementation':<36}" + "".join(f"{'N=' + str(n):>14}" for n in GRID))
        for k, label in labels.items():
            print(f"{label:<36}" + "".join(f"{'n/a':>14}" if v is None else f"{v:>14.3e}" for v in rates[k]))

    table(wall)
    print("\nratios (target)")
    for i, n in enumerate(GRID):
        full, nump, tor, rb = wall["full"][i], wall["numpy"][i], wall["torch"][i], wall["logits_rb"][i]
        parts = [f"N={n:>5}: full/numpy = {full / nump:6.1f} (>= {TARGETS['full_vs_numpy']:g})"]
        if tor is not None:
            parts.append(f"full/torch = {full / tor:5.2f} (>= {TARGETS['full_vs_torch']:g})")
        parts.append(f"logits+RB = {rb / 1e6:6.0f}M keys/s (>= {TARGETS['logits_rb_keys_per_s'] / 1e6:g}M)")
        print("  " + "   ".join(parts))
    print("\nkeys per CPU-second (all threads of this process; robust to outside load, counts torch's spin-waits)")
    table(cpu)

    one, many = generator_limit(1), generator_limit(args.threads)
    print(f"\ngenerator limit (varsim's xoshiro256++ lanes + ziggurat alone, float32 normals): {one / 1e6:.0f}M/s on 1 "
          f"thread, {many / 1e6:.0f}M/s on {args.threads} threads ({many / args.threads / 1e6:.0f}M/s per core; "
          f"1 -> {args.threads} threads: {many / one:.2f}x)")
    head = f"share of the limit at {args.threads} threads"
    print(f"{head:<36}" + "".join(f"{'N=' + str(n):>14}" for n in GRID))
    for k, per_key in NORMALS_PER_KEY.items():
        print(f"{labels[k]:<36}" + "".join(f"{v * per_key / many:>14.2f}" for v in wall[k]))

    print("\ntime to 1% relative SE of Var(o_j) at N = 16384, beta = 1 (d = 64)")
    for sampler, estimator in (("full", "sample"), ("logits", "rao_blackwell")):
        m, rel, secs = time_to_one_percent(sampler, estimator, args.threads, pilot=32)
        shrink = (rel / 0.01) ** 2  # SE ~ 1/sqrt(sequences): the run was this much bigger than needed
        print(f"  {sampler:>6} + {estimator:<13}: {m:>6d} sequences, measured rel. SE {100 * rel:.2f}%, {secs:.2f} s"
              f"  (scaled to exactly 1%: ~{max(32, round(m * shrink))} sequences, ~{secs * shrink:.2f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
