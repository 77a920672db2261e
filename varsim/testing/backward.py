"""Gradient checks: your attention's backward pass (dQ, dK, dV, and the gradients of sink logits and of an additive
bias) against the exact float64 backward, on the same draws, with per-element tolerances from a rounding model of
the backward.

```python
from varsim.testing import assert_gradients_match, torch_gradients
assert_gradients_match(torch_gradients(my_torch_attention, dtype="bfloat16"))   # through torch autograd
assert_gradients_match(my_numpy_backward, dtype="float32")                      # or a backward of your own
```

What is checked, per case of :data:`~varsim.testing.GRADIENT_CASES` (or cases of your own): the inputs ``q, K, V``
and an output gradient ``dO`` are drawn, rounded to your dtype, and given to your function; the float64 reference
(:func:`~varsim.testing.grad_reference.attention_backward_reference`) runs on the very same numbers; each element of
``dq``, ``dk``, ``dv`` (``dsink`` with sinks, ``dbias`` with a bias, ``o`` when returned) must be within
``tol_factor`` times the error a correct backward of your dtype makes there (:mod:`varsim.testing.grad_precision`)
plus ``atol``. A failure names the case and the worst element; a function that raises, returns NaN, the wrong shape
or a lower-precision dtype, changes its inputs or hangs (``timeout=``) fails in one line naming the case.

Your function, the protocol: ``fn(q, K, V, dO, **keywords)`` on NumPy float64 arrays ``q (B, H, L, d_k)``,
``K (B, G, N, d_k)``, ``V (B, G, N, d_v)``, ``dO (B, H, L, d_v)`` holding values of ``dtype`` (``G`` KV heads:
query head ``h`` reads KV head ``h // (H / G)``, as ``repeat_interleave``) returns ``(dq, dK, dV)``,
``(dq, dK, dV, dsink)`` or a dict with keys among ``o, dq, dk, dv, dsink, dbias, dropout_mask``. It gets the keywords of
:data:`~varsim.testing.grad_cases.GRAD_KEYWORDS` its signature names: ``tau`` (logits ``tau q.k / sqrt(d_k)``),
``mask`` (boolean ``(B, 1, L, N)``, True = attend), ``causal`` (bottom-right aligned unless the check is told
``causal="top_left"``), ``window`` (causal sliding window of that many keys, the query's own included), ``softcap``
(``cap tanh(s / cap)`` before the mask), ``sink`` (a logit per query head, ``(H,)``), ``bias`` (an additive
logit bias ``(H, L, N)``, shared by the batch, added before the softcap; return its gradient as ``dbias``),
``dropout_p`` and ``seed``
(your function draws its own dropout mask and returns it as ``dropout_mask``, ``(B, H, L, N)``, True = kept: the
reference then uses it). A case needing a keyword your function lacks is skipped and listed. A fully masked query
row must give zero output and gradients (PyTorch >= 2.5, FlashAttention, MLX). Some cases hand ``q, K, V`` over as
non-contiguous views (as from a fused QKV projection; the last axis unit stride), and with ``masked_inputs="any"`` a
case plants NaN and inf in the keys and values no query may attend.

:func:`torch_gradients` and :func:`jax_gradients` turn a forward function of those libraries into this protocol
through their automatic differentiation.
"""

from __future__ import annotations

import dataclasses
import inspect
import math

import numpy as np

from varsim._common.seeding import resolve_seed
from varsim._common.validate import check_choice, check_real

from ._rng import describe_seed
from .arrays import fn_name, to_numpy
from .calls import Hung, call_with_timeout
from .grad_cases import GRAD_KEYWORDS, GRADIENT_CASES, GradientCase, plant_nonfinite, strided_view
from .grad_precision import GRAD_PROFILES, gradient_error_scale
from .grad_reference import attention_backward_reference
from .precision import FLOAT_DTYPES, PRECISION_ORDER, round_to

__all__ = ["check_gradients", "assert_gradients_match", "GradientReport", "GradientCaseResult", "accepted_keywords",
           "OUTPUTS", "MASKED_INPUTS"]

OUTPUTS = ("o", "dq", "dk", "dv", "dsink", "dbias")
"""The outputs compared, in this order (``o`` when the function returns it, ``dsink`` and ``dbias`` in cases with
sinks or a bias)."""
MASKED_INPUTS = ("finite", "any")
"""What a kernel may find at masked-out keys and values (``masked_inputs=``): ``"finite"`` (finite numbers only: the
cases planting NaN there are skipped) or ``"any"`` (NaN and inf there must not reach the output or the gradients,
the expectation of pytorch/pytorch#101967)."""


