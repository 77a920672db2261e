"""Evaluation time per example against the chunk size of ``Transformer.predict`` (``set_cost.EVAL_CHUNK_TOKENS``) and,
for 2-block models, the row blocks of the first block's self-attention (``ROW_BLOCK_ELEMENTS``).

    .venv/bin/python benchmarks/bench_eval_chunks.py [--tokens 16 14 13 12] [--row-blocks 30 19 17 15]

For the remedies grid's models (D = 64, H = 4, untrained softmax weights, float32, one BLAS thread) of both tasks at
depth 1 and 2, CPU milliseconds per example of ``predict`` at N = 16, 256, 1024 for chunks of 2^k tokens, and a
check that every chunk size gives the same predictions. Large chunks stream their activations (and a 2-block
model's T x T attention matrices, 16 MiB per example at N = 1024) through memory several times per layer; small ones
stay in cache. The second table times a 2-block model's ``predict`` (at chunks of ``EVAL_CHUNK_TOKENS``) with the
first block's logits computed 2^k values at a time (2^30: the whole chunk at once, as the training forward does),
for the trained maps and the inference-only maps of the remedies grid, and checks the predictions agree.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import varsim.nn.attention as A
import varsim.nn.model as M
import varsim.nn.set_cost as S
from varsim._common.blas import limit_blas_threads
from varsim._common.seeding import root_sequence
from varsim.experiments.remedies import remedies_settings
from varsim.train.evaluate import evaluation_batch


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, nargs="+", default=[16, 14, 13, 12], help="log2 of the chunk sizes")
    ap.add_argument("--row-blocks", type=int, nargs="+", default=[30, 19, 17, 15],
                    help="log2 of the logits per row block of a 2-block model's first block")
    ap.add_argument("--skip-chunks", action="store_true", help="only the row-block table")
    args = ap.parse_args()
    limit_blas_threads(1)
    st = remedies_settings()
    if not args.skip_chunks:
        chunk_table(st, args.tokens)
    row_block_table(st, args.row_blocks)


def chunk_table(st, tokens):
    default = S.EVAL_CHUNK_TOKENS
    print("ms/example (CPU) at chunks of " + ", ".join(f"2^{k}" for k in tokens) + " tokens")
    for task in ("argmax", "dictionary"):
        for depth in (1, 2):
            cfg = st.train_config(task, "none", "residual", 0, attention="softmax", depth=depth, lr=1e-3)
            for n, examples in ((16, 512), (256, 256), (1024, 32 if depth == 2 else 256)):
                batch = evaluation_batch(cfg.model, n, 0, examples, root_sequence(0))
                row, first = [], None
                for k in tokens:
                    S.EVAL_CHUNK_TOKENS = 1 << k
                    model = M.Transformer(cfg.model, seed=0)
                    t0 = time.process_time()
                    pred = model.predict(batch)
                    row.append((time.process_time() - t0) / examples * 1e3)
                    first = pred if first is None else first
                    assert np.array_equal(pred, first), "chunking changed a prediction"
                print(f"{task:10s} depth {depth} N = {n:5d}: " + "  ".join(f"{x:8.2f}" for x in row))
    S.EVAL_CHUNK_TOKENS = default


def row_block_table(st, blocks):
    default, chunk = A.ROW_BLOCK_ELEMENTS, S.EVAL_CHUNK_TOKENS
    print(f"\n2-block models, N = 1024, chunks of {chunk} tokens: ms/example (CPU) with row blocks of "
          + ", ".join(f"2^{k}" for k in blocks) + " logits")
    maps = [(a, None) for a in ("softmax", "ssmax", "sigmoid", "entmax15")]
    maps += [("softmax", name) for name in ("topk1", "adaptive_temperature")]
    for task in ("argmax", "dictionary"):
        for att, inference in maps:
            cfg = st.train_config(task, "none", "residual", 0, attention=att, depth=2, lr=1e-3)
            batch = evaluation_batch(cfg.model, 1024, 0, 28, root_sequence(0))
            model = M.Transformer(cfg.model, seed=0)
            if inference is not None:
                item = st.inference_attentions[inference]
                model = model.with_attention(item["attention"], item.get("params"))
            row, first = [], None
            for k in blocks:
                A.ROW_BLOCK_ELEMENTS = 1 << k
                t0 = time.process_time()
                pred = model.predict(batch)
                row.append((time.process_time() - t0) / len(pred) * 1e3)
                first = pred if first is None else first
                agree = np.mean(pred == first)
                assert agree >= 0.95, f"row blocks changed {1 - agree:.0%} of the predictions"
            label = inference or att
            print(f"{task:10s} {label:21s}: " + "  ".join(f"{x:8.2f}" for x in row)
                  + f"   ({row[0] / min(row[1:]):.2f}x)")
    A.ROW_BLOCK_ELEMENTS = default


if __name__ == "__main__":
    main()
