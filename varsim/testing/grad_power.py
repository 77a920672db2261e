"""Which backward bugs would your gradient check catch? :func:`backward_power_report` runs the check you run
(:func:`varsim.testing.check_gradients`, with your cases, dtype, profile and tolerance) on the catalogue of
:mod:`varsim.testing.grad_mutants` emulated at your dtype, and reports per bug class the share of seeds that fail next
to the false alarms of the correct backward kernels:

```python
from varsim.testing import backward_power_report
print(backward_power_report(dtype="bfloat16").table())
```

``excess`` is how far a bug's error is beyond a correct kernel's: the bug's worst ``|diff| / tolerance`` over the
cases divided by the worst of the correct kernels on the same draws; a bug with ``excess >= 10`` that passes is
*missed*. The rows and the table are those of :func:`varsim.testing.power_report` (:class:`~varsim.testing.power.
PowerReport`). The kernels are NumPy emulations of a kernel of the dtype; they do not run your library.
"""

from __future__ import annotations

from varsim._common.validate import check_int

from .backward import check_gradients
from .grad_cases import GRADIENT_CASES, GradientCase
from .grad_mutants import BACKWARD_MUTANTS, CORRECT_BACKWARD, EAGER_BACKWARD
from .power import MISSED_EXCESS, PowerReport, PowerRow

__all__ = ["backward_power_report", "bug_applies"]


def bug_applies(needs: frozenset, cases) -> str:
    """Why a bug needing ``needs`` cannot show in ``cases`` ("" when it can)."""
    has = {
        "softcap": any(c.softcap for c in cases),
        "sink": any(c.sink for c in cases),
        "bias": any(c.bias for c in cases),
        "dropout": any(c.dropout_p for c in cases),
        "mask": any(c.mask != "none" for c in cases),
        "grouped": any(c.heads != c.kv_heads for c in cases),
        "causal": any(c.mask in ("causal", "window") and c.n_queries != c.n_keys for c in cases),
        "causal_tiles": any(c.mask == "causal" and c.n_queries < c.n_keys > 128 for c in cases),
    }
    lacking = sorted(n for n in needs if not has[n])
    return f"no case has {', '.join(lacking)}" if lacking else ""


def _row(kernel, correct, ratios, base, seeds, why) -> PowerRow:
    if why:
        return PowerRow(kernel.name, kernel.description, correct, 0, 0, 0, (), not_applicable=why)
    caught_at = tuple(r > 1.0 for r in ratios)
    excess = tuple(r / b if b > 0 else float("inf") for r, b in zip(ratios, base))
    return PowerRow(kernel.name, kernel.description, correct, len(seeds), sum(caught_at), 0, excess,
                    caught_at=caught_at)


def backward_power_report(*, dtype: str = "float32", cases=None, seeds=20, profile: str = "fused",
                          tol_factor: float = 4.0, kernels=None) -> PowerReport:
    """Run the gradient check on every correct and buggy backward of the catalogue, at every seed.

    Parameters
    ----------
    dtype : {"float64", "float32", "float16", "bfloat16"}
        The precision the kernels are emulated at (and the check's).
    cases : sequence of GradientCase, optional
        Your battery (default :data:`~varsim.testing.GRADIENT_CASES`).
    seeds : int or sequence of int
        The check's ``rng`` values (an int ``n``: ``0 .. n - 1``).
    profile : {"fused", "eager"}
        The check's rounding model; under ``"eager"`` the correct kernels include the eager one.
    tol_factor : float
        The check's tolerance multiple.
    kernels : sequence of str, optional
        Restrict to these mutants (default: all of :data:`~varsim.testing.grad_mutants.BACKWARD_MUTANTS`).

    Returns
    -------
    PowerReport
        One row per kernel (correct ones first); ``table()``, ``false_alarms``, ``missed``.

    Examples
    --------
    >>> from varsim.testing import backward_power_report
    >>> report = backward_power_report(dtype="bfloat16", seeds=2, kernels=["dq_missing_scale"])
    >>> report.false_alarms, report.missed, report.caught
    ((0, 6), (), ('dq_missing_scale',))
    """
    seeds = tuple(range(check_int("seeds", seeds, minimum=1))) if isinstance(seeds, int) else tuple(seeds)
    cases = GRADIENT_CASES if cases is None else tuple([cases] if isinstance(cases, GradientCase) else cases)
    correct = list(CORRECT_BACKWARD.values()) + ([EAGER_BACKWARD] if profile == "eager" else [])
    unknown = sorted(set(kernels or ()) - set(BACKWARD_MUTANTS))
    if unknown:
        raise ValueError(f"kernels: unknown backward mutant(s) {unknown}; expected some of {sorted(BACKWARD_MUTANTS)}")
    bugs = [BACKWARD_MUTANTS[k] for k in (kernels or BACKWARD_MUTANTS)]

    def worst(kernel, seed):
        report = check_gradients(kernel.at(dtype), cases, dtype=dtype, profile=profile, tol_factor=tol_factor,
                                 rng=seed)
        return report.worst.ratio

    good = {k.name: [worst(k, s) for s in seeds] for k in correct}
    base = [max(good[k.name][i] for k in correct) for i in range(len(seeds))]
    rows = [_row(k, True, good[k.name], base, seeds, "") for k in correct]
    for k in bugs:
        why = bug_applies(k.needs, cases)
        rows.append(_row(k, False, [] if why else [worst(k, s) for s in seeds], base, seeds, why))
    config = (f"backward check, {dtype}, {profile} profile, tol_factor {tol_factor:g}, {len(cases)} case(s); "
              f"missed = caught less than always with excess >= {MISSED_EXCESS:g}")
    return PowerReport(config, tuple(rows), seeds)