def accepted_keywords(fn) -> frozenset:
    """The keywords of :data:`GRAD_KEYWORDS` that ``fn`` takes (its ``accepts`` attribute, else its signature)."""
    given = getattr(fn, "accepts", None)
    if given is not None:
        return frozenset(given)
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return frozenset()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return frozenset(GRAD_KEYWORDS)
    return frozenset(k for k in GRAD_KEYWORDS if k in params)


@dataclasses.dataclass(frozen=True)
class GradientCaseResult:
    """One case of a gradient check: ``verdict`` is ``"pass"``, ``"fail"`` or ``"skipped"``; ``ratio`` the worst
    ``|diff| / tolerance`` over the outputs (inf for a non-finite or unusable result); ``ratios`` per output;
    ``detail`` the worst element (or what went wrong), ``skipped`` why the case did not run."""

    case: GradientCase
    ratio: float
    detail: str
    ratios: tuple = ()
    skipped: str = ""

    @property
    def verdict(self) -> str:
        return "skipped" if self.skipped else ("pass" if self.ratio <= 1.0 else "fail")

    @property
    def passed(self) -> bool:
        return self.verdict != "fail"


@dataclasses.dataclass(frozen=True)
class GradientReport:
    """Every case of one gradient check (:func:`check_gradients`); ``describe()`` is the assertion's message."""

    fn: str
    results: tuple
    rng: str
    dtype: str
    profile: str
    tol_factor: float
    note: str = ""

    @property
    def verdict(self) -> str:
        return "fail" if any(r.verdict == "fail" for r in self.results) else "pass"

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"

    @property
    def worst(self) -> GradientCaseResult | None:
        ran = [r for r in self.results if not r.skipped]
        return max(ran, key=lambda r: r.ratio) if ran else None

    def describe(self) -> str:
        """The verdict in words: the worst failing element, the other failing cases, skipped cases, the seed."""
        ran = [r for r in self.results if not r.skipped]
        failed = sorted((r for r in ran if r.verdict == "fail"), key=lambda r: -r.ratio)
        what = (f"tolerance {self.tol_factor:g} x the rounding error of a correct {self.dtype} backward "
                f"({self.profile} profile)")
        if not failed:
            lines = [f"backward of {self.fn} matches the float64 reference on all {len(ran)} case(s) ({what})"]
        else:
            lines = [f"backward of {self.fn} does not match the float64 reference: {len(failed)} of {len(ran)} "
                     f"case(s) fail ({what}):", f"  worst: {failed[0].case.describe()}: {failed[0].detail}"]
            lines += [f"  FAIL {r.case.name}: {r.detail}" for r in failed[1:6]]
            lines += [f"  passed: {', '.join(r.case.name for r in ran if r.passed) or 'none'}",
                      f"reproduce: check_gradients(fn, cases=[case], rng={self.rng}) with the case above"]
        lines += [f"  skipped {r.case.name}: {r.skipped}" for r in self.results if r.skipped]
        lines += [f"  note: {self.note}"] if self.note else []
        return "\n".join(lines)


def _keywords(case: GradientCase, drawn: dict, accepts) -> dict:
    kw = {}
    if "tau" in accepts:
        kw["tau"] = case.tau
    if case.mask in ("padding", "rows", "varlen"):
        kw["mask"] = drawn["mask"].copy()
    if case.mask in ("causal", "window"):
        kw["causal"] = True
    if case.mask == "window":
        kw["window"] = case.window
    if case.softcap:
        kw["softcap"] = case.softcap
    if case.sink:
        kw["sink"] = drawn["sink"].copy()
    if case.bias:
        kw["bias"] = drawn["bias"].copy()
    if case.dropout_p:
        kw["dropout_p"], kw["seed"] = case.dropout_p, drawn["seed"]
    return kw


