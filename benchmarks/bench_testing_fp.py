"""False alarms of varsim.testing's same-draw check over correct kernel styles, the catch rate of bugs with 10x a
correct kernel's error per dtype and profile, and the CPU time of one check and of one power_report.

    nice python benchmarks/bench_testing_fp.py --runs 650        # about 10,000 checks (needs torch for 7 styles)
    nice python benchmarks/bench_testing_fp.py --runs 20 --flex-runs 3 --seeds 2   # a smoke run

Correct kernel styles (each checked at ``--runs`` seeds with ``check_against_reference`` and default options, except
the reference where it is a family):

* torch on the CPU: Hugging Face-style eager attention (``q @ k.T`` and the scale in the dtype, softmax in float32,
  probabilities cast back) in float16 and bfloat16, SDPA's math backend and SDPA's default CPU backend in bfloat16
  and float32, FlexAttention in eager mode in bfloat16 (``--flex-runs`` seeds: about a second a check);
* NumPy emulations (varsim.testing.mutants): a tiled online-softmax kernel with float32 state in bfloat16 and
  float16, the float64 reference cast to the dtype, and a correct tiled kernel inside each reference family of the
  guide (ALiBi, RoPE, sliding window, grouped heads, a temperature per head, softcap, sinks) in bfloat16.

For every style the checks that passed some case only through the exactly emulated eager logits are counted. The
catch rate plants the catalogue (``power_report``) per dtype, under the default check (kernels written as SDPA and as
HF eager; the same check without the eager emulation run beside it, so that any power it costs is listed class by
class) and with each profile told, and counts, over the runs where a bug's error was at least 10x the correct
kernels', the share that failed.

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
                                               {"masked_rows": None})
    for dtype in ("bfloat16", "float32"):
        styles[f"SDPA math {dtype} (torch)"] = (adapt(sdpa([SDPBackend.MATH]), array="torch", dtype=dtype,
                                                      layout="bhld", gqa=True), {})
        styles[f"SDPA default CPU {dtype} (torch)"] = (adapt(sdpa([SDPBackend.FLASH_ATTENTION, SDPBackend.MATH]),
                                                             array="torch", dtype=dtype, layout="bhld", gqa=True), {})
    flex = flex_style()
    if flex is not None:
        styles["FlexAttention bfloat16 (torch, eager mode)"] = (adapt(flex, array="torch", dtype="bfloat16",
                                                                      layout="bhld", gqa=True), {})
    return styles


def flex_style():
    """FlexAttention as torch 2.13 runs it on the CPU without ``torch.compile`` (an unfused implementation that
    materialises the scores; it warns so, and traces its mask function on every call: about a second a check), the
    mask through ``score_mod``; None where torch has no FlexAttention."""
    try:
        from torch.nn.attention.flex_attention import flex_attention
    except ImportError:
        return None
    import warnings

    import torch

    def flex(q, K, V, tau=1.0, mask=None, causal=False):
        L, N = q.shape[-2], K.shape[-2]
        score_mod = None
        if causal:
            score_mod = lambda s, b, h, qi, ki: torch.where(ki <= qi + (N - L), s, -math.inf)  # noqa: E731
        elif mask is not None:
            m = mask.expand(q.shape[0], q.shape[1], L, N)
            score_mod = lambda s, b, h, qi, ki: torch.where(m[b, h, qi, ki], s, -math.inf)  # noqa: E731
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "called without torch.compile()"
            return flex_attention(q, K, V, score_mod=score_mod, scale=tau / math.sqrt(q.shape[-1]), enable_gqa=True)

    return flex


def all_styles() -> dict:
    styles = torch_styles()
    for dtype in ("bfloat16", "float16"):
        styles[f"tiled online softmax, float32 state, {dtype}"] = (emulated("flash_tiled", dtype), {})
    styles["float64 then cast, bfloat16"] = (emulated("reference", "bfloat16"), {})
    for name, fam in FAMILIES.items():
        styles[f"reference={name}, tiled, bfloat16"] = (emulated("flash_tiled", "bfloat16", fam), {"reference": fam})
    return styles


def false_alarms(runs: int, flex_runs: int) -> tuple[list, float]:
    rows, cpu = [], 0.0
    for name, (fn, options) in all_styles().items():
        fails, named, worst = 0, 0, 0.0
        start = time.process_time()
        n = flex_runs if name.startswith("FlexAttention") else runs
        for seed in range(n):
            report = check_against_reference(fn, rng=seed, **{"masked_rows": "zeros", **options})
            fails += not report.passed
            # the ratio that decided each case: the emulated profile's where the case passed through it
            worst = max(worst, max(r.profile_ratio if r.passed and r.profile else r.ratio
                                   for r in report.results if not r.skipped))
            named += any(r.passed and r.profile for r in report.results)
        spent = time.process_time() - start
        cpu += spent
        shown = {k: (v.name if hasattr(v, "name") else v) for k, v in options.items() if v is not None}
        rows.append({"style": name, "options": shown,
                     "runs": n, "false_alarms": fails, "worst_ratio": worst, "named_under_default": named,
                     "cpu_s": spent})
        print(f"{name}: {fails} of {n} false alarms, worst ratio {worst:.3f}, {spent:.1f} s", flush=True)
    return rows, cpu


def _caught_10x(rep) -> tuple[int, int]:
    big = [c for r in rep.rows if not r.correct for c, e in zip(r.caught_at, r.excess) if e >= 10]
    return sum(big), len(big)


def catch_rates(seeds: int) -> list:
    """Under the default options, kernels written as SDPA and as HF eager (with the same check without the eager
    emulation, the power before it, class by class); then each profile told to the check."""
    import varsim.testing.same_draw as same_draw

    rows = []
    for written in ("sdpa", "eager"):
        for dtype in ("float32", "float16", "bfloat16"):
            rep = power_report(dtype=dtype, seeds=seeds, kernel_profile=written, returns_weights=False)
            keep, same_draw.EMULATED = same_draw.EMULATED, ()
            try:
                before = power_report(dtype=dtype, seeds=seeds, kernel_profile=written, returns_weights=False)
            finally:
                same_draw.EMULATED = keep
            changed = [f"{a.name} {a.caught}/{a.runs} (was {b.caught}; excess of the seeds now passing: "
                       + ", ".join(f"{e:.2g}" for e, c, c0 in zip(a.excess, a.caught_at, b.caught_at) if c0 and not c)
                       + ")" for a, b in zip(rep.rows, before.rows) if not a.correct and a.caught < b.caught]
            caught, runs = _caught_10x(rep)
            rows.append({"check": "default", "profile": written, "dtype": dtype, "runs_10x": runs, "caught_10x": caught,
                         "false_alarms": rep.false_alarms[0], "correct_runs": rep.false_alarms[1],
                         "missed_classes": list(rep.missed), "caught_less": changed,
                         "false_alarms_before": before.false_alarms[0]})
            print(rows[-1], flush=True)
    for profile in ("sdpa", "eager", "prescaled", "positions", "tf32"):
        for dtype in ("float32", "float16", "bfloat16"):
            fam = families.rope() + families.alibi() if profile == "positions" else None
            rep = power_report(dtype=dtype, seeds=seeds, profile=profile, reference=fam, returns_weights=False)
            caught, runs = _caught_10x(rep)
            rows.append({"check": f"profile={profile}", "profile": profile, "dtype": dtype, "runs_10x": runs,
                         "caught_10x": caught, "false_alarms": rep.false_alarms[0],
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
    lines = [f"False alarms: {fails} of {total} checks over {len(fa)} correct kernel styles ({runs} seeds each, "
             f"FlexAttention fewer; Wilson "
             f"95% upper bound on the rate {hi:.2g}; {cpu:.0f} s of CPU):", "",
             "| style | options | false alarms | worst |diff|/tolerance | checks passed through the eager emulation |",
             "|---|---|---|---|---|"]
    for r in fa:
        opts = ", ".join(f"{k}={v}" for k, v in r["options"].items()) or "defaults"
        named = f"{r['named_under_default']}/{r['runs']}"
        lines.append(f"| {r['style']} | {opts} | {r['false_alarms']}/{r['runs']} | {r['worst_ratio']:.3f} | {named} |")
    lines += ["", f"Bugs with at least 10x a correct kernel's error of the same profile and dtype (`power_report`, the "
                  f"catalogue, {seeds} seeds, output-only functions). 'default' is the check with default options "
                  "(kernels written in that profile planted); 'caught less than without the eager emulation' lists "
                  "every bug class the same check without it caught at more seeds, with the excess of the seeds "
                  "that now pass:", "",
              "| check | kernels written as | dtype | caught / runs with excess >= 10 | missed classes | false alarms "
              "| caught less than without the eager emulation |", "|---|---|---|---|---|---|---|"]
    for r in rates:
        less = "; ".join(r.get("caught_less", [])) or ("none" if "caught_less" in r else "")
        fa = f"{r['false_alarms']}/{r['correct_runs']}"
        if "false_alarms_before" in r:
            fa += f" (without the emulation {r['false_alarms_before']}/{r['correct_runs']})"
        lines.append(f"| {r['check']} | {r['profile']} | {r['dtype']} | {r['caught_10x']}/{r['runs_10x']} | "
                     f"{', '.join(r['missed_classes']) or 'none'} | {fa} | {less} |")
    return "\n".join(lines) + "\n" + timing_table(times)


TIMING_HEAD = "CPU time (process time, one process, shared 2-core machine):"


def timing_table(times: dict) -> str:
    lines = ["", TIMING_HEAD, "", "| what | CPU s |", "|---|---|"] + [f"| {k} | {v:.3f} |" for k, v in times.items()]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=700, help="seeds per correct style")
    parser.add_argument("--flex-runs", type=int, default=100, help="seeds of the FlexAttention style (about 1 s each)")
    parser.add_argument("--seeds", type=int, default=10, help="seeds per power_report of the catch rates")
    parser.add_argument("--out", type=Path, default=ROOT / "build")
    parser.add_argument("--timings-only", action="store_true",
                        help="rerun only the CPU times and replace that section of the committed table")
    args = parser.parse_args(argv)
    np.seterr(all="ignore")
    try:  # CPU time of one process: torch's intra-op threads would spin on the shared cores
        import torch

        torch.set_num_threads(1)
    except ImportError:
        pass
    page = ROOT / "docs" / "site" / "examples" / "testing_fp_bench.md"
    if args.timings_only:
        text = page.read_text().split("\n" + TIMING_HEAD)[0] + timing_table(timings())
        print(text)
        atomic_write_text(page, text)
        return 0
    fa, cpu = false_alarms(args.runs, args.flex_runs)
    rates = catch_rates(args.seeds)
    times = timings()
    text = table(fa, cpu, rates, times, args.runs, args.seeds)
    print(text)
    atomic_write_text(page, text)
    args.out.mkdir(parents=True, exist_ok=True)
    atomic_write_json(args.out / "bench_testing_fp.json", {"false_alarms": fa, "catch": rates, "timings": times,
                                                           "runs": args.runs, "seeds": args.seeds})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
