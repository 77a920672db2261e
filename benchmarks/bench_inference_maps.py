"""The transformer's own forwards of the inference-only maps and entmax15 against the registry's NumPy references.

    .venv/bin/python benchmarks/bench_inference_maps.py [--t 1024] [--batch 4] [--repeats 3]

The remedies experiment evaluates 2-block models at N up to 1024: the first block is full causal self-attention, so
every map runs on (B, H, T, T) logits. Until the model had its own forwards it ran the registry's references
(``varsim.variants.weights``: float64, validating every call, full sort for entmax15, argpartition for top-k). This
script times both on the same causal float32 logits (B = ``--batch``, H = 4, T = ``--t``; logits ~ 2 N(0, 1) and,
as a second case, 0.2 N(0, 1), where every key of a row is an entmax candidate), best of ``--repeats``, one BLAS
thread, and checks they agree.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from varsim import variants as VR
from varsim._common.blas import limit_blas_threads
from varsim.nn import weightmaps as WM

CASES = {"topk k=1": ("topk", {"k": 1}), "topk k=4": ("topk", {"k": 4}), "entmax15": ("entmax15", {}),
         "adaptive_temperature": ("adaptive_temperature", {}),
         "critical": ("critical", {"c": 1.0, "beta0": float(np.sqrt(2 * np.log(16)))}),
         "softmax (reference point)": ("softmax", {})}


def _best(fn, repeats):
    best = np.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--t", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    limit_blas_threads(1)
    rng = np.random.default_rng(0)
    shape = (args.batch, 4, args.t, args.t)
    mask = np.tril(np.ones((args.t, args.t), bool))[None, None]
    print(f"logits {shape}, causal mask, float32; best of {args.repeats}")
    print(f"{'map':28s} {'scale':>5s} {'registry s':>11s} {'model s':>9s} {'speed-up':>9s} {'max |diff|':>11s}")
    for scale in (2.0, 0.2):
        z = (scale * rng.standard_normal(shape)).astype(np.float32)
        z[~np.broadcast_to(mask, shape)] = -np.inf
        for label, (name, params) in CASES.items():
            t_ref, ref = _best(lambda: VR.weights(name, z, **params).astype(np.float32), args.repeats)
            t_mod, got = _best(lambda: WM.weight_map_forward(name, z.copy(), mask, None, **params)[0], args.repeats)
            print(f"{label:28s} {scale:5.1f} {t_ref:11.3f} {t_mod:9.3f} {t_ref / t_mod:8.1f}x "
                  f"{float(np.abs(ref - got).max()):11.1e}")


if __name__ == "__main__":
    main()