def _unpack(out, has_sink: bool) -> dict:
    """The function's result as a dict of outputs; a TypeError in words for anything else."""
    if isinstance(out, dict):
        unknown = set(out) - set(OUTPUTS) - {"dropout_mask", "_inputs_after"}
        if unknown:
            raise TypeError(f"returned a dict with unknown key(s) {sorted(unknown)}; expected some of "
                            f"{list(OUTPUTS) + ['dropout_mask']}")
        return dict(out)
    if isinstance(out, (tuple, list)) and len(out) in (3, 4):
        return dict(zip(("dq", "dk", "dv", "dsink"), out))
    kind = type(out).__qualname__ + (f" of length {len(out)}" if isinstance(out, (tuple, list)) else "")
    raise TypeError(f"returned {kind}; expected (dq, dK, dV), (dq, dK, dV, dsink) or a dict" +
                    (" (dsink: this case has sinks)" if has_sink else ""))


def _read(name, value, want_shape, dtype, fn):
    """An output as float64, or the reason it is unusable."""
    try:
        arr, got_dtype = to_numpy(value, fn=fn, what=name)
    except TypeError as exc:
        return None, str(exc)
    if arr.shape != want_shape:
        return None, f"{name} has shape {arr.shape}, expected {want_shape}"
    if got_dtype in PRECISION_ORDER and PRECISION_ORDER[got_dtype] > PRECISION_ORDER[dtype]:
        return None, f"{name} is {got_dtype} for {dtype} inputs"
    bad = ~np.isfinite(arr)
    if bad.any():
        idx = tuple(int(i) for i in np.unravel_index(int(np.argmax(bad)), arr.shape))
        return None, f"{name}{list(idx)} = {arr[idx]} ({int(bad.sum())} non-finite value(s) in {name})"
    return arr, ""


def _as_bool(x) -> np.ndarray:
    """A boolean array of any library as NumPy."""
    if type(x).__module__.split(".")[0] == "torch":
        x = x.detach().cpu().numpy()
    return np.asarray(x).astype(bool)


def _check_dropout(out, case, shape) -> str:
    keep = out.get("dropout_mask")
    if keep is None:
        return ("returned no dropout_mask: a case with dropout needs the forward's mask (True = kept, "
                f"shape {shape}) to build the reference")
    keep = _as_bool(keep)
    if keep.shape != shape:
        return f"dropout_mask has shape {keep.shape}, expected {shape}"
    n, p = keep.size, case.dropout_p
    if abs(keep.mean() - (1 - p)) > 5 * math.sqrt(p * (1 - p) / n):
        return f"dropout_mask keeps {keep.mean():.3f} of the weights for dropout_p={p:g} (expected {1 - p:.3f})"
    return ""


def _compare(out, ref, err, what_fn, dtype, tol_factor, atol, has_o):
    ratios, worst = [], (0.0, "")
    for name in OUTPUTS:
        if ref[name] is None or (name == "o" and not has_o):
            continue
        arr, problem = _read(name, out.get(name), ref[name].shape, dtype, what_fn)
        if problem:
            return math.inf, problem, ()
        tol = tol_factor * err[name] + atol
        diff = np.abs(arr - ref[name])
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            ratio = np.where(diff == 0.0, 0.0, diff / tol)
        idx = tuple(int(i) for i in np.unravel_index(int(np.argmax(ratio)), ratio.shape))
        r = float(ratio[idx])
        ratios.append((name, r))
        if r > worst[0] or not worst[1]:
            worst = (r, f"{name}{list(idx)} = {arr[idx]:.8g}, reference {ref[name][idx]:.8g}, |diff| "
                        f"{diff[idx]:.3g} vs tolerance {np.broadcast_to(tol, diff.shape)[idx]:.3g} ({r:.3g} x)")
    return worst[0], worst[1], tuple(ratios)


def _skip_reason(fn, case, masked_inputs) -> str:
    missing = sorted(case.needs - accepted_keywords(fn))
    if missing:
        return f"{fn_name_of(fn)} takes no {', '.join(missing)}="
    kinds = getattr(fn, "mask_kinds", None)
    if kinds is not None and case.mask not in kinds:
        return f"{fn_name_of(fn)} takes no {case.mask} mask (it takes {', '.join(kinds)})"
    if case.masked_nan and masked_inputs != "any":
        return ("NaN and inf in masked-out keys and values: pass masked_inputs='any' if your kernel promises to "
                "ignore them (PyTorch's SDPA on CPU does not: 0 * NaN)")
    return ""


def _inputs(case, drawn, dtype):
    """The arrays the function gets (NaN planted, non-contiguous views) and those the reference gets."""
    q, K, V, dO = (round_to(drawn[k], dtype) for k in ("q", "K", "V", "dO"))
    Kin, Vin = plant_nonfinite(K, V, drawn["mask"]) if case.masked_nan else (K, V)
    given = (strided_view(q), strided_view(Kin), strided_view(Vin), dO) if case.strided else (q, Kin, Vin, dO)
    return given, (q, K, V, dO)


