"""Power and false-alarm rate of varsim.testing's statistical assertions at their default budget.

    nice python benchmarks/bench_testing_power.py                 # a few minutes of CPU; --reps, --null-reps
    nice python benchmarks/bench_testing_power.py --quick         # a smoke run (seconds)

For each assertion (``assert_variance_matches``, ``assert_ipr_matches``, ``assert_mean_matches``), logit scale
``beta`` (fixed query, tau = 1) and length ``N`` (d_k = 16, d_v = 8), with the default options (``rel_se = 0.03``,
5 SE + 1%, early stop at 10 pilot SEs):

* **detection threshold**: plain softmax attention with an injected relative error ``delta`` in the checked
  statistic (output scaled by ``sqrt(1 + delta)`` for Var(o_j); weights scaled by ``sqrt(1 + delta)`` for
  E[sum w^2]; output shifted by ``delta * value_mean`` with ``value_mean = 1`` for the mean), run with ``--reps``
  different seeds at each ``delta`` of a grid, both signs; the threshold is the smallest grid ``|delta|`` at which
  at least 95% of the runs fail for both signs (and every larger grid point too);
* **false alarms**: the correct attention run with ``--null-reps`` seeds; the count of failures, the largest |z| and
  the count stopped early;
* the same at ``rel_se = 0.01`` (the time-for-power knob) for the variance at ``beta = 1``, ``N = 64``, and the
  CPU time per check.

``--drawn K`` instead runs the correct attention on ``K`` configurations drawn by ``attention_configs()`` (its
defaults, as the docs' example uses them) with ``assert_variance_matches`` and ``assert_ipr_matches`` and counts
false alarms (``docs/site/examples/testing_power_drawn.txt``).

Writes a Markdown table to ``docs/site/examples/testing_power_table.txt`` (included by the docs page "Test your
attention") and the raw counts to ``build/bench_testing_power.json`` (``--out`` to change the folder).
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import time
import zlib
from pathlib import Path

import numpy as np

from varsim._common.atomic import atomic_write_json, atomic_write_text
from varsim._common.intervals import wilson_interval
from varsim.testing import check_statistic, softmax_attention, softmax_ipr, softmax_variance

ROOT = Path(__file__).resolve().parents[1]
D_K, D_V = 16, 8
DELTAS = (0.02, 0.05, 0.08, 0.12, 0.16, 0.2, 0.25, 0.3, 0.4, 0.6)
LABELS = {"var": "assert_variance_matches", "ipr": "assert_ipr_matches", "mean": "assert_mean_matches"}


def _mutant(statistic: str, delta: float):
    """Softmax attention whose checked statistic is off by the relative error ``delta``."""
    c = math.sqrt(1.0 + delta)

    def attn(q, K, V):
        o, w = softmax_attention(q, K, V)
        if statistic == "var":
            return c * o, w
        if statistic == "ipr":
            return o, c * w
        return o + delta, w  # mean: value_mean = 1

    return attn


def _run(statistic, beta, n, delta, seed, rel_se):
    norm = beta * math.sqrt(D_K)
    expected = {"var": lambda m: softmax_variance(m, d_k=D_K, query_norm=norm),
                "ipr": lambda m: softmax_ipr(m, d_k=D_K, query_norm=norm), "mean": 1.0}[statistic]
    return check_statistic(_mutant(statistic, delta), statistic, expected, [n], d_k=D_K, d_v=D_V, query_norm=norm,
                           value_mean=1.0 if statistic == "mean" else 0.0, rel_se=rel_se, rng=seed)[0]


def _threshold(statistic, beta, n, reps, rel_se, seed0):
    """Smallest grid |delta| from which on >= 95% of runs fail for both signs (and at the next grid point up), and
    the failure counts per delta. The walk starts at the grid point nearest the normal-theory guess
    ``(5 + 1.645) rel_se + 1%`` and moves down while detected, up while not."""
    need = math.ceil(0.95 * reps)
    counts = {}

    def detected(i):
        d = DELTAS[i]
        if d not in counts:
            counts[d] = [sum(not _run(statistic, beta, n, s * d, seed0 + 1000 * i + r, rel_se).passed
                             for r in range(reps)) for s in (1.0, -1.0)]
        return min(counts[d]) >= need

    guess = (5.0 + 1.645) * rel_se + 0.01
    i = int(np.argmin([abs(d - guess) for d in DELTAS]))
    if detected(i):
        while i > 0 and detected(i - 1):
            i -= 1
    else:
        while i + 1 < len(DELTAS) and not detected(i + 1):
            i += 1
        i += 1
        if i == len(DELTAS):
            return None, counts
    if i + 1 < len(DELTAS) and not detected(i + 1):
        return None, counts  # not monotone: report no threshold rather than a lucky one
    return DELTAS[i], counts


def _null(statistic, beta, n, reps, rel_se, seed0):
    res = [_run(statistic, beta, n, 0.0, seed0 + r, rel_se) for r in range(reps)]
    return {"fails": sum(not r.passed for r in res), "runs": reps,
            "max_abs_z": max(abs(r.z) for r in res), "early": sum("stopped after the pilot" in r.note for r in res),
            "mean_sequences": float(np.mean([r.n_sequences for r in res]))}


def _drawn(k: int) -> str:
    """False alarms of the variance and IPR checks on ``k`` configurations drawn by ``attention_configs()``."""
    from hypothesis import given

    from varsim.testing import attention_configs, mc_settings

    outcomes = []

    @mc_settings(max_examples=k, database=None)
    @given(attention_configs())
    def run(cfg):
        attn = lambda q, K, V: softmax_attention(q, K, V, tau=cfg.tau)  # noqa: E731
        for statistic, expected in (("var", cfg.expected_variance), ("ipr", cfg.expected_ipr)):
            for r in check_statistic(attn, statistic, expected, **cfg.check_kwargs()):
                outcomes.append((statistic, cfg.beta, r.passed, abs(r.z)))

    t0 = time.process_time()
    run()
    cpu = time.process_time() - t0
    lines = ["| assertion | lengths checked | beta range | false alarms (95% upper bound) | max abs z |",
             "|---|---:|---:|---:|---:|"]
    for statistic in ("var", "ipr"):
        rows = [o for o in outcomes if o[0] == statistic]
        fails = sum(not o[2] for o in rows)
        hi = float(wilson_interval(fails, len(rows))[1])
        betas = [o[1] for o in rows]
        lines.append(f"| `{LABELS[statistic]}` | {len(rows)} | {min(betas):.2f}-{max(betas):.2f} | {fails}/{len(rows)} "
                     f"(< {100 * hi:.1f}%) | {max(o[3] for o in rows):.1f} |")
    return "\n".join(lines) + f"\n\n{k} configurations drawn by `attention_configs()`, {cpu:.0f} s of CPU.\n"


def _cell(cell):
    """One row of the table: threshold, null runs and CPU time of one (statistic, rel_se, beta, N)."""
    statistic, rel_se, b, m, reps, null_reps = cell
    seed0 = zlib.crc32(repr((statistic, b, m, rel_se)).encode())
    t0 = time.process_time()
    thr, counts = _threshold(statistic, b, m, reps, rel_se, seed0)
    null = _null(statistic, b, m, null_reps, rel_se, seed0 + 10**6)
    runs = null_reps + sum(2 * reps for _ in counts)
    cpu = (time.process_time() - t0) / runs
    hi = float(wilson_interval(null["fails"], null["runs"])[1])
    rec = {"statistic": statistic, "beta": b, "n": m, "rel_se": rel_se, "threshold": thr,
           "detections": {str(k): v for k, v in counts.items()}, "reps": reps, **null,
           "false_alarm_upper95": hi, "cpu_s_per_check": cpu}
    thr_text = f"{100 * thr:.0f}%" if thr is not None else f"> {100 * DELTAS[-1]:.0f}%"
    row = (f"| `{LABELS[statistic]}` | {b:g} | {m} | {rel_se:g} | {thr_text} | {null['fails']}/{null['runs']} "
           f"(< {100 * hi:.1f}%) | {null['max_abs_z']:.1f} | {null['mean_sequences']:.0f} | {1000 * cpu:.0f} ms |")
    print(row, flush=True)
    return row, rec


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=40, help="runs per delta and sign (default 40)")
    p.add_argument("--null-reps", type=int, default=100, help="runs of the correct attention per cell (default 100)")
    p.add_argument("--quick", action="store_true", help="a smoke run: 8 reps, one cell per assertion")
    p.add_argument("--out", type=Path, default=ROOT / "build", help="folder of the JSON record")
    p.add_argument("--workers", type=int, default=2, help="processes (default 2)")
    p.add_argument("--drawn", type=int, default=0, help="only: false alarms on this many drawn configurations")
    args = p.parse_args(argv)
    if args.drawn:
        text = _drawn(args.drawn)
        print(text)
        atomic_write_text(ROOT / "docs" / "site" / "examples" / "testing_power_drawn.txt", text)
        return
    reps, null_reps = (8, 8) if args.quick else (args.reps, args.null_reps)
    betas, lengths = ((1.0,), (64,)) if args.quick else ((0.5, 1.0, 1.5), (64, 256))
    cells = [(statistic, rel_se, beta, n, reps, null_reps)
             for statistic in ("var", "ipr", "mean") for beta in betas for n in lengths
             for rel_se in ((0.03, 0.01) if (statistic, beta, n) == ("var", 1.0, 64) and not args.quick else (0.03,))]
    with multiprocessing.get_context("spawn").Pool(args.workers) as pool:
        results = pool.map(_cell, cells, chunksize=1)
    rows = [row for row, _ in results]
    record = [rec for _, rec in results]
    head = ("| assertion | beta | N | rel_se | detects (>= 95%) | false alarms (95% upper bound) | max abs z (null) "
            "| sequences (null, mean) | CPU per check |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    table = head + "\n" + "\n".join(rows) + "\n"
    grid = ", ".join(f"{100 * d:g}%" for d in DELTAS)
    note = (f"\n{reps} runs per relative error and sign (grid {grid}; a threshold holds at the next grid point too), "
            f"{null_reps} runs of the correct attention per row; d_k = {D_K}, d_v = {D_V}, fixed query, tau = 1.\n")
    if not args.quick:
        atomic_write_text(ROOT / "docs" / "site" / "examples" / "testing_power_table.txt", table + note)
    args.out.mkdir(parents=True, exist_ok=True)
    atomic_write_json(args.out / "bench_testing_power.json", record)
    print(note)


if __name__ == "__main__":
    main()
