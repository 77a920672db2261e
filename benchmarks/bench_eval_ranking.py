"""Cost of the ranking/dispersion decomposition in evaluation: ``Transformer.logits_and_weights`` (which
``varsim.train.evaluate`` runs to read the last block's attention weights) and ``Transformer.analysis`` (every
block's records) against ``Transformer.predict`` (the logits only), on the remedies grid's model
(D = 64, 4 heads, untrained: the cost does not depend on the weights), batch 64 at N = 1024, 1 BLAS thread, best of 5.

    python benchmarks/bench_eval_ranking.py
"""

from __future__ import annotations

import time

import numpy as np

from varsim._common.blas import limit_blas_threads
from varsim.nn.model import ModelConfig, Transformer
from varsim.tasks import make_batch


def best_seconds(fn, batch, repeats: int = 5) -> float:
    fn(batch)  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn(batch)
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    limit_blas_threads(1)
    print("blocks  predict ms  logits_and_weights ms  ratio  analysis ms  ratio   (D = 64, 4 heads, batch 64, "
          "N = 1024, best of 5)")
    for blocks in (1, 2):
        model = Transformer(ModelConfig(task="argmax", d_model=64, n_heads=4, n_blocks=blocks), seed=0)
        batch = make_batch("argmax", 64, 1024, np.random.default_rng(0))
        p, w = best_seconds(model.predict, batch), best_seconds(model.logits_and_weights, batch)
        a = best_seconds(model.analysis, batch)
        print(f"{blocks:6d}  {p * 1e3:10.1f}  {w * 1e3:21.1f}  {w / p:5.2f}  {a * 1e3:11.1f}  {a / p:5.2f}")


if __name__ == "__main__":
    main()
