"""Which bugs would your same-draw check catch? :func:`power_report` plants the catalogue of
:mod:`varsim.testing.mutants` into your configuration (library, dtype, layout, keywords, whether weights are
returned), runs the check you run on each, and reports per bug class the share of seeds that fail, next to the
false alarms of the correct kernels:

```python
from varsim.testing import adapt, power_report
print(power_report(adapt(my_attention, array="torch", dtype="bfloat16", layout="bhld")).table())
```

Each planted kernel receives exactly what your function receives (the same library, dtype, layout and keywords),
computes in NumPy as a kernel of that dtype would (:mod:`varsim.testing.mutants`) and returns an array of your
library and dtype. ``excess`` is how far a bug's error is beyond a correct kernel's: the worst ``|diff| / tolerance``
of the bug over the cases divided by the worst of the correct kernels on the same draws; a bug with ``excess >= 10``
that passes is listed as *missed*.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import numbers
from collections.abc import Iterable

import numpy as np

from varsim._common.validate import check_int

from .arrays import KEYWORDS, Adapted, adapt, fn_name, to_numpy
from .cases import as_cases
from .mutants import CORRECT, MUTANTS, Kernel
from .precision import FLOAT_DTYPES, round_to
from .precision import profile as profile_of
from .same_draw import CHECK_OPTIONS, check_against_reference, reference_adapter, validated_options

__all__ = ["power_report", "PowerReport", "PowerRow", "MISSED_EXCESS", "MAX_CHECKS"]

MAX_CHECKS = 20_000
"""The most same-draw checks (seeds x kernels) :func:`power_report` runs unless ``max_checks=None``."""
MISSED_EXCESS = 10.0
"""A bug whose error exceeds the correct kernels' by this factor must be caught: passing, it is listed as missed."""


class _Emulated:
    """The array library of :func:`power_report` without a function: NumPy float64 arrays holding values of the
    dtype (float16 and bfloat16 without torch or ml_dtypes)."""

    name = "emulated"

    def __init__(self, dtype):
        self.dtype = dtype

    def asarray(self, arr, floating=True):
        return round_to(arr, self.dtype) if floating and self.dtype else np.asarray(arr)

    def rounding(self, arr):
        return round_to(arr, self.dtype)


def _any_numpy(x) -> np.ndarray:
    """A mask of any library as NumPy."""
    if type(x).__module__.split(".")[0] == "torch":
        return x.detach().cpu().numpy()
    try:
        return np.asarray(x)
    except (TypeError, ValueError):
        return np.from_dlpack(x)


# layout -> (q, K, V, mask) to (B, H, L, d) and back
_TO_BHLD = {
    "bhld": (lambda a: a, lambda m: m),
    "blhd": (lambda a: np.swapaxes(a, 1, 2), lambda m: m),
    "bld": (lambda a: a[:, None], lambda m: m[:, None]),
    "batch": (lambda a: a[:, None, None] if a.ndim == 2 else a[:, None], lambda m: m[:, None, None]),
    "sequence": (lambda a: a[None, None, None] if a.ndim == 1 else a[None, None], lambda m: m[None, None, None]),
}
# layout -> the axes a function of that layout sees (a bug on another axis cannot exist there)
_LAYOUT_AXES = {"bhld": {"batch", "heads", "queries"}, "blhd": {"batch", "heads", "queries"},
                "bld": {"batch", "queries"}, "batch": {"batch"}, "sequence": set()}
_FROM_BHLD = {"bhld": lambda a: a, "blhd": lambda a: np.swapaxes(a, 1, 2), "bld": lambda a: a[:, 0],
              "batch": lambda a: a[:, 0, 0], "sequence": lambda a: a[0, 0, 0]}


