"""Evaluation time per example against the chunk size of ``Transformer.predict`` (``EVAL_CHUNK_TOKENS``).

    .venv/bin/python benchmarks/bench_eval_chunks.py [--tokens 16 14 13 12]

For the remedies grid's models (D = 64, H = 4, untrained softmax weights, float32, one BLAS thread) of both tasks at
depth 1 and 2, CPU milliseconds per example of ``predict`` at N = 16, 256, 1024 for chunks of 2^k tokens, and a
check that every chunk size gives the same predictions. Large chunks stream their activations (and a 2-block
model's T x T attention matrices, 16 MiB per example at N = 1024) through memory several times per layer; small ones
stay in cache.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import varsim.nn.model as M
from varsim._common.blas import limit_blas_threads
from varsim._common.seeding import root_sequence
from varsim.experiments.remedies import remedies_settings
from varsim.train.evaluate import evaluation_batch


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, nargs="+", default=[16, 14, 13, 12], help="log2 of the chunk sizes")
    args = ap.parse_args()
    limit_blas_threads(1)
    st = remedies_settings()
    print("ms/example (CPU) at chunks of " + ", ".join(f"2^{k}" for k in args.tokens) + " tokens")
    for task in ("argmax", "dictionary"):
        for depth in (1, 2):
            cfg = st.train_config(task, "none", "residual", 0, attention="softmax", depth=depth, lr=1e-3)
            for n, examples in ((16, 512), (256, 256), (1024, 32 if depth == 2 else 256)):
                batch = evaluation_batch(cfg.model, n, 0, examples, root_sequence(0))
                row, first = [], None
                for k in args.tokens:
                    M.EVAL_CHUNK_TOKENS = 1 << k
                    model = M.Transformer(cfg.model, seed=0)
                    t0 = time.process_time()
                    pred = model.predict(batch)
                    row.append((time.process_time() - t0) / examples * 1e3)
                    first = pred if first is None else first
                    assert np.array_equal(pred, first), "chunking changed a prediction"
                print(f"{task:10s} depth {depth} N = {n:5d}: " + "  ".join(f"{x:8.2f}" for x in row))


if __name__ == "__main__":
    main()
