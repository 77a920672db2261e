"""Power of varsim.testing's same-draw check per dtype: the catalogue of bug classes and correct kernels
(varsim.testing.mutants) planted with power_report, many seeds each.

    nice python benchmarks/bench_testing_catalogue.py            # 4 dtypes x 2 configurations x 20 seeds (~2 min)
    nice python benchmarks/bench_testing_catalogue.py --seeds 3  # a smoke run

For each dtype (float64, float32, float16, bfloat16; computed by the catalogue's NumPy emulation, bfloat16 without
any extra library) and each configuration -- a ``(B, H, L, d)`` function taking ``tau=``, ``mask=`` and ``causal=``
that returns the output only (as ``scaled_dot_product_attention`` does), or the output and the weights -- every
kernel runs the standard battery (``REFERENCE_CASES``) at ``--seeds`` values of ``rng``. A cell is the number of
seeds at which the check failed (``lp``: how many of them with the verdict *low precision*); the false-alarm row
sums the failures of the correct kernels; ``missed`` counts bug classes that passed at a seed where their error
was at least 10 times a correct kernel's (the goal: none in float16 and bfloat16).

Writes the Markdown table to ``docs/site/examples/testing_catalogue_power.md`` (included by the docs page "Test
your attention") and the counts to ``build/bench_testing_catalogue.json`` (``--out`` to change the folder); with
torch installed, also the guide's ``power_report`` example (the PyTorch tutorial's wrapper in bfloat16) to
``docs/site/examples/testing_power_report.txt``.
"""

from __future__ import annotations

import argparse
import resource
import time
from pathlib import Path

import numpy as np

from varsim._common.atomic import atomic_write_json, atomic_write_text
from varsim._common.intervals import wilson_interval
from varsim.testing import CORRECT, MUTANTS, REFERENCE_CASES, power_report

ROOT = Path(__file__).resolve().parents[1]
DTYPES = ("float64", "float32", "float16", "bfloat16")
CONFIGS = {"o": False, "o, w": True}


def _cell(row) -> str:
    if row.not_applicable:
        return "n/a"
    text = f"{row.caught}/{row.runs}"
    if row.low_precision:
        text += f" ({row.low_precision} lp)"
    if row.missed:
        text += " **MISSED**"
    return text


def _torch_example(seeds: int) -> None:
    """The guide's power_report example (the PyTorch tutorial's fixed wrapper in bfloat16), when torch is installed."""
    try:
        import torch
    except ImportError:
        print("torch is not installed: docs/site/examples/testing_power_report.txt not rewritten")
        return
    import math

    from varsim.testing import adapt

    def sdpa_fixed(q, K, V, tau=1.0, causal=False, mask=None):
        if causal:
            L, N = q.shape[-2], K.shape[-2]
            mask = torch.ones(L, N, dtype=torch.bool, device=q.device).tril(diagonal=N - L)
        return torch.nn.functional.scaled_dot_product_attention(q, K, V, attn_mask=mask,
                                                                scale=tau / math.sqrt(q.shape[-1]))

    sdpa_fixed.__qualname__ = "sdpa_fixed"  # as the tutorial defines it, at module level
    cpu = time.process_time()
    report = power_report(adapt(sdpa_fixed, array="torch", dtype="bfloat16", layout="bhld"), seeds=seeds)
    text = f"{report.describe()}\n\n{report.table()}\n"
    print(text, f"({time.process_time() - cpu:.0f} s CPU)")
    atomic_write_text(ROOT / "docs" / "site" / "examples" / "testing_power_report.txt", text)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=20, help="rng values per kernel (default 20)")
    p.add_argument("--out", type=Path, default=ROOT / "build", help="folder of the JSON record")
    p.add_argument("--no-docs", action="store_true", help="do not write the docs table")
    args = p.parse_args(argv)
    if args.seeds < 1:
        p.error("--seeds: must be >= 1")
    wall, cpu = time.perf_counter(), time.process_time()
    reports = {}
    for dtype in DTYPES:
        for label, weights in CONFIGS.items():
            reports[dtype, label] = power_report(dtype=dtype, returns_weights=weights, seeds=args.seeds)
            print(f"{dtype} ({label}): {reports[dtype, label].describe()}", flush=True)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu

    cols = [(d, c) for d in DTYPES for c in CONFIGS]
    lines = ["| kernel | what | " + " | ".join(f"{d} ({c})" for d, c in cols) + " |",
             "|---|---|" + "---|" * len(cols)]
    for name, k in list(CORRECT.items()) + list(MUTANTS.items()):
        rows = [{r.name: r for r in reports[col].rows}[name] for col in cols]
        median = np.median([e for r in rows[4::2] for e in r.excess]) if name in MUTANTS else None
        what = k.description + ("" if median is None else f" (excess at float16/bfloat16: {median:.3g})")
        lines.append(f"| `{name}` | {what} | " + " | ".join(_cell(r) for r in rows) + " |")
    fa_cells, missed_cells = [], []
    for col in cols:
        fa, runs = reports[col].false_alarms
        hi = wilson_interval(fa, runs)[1]
        fa_cells.append(f"{fa}/{runs} (<= {hi:.1%})")
        missed_cells.append(str(len(reports[col].missed)))
    lines.append("| **false alarms** | correct kernels, Wilson 95% upper bound | " + " | ".join(fa_cells) + " |")
    lines.append("| **missed** | bug classes passing with excess >= 10 | " + " | ".join(missed_cells) + " |")
    caught_all = {col: len(reports[col].caught) for col in cols}
    footer = (f"\n{len(MUTANTS)} bug classes, {len(CORRECT)} correct kernels, {args.seeds} seeds each, "
              f"{len(REFERENCE_CASES)} cases per run. Caught at every seed: "
              + ", ".join(f"{d} ({c}) {caught_all[d, c]}" for d, c in cols)
              + f". Measured by `nice python benchmarks/bench_testing_catalogue.py` ({cpu:.0f} s CPU, {wall:.0f} s "
              f"wall).\n")
    table = "\n".join(lines) + "\n" + footer
    print(table)
    if not args.no_docs:
        atomic_write_text(ROOT / "docs" / "site" / "examples" / "testing_catalogue_power.md", table)
    record = {
        "seeds": args.seeds, "cpu_s": cpu, "wall_s": wall,
        "max_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        "reports": {f"{d} ({c})": {"config": reports[d, c].config, "false_alarms": reports[d, c].false_alarms,
                                   "missed": list(reports[d, c].missed),
                                   "rows": {r.name: {"caught": r.caught, "runs": r.runs,
                                                     "low_precision": r.low_precision,
                                                     "excess": [float(e) if np.isfinite(e) else None for e in r.excess],
                                                     "not_applicable": r.not_applicable}
                                            for r in reports[d, c].rows}}
                    for d, c in cols},
    }
    if not args.no_docs:
        _torch_example(args.seeds)
    args.out.mkdir(parents=True, exist_ok=True)
    atomic_write_json(args.out / "bench_testing_catalogue.json", record)


if __name__ == "__main__":
    main()