class _Planted:
    """A catalogue kernel called like the user's function (inside the reference's family, when there is one)."""

    def __init__(self, kernel: Kernel, like: Adapted, returns_weights: bool, family=None, profile="sdpa"):
        self.kernel, self.like, self.returns_weights, self.family = kernel, like, returns_weights, family
        self.profile = profile
        self.__qualname__ = kernel.name

    def __call__(self, q, K, V, tau=1.0, mask=None, causal=False):
        arrays = [to_numpy(a, fn=self.__qualname__, what="input") for a in (q, K, V)]
        dtype = arrays[0][1] if arrays[0][1] in FLOAT_DTYPES else "float64"
        if self.like.dtype is not None:
            dtype = self.like.dtype
        to, to_mask = _TO_BHLD[self.like.layout]
        q4, K4, V4 = (to(a) for a, _ in arrays)
        m4 = None if mask is None else to_mask(_any_numpy(mask).astype(bool))
        o, w = self.kernel(q4, K4, V4, tau=tau, mask=m4, causal=bool(causal), dtype=dtype, family=self.family,
                           profile=self.profile)
        back = _FROM_BHLD[self.like.layout]
        back_w = (lambda a: a) if self.like.layout == "blhd" else back  # weights stay (B, H, L, N)
        out = (self._convert(back(o), dtype),) + ((self._convert(back_w(w), dtype),) if self.returns_weights else ())
        return out if self.returns_weights else out[0]

    def _convert(self, arr, dtype):
        lib = self.like.lib
        if self.like.dtype is None and dtype in ("float32", "float16") and lib.name != "emulated":
            arr = arr.astype(dtype)
        return lib.asarray(np.ascontiguousarray(arr))


def _plant(kernel: Kernel, like: Adapted, returns_weights: bool, family=None, profile="sdpa") -> Adapted:
    planted = copy.copy(like)
    planted.fn = _Planted(kernel, like, returns_weights, family, profile)
    planted.__qualname__ = kernel.name
    return planted


@dataclasses.dataclass(frozen=True)
class PowerRow:
    """One catalogue entry of a :class:`PowerReport`, over the seeds.

    ``missed`` counts the seeds with ``excess >= MISSED_EXCESS`` that passed.

    Parameters
    ----------
    name, description : str
        The catalogue entry (:mod:`varsim.testing.mutants`).
    correct : bool
        A correct kernel (its failures are false alarms) or a bug.
    runs : int
        Seeds run.
    caught : int
        Seeds at which the check failed.
    low_precision : int
        Of those, the seeds with the verdict ``"low_precision"``.
    excess : tuple of float
        Per seed, the bug's worst ``|diff| / tolerance`` over the cases divided by the correct kernels' worst.
    not_applicable : str
        Why the bug cannot exist in this configuration ("" when it can).
    error : str
        The error the planted kernel raised, if any.
    caught_at : tuple of bool
        Per seed, whether the check failed.
    """

    name: str
    description: str
    correct: bool
    runs: int
    caught: int
    low_precision: int
    excess: tuple
    not_applicable: str = ""
    error: str = ""
    caught_at: tuple = ()

    @property
    def missed(self) -> int:
        """Seeds that passed although the bug's error was at least ``MISSED_EXCESS`` times a correct kernel's."""
        return sum(1 for e, c in zip(self.excess, self.caught_at) if e >= MISSED_EXCESS and not c)