def _run_case(fn, case, root, *, dtype, profile, causal, tol_factor, atol, timeout=None,
              masked_inputs="finite") -> GradientCaseResult:
    accepts = accepted_keywords(fn)
    skipped = _skip_reason(fn, case, masked_inputs)
    if skipped:
        return GradientCaseResult(case, 0.0, "", skipped=skipped)
    tau = case.tau if "tau" in accepts else 1.0
    drawn = case.draw(root, tau=tau, causal=causal)
    args, (q, K, V, dO) = _inputs(case, drawn, dtype)
    sink = None if drawn["sink"] is None else round_to(drawn["sink"], dtype)
    if sink is not None:
        drawn["sink"] = sink
    bias = None if drawn["bias"] is None else round_to(drawn["bias"], dtype)
    drawn["bias"] = bias
    kw = _keywords(case, drawn, accepts)
    given = [x.copy() for x in args]
    name = fn_name_of(fn)
    try:
        out = _unpack(call_with_timeout(fn, args, kw, timeout, "varsim-check-gradients"), case.sink)
    except Hung:
        return GradientCaseResult(case, math.inf, f"{name} did not return within {timeout:g} s (a hang? it is left "
                                                  "running in a background thread)")
    except Exception as exc:  # noqa: BLE001 - the user's function failed: one line naming the case
        first = (str(exc).splitlines() or [""])[0]
        return GradientCaseResult(case, math.inf, f"{name} raised {type(exc).__name__}: {first}")
    after = out.pop("_inputs_after", args)
    for label, before, now in zip(("q", "K", "V", "dO"), given, after):
        if not np.array_equal(before, np.asarray(now, dtype=np.float64), equal_nan=True):
            return GradientCaseResult(case, math.inf, f"{name} changed its input {label} in place")
    keep = None
    if case.dropout_p:
        problem = _check_dropout(out, case, (case.batch, case.heads, case.n_queries, case.n_keys))
        if problem:
            return GradientCaseResult(case, math.inf, problem)
        keep = _as_bool(out["dropout_mask"])
    ref = attention_backward_reference(q, K, V, dO, tau=tau, mask=drawn["full"], softcap=case.softcap or None,
                                       sink=sink, keep=keep, dropout_p=case.dropout_p, bias=bias)
    ref["o"] = ref["O"]
    err = gradient_error_scale(ref, q, dO, dtype=dtype, profile=profile)
    ratio, detail, ratios = _compare(out, ref, err, name, dtype, tol_factor, atol, out.get("o") is not None)
    return GradientCaseResult(case, ratio, detail, ratios)


def fn_name_of(fn) -> str:
    """How a report names ``fn`` (its ``label`` attribute, else its qualified name)."""
    return getattr(fn, "label", None) or fn_name(fn)


def _as_cases(cases):
    if cases is None:
        return GRADIENT_CASES
    cases = (cases,) if isinstance(cases, GradientCase) else tuple(cases)
    if not cases or not all(isinstance(c, GradientCase) for c in cases):
        raise ValueError("cases: expected a GradientCase, a non-empty sequence of them, or None")
    return cases


