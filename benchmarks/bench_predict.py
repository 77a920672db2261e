"""`varsim predict`: measured wall time against the up-front lower-bound estimate of ``varsim.train.budget``.

    python benchmarks/bench_predict.py [--quick]

Trains the quick reproduction's argmax run (one block, D = 16, H = 2, N0 = 16, 400 steps: a model that learned the
task at its training length, as ``predict`` requires) in a temporary directory, then times
``varsim.train.predict.predict`` on one BLAS thread, the model's own map and the CLI's four inference maps, at the
CLI's default lengths (N = 16 ... 16384) for a few (``n_sets``, ``n_sim``), and prints the wall time divided by
``prediction_cost(...).seconds``. Every ratio must stay above 1 for the estimate to be a lower bound (so that only
predictions that surely exceed ``max_hours`` are refused).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path


def _trained(outdir: Path) -> Path:
    from varsim.experiments.settings import ReproductionSettings, job_specs
    from varsim.train import TrainConfig, train

    spec = next(s for s in job_specs(ReproductionSettings.quick(seeds=1, tasks=("argmax",), norms=("none",))))
    train(TrainConfig.from_dict(spec["train_config"]), outdir, progress=False)
    return outdir


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="two small sizes only (a smoke run)")
    args = ap.parse_args()
    from varsim._common.blas import blas_threads
    from varsim.cli.predict import MAP_LABELS, map_specs
    from varsim.train.budget import prediction_cost
    from varsim.train.checkpoint import load_checkpoint
    from varsim.train.predict import TEMPERATURES, predict

    sizes = [(1024, 128), (2048, 128)] if args.quick else [(1024, 1024), (2048, 1024), (8192, 256), (2048, 4096)]
    with tempfile.TemporaryDirectory() as tmp:
        run = _trained(Path(tmp) / "run")
        _, config, _ = load_checkpoint(run)
        lengths = [config.train_max * 2**k for k in range(12) if config.train_max * 2**k <= 16384]
        maps = map_specs(MAP_LABELS)
        print(f"{'n_sets':>7} {'n_sim':>6} {'measured s':>11} {'estimate s':>11} {'ratio':>6}")
        for n_sets, n_sim in sizes:
            est = prediction_cost(config.model, config.train_max, lengths, n_sets, n_sim, 1 + len(maps),
                                  len(TEMPERATURES)).seconds
            with blas_threads(1):
                t0 = time.perf_counter()
                predict(run, lengths, maps=maps, n_sets=n_sets, n_sim=n_sim, max_hours=float("inf"))
                wall = time.perf_counter() - t0
            print(f"{n_sets:>7} {n_sim:>6} {wall:>11.2f} {est:>11.2f} {wall / est:>6.1f}", flush=True)


if __name__ == "__main__":
    main()