@dataclasses.dataclass(frozen=True)
class PowerReport:
    """What :func:`power_report` found: the catalogue in one configuration.

    Parameters
    ----------
    config : str
        The configuration, in one line.
    rows : tuple of PowerRow
        One per kernel, the correct kernels first.
    seeds : tuple of int
        The check's ``rng`` values.
    """

    config: str
    rows: tuple
    seeds: tuple

    @property
    def false_alarms(self) -> tuple[int, int]:
        """Failures of the correct kernels, and their runs."""
        rows = [r for r in self.rows if r.correct]
        return sum(r.caught for r in rows), sum(r.runs for r in rows)

    @property
    def caught(self) -> tuple[str, ...]:
        """Bug classes caught at every seed."""
        return tuple(r.name for r in self.rows if not r.correct and r.runs and r.caught == r.runs)

    @property
    def not_caught(self) -> tuple[str, ...]:
        """Bug classes that passed at some seed (or cannot exist here)."""
        return tuple(r.name for r in self.rows if not r.correct and (not r.runs or r.caught < r.runs))

    @property
    def missed(self) -> tuple[str, ...]:
        """Bug classes that passed at a seed where their error was at least 10x a correct kernel's."""
        return tuple(r.name for r in self.rows if r.missed)

    def table(self) -> str:
        """A Markdown table: one row per kernel, the share caught, the median and smallest excess."""
        fa, runs = self.false_alarms
        lines = [f"{self.config}; {len(self.seeds)} seeds; false alarms {fa} of {runs} correct runs", "",
                 "| kernel | bug | caught | excess (median, min) | note |", "|---|---|---|---|---|"]
        for r in self.rows:
            if r.not_applicable:
                lines.append(f"| `{r.name}` | {'no' if r.correct else 'yes'} | n/a | | {r.not_applicable} |")
                continue
            ex = np.asarray(r.excess, dtype=float)
            exc = "" if r.correct else f"{np.median(ex):.3g}, {ex.min():.3g}"
            note = []
            if r.low_precision:
                note.append(f"{r.low_precision} as low precision")
            if r.missed:
                note.append(f"MISSED at {r.missed} seed(s) with excess >= {MISSED_EXCESS:g}")
            if r.error:
                note.append(r.error)
            lines.append(f"| `{r.name}` | {'no' if r.correct else 'yes'} | {r.caught}/{r.runs} | {exc} | "
                         f"{'; '.join(note)} |")
        return "\n".join(lines)

    def describe(self) -> str:
        """A summary: bug classes caught at every seed, false alarms, bugs not always caught or missed."""
        fa, runs = self.false_alarms
        lines = [f"{self.config}: {len(self.caught)} of {sum(1 for r in self.rows if not r.correct)} bug classes "
                 f"caught at every seed; false alarms {fa} of {runs}"]
        if self.not_caught:
            lines.append(f"  not always caught: {', '.join(self.not_caught)}")
        if self.missed:
            lines.append(f"  missed although >= {MISSED_EXCESS:g}x a correct kernel's error: {', '.join(self.missed)}")
        return "\n".join(lines)


def _returns_weights(like: Adapted, cases) -> bool:
    case = cases[0]
    q, K, V, mask = case.arrays(0)
    q, K, V = (like.rounding(a, case.dtype) for a in (q, K, V))
    mask_kw = mask if case.mask == "padding" and "mask" in like.accepts else None
    causal = case.mask == "causal" and bool({"mask", "causal"} & like.accepts)
    _, w = like.call4(q, K, V, tau=case.tau, mask=mask_kw, causal=causal, case_dtype=case.dtype)
    return w is not None


_FAMILY_STAGES = {"window": "window", "cap": "cap", "sinks": "sinks"}


def _not_applicable(kernel: Kernel, like: Adapted, cases, profile: str = "sdpa", family=None) -> str:
    if profile == "low_precision" and kernel.name.startswith("low_precision_"):
        return "no bug under profile 'low_precision' (the kernels of that profile accumulate in the dtype)"
    for need, stage in _FAMILY_STAGES.items():
        if need in kernel.needs and not getattr(family, stage, None):
            return f"the reference has no {need} (pass a varsim.testing.families.Family with one)"
    axes = _LAYOUT_AXES[like.layout] | ({"gqa"} if like.gqa and any(c.n_kv_heads != c.heads for c in cases) else set())
    missing = sorted(kernel.axes - axes)
    if "gqa" in missing:
        return "your function does not take grouped-query keys (adapt(..., gqa=True)), or no case has them"
    if missing:
        return f"layout {like.layout!r} has no {' or '.join(missing)} axis"
    if "causal" in kernel.needs and "causal" not in like.accepts:
        return "your function takes no causal= (the kit passes the causal mask)"
    if "mask" in kernel.needs:
        if not {"mask", "causal"} & like.accepts:
            return "your function takes no mask"
        if not any(c.mask != "none" for c in cases):
            return "no case has a mask"
    return ""


