"""The backward check's numbers that the page "Test your backward pass" states: the power table per dtype and
profile, false alarms of correct torch kernels, and the CPU time of one gradient check of a torch kernel.

    nice python benchmarks/bench_testing_backward.py               # 20 seeds per dtype (~10 min on 2 busy cores)
    nice python benchmarks/bench_testing_backward.py --seeds 3     # a smoke run
    nice python benchmarks/bench_testing_backward.py --only torch  # the torch rows only

1. Power (no torch needed): :func:`varsim.testing.backward_power_report` at every dtype (float64, float32, float16,
   bfloat16, emulated in NumPy) under the fused profile, and at float16/bfloat16 under the eager profile (with the
   eager kernel among the correct ones): per bug class, the seeds caught; the false alarms of the correct kernels;
   ``missed`` = a bug that passed at a seed where its error was at least 10x a correct kernel's. Written to
   ``docs/site/examples/testing_backward_power.md``.
2. Correct torch kernels (with torch): PyTorch's ``scaled_dot_product_attention`` (its CPU backend; the cases its
   keywords cover) under the fused profile, and a Hugging Face-style eager attention written in torch (products in
   the dtype, softmax in float32, every feature of the battery) under the eager profile, at ``--seeds`` seeds and
   float32, float16, bfloat16: failures out of runs.
3. Time (with torch): CPU milliseconds (``time.process_time``, all threads) and wall milliseconds of one
   ``check_gradients(torch_gradients(...))`` on the default battery, median of ``--repeats`` runs after one warm-up,
   per kernel and dtype, with one torch thread and with torch's default thread count (on a loaded machine the idle
   spinning of torch's worker threads on these tiny tensors costs far more than the work); the target is 200 ms
   CPU.

Sections 2 and 3 go to ``docs/site/examples/testing_backward_torch.md``. Both files carry the command, the seed
count and the machine's load average.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import statistics
import time
from pathlib import Path

from varsim._common.atomic import atomic_write_text
from varsim.testing import GRADIENT_CASES, backward_power_report, check_gradients

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "site" / "examples"
DTYPES = ("float64", "float32", "float16", "bfloat16")


def _cell(row) -> str:
    if row.not_applicable:
        return "n/a"
    return f"{row.caught}/{row.runs}" + (" **MISSED**" if row.missed else "")


def power_section(seeds: int) -> str:
    """One column per dtype and profile, one row per kernel."""
    configs = [(d, "fused") for d in DTYPES] + [(d, "eager") for d in ("float16", "bfloat16")]
    reports = {}
    for dtype, profile in configs:
        t0 = time.process_time()
        reports[dtype, profile] = backward_power_report(dtype=dtype, seeds=seeds, profile=profile)
        print(f"power {dtype} {profile}: {time.process_time() - t0:.1f} s CPU", flush=True)
    names = list(dict.fromkeys(r.name for rep in reports.values() for r in rep.rows))
    head = "| kernel | bug | " + " | ".join(f"{d} ({p})" for d, p in configs) + " |"
    lines = [head, "|---|---|" + "---|" * len(configs)]
    for name in names:
        cells, bug = [], ""
        for key in configs:
            row = next((r for r in reports[key].rows if r.name == name), None)
            cells.append("" if row is None else _cell(row))
            bug = bug or ("" if row is None else ("no" if row.correct else "yes"))
        lines.append(f"| `{name}` | {bug} | " + " | ".join(cells) + " |")
    fa = [f"{reports[k].false_alarms[0]}/{reports[k].false_alarms[1]}" for k in configs]
    missed = [str(len(reports[k].missed)) for k in configs]
    lines.append("| false alarms | | " + " | ".join(fa) + " |")
    lines.append("| bug classes missed (excess >= 10) | | " + " | ".join(missed) + " |")
    return "\n".join(lines)


def _load_hf_eager():
    """The docs' Hugging Face-style eager attention (docs/site/examples/hf_eager_attention.py, the one copy the
    tests use too)."""
    spec = importlib.util.spec_from_file_location("varsim_hf_eager", OUT / "hf_eager_attention.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.eager_attention


def _torch_kernels():
    import torch
    import torch.nn.functional as F

    def sdpa(q, k, v, tau=1.0, mask=None, causal=False):
        L, N = q.shape[-2], k.shape[-2]
        if causal:  # bottom-right, as the kit states causal
            mask = torch.ones(L, N, dtype=torch.bool).tril(N - L) if mask is None else mask
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=tau / math.sqrt(q.shape[-1]),
                                              enable_gqa=q.shape[1] != k.shape[1])

    eager = _load_hf_eager()

    return {"torch SDPA (fused profile)": (sdpa, "fused"), "HF-style eager in torch (eager profile)": (eager, "eager")}


def _timed(grads, profile, repeats):
    cpu, wall = [], []
    check_gradients(grads, profile=profile)  # warm-up
    for _ in range(repeats):
        c0, w0 = time.process_time(), time.perf_counter()
        check_gradients(grads, profile=profile)
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return f"{1000 * statistics.median(cpu):.0f} | {1000 * statistics.median(wall):.0f}"


def torch_section(seeds: int, repeats: int) -> str:
    import torch

    from varsim.testing import torch_gradients

    kernels = _torch_kernels()
    default_threads = torch.get_num_threads()
    lines = ["| kernel | dtype | cases run | false alarms | CPU ms per check, 1 torch thread | wall ms | CPU ms, "
             f"{default_threads} threads (torch's default here) | wall ms |", "|---|---|---|---|---|---|---|---|"]
    for label, (fn, profile) in kernels.items():
        for dtype in ("float32", "float16", "bfloat16"):
            grads = torch_gradients(fn, dtype=dtype)
            reports = [check_gradients(grads, rng=s, profile=profile) for s in range(seeds)]
            fails = sum(not r.passed for r in reports)
            ran = sum(1 for r in reports[0].results if not r.skipped)
            torch.set_num_threads(1)
            try:
                one = _timed(grads, profile, repeats)
            finally:
                torch.set_num_threads(default_threads)
            lines.append(f"| {label} | {dtype} | {ran} of {len(GRADIENT_CASES)} | {fails}/{seeds} | {one} | "
                         f"{_timed(grads, profile, repeats)} |")
            print(lines[-1], flush=True)
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20, help="seeds per configuration (default 20)")
    parser.add_argument("--repeats", type=int, default=11, help="timed checks per torch kernel and dtype")
    parser.add_argument("--only", choices=("power", "torch"), help="run one section (default: both)")
    parser.add_argument("--no-write", action="store_true", help="print only, leave the docs snippets as they are")
    args = parser.parse_args(argv)
    command = "python benchmarks/bench_testing_backward.py" + (f" --seeds {args.seeds}" if args.seeds != 20 else "")
    command += f" --only {args.only}" if args.only else ""

    def stamp():
        return f"`{command}`, {args.seeds} seeds; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"

    if args.only != "torch":
        power = power_section(args.seeds) + f"\n\n{stamp()}\n"
        print(power)
        if not args.no_write:
            atomic_write_text(OUT / "testing_backward_power.md", power)
    if args.only == "power":
        return 0
    try:
        import torch  # noqa: F401
    except ImportError:
        print("torch not installed: no torch rows")
        return 0
    text = torch_section(args.seeds, args.repeats) + f"\n\n{stamp()}; {args.repeats} timed checks per row\n"
    print(text)
    if not args.no_write:
        atomic_write_text(OUT / "testing_backward_torch.md", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
