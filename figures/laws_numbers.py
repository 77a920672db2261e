"""The numbers of docs/site/theory/laws.md, from the exact theory of ``varsim.theory.laws`` (Markdown tables).

    python figures/laws_numbers.py          # ~1 minute

Table 1: QK-norm (keys and query on the unit sphere, d = 64, logit ``s cos(angle)``, so ``beta = s / sqrt(d)``)
against Gaussian logits of the same standard deviation: ``E[sum w^2]``, its local exponent, and the limit ``A`` of
``N E[sum w^2]``. Table 2: the crossover scale ``beta*`` (``A(beta*) = N``) per law and the local exponent there.
Table 3: per law family (the members drawn by the ``fig_law_<family>`` figures), the limit ``A``, the length from
which the 1/N law holds (local exponent -0.9) and the frozen range (exponent above -0.25).
"""

from __future__ import annotations

import math

import numpy as np

from varsim.theory.laws import annealed_limit, crossover_beta, law_ipr_and_exponent, logit_law

NS = np.array([1e3, 1e4, 1e5, 1e6, 1e9])
D = 64


def qk_norm_table() -> None:
    sphere, gauss = logit_law("sphere", d=D), logit_law("gaussian")
    print(f"| logit scale s (beta = s/{int(math.sqrt(D))}) | law | A = lim N E | "
          + " | ".join(f"E, slope at N = {n:.0e}" for n in NS) + " |")
    print("|---|---|---:|" + "---:|" * NS.size)
    for s in (4.0, 8.0, 16.0, 32.0, 64.0):
        beta = s / math.sqrt(D)
        for name, law in (("sphere d=64", sphere), ("Gaussian", gauss)):
            e, g = law_ipr_and_exponent(law, NS, beta)
            cells = " | ".join(f"{v:.3g}, {x:.2f}" for v, x in zip(e, g))
            print(f"| {s:g} | {name} | {annealed_limit(law, beta):.4g} | {cells} |")


def crossover_table() -> None:
    laws = [("gaussian", {}), ("sphere", {"d": 8}), ("sphere", {"d": 64}), ("uniform", {"d": 8}),
            ("rademacher", {"d": 16}), ("rademacher", {"d": 64})]
    ns = (1e3, 1e6, 1e12)
    print("| law | " + " | ".join(f"beta* (slope there) at N = {n:.0e}" for n in ns) + " |")
    print("|---|" + "---:|" * len(ns))
    for name, params in laws:
        law = logit_law(name, **params)
        cells = []
        for n in ns:
            b = crossover_beta(law, n)
            if math.isinf(b):
                cells.append("none (A < N for every beta)")
            else:
                g = float(law_ipr_and_exponent(law, n, b)[1])
                cells.append(f"{b:.4g} ({g:.2f})")
        label = f"{name} " + ", ".join(f"{k}={v}" for k, v in params.items())
        print(f"| {label.strip()} | " + " | ".join(cells) + " |")


def _length_at(law, beta: float, level: float) -> str:
    """The N (2 <= N <= 1e300) at which the local exponent falls through ``level``, as text."""
    from scipy.optimize import brentq

    def gap(ln_n):
        return float(law_ipr_and_exponent(law, math.exp(ln_n), beta)[1]) - level

    lo, hi = math.log(2.0), math.log(1e300)
    if gap(lo) <= 0:
        return "<= 2"
    if gap(hi) > 0:
        return "> 1e300"
    return f"{math.exp(brentq(gap, lo, hi, xtol=1e-6)):.3g}"


def family_table() -> None:
    from varsim.figures.laws import _member

    members = [("gaussian", None, None), ("sphere", "d", 8), ("sphere", "d", 64), ("uniform", "d", 2),
               ("uniform", "d", 8), ("rademacher", "d", 16), ("rademacher", "d", 64),
               ("empirical", "sample_size", 1000)]
    print("| law | beta | A = lim N E | exponent > -0.25 (frozen) up to N | exponent -0.9 (1/N law) from N |")
    print("|---|---:|---:|---:|---:|")
    for name, param, value in members:
        law = logit_law("gaussian") if param is None else _member(name, param, value, 0)
        label = name if param is None else f"{name} {'m' if param == 'sample_size' else param}={value}"
        for beta in (2.0, 4.0):
            print(f"| {label} | {beta:g} | {annealed_limit(law, beta):.4g} | {_length_at(law, beta, -0.25)} | "
                  f"{_length_at(law, beta, -0.9)} |")


def main() -> None:
    qk_norm_table()
    print()
    crossover_table()
    print()
    family_table()


if __name__ == "__main__":
    main()