def power_report(attention_fn=None, cases=None, *, array="numpy", dtype: str | None = None, layout: str = "bhld",
                 accepts=KEYWORDS, device=None, returns_weights: bool | None = None, seeds=5, kernels=None,
                 max_checks: int | None = MAX_CHECKS, kernel_profile: str | None = None,
                 **check_options) -> PowerReport:
    """Plant every catalogue kernel into your configuration and run the same-draw check on each.

    Parameters
    ----------
    attention_fn : callable, Adapted or None
        Your function (adapted, or adapted here with ``array``, ``dtype``, ``layout``, ``accepts``, ``device``):
        the planted kernels take its library, dtype, layout and keywords, and return weights when it does. None
        describes a configuration by those arguments alone, computed in NumPy (any dtype, bfloat16 included).
    cases : AttentionCase, sequence of them, or None
        As for :func:`~varsim.testing.check_against_reference` (default: the standard battery).
    array : {"numpy", "torch"} or module
        The library of a function adapted here (see :func:`~varsim.testing.adapt`).
    dtype : {"float64", "float32", "float16", "bfloat16"}, optional
        The dtype the function receives.
    layout : {"batch", "bhld", "bld", "sequence"}
        The function's layout.
    accepts : iterable of str
        The keywords the function takes (default without a function: all of ``tau``, ``mask``, ``causal``; with
        one: read from its signature).
    device : str, optional
        torch device.
    returns_weights : bool, optional
        Default: whether ``attention_fn`` returns weights (checked on the first case); True without a function.
    seeds : int or sequence of int
        The check's ``rng`` values (an int ``k`` means ``range(k)``; NumPy integers are ints).
    kernels : sequence of str, optional
        Catalogue names (default: every correct kernel and every bug).
    max_checks : int or None
        Refuse up front when ``seeds x kernels`` checks exceed this (default :data:`MAX_CHECKS`, about a minute of
        CPU at a few milliseconds per check); None runs any number (asked explicitly).
    kernel_profile : str, optional
        The precision profile the planted kernels are written in (default: the check's ``profile``): e.g.
        ``kernel_profile="eager"`` with the default check measures what it catches of Hugging Face-style eager
        kernels, which it accepts by emulating their roundings.
    **check_options
        Passed to :func:`~varsim.testing.check_against_reference` (``tolerance``, ``tol_factor``, ``atol``,
        ``reference``): run the check you run. Every option is checked before any kernel runs: an unknown name or a
        bad value is a ValueError naming it, never a row of the report. ``reference`` must be ``None`` or a
        :class:`~varsim.testing.families.Family`, into which the kernels are planted (a correct ALiBi kernel is a
        correct kernel of an ALiBi family); another reference function is refused, since the catalogue cannot be
        planted into a function it cannot see into.

    Returns
    -------
    PowerReport
        Per kernel, the share of seeds caught; ``.table()`` and ``.describe()`` say it in words, ``.caught``,
        ``.not_caught``, ``.missed`` and ``.false_alarms`` list it.

    See Also
    --------
    varsim.testing.mutants : the catalogue of kernels.
    check_against_reference : the check run on each planted kernel.

    Examples
    --------
    >>> from varsim.testing import power_report
    >>> report = power_report(dtype="float16", seeds=2, kernels=["reference", "dropped_key", "output_scaled_1.03"])
    >>> report.caught, report.false_alarms
    (('dropped_key', 'output_scaled_1.03'), (0, 2))
    """
    check_options = _checked_options(check_options)
    kernel_profile = check_options["profile"] if kernel_profile is None else profile_of(kernel_profile).name
    family = getattr(check_options.get("reference"), "family", None)
    like = _configuration(attention_fn, array=array, dtype=dtype, layout=layout, accepts=accepts, device=device)
    if attention_fn is None:
        returns_weights = True if returns_weights is None else bool(returns_weights)
    cases = as_cases(cases)
    correct, bugs = _kernel_names(kernels)
    seeds = _checked_seeds(seeds, len(correct) + len(bugs), max_checks)
    if returns_weights is None:
        returns_weights = _returns_weights(like, cases)
    base, rows = {}, []
    run = functools.partial(_run_planted, like=like, returns_weights=returns_weights, cases=cases,
                            check_options=check_options, family=family, kernel_profile=kernel_profile)
    for name in correct:
        k = CORRECT[name]
        out = [run(k, seed=s) for s in seeds]
        for s, o in zip(seeds, out):
            base[s] = max(base.get(s, 0.0), o[2])
        rows.append(_row(name, k, True, out, tuple(1.0 for _ in seeds)))
    for name in bugs:
        k = MUTANTS[name]
        why = _not_applicable(k, like, cases, kernel_profile, family)
        if why:
            rows.append(PowerRow(name, k.description, False, 0, 0, 0, (), not_applicable=why))
            continue
        out = [run(k, seed=s) for s in seeds]
        excess = tuple(o[2] / base[s] if base[s] > 0 else (np.inf if o[2] > 0 else 1.0) for s, o in zip(seeds, out))
        rows.append(_row(name, k, False, out, excess))
    config = (f"{fn_name(like) if attention_fn is not None else 'configuration'}: array {like.lib.name}, dtype "
              f"{like.dtype or 'of the cases'}, layout {like.layout}, keywords {sorted(like.accepts)}, "
              f"{'o and w' if returns_weights else 'o only'}, {len(cases)} cases"
              f"{f', reference {family.describe()}' if family is not None else ''}, profile {check_options['profile']}"
              + ("" if kernel_profile == check_options["profile"] else
                 f", kernels written in profile {kernel_profile}"))
    return PowerReport(config, tuple(rows), seeds)


