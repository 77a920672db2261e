"""varsim.testing's same-draw check on real PyTorch scaled_dot_product_attention backends (GPU, or CPU torch).

    PYTHONPATH=. python3 benchmarks/bench_testing_gpu.py --out DIR            # CUDA when available, else CPU
    PYTHONPATH=. python3 benchmarks/bench_testing_gpu.py --out DIR --device cpu --seeds 2

Needs torch (never a varsim dependency) and varsim importable (from the source tree with PYTHONPATH=.). For each
backend (``math``, ``efficient``, ``flash``, each forced with ``torch.nn.attention.sdpa_kernel``) and dtype
(float16, bfloat16, float32, float64; a combination the backend refuses is listed as unsupported) it runs the
standard battery (16 cases) at ``--seeds`` values of ``rng`` on:

* the correct wrapper: an explicit bottom-right causal mask and padding masks (the flash backend takes no
  ``attn_mask``: its wrapper takes no mask and the masked cases are skipped); q, K and V zero-padded to one head
  dimension, a multiple of 8, as the fused kernels require;
* the tutorial's naive wrapper (``is_causal=True``: the causal mask aligned top-left) and a wrapper scaling the
  logits by ``1/d`` instead of ``1/sqrt(d)``;
* every bug class of the catalogue that lives outside the softmax (``Kernel.outside_softmax``: inputs, scale,
  boolean or additive mask, output), planted around the real SDPA call; the bugs inside the softmax (online-softmax
  rescaling, low-precision log-sum-exp, ...) cannot be planted into a library kernel and are covered by the
  emulated catalogue (``benchmarks/bench_testing_catalogue.py``).

A cell counts the seeds at which the check failed; the correct wrapper's cell is its false alarms, with the largest
``|diff| / tolerance`` it reached. Writes ``DIR/testing_gpu.md`` (Markdown, naming the device) and
``DIR/testing_gpu.json``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

BACKENDS = ("math", "efficient", "flash")
DTYPES = ("float16", "bfloat16", "float32", "float64")


def _sdpa(torch, q, K, V, attn_mask=None, is_causal=False, scale=1.0):
    """SDPA with q, K and V zero-padded to one head dimension, a multiple of 8, as the fused kernels require (zeros
    change no logit; the extra value columns are cut)."""
    d_v = V.shape[-1]
    d = -(-max(q.shape[-1], d_v) // 8) * 8
    pad = lambda x: torch.nn.functional.pad(x, (0, d - x.shape[-1]))  # noqa: E731
    o = torch.nn.functional.scaled_dot_product_attention(pad(q), pad(K), pad(V), attn_mask=attn_mask,
                                                         is_causal=is_causal, scale=scale)
    return o[..., :d_v]


def _wrappers(torch, with_mask: bool):
    """The correct wrapper, the naive causal one and the 1/d one, as functions of (B, H, L, d) tensors."""

    def causal_mask(L, N, device):
        return torch.ones(L, N, dtype=torch.bool, device=device).tril(diagonal=N - L)

    if with_mask:
        def sdpa_correct(q, K, V, tau=1.0, causal=False, mask=None):
            if causal:
                mask = causal_mask(q.shape[-2], K.shape[-2], q.device)
            return _sdpa(torch, q, K, V, attn_mask=mask, scale=tau / math.sqrt(q.shape[-1]))

        def sdpa_one_over_d(q, K, V, tau=1.0, causal=False, mask=None):
            if causal:
                mask = causal_mask(q.shape[-2], K.shape[-2], q.device)
            return _sdpa(torch, q, K, V, attn_mask=mask, scale=tau / q.shape[-1])
    else:
        def sdpa_correct(q, K, V, tau=1.0):
            return _sdpa(torch, q, K, V, scale=tau / math.sqrt(q.shape[-1]))

        def sdpa_one_over_d(q, K, V, tau=1.0):
            return _sdpa(torch, q, K, V, scale=tau / q.shape[-1])

    def sdpa_naive(q, K, V, tau=1.0, causal=False):
        return _sdpa(torch, q, K, V, is_causal=causal, scale=tau / math.sqrt(q.shape[-1]))

    return {"correct": sdpa_correct, "naive causal (is_causal)": sdpa_naive, "scale 1/d": sdpa_one_over_d}


def _planted(torch, kernel, dtype, with_mask: bool):
    """Catalogue bug ``kernel`` planted around the real SDPA call: inputs, scale, mask and output as the bug has
    them, the attention itself computed by the backend."""

    def to_np(t):
        return t.detach().to("cpu", torch.float64).numpy()

    def fn(q, K, V, tau=1.0, causal=False, mask=None):
        dev, dt = q.device, q.dtype
        if kernel.inputs is not None:
            qn, Kn, Vn, mn = kernel.inputs(to_np(q), to_np(K), to_np(V), None if mask is None else
                                           mask.cpu().numpy())
            q, K, V = (torch.from_numpy(np.array(a)).to(dev, dt) for a in (qn, Kn, Vn))
            mask = None if mn is None else torch.from_numpy(np.ascontiguousarray(mn)).to(dev)
        L, N = q.shape[-2], K.shape[-2]
        m = kernel.library_mask(None if mask is None else mask.cpu().numpy(), causal, L, N)
        if m is not None:
            m = torch.from_numpy(np.ascontiguousarray(m)).to(dev)
            m = m if m.dtype == torch.bool else m.to(dt)
        o = _sdpa(torch, q, K, V, attn_mask=m, scale=kernel.scale(tau, q.shape[-1], V.shape[-1]))
        if kernel.output is not None:
            o = torch.from_numpy(np.ascontiguousarray(kernel.output(to_np(o), to_np(o))[0])).to(dev, dt)
        return o

    if not with_mask:
        def fn_no_mask(q, K, V, tau=1.0):
            return fn(q, K, V, tau=tau)
        fn_no_mask.__qualname__ = kernel.name
        return fn_no_mask
    fn.__qualname__ = kernel.name
    return fn


def _run(check, attn, seeds):
    """Failures over the seeds, those with the verdict low precision, and the largest ratio."""
    failed, worst, low = 0, 0.0, 0
    for seed in seeds:
        report = check(attn, rng=seed)
        failed += report.verdict != "pass"
        low += report.verdict == "low_precision"
        ran = [r.ratio for r in report.results if not r.skipped]
        worst = max(worst, max(ran))
    return {"failed": failed, "runs": len(seeds), "low_precision": low, "worst_ratio": worst}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True, help="folder for testing_gpu.md and testing_gpu.json")
    p.add_argument("--device", default=None, help="torch device (default: cuda when available, else cpu)")
    p.add_argument("--seeds", type=int, default=3, help="rng values per wrapper (default 3)")
    p.add_argument("--backends", default=",".join(BACKENDS), help="comma-separated subset of math,efficient,flash")
    p.add_argument("--dtypes", default=",".join(DTYPES), help="comma-separated subset of the four dtypes")
    args = p.parse_args(argv)
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from varsim.testing import MUTANTS, adapt, check_against_reference

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    backends = [b for b in args.backends.split(",") if b]
    dtypes = [d for d in args.dtypes.split(",") if d]
    if any(b not in BACKENDS for b in backends) or any(d not in DTYPES for d in dtypes) or args.seeds < 1:
        p.error("--backends/--dtypes/--seeds: unknown name or seeds < 1")
    name = torch.cuda.get_device_name(device) if device.startswith("cuda") else (platform.processor() or "CPU")
    enum = {"math": SDPBackend.MATH, "efficient": SDPBackend.EFFICIENT_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION}
    seeds = tuple(range(args.seeds))
    bugs = [k for k in MUTANTS.values() if k.outside_softmax]  # planted around the library call
    wall, cpu = time.perf_counter(), time.process_time()
    results = {}
    for backend in backends:
        with_mask = backend != "flash"
        for dtype in dtypes:
            key = f"{backend} {dtype}"
            row = results[key] = {}
            with sdpa_kernel([enum[backend]]):
                wrappers = dict(_wrappers(torch, with_mask))
                wrappers.update({k.name: _planted(torch, k, dtype, with_mask) for k in bugs
                                 if with_mask or not k.needs})
                for label, fn in wrappers.items():
                    attn = adapt(fn, array="torch", dtype=dtype, layout="bhld", device=device)
                    try:
                        row[label] = _run(check_against_reference, attn, seeds)
                    except RuntimeError as exc:  # the backend refuses this dtype (or shape)
                        row[label] = {"error": str(exc).splitlines()[0][:160]}
                        if label == "correct":
                            break
            print(f"{key}: " + ", ".join(f"{k} {v.get('failed', 'x')}" for k, v in row.items()), flush=True)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu

    cols = list(results)
    labels = ["correct", "naive causal (is_causal)", "scale 1/d"] + [k.name for k in bugs]

    def cell(res, label):
        r = res.get(label)
        if r is None:
            return "-"
        if "error" in r:
            return "unsupported"
        text = f"{r['failed']}/{r['runs']}"
        if label == "correct":
            text += f" (worst {r['worst_ratio']:.2g} x tol)"
        elif r["low_precision"]:
            text += f" ({r['low_precision']} lp)"
        return text

    lines = [f"Device: {name} ({device}); torch {torch.__version__}; {args.seeds} seeds x 16 cases per cell; "
             f"{wall:.0f} s wall, {cpu:.0f} s CPU.", "",
             "| wrapper | " + " | ".join(cols) + " |", "|---|" + "---|" * len(cols)]
    for label in labels:
        shown = label if label in ("correct", "naive causal (is_causal)", "scale 1/d") else f"`{label}`"
        lines.append(f"| {shown} | " + " | ".join(cell(results[c], label) for c in cols) + " |")
    errors = {c: r["correct"]["error"] for c, r in results.items() if "error" in r.get("correct", {})}
    if errors:
        lines += ["", "Unsupported: " + "; ".join(f"{c}: {e}" for c, e in errors.items())]
    lines += ["", "Cells: seeds at which the check failed (for `correct`: false alarms, and the largest |diff| / "
              "tolerance reached); `lp`: failures with the verdict low precision. The flash backend takes no "
              "attn_mask, so its masked cases are skipped and the mask bugs do not apply."]
    text = "\n".join(lines) + "\n"
    print(text)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "testing_gpu.md").write_text(text)
    record = {"device": name, "device_type": device, "torch": torch.__version__, "python": sys.version.split()[0],
              "seeds": args.seeds, "wall_s": wall, "cpu_s": cpu, "results": results,
              "cpu_count": os.cpu_count()}
    (args.out / "testing_gpu.json").write_text(json.dumps(record, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
