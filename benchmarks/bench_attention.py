"""Cost of each attention weight map in varsim's transformer, relative to softmax in the same run.

    .venv/bin/python benchmarks/bench_attention.py [--threads 1] [--repeats 20] [--eval-n 4096] [--quick]

Per map (varsim.variants.WEIGHT_MAPS; ipr_norm as "softmax+ipr_norm"), on the argmax task with the 1-block model of
bench_train.py (float32, D = 64, H = 4, batch 64):
  train ms   median time of ``Transformer.loss_and_grads`` at set size 16 (trained maps only; the inference-only
             maps have no backward pass)
  eval ex/s  ``Transformer.predict`` throughput at N = ``--eval-n`` (every map)
The maps are timed round-robin, one step each per round, so that other load on the machine hits them alike; the
ratio column divides by softmax's time of the same run (> 1 means slower than softmax).
"""

from __future__ import annotations

import argparse
import os
import time


def _parse():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=20, help="timed training steps per map")
    ap.add_argument("--eval-n", type=int, default=4096, help="set size of the evaluation measurement")
    ap.add_argument("--eval-repeats", type=int, default=5)
    ap.add_argument("--quick", action="store_true")
    return ap.parse_args()


ARGS = _parse() if __name__ == "__main__" else None
if ARGS is not None:
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(ARGS.threads)  # before NumPy loads OpenBLAS

import numpy as np  # noqa: E402

from varsim.nn.model import ModelConfig, Transformer  # noqa: E402
from varsim.nn.weightmaps import TRAINABLE_MAPS  # noqa: E402
from varsim.tasks import make_batch  # noqa: E402
from varsim.variants import WEIGHT_MAPS  # noqa: E402

BASE = dict(task="argmax", d_model=64, n_heads=4, n_blocks=1, dtype="float32")
PARAMS = {"topk": {"k": 8}}


def _variants():
    out = [(name, "none") for name in WEIGHT_MAPS] + [("softmax", "ipr_norm")]
    return {(f"{n}+{o}" if o != "none" else n): (n, o) for n, o in out}


def main(args) -> None:
    repeats = 3 if args.quick else args.repeats
    eval_n = 512 if args.quick else args.eval_n
    models = {}
    for label, (name, output) in _variants().items():
        cfg = ModelConfig(**BASE, attention=name, attention_params=PARAMS.get(name), attention_output=output)
        models[label] = Transformer(cfg, seed=0)
    rng = np.random.default_rng(0)
    train_batch = make_batch("argmax", 64, 16, rng)
    eval_batch = make_batch("argmax", 64, eval_n, rng)
    trainable = [k for k, (n, _) in _variants().items() if n in TRAINABLE_MAPS]
    for k in trainable:  # warm-up
        models[k].loss_and_grads(train_batch)
    times = {k: [] for k in models}
    for _ in range(repeats):
        for k in trainable:
            t0 = time.perf_counter()
            models[k].loss_and_grads(train_batch)
            times[k].append(time.perf_counter() - t0)
    eval_times = {k: [] for k in models}
    for _ in range(1 if args.quick else args.eval_repeats):
        for k, m in models.items():
            t0 = time.perf_counter()
            m.predict(eval_batch)
            eval_times[k].append(time.perf_counter() - t0)
    base_train = np.median(times["softmax"])
    base_eval = np.median(eval_times["softmax"])
    print(f"threads {args.threads}, float32, D=64, H=4, batch 64; train at N=16 (median of {repeats}), "
          f"predict at N={eval_n}")
    print(f"{'map':28s} {'train ms':>9s} {'ratio':>6s} {'eval ex/s':>10s} {'ratio':>6s}")
    for k in models:
        if times[k]:
            tr = f"{1e3 * np.median(times[k]):9.2f} {np.median(times[k]) / base_train:6.2f}"
        else:
            tr = f"{'-':>9s} {'-':>6s}"
        ev = np.median(eval_times[k])
        print(f"{k:28s} {tr} {64 / ev:10.1f} {ev / base_eval:6.2f}")


if __name__ == "__main__":
    main(ARGS)
