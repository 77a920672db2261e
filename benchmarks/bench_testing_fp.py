"""False alarms of varsim.testing's same-draw check over correct kernel styles, the catch rate of bugs with 10x a
correct kernel's error per dtype and profile, and the CPU time of one check and of one power_report.

    nice python benchmarks/bench_testing_fp.py --runs 700        # about 10,000 checks (needs torch for 6 styles)
    nice python benchmarks/bench_testing_fp.py --runs 20         # a smoke run

Correct kernel styles (each checked at ``--runs`` seeds with ``check_against_reference`` and default options,
except the profile where the style is one of another profile, which is then told, and the reference where it is a
family):

* torch on the CPU: Hugging Face-style eager attention (``q @ k.T`` and the scale in the dtype, softmax in float32,
  probabilities cast back) in float16 and bfloat16 (``profile="eager"``), SDPA's math backend and SDPA's default CPU
  backend in bfloat16 and float32;
* NumPy emulations (varsim.testing.mutants): a tiled online-softmax kernel with float32 state in bfloat16 and
  float16, the float64 reference cast to the dtype, and a correct tiled kernel inside each reference family of the
  guide (ALiBi, RoPE, sliding window, grouped heads, a temperature per head, softcap, sinks) in bfloat16.

For every style the verdicts of the default profile are counted as well (how often a style of another profile is
named by the check rather than passed). The catch rate plants the catalogue (``power_report``) per dtype and profile
and counts, over the runs where a bug's error was at least 10x the correct kernels', the share that failed.

Writes ``docs/site/examples/testing_fp_bench.md`` (included by the guide) and ``build/bench_testing_fp.json``.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np

from varsim._common.atomic import atomic_write_json, atomic_write_text
from varsim._common.intervals import wilson_interval
from varsim.testing import adapt, check_against_reference, families, power_report
from varsim.testing.arrays import Adapted
from varsim.testing.mutants import kernel
from varsim.testing.power import _Emulated

ROOT = Path(__file__).resolve().parents[1]
FAMILIES = {
    "alibi": families.alibi(), "rope": families.rope(), "sliding_window(16)": families.sliding_window(16),
    "grouped_heads(2)": families.grouped_heads(2), "head_temperature": families.head_temperature(),
    "softcap(20)": families.softcap(20.0), "sinks": families.sinks(),
}


def emulated(name: str, dtype: str, family=None, profile: str = "sdpa") -> Adapted:
    """Catalogue kernel ``name`` as a (B, H, L, d) function of ``dtype`` (NumPy emulation)."""
    k = kernel(name)

    def fn(q, K, V, tau=1.0, mask=None, causal=False):
        return k(q, K, V, tau=tau, mask=mask, causal=causal, dtype=dtype, family=family, profile=profile)

    fn.__qualname__ = f"{name}[{dtype}]"
    like = Adapted(fn, layout="bhld", gqa=True)
    like.lib, like.dtype = _Emulated(dtype), dtype
    return like


def torch_styles() -> dict:
    """The torch styles: name -> (adapted function, check options)."""
    try:
        import torch
    except ImportError:
        return {}
    from torch.nn.attention import SDPBackend, sdpa_kernel

    F = torch.nn.functional

    def mask_of(q, K, mask, causal):
        if causal:
            L, N = q.shape[-2], K.shape[-2]
            return torch.ones(L, N, dtype=torch.bool).tril(diagonal=N - L)
        return mask

    def eager(q, K, V, tau=1.0, mask=None, causal=False):
        m = mask_of(q, K, mask, causal)
        K, V = (a.repeat_interleave(q.shape[1] // a.shape[1], dim=1) for a in (K, V))
        s = torch.matmul(q, K.transpose(-1, -2)) * (tau / math.sqrt(q.shape[-1]))
        if m is not None:
            s = s.masked_fill(~m, torch.finfo(s.dtype).min)
        p = torch.softmax(s, dim=-1, dtype=torch.float32).to(q.dtype)
        return torch.matmul(p, V)

    def sdpa(backend):
        def fn(q, K, V, tau=1.0, mask=None, causal=False):
            with sdpa_kernel(backend):
                return F.scaled_dot_product_attention(q, K, V, attn_mask=mask_of(q, K, mask, causal),
                                                      scale=tau / math.sqrt(q.shape[-1]), enable_gqa=True)
        return fn

    styles = {}
    for dtype in ("float16", "bfloat16"):  # a row with no key gets uniform weights (finfo.min): no convention stated
        styles[f"HF eager {dtype} (torch)"] = (adapt(eager, array="torch", dtype=dtype, layout="bhld", gqa=True),
                                               {"profile": "eager", "masked_rows": None})
    for dtype in ("bfloat16", "float32"):
        styles[f"SDPA math {dtype} (torch)"] = (adapt(sdpa([SDPBackend.MATH]), array="torch", dtype=dtype,
                                                      layout="bhld", gqa=True), {})
        styles[f"SDPA default CPU {dtype} (torch)"] = (adapt(sdpa([SDPBackend.FLASH_ATTENTION, SDPBackend.MATH]),
                                                             array="torch", dtype=dtype, layout="bhld", gqa=True), {})
    return styles


def all_styles() -> dict:
    styles = torch_styles()
    for dtype in ("bfloat16", "float16"):
        styles[f"tiled online softmax, float32 state, {dtype}"] = (emulated("flash_tiled", dtype), {})
    styles["float64 then cast, bfloat16"] = (emulated("reference", "bfloat16"), {})
    for name, fam in FAMILIES.items():
        styles[f"reference={name}, tiled, bfloat16"] = (emulated("flash_tiled", "bfloat16", fam), {"reference": fam})
    return styles


def false_alarms(runs: int) -> tuple[list, float]:
    rows, cpu = [], 0.0
    for name, (fn, options) in all_styles().items():
        fails, named, worst = 0, 0, 0.0
        start = time.process_time()
        for seed in range(runs):
            report = check_against_reference(fn, rng=seed, **{"masked_rows": "zeros", **options})
            fails += not report.passed
            worst = max(worst, report.worst.ratio)
            if options.get("profile"):
                default = {k: v for k, v in options.items() if k != "profile"}
                named += check_against_reference(fn, rng=seed, **default).verdict == "profile"
        spent = time.process_time() - start
        cpu += spent
        shown = {k: (v.name if hasattr(v, "name") else v) for k, v in options.items() if v is not None}
        rows.append({"style": name, "options": shown,
                     "runs": runs, "false_alarms": fails, "worst_ratio": worst, "named_under_default": named,
                     "cpu_s": spent})
        print(f"{name}: {fails} of {runs} false alarms, worst ratio {worst:.3f}, {spent:.1f} s", flush=True)
    return rows, cpu


def catch_rates(seeds: int) -> list:
    rows = []
    for profile in ("sdpa", "eager", "prescaled", "positions", "tf32"):
        for dtype in ("float32", "float16", "bfloat16"):
            fam = families.rope() + families.alibi() if profile == "positions" else None
            rep = power_report(dtype=dtype, seeds=seeds, profile=profile, reference=fam, returns_weights=False)
            big = [(c, e) for r in rep.rows if not r.correct for c, e in zip(r.caught_at, r.excess) if e >= 10]
            rows.append({"profile": profile, "dtype": dtype, "runs_10x": len(big),
                         "caught_10x": sum(c for c, _ in big), "false_alarms": rep.false_alarms[0],
                         "correct_runs": rep.false_alarms[1], "missed_classes": list(rep.missed)})
            print(rows[-1], flush=True)
    return rows


def timings() -> dict:
    out = {}
    styles = torch_styles()
    for name in ("SDPA default CPU bfloat16 (torch)", "HF eager bfloat16 (torch)"):
        if name in styles:
            fn, options = styles[name]
            check_against_reference(fn, **options)  # warm
            start = time.process_time()
            for seed in range(20):
                check_against_reference(fn, rng=seed, **options)
            out[f"one check: {name}"] = (time.process_time() - start) / 20
    start = time.process_time()
    check_against_reference(emulated("flash_tiled", "bfloat16"))
    out["one check: NumPy emulated tiled kernel, bfloat16"] = time.process_time() - start
    for name, kwargs in (("power_report(dtype='bfloat16'), 5 seeds", {"dtype": "bfloat16"}),
                         ("power_report(reference=alibi(), dtype='bfloat16'), 5 seeds",
                          {"dtype": "bfloat16", "reference": families.alibi()})):
        start = time.process_time()
        power_report(**kwargs)
        out[name] = time.process_time() - start
    if "SDPA default CPU bfloat16 (torch)" in styles:
        start = time.process_time()
        power_report(styles["SDPA default CPU bfloat16 (torch)"][0])
        out["power_report(SDPA default CPU bfloat16, torch), 5 seeds"] = time.process_time() - start
    return out


def table(fa: list, cpu: float, rates: list, times: dict, runs: int, seeds: int) -> str:
    total = sum(r["runs"] for r in fa)
    fails = sum(r["false_alarms"] for r in fa)
    lo, hi = wilson_interval(fails, total)
    lines = [f"False alarms: {fails} of {total} checks over {len(fa)} correct kernel styles ({runs} seeds each; Wilson "
             f"95% upper bound on the rate {hi:.2g}; {cpu:.0f} s of CPU):", "",
             "| style | options | false alarms | worst |diff|/tolerance | default profile names it |",
             "|---|---|---|---|---|"]
    for r in fa:
        opts = ", ".join(f"{k}={v}" for k, v in r["options"].items()) or "defaults"
        named = f"{r['named_under_default']}/{r['runs']}" if "profile" in r["options"] else ""
        lines.append(f"| {r['style']} | {opts} | {r['false_alarms']}/{r['runs']} | {r['worst_ratio']:.3f} | {named} |")
    lines += ["", f"Bugs with at least 10x a correct kernel's error (`power_report`, the catalogue, {seeds} seeds, "
                  "output-only functions):", "",
              "| profile | dtype | caught / runs with excess >= 10 | missed classes | false alarms |",
              "|---|---|---|---|---|"]
    for r in rates:
        lines.append(f"| {r['profile']} | {r['dtype']} | {r['caught_10x']}/{r['runs_10x']} | "
                     f"{', '.join(r['missed_classes']) or 'none'} | {r['false_alarms']}/{r['correct_runs']} |")
    lines += ["", "CPU time (process time, one process, shared 2-core machine):", "", "| what | CPU s |", "|---|---|"]
    lines += [f"| {k} | {v:.3f} |" for k, v in times.items()]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=700, help="seeds per correct style")
    parser.add_argument("--seeds", type=int, default=10, help="seeds per power_report of the catch rates")
    parser.add_argument("--out", type=Path, default=ROOT / "build")
    args = parser.parse_args(argv)
    np.seterr(all="ignore")
    try:  # CPU time of one process: torch's intra-op threads would spin on the shared cores
        import torch

        torch.set_num_threads(1)
    except ImportError:
        pass
    fa, cpu = false_alarms(args.runs)
    rates = catch_rates(args.seeds)
    times = timings()
    text = table(fa, cpu, rates, times, args.runs, args.seeds)
    print(text)
    atomic_write_text(ROOT / "docs" / "site" / "examples" / "testing_fp_bench.md", text)
    args.out.mkdir(parents=True, exist_ok=True)
    atomic_write_json(args.out / "bench_testing_fp.json", {"false_alarms": fa, "catch": rates, "timings": times,
                                                           "runs": args.runs, "seeds": args.seeds})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