def _configuration(attention_fn, *, array, dtype, layout, accepts, device) -> Adapted:
    """``attention_fn`` adapted, or without a function the configuration alone, computed in NumPy at ``dtype``."""
    if layout == "packed" or getattr(attention_fn, "layout", None) == "packed":
        raise ValueError("layout: power_report cannot plant into the 'packed' layout; describe the same kernel with "
                         "layout='blhd' (the bugs are the same)")
    if attention_fn is not None:
        return adapt(attention_fn, array=array, dtype=dtype, layout=layout, device=device,
                     accepts=None if accepts is KEYWORDS else accepts)
    like = Adapted(lambda q, K, V: q, layout=layout, accepts=accepts)
    like.lib = _Emulated(dtype)
    like.dtype = dtype
    if dtype is not None and dtype not in FLOAT_DTYPES:
        raise ValueError(f"dtype: expected one of {FLOAT_DTYPES} or None, got {dtype!r}")
    return like


def _kernel_names(kernels) -> tuple[list, list]:
    """The correct kernels (all of them when ``kernels`` names none) and the bugs of ``kernels`` (default: all)."""
    names = list(CORRECT) + list(MUTANTS) if kernels is None else list(kernels)
    unknown = [n for n in names if n not in CORRECT and n not in MUTANTS]
    if unknown:
        raise ValueError(f"kernels: unknown name(s) {unknown}; expected some of {list(CORRECT) + list(MUTANTS)}")
    return [n for n in names if n in CORRECT] or list(CORRECT), [n for n in names if n in MUTANTS]


