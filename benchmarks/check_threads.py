"""Are training and evaluation bitwise the same on 1, 2 and 4 threads (Numba, BLAS and evaluation workers)?

Trains one small model and evaluates it in fresh processes whose thread pools are set by the environment
(``NUMBA_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``, ``OMP_NUM_THREADS`` = 1, 2 or 4), each evaluated with ``workers``
1 and with as many workers as the environment's threads; prints the SHA-256 of the trained weights, of the logits
and the last block's query weights on a fixed batch (N = 1024, computed as ``evaluate`` computes them), of the
ranking statistics (:mod:`varsim.train.ranking`, floats included) and the correct counts, and whether they agree.
Then trains the same model with its batches cut into ``--shards`` shards (``TrainConfig.shards``,
:mod:`varsim.nn.shards`) on 1, 2 and 4 threads (``train(threads=...)``, with the environment's thread counts set
alike) and says whether the weights agree.

    python benchmarks/check_threads.py [--steps 300] [--shards 2]

Training pins BLAS to one thread (``varsim.train`` runs inside ``blas_threads(1)``) and varsim's Numba kernels run
serially, so the thread counts of the environment cannot change its numbers; evaluation also multiplies on one BLAS
thread whatever the environment says, and takes its cores as ``workers`` over chunks fixed by the batch (an
OpenBLAS GEMM on 2 threads rounds the model's large products differently from one: ``evaluate(blas_threads=2)``
used to give other ranking bits; the deprecated argument now only raises ``workers``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile

CHILD = r"""
import hashlib, json, sys
import numpy as np
from varsim._common.blas import blas_threads
from varsim._common.seeding import resolve_seed
from varsim.train import TrainConfig, train, evaluate
from varsim.train.checkpoint import latest_checkpoint, load_checkpoint, read_checkpoint
from varsim.train.evaluate import evaluation_batch

steps, outdir, workers, shards, threads = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), \
    int(sys.argv[5])
cfg = TrainConfig(task="argmax", steps=steps, batch_size=32, train_max=16, lr=3e-3, seed=1, data_seed=2,
                  checkpoint_every=steps, model={"d_model": 64, "n_heads": 4}, shards=shards)
train(cfg, outdir, progress=False, threads=threads)
_, arrays = read_checkpoint(latest_checkpoint(outdir))
w = hashlib.sha256(b"".join(arrays[k].tobytes() for k in sorted(arrays) if k.startswith("param"))).hexdigest()
ev = evaluate(outdir, [16, 256, 1024], 256, 64, 0, progress=False, workers=workers)
model, _, _ = load_checkpoint(outdir)
with blas_threads(1):  # as evaluate runs the model
    logits, weights = model.logits_and_weights(evaluation_batch(model.config, 1024, 0, 64, resolve_seed(0, None)),
                                               workers=workers)
print(json.dumps({"weights": w, "correct": [int(c) for c in ev["correct"]],
                  "logits": hashlib.sha256(logits.tobytes() + weights.tobytes()).hexdigest(),
                  "ranking": hashlib.sha256(json.dumps(ev["ranking"], sort_keys=True).encode()).hexdigest()}))
"""


def run(steps: int, threads: int, workers: int, shards: int = 1) -> dict:
    env = {**os.environ, **{k: str(threads) for k in ("NUMBA_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                                       "OMP_NUM_THREADS")}}
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run([sys.executable, "-c", CHILD, str(steps), tmp + "/run", str(workers), str(shards),
                              str(threads)],
                             env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--shards", type=int, default=2, help="shards of the sharded runs (default 2)")
    args = ap.parse_args()
    from varsim._common.provenance import compute_environment

    env = compute_environment()
    print(f"CPU {env['cpu']}; BLAS {[(b['library'], b['version'], b['kernel']) for b in env['blas']]}")
    rows = {}
    for threads in (1, 2, 4):
        for workers in sorted({1, threads}):
            key = f"env threads {threads}, evaluate workers={workers}"
            rows[key] = r = run(args.steps, threads, workers)
            print(f"{key:48s} weights {r['weights'][:12]}  correct {r['correct']}  logits {r['logits'][:12]}  "
                  f"ranking {r['ranking'][:12]}")
    weights = {r["weights"] for r in rows.values()}
    outputs = {(tuple(r["correct"]), r["logits"], r["ranking"]) for r in rows.values()}
    print(f"training: {'bitwise equal' if len(weights) == 1 else 'DIFFERS'} across 1, 2 and 4 threads "
          f"({len(rows)} processes)")
    print(f"evaluation: {'bitwise equal' if len(outputs) == 1 else 'DIFFERS'} across 1, 2 and 4 threads and "
          "workers (counts, logits and weights, ranking statistics)")
    sharded = {}
    for threads in (1, 2, 4):
        key = f"shards {args.shards}, {threads} threads"
        sharded[key] = rows[key] = run(args.steps, threads, 1, args.shards)
        print(f"{key:48s} weights {rows[key]['weights'][:12]}")
    print(f"sharded training: {'bitwise equal' if len({r['weights'] for r in sharded.values()}) == 1 else 'DIFFERS'}"
          f" across 1, 2 and 4 threads ({args.shards} shards)")
    digest = hashlib.sha256(json.dumps(rows, sort_keys=True).encode()).hexdigest()[:12]
    print(f"(report digest {digest})")


if __name__ == "__main__":
    main()
