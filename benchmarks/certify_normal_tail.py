"""The normal generator's tail certificate: >= 1e10 of the simulators' own normal draws against the exact law.

    python benchmarks/certify_normal_tail.py [--draws 1e10] [--seed 20260] [--items 40] [--threads 2]
        [--reps 1000] [--logit-reps 200] [--out benchmarks/certificates/normal_tail.json]

Counts, without storing a draw (``varsim.sim._kernels_tail``, chunks of 2^14 variates inside a Numba kernel):

1. tail probabilities: ``--draws`` variates of the ziggurat (``_kernels_rng._draw``, the generator of every Gaussian
   key, logit and value of ``simulate``) in ``--items`` work items whose streams are keyed ``(0, item)`` under
   ``--seed`` (never by thread: the counts do not depend on ``--threads``); for every ``z = 1/8, 2/8, ..., 6.5`` the
   counts of ``X >= z``, ``X <= -z`` and ``|X| >= z`` against ``n Q(z)`` with ``Q`` from the exact ``erfc``, the
   binomial standard error, the z-score and the exact two-sided binomial p-value;
2. the maximum of ``N`` draws, ``N = 2^10 ... 2^20``, ``--reps`` times each: ``U = Phi(M)^N`` against the uniform
   law (KS p-value) and the mean of ``-ln U`` against 1 (Exp(1), standard error ``1/sqrt(reps)``);
3. the same maxima (``--logit-reps`` sequences per N) and the tail counts of every logit through the logits sampler
   of ``simulate(sampler="logits")`` (``beta = 1``, no values).

A row fails when its p-value is below 5.7e-7 (5 standard errors, two-sided); a maximum fails when its KS p-value is
below 1e-4 or its mean is more than 5 standard errors from 1. The JSON (written atomically) holds the command, the
seed, the histogram of counts, every row, the verdict and the provenance; ``tests/test_normal_tail.py`` checks it
(default suite) and reruns its counts bit for bit (``pytest -m slow``). Exit status 1 when a check fails.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

from varsim._common.atomic import atomic_write_json
from varsim._common.provenance import provenance
from varsim.sim import _normal_tail as NT

OUT = Path(__file__).resolve().parent / "certificates" / "normal_tail.json"
Z_MAX = 6.5
LOGIT_Z_MAX = 5.5
KS_FLOOR = 1e-4


def _positive_int(text: str) -> int:
    try:
        value = int(float(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1 or value != float(text):
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=_positive_int, default=10**10, help="normal draws counted (default 1e10)")
    ap.add_argument("--seed", type=_positive_int, default=20260, help="root seed of every stream")
    ap.add_argument("--items", type=_positive_int, default=40, help="work items of the tail count")
    ap.add_argument("--threads", type=_positive_int, default=2, help="worker threads (never changes a count)")
    ap.add_argument("--reps", type=_positive_int, default=1000, help="maxima per N, ziggurat")
    ap.add_argument("--logit-reps", type=_positive_int, default=200, help="maxima per N, logits sampler")
    ap.add_argument("--out", type=Path, default=OUT, help="the certificate (JSON)")
    return ap.parse_args(argv)


def max_checks(maxima: dict) -> list[dict]:
    """One ``NT.max_pit`` row per N with its verdict."""
    rows = [NT.max_pit(m, n) for n, m in sorted(maxima.items())]
    for r in rows:
        r["ok"] = bool(r["ks_pvalue"] >= KS_FLOOR and abs(r["z_score"]) <= 5.0)
    return rows


def certify(args) -> dict:
    t0 = time.perf_counter()
    hist = NT.tail_histogram(args.seed, args.draws, args.items, threads=args.threads)
    tail = NT.tail_rows(hist, Z_MAX)
    t_tail = time.perf_counter() - t0
    ns = [1 << k for k in range(10, 21)]
    maxima = max_checks(NT.maxima_by_n(args.seed, {n: args.reps for n in ns}, threads=args.threads))
    logit_max, logit_hist = NT.logits_maxima_by_n(args.seed, {n: args.logit_reps for n in ns}, threads=args.threads)
    logit_tail = NT.tail_rows(logit_hist, LOGIT_Z_MAX)
    logit_rows = max_checks(logit_max)
    checks = {"tail": len(NT.failures(tail)), "maxima": sum(not r["ok"] for r in maxima),
              "logit_tail": len(NT.failures(logit_tail)), "logit_maxima": sum(not r["ok"] for r in logit_rows)}
    return {
        "command": "python benchmarks/certify_normal_tail.py " + shlex.join(sys.argv[1:]),
        "seed": args.seed, "draws": args.draws, "items": args.items, "threads": args.threads,
        "inv_step": NT.INV_STEP, "z_max": Z_MAX, "p_floor": NT.P_FLOOR, "ks_floor": KS_FLOOR,
        "failed_checks": checks, "passed": not any(checks.values()),
        "tail_histogram": hist.tolist(), "tail": tail, "maxima": maxima,
        "logits": {"reps": args.logit_reps, "z_max": LOGIT_Z_MAX, "tail_histogram": logit_hist.tolist(),
                   "tail": logit_tail, "maxima": logit_rows},
        "seconds": {"tail": round(t_tail, 1), "total": round(time.perf_counter() - t0, 1)},
        "provenance": provenance(),
    }


def main(argv=None) -> int:
    args = parse_args(argv)
    cert = certify(args)
    atomic_write_json(args.out, cert)
    worst = min(cert["tail"], key=lambda r: r["p_value"])
    print(f"{cert['draws']:.3g} draws in {cert['seconds']['tail']} s; worst tail row z = {worst['z']} "
          f"({worst['side']}): {worst['count']} vs {worst['expected']:.1f}, z-score {worst['z_score']:+.2f}, "
          f"p {worst['p_value']:.2g}")
    for r in cert["maxima"]:
        print(f"max of N = {r['n']:>8}: KS p {r['ks_pvalue']:.3f}, mean -ln U {r['mean_exceedance']:.3f} "
              f"(z {r['z_score']:+.2f})")
    print(f"failed checks: {cert['failed_checks']}; written {args.out}")
    return 0 if cert["passed"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