def _checked_options(options: dict) -> dict:
    """The check's options validated before any kernel runs (a typo or a bad value would otherwise make every
    planted kernel fail, counted as caught): unknown names, bad values and a reference the catalogue cannot be
    planted into are ValueErrors naming the option."""
    unknown = sorted(set(options) - set(CHECK_OPTIONS))
    if unknown:
        raise ValueError(f"power_report: unknown option(s) {unknown}; expected some of {list(CHECK_OPTIONS)} (or the "
                         f"arguments of power_report itself)")
    checked = dict(options)
    checked.update(validated_options(**{k: options[k] for k in options if k != "reference"}))
    ref = options.get("reference")
    if ref is not None:
        adapted = reference_adapter(ref)
        if getattr(adapted, "family", None) is None:
            raise ValueError(f"reference: power_report cannot plant its kernels into {fn_name(adapted)} (a function it "
                             f"cannot see into: every planted kernel would differ from it, correct ones included); "
                             f"pass a varsim.testing.families.Family describing your reference, or no reference")
        checked["reference"] = adapted
    return checked


def _checked_seeds(seeds, n_kernels: int, max_checks) -> tuple:
    """``seeds`` as a tuple of ints >= 0 (an integer ``k``: ``range(k)``), refused up front when ``seeds x kernels``
    checks exceed ``max_checks`` (None: no limit)."""
    if max_checks is not None:
        max_checks = check_int("max_checks", max_checks, minimum=1)
    if isinstance(seeds, (numbers.Integral, numbers.Real)) and not isinstance(seeds, (bool, np.bool_)):
        count = check_int("seeds", seeds, minimum=1)
    elif isinstance(seeds, (str, bytes)) or not isinstance(seeds, Iterable):
        raise ValueError(f"seeds must be a positive integer or a sequence of integers >= 0, got {seeds!r}")
    else:
        seeds = tuple(check_int(f"seeds[{i}]", v, minimum=0) for i, v in enumerate(seeds))
        if not seeds:
            raise ValueError("seeds: need at least one seed")
        count = len(seeds)
    if max_checks is not None and count * n_kernels > max_checks:
        raise ValueError(f"seeds: {count:.3g} seeds x {n_kernels} kernels = {count * n_kernels:.3g} same-draw checks, "
                         f"above max_checks={max_checks} (each takes milliseconds to tens of milliseconds of CPU); "
                         f"pass fewer seeds, or max_checks=None to run them anyway")
    return tuple(range(count)) if not isinstance(seeds, tuple) else seeds


def _run_planted(kernel: Kernel, *, like: Adapted, returns_weights: bool, cases, seed, check_options,
                 family=None, kernel_profile="sdpa") -> tuple:
    """The same-draw check of ``kernel`` planted into ``like`` (inside ``family``) at one seed: ``(caught,
    low_precision, worst ratio, error)``; a check that raises is caught, as the user's test would fail."""
    try:
        planted = _plant(kernel, like, returns_weights, family, kernel_profile)
        # the catalogue's own kernels never hang: no thread per call (``timeout`` is for the user's function)
        rep = check_against_reference(planted, cases, rng=seed, **dict(check_options, timeout=None))
    except (AssertionError, TypeError, ValueError, FloatingPointError) as exc:  # the user's test would fail
        return True, False, np.inf, f"raised {type(exc).__name__}"
    ran = [r.ratio for r in rep.results if not r.skipped]
    return rep.verdict != "pass", rep.verdict == "low_precision", max(ran), ""


def _row(name: str, kernel: Kernel, correct: bool, out: list, excess: tuple) -> PowerRow:
    """The report's row of one kernel from its :func:`_run_planted` results per seed."""
    return PowerRow(name, kernel.description, correct, len(out), sum(o[0] for o in out), sum(o[1] for o in out),
                    excess, error="; ".join(sorted({o[3] for o in out if o[3]})), caught_at=tuple(o[0] for o in out))