def check_gradients(fn, cases=None, *, dtype: str | None = None, profile: str = "fused",
                    causal: str = "bottom_right", tol_factor: float = 4.0, atol: float = 0.0,
                    timeout: float | None = 60.0, masked_inputs: str = "finite", rng=0) -> GradientReport:
    """Run ``fn``'s backward on the same draws as the float64 reference and compare every gradient elementwise.

    Parameters
    ----------
    fn : callable
        A backward of the protocol in the module docstring, or :func:`torch_gradients` / :func:`jax_gradients` of
        a forward function.
    cases : GradientCase, sequence of them, or None
        None runs :data:`~varsim.testing.GRADIENT_CASES`.
    dtype : {"float64", "float32", "float16", "bfloat16"}, optional
        The precision of your kernel: inputs are rounded to it and the tolerances are its. Default: ``fn.dtype``
        for the adapters, else float64.
    profile : {"fused", "eager"}
        The rounding model (:data:`~varsim.testing.grad_precision.GRAD_PROFILES`): a fused kernel accumulating in
        float32 (default), or autograd through unfused operations in the dtype.
    causal : {"bottom_right", "top_left"}
        Your function's causal convention when ``L != N`` (FlashAttention >= 2.1 and MLX: bottom-right; PyTorch's
        ``is_causal``: top-left).
    tol_factor, atol : float
        Each element may differ by ``tol_factor * E + atol``.
    timeout : float or None
        Seconds one call of ``fn`` may take (it runs in a daemon thread; past this the case fails as a hang and the
        call is left running); None calls ``fn`` in this thread, without a limit.
    masked_inputs : {"finite", "any"}
        What your kernel may find at keys and values no query may attend (:data:`MASKED_INPUTS`): ``"any"`` runs
        the cases with NaN and inf planted there (``padding_nan``), whose output and gradients must stay those of
        the finite draw; ``"finite"`` (default) skips them and lists them as skipped.
    rng : int, SeedSequence or Generator
        Combined with each case's ``seed``.

    Returns
    -------
    GradientReport
        Every case's verdict; nothing is asserted (see :func:`assert_gradients_match`).

    Examples
    --------
    >>> from varsim.testing import check_gradients
    >>> from varsim.testing.grad_mutants import grad_kernel
    >>> check_gradients(grad_kernel("fused").at("bfloat16"), dtype="bfloat16").verdict
    'pass'
    >>> report = check_gradients(grad_kernel("dq_missing_scale").at("bfloat16"), dtype="bfloat16")
    >>> report.verdict, report.worst.detail.startswith("dq")
    ('fail', True)
    """
    own = getattr(fn, "dtype", None)
    if dtype is not None and own is not None and own != dtype:
        raise ValueError(f"dtype: {dtype!r} differs from the dtype {own!r} that {fn_name_of(fn)} computes in; "
                         "leave dtype out for an adapter or a catalogue kernel")
    dtype = check_choice("dtype", own or "float64" if dtype is None else dtype, FLOAT_DTYPES)
    profile = check_choice("profile", profile, GRAD_PROFILES)
    causal = check_choice("causal", causal, ("bottom_right", "top_left"))
    tol_factor = check_real("tol_factor", tol_factor, minimum=0.0, strict_min=True)
    atol = check_real("atol", atol, minimum=0.0)
    timeout = None if timeout is None else check_real("timeout", timeout, minimum=0.0, strict_min=True)
    masked_inputs = check_choice("masked_inputs", masked_inputs, MASKED_INPUTS)
    if not callable(fn):
        raise ValueError(f"fn: expected a callable, got {type(fn).__qualname__}")
    root = resolve_seed(None, rng)
    options = dict(dtype=dtype, profile=profile, causal=causal, tol_factor=tol_factor, atol=atol, timeout=timeout,
                   masked_inputs=masked_inputs)
    results = tuple(_run_case(fn, c, root, **options) for c in _as_cases(cases))
    if all(r.skipped for r in results):
        raise ValueError(f"cases: every case was skipped ({results[0].skipped})")
    note = _eager_note(fn, results, root, **options)
    return GradientReport(fn_name_of(fn), results, describe_seed(root), dtype, profile, tol_factor, note)


def _eager_note(fn, results, root, **options) -> str:
    """When every failure of a 16-bit fused check is within the eager profile's tolerance, say so (the eager
    profile's own power statement holds: every catalogue bug with 10x an eager kernel's error still fails)."""
    failed = [r for r in results if r.verdict == "fail"]
    if not failed or options["profile"] != "fused" or options["dtype"] not in ("float16", "bfloat16") or \
            any(math.isinf(r.ratio) for r in failed):
        return ""
    options = dict(options, profile="eager")
    if all(_run_case(fn, r.case, root, **options).passed for r in failed):
        return ("every failing case is within the tolerance of a kernel computing its products in the dtype "
                "(eager autograd): if yours does so on purpose, check it with profile='eager'")
    return ""


def assert_gradients_match(fn, cases=None, **options) -> GradientReport:
    """Assert that ``fn``'s gradients match the float64 reference on every case (:func:`check_gradients`).

    Raises
    ------
    AssertionError
        When a case fails: the message names the case, the worst element, both values and the tolerance.

    Examples
    --------
    >>> from varsim.testing import assert_gradients_match
    >>> from varsim.testing.grad_mutants import grad_kernel
    >>> assert_gradients_match(grad_kernel("fused").at("float32"), dtype="float32").passed
    True
    """
    report = check_gradients(fn, cases, **options)
    if not report.passed:
        raise AssertionError(report.describe())
    return report
