"""Wall and CPU time of a few representative ``simulate`` calls, warm (kernels compiled or loaded first).

    python benchmarks/bench_sim_call.py [--threads 1] [--repeats 5] [--cases full,logits-rb,...]

Cases (d_k = d_v = 64, tau = 1, seed = 1):

- ``full``: ``simulate([16, 256, 4096], n_sequences=4000)`` (full sampler, online-softmax kernel),
- ``logits-sample``: ``simulate([2**20], sampler="logits", n_sequences=32)`` (logits and values drawn),
- ``logits-rb``: the same with ``estimator="rao_blackwell"`` (logits only) and ``n_sequences=256``,
- ``map-topk``: ``simulate([256, 4096], attention="topk", k=8, n_sequences=512)`` (a map kernel).

Prints, per case, the best and the median of ``--repeats`` timed calls (wall seconds, and CPU seconds of this
process). The numbers are only comparable within one machine under the same load; to compare two versions of the
code, run this script against each (e.g. ``PYTHONPATH=/path/to/other/checkout``) alternately, several times.
"""

from __future__ import annotations

import argparse
import statistics
import time

CASES = {
    "full": dict(n_grid=[16, 256, 4096], n_sequences=4000),
    "logits-sample": dict(n_grid=[2**20], sampler="logits", n_sequences=32),
    "logits-rb": dict(n_grid=[2**20], sampler="logits", estimator="rao_blackwell", n_sequences=256),
    "map-topk": dict(n_grid=[256, 4096], attention="topk", k=8, n_sequences=512),
}


def time_case(kwargs: dict, threads: int, repeats: int) -> tuple[list[float], list[float]]:
    from varsim.sim import simulate

    args = dict(d_k=64, d_v=64, tau=1.0, seed=1, threads=threads, **kwargs)
    simulate(**{**args, "n_grid": [16], "n_sequences": 32})  # compile or load every kernel this case uses
    walls, cpus = [], []
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        simulate(**args)
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    return walls, cpus


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--cases", default=",".join(CASES))
    a = p.parse_args(argv)
    import varsim

    print(f"varsim from {varsim.__file__}, threads={a.threads}, repeats={a.repeats}")
    print(f"{'case':<15} {'wall best':>10} {'wall median':>12} {'cpu best':>9} {'cpu median':>11}")
    for name in a.cases.split(","):
        walls, cpus = time_case(CASES[name], a.threads, a.repeats)
        print(f"{name:<15} {min(walls):>9.3f}s {statistics.median(walls):>11.3f}s {min(cpus):>8.3f}s "
              f"{statistics.median(cpus):>10.3f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
