"""`varsim evaluate` wall time by worker count, and measured time against the up-front cost estimate.

    python benchmarks/bench_evaluate.py [--n 16384] [--examples 128] [--repeats 5] [--quick]

Part 1, threads. ``varsim.train.evaluate`` of a freshly initialised default one-block model (D = 64, H = 4, float32;
the weights do not change the work) at set size ``--n``, ``--examples`` examples in batches of 64, with 1 and 2
worker threads (``workers=2``, what ``varsim evaluate`` does on two cores); evaluation multiplies on one BLAS thread
in every setting (more BLAS threads changed its float32 bits; ``benchmarks/check_threads.py``). The settings run
alternately, ``--repeats`` rounds in rotated order, each after a pause (``_timing.PAUSE_S``), in this process, so
other load on the machine hits all alike; the table gives the median seconds and the ratio to one worker (> 1:
slower than one worker).

Part 2, budget. For a few training and evaluation sizes, the wall time measured on one BLAS thread divided by the
lower-bound estimate of ``varsim.train.budget`` (``Cost.seconds``): every ratio must stay above 1 for the estimate
to be a lower bound (so that only runs that surely exceed ``max_hours`` are refused).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from _timing import PAUSE_S


def _parse():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=16384, help="set size (default 16384)")
    ap.add_argument("--examples", type=int, default=128, help="examples per evaluation (default 128)")
    ap.add_argument("--repeats", type=int, default=5, help="rounds of the two settings (default 5)")
    ap.add_argument("--quick", action="store_true", help="N = 2048, 64 examples, 2 rounds (a smoke run)")
    return ap.parse_args()


def bench_threads(task: str, n: int, examples: int, repeats: int) -> dict:
    from varsim.nn.model import ModelConfig, Transformer
    from varsim.train import evaluate

    model = Transformer(ModelConfig(task=task), seed=0)
    settings = {"1 worker": 1, "2 workers": 2}
    times = {k: [] for k in settings}
    evaluate(model, [n], n_examples=64, progress=False)  # warm-up
    order = list(settings.items())
    for r in range(repeats):
        for label, workers in order[r % len(order):] + order[: r % len(order)]:  # rotated: no setting always runs first
            time.sleep(PAUSE_S)
            t0 = time.perf_counter()
            evaluate(model, [n], n_examples=examples, workers=workers, progress=False)
            times[label].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in times.items()}


def bench_budget(quick: bool) -> list[tuple[str, float, float]]:
    from varsim._common.blas import blas_threads
    from varsim.nn.model import Transformer
    from varsim.nn.optim import make_optimizer
    from varsim.train import TrainConfig, evaluate
    from varsim.train.budget import evaluation_cost, training_cost
    from varsim.train.loop import training_batch

    rows = []
    steps = 10 if quick else 40
    for label, kw in [("train argmax D=64 B=64 N<=16", dict(task="argmax")),
                      ("train dictionary D=16 B=8", dict(task="dictionary", model={"d_model": 16, "n_heads": 2},
                                                         batch_size=8)),
                      ("train argmax 2 blocks D=128", dict(task="argmax", model={"n_blocks": 2, "d_model": 128}))]:
        cfg = TrainConfig(**kw, steps=steps)
        model = Transformer(cfg.model, seed=0)
        opt = make_optimizer(cfg.optimizer, model.params, **cfg.optimizer_kwargs())
        with blas_threads(1):
            t0 = time.perf_counter()
            for k in range(steps):
                opt.step(model.loss_and_grads(training_batch(cfg, k))[2])
            dt = time.perf_counter() - t0
        rows.append((label, dt, training_cost(cfg).seconds))
    n = 2048 if quick else 16384
    for label, kw in [(f"evaluate argmax N={n}", dict(task="argmax")),
                      (f"evaluate dictionary D=16 N={n}", dict(task="dictionary", model={"d_model": 16,
                                                                                          "n_heads": 2}))]:
        cfg = TrainConfig(**kw, steps=1)
        model = Transformer(cfg.model, seed=0)
        t0 = time.perf_counter()
        evaluate(model, [n], n_examples=64, progress=False)
        dt = time.perf_counter() - t0
        rows.append((label, dt, evaluation_cost(cfg.model, [n], 64, 64).seconds))
    return rows


def main() -> int:
    args = _parse()
    n, examples, repeats = (2048, 64, 2) if args.quick else (args.n, args.examples, args.repeats)
    load = os.getloadavg()[0]
    print(f"load average {load:.1f} on {os.cpu_count()} cores; OPENBLAS_NUM_THREADS="
          f"{os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}")
    print(f"\nevaluate at N = {n}, {examples} examples, batch 64: median of {repeats} rounds (s)")
    print(f"{'task':<11} {'setting':<20} {'seconds':>8} {'/ 1 worker':>11}")
    for task in ("argmax", "dictionary"):
        med = bench_threads(task, n, examples, repeats)
        one = med["1 worker"]
        for label, t in med.items():
            print(f"{task:<11} {label:<20} {t:>8.2f} {t / one:>11.2f}")
    print("\nmeasured time / lower-bound estimate (varsim.train.budget), one BLAS thread: must be > 1")
    for label, measured, estimate in bench_budget(args.quick):
        print(f"{label:<36} {measured:>8.3f} s {estimate:>8.3f} s  ratio {measured / estimate:>6.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
