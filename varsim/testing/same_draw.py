"""Same-draw reference checks: your attention and a reference get identical ``q``, ``K``, ``V`` (and mask).

This is what catches small and structural bugs (a scale off by a few percent, a dropped key, keys reused across
the batch, a causal mask aligned to the wrong corner, reduced precision) that a Monte Carlo statistic cannot see
at a useful budget. Inputs are rounded to the dtype your function receives first, so the float64 reference sees
exactly the numbers your function sees. The tolerance of each output element (and weight) is ``tol_factor`` times
the error a correct kernel of that dtype makes there (:mod:`varsim.testing.precision`; ``tolerance=`` picks the
model: ``"calibrated"``, float32 accumulation at float16/bfloat16, the default; ``"low_precision"``;
``"worst_case"``) plus ``atol``. A function whose output has a lower precision than its inputs (JAX computes in
float32 unless x64 is enabled) is compared at the output's precision, and the report says so. A failure names the
worst element over all cases: the case, the sequence and coordinate, both values and the ratio to the tolerance.
"""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np

from varsim._common.seeding import resolve_seed
from varsim._common.validate import check_choice, check_real

from ._rng import describe_seed
from .arrays import Adapted, InputChanged, adapt, causal_mask, fn_name
from .attention import expand_kv_heads, softmax_attention_nd
from .calls import Hung, call_with_timeout
from .cases import AttentionCase, as_cases
from .families import Family, softmax_rows
from .precision import DEFAULT_PROFILE, DEFAULT_TOL_FACTOR, PRECISION_ORDER, PROFILES, TOLERANCES, error_scale
from .precision import profile as profile_of

__all__ = ["CaseResult", "ReferenceReport", "check_against_reference", "assert_matches_reference",
           "DEFAULT_REFERENCE"]

DEFAULT_REFERENCE = adapt(softmax_attention_nd, layout="bhld", gqa=True)
DEFAULT_TIMEOUT = 60.0
"""Seconds one call of the function under test may take before its case fails as a hang."""
_PLAIN = Family()
MASKED_ROWS = ("zeros", "nan")
"""The conventions for a query with no key to attend (``masked_rows=``): a zero output and zero weights (flash
kernels), or NaN there (a plain softmax of ``-inf`` logits); either way no NaN in any other row."""


@dataclasses.dataclass(frozen=True)
class CaseResult:
    """The outcome of one case of a same-draw check (an entry of :attr:`ReferenceReport.results`).

    Parameters
    ----------
    case : AttentionCase
        The case run.
    passed : bool
        Whether every element is within its tolerance.
    ratio : float
        The worst ``|diff| / tolerance`` over the output (and weights); inf for a non-finite output.
    detail : str
        That element: where it is, both values, the tolerance.
    skipped : str
        Why the case did not run ("" when it ran).
    tau : float
        The temperature applied (1 when a function takes no ``tau``).
    verdict : {"pass", "fail", "profile", "low_precision", "skipped"}
        ``"profile"``: beyond the tolerance of the profile checked (``"sdpa"`` by default), within that of the
        precision profile ``profile`` (e.g. Hugging Face eager, TF32); ``"low_precision"``: only within that of a
        kernel accumulating in its own dtype.
    dtype : str
        The precision compared at.
    note : str
        Why ``dtype`` differs from the inputs' ("" when it does not).
    profile : str
        With the verdict ``"profile"`` or ``"low_precision"``: the tightest profile of
        :data:`~varsim.testing.precision.PROFILES` whose tolerance the case passes. With the verdict ``"pass"``: the
        profile whose exactly emulated roundings the case matched (``"eager"``), when it did not pass the default
        model directly ("" otherwise).
    profile_ratio : float
        Its ``|diff| / tolerance`` under that profile.
    profiles : tuple of str
        Every profile whose tolerance the case passes, tightest first.
    """

    case: AttentionCase
    passed: bool
    ratio: float
    detail: str
    skipped: str = ""
    tau: float = 1.0
    verdict: str = ""
    dtype: str = "float64"
    note: str = ""
    profile: str = ""
    profile_ratio: float = math.nan
    profiles: tuple = ()

    def __post_init__(self):
        if not self.verdict:
            object.__setattr__(self, "verdict", "skipped" if self.skipped else ("pass" if self.passed else "fail"))


@dataclasses.dataclass(frozen=True)
class ReferenceReport:
    """All cases of one same-draw check, as :func:`check_against_reference` returns them.

    ``verdict`` is ``"pass"``, ``"fail"`` (some case beyond every tolerance model), ``"profile"`` (no case fails, some
    pass only under another precision profile, named in the message) or ``"low_precision"`` (no case fails, some
    pass only the low-precision model); ``passed`` is ``verdict == "pass"``; ``worst`` the case with
    the largest ratio; ``describe()`` the message :func:`assert_matches_reference` raises.

    Parameters
    ----------
    fn, reference : str
        The names of the function checked and of the reference.
    results : tuple of CaseResult
        One per case, in the order run.
    rng : str
        The seed that reproduces the draws.
    tol_factor : float
        The multiple of the error model allowed.
    tolerance : {"calibrated", "low_precision", "worst_case"}
        The error model (:data:`~varsim.testing.precision.TOLERANCES`).
    profile : str
        The precision profile checked (:data:`~varsim.testing.precision.PROFILES`).
    """

    fn: str
    reference: str
    results: tuple
    rng: str
    tol_factor: float
    tolerance: str = "calibrated"
    profile: str = DEFAULT_PROFILE

    @property
    def verdict(self) -> str:
        ran = [r.verdict for r in self.results if not r.skipped]
        for verdict in ("fail", "low_precision", "profile"):
            if verdict in ran:
                return verdict
        return "pass"

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"

    @property
    def worst(self) -> CaseResult | None:
        ran = [r for r in self.results if not r.skipped]
        return max(ran, key=lambda r: r.ratio) if ran else None

    def _tolerance_text(self) -> str:
        if self.tolerance == "worst_case":
            return f"tolerance {self.tol_factor:g} eps (1 + Lmax + sqrt N) max|V|"
        dtypes = sorted({r.dtype for r in self.results if not r.skipped}, key=PRECISION_ORDER.get)
        text = f"tolerance {self.tol_factor:g} x the rounding error of a correct {'/'.join(dtypes)} kernel"
        if self.tolerance == "low_precision" or self.profile == "low_precision":
            return text + " accumulating in its own precision, profile 'low_precision'"
        text += " accumulating in float32" if {"float16", "bfloat16"} & set(dtypes) else ""
        return text + f", profile '{self.profile}'"

    def _advice(self, low: list) -> list:
        """What a case within another profile's tolerance means. A profile is named only where its own power
        holds (a bug 10x a correct kernel's error of that profile fails it); the low-precision model is far looser
        and is never recommended."""
        first = low[0]
        if first.verdict == "low_precision":
            return [f"  within the tolerance of a kernel accumulating in {first.dtype} itself (profile "
                    f"'low_precision'), a model loose enough to let bugs with 10x a correct kernel's error pass "
                    f"(the guide's power table): the kit does not accept it by default; if your kernel "
                    f"accumulates in {first.dtype} on purpose, see 'Precision profiles' in the guide"]
        common = [n for n in first.profiles if all(n in r.profiles for r in low)]
        names = common or list(dict.fromkeys(n for r in low for n in r.profiles))
        which = "; ".join(f"'{n}': {profile_of(n).description}" for n in names if n != "low_precision")
        lines = [f"  within the tolerance of the precision profile(s) {which}" + ("" if common else
                 " (each case within a different one)"),
                 f"  if your kernel computes one of these ways, pass that profile (e.g. profile='{names[0]}'): under "
                 f"each, bugs with 10x a correct kernel's error of that profile still fail"]
        return lines

    @staticmethod
    def _emulated_line(ran: list) -> list:
        """The cases that passed through a profile's exactly emulated logits, named with the profile (none: [])."""
        emulated = [r for r in ran if r.passed and r.profile]
        if not emulated:
            return []
        profiles = list(dict.fromkeys(r.profile for r in emulated))
        return [f"  {len(emulated)} of them ({', '.join(r.case.name for r in emulated)}) as a kernel of profile "
                f"'{', '.join(profiles)}' rounds: within the default model of that profile's logits, emulated exactly "
                f"({'; '.join(profile_of(n).description for n in profiles)})"]

    def describe(self) -> str:
        """The verdict in words: the worst element of the failing cases, skipped cases, how to reproduce."""
        ran = [r for r in self.results if not r.skipped]
        failed = [r for r in ran if r.verdict == "fail"]
        low = [r for r in ran if r.verdict in ("low_precision", "profile")]
        bad = failed + low
        if self.verdict == "pass":
            verdict = f"matches the reference {self.reference} on all {len(ran)}"
        elif self.verdict == "low_precision":
            verdict = (f"matches the reference {self.reference} only as a kernel that accumulates in "
                       f"{low[0].dtype} would: {len(low)} of {len(ran)}")
        elif self.verdict == "profile":
            verdict = (f"matches the reference {self.reference} only as a kernel of profile '{low[0].profile}' "
                       f"would: {len(low)} of {len(ran)}")
        else:
            verdict = f"does not match the reference {self.reference}: {len(failed)} of {len(ran)}"
        head = (f"attention_fn {self.fn} {verdict} same-draw case(s) {'' if not bad else 'fail '}("
                f"{self._tolerance_text()})")
        lines = [head + (":" if bad else "")] + self._emulated_line(ran)
        worst = max(bad, key=lambda r: r.ratio) if bad else None
        if worst is not None:
            lines.append(f"  worst: {worst.case.describe()}: {worst.detail}")
        others = [r for r in bad if r is not worst]
        lines += [f"  {r.verdict.upper()} {r.case.name}: {r.detail}" for r in others[:4]]
        if len(others) > 4:
            lines.append(f"  FAIL {', '.join(r.case.name for r in others[4:])} as well")
        lines += [f"  skipped {r.case.name}: {r.skipped}" for r in self.results if r.skipped]
        lines += [f"  note: {n}" for n in dict.fromkeys(r.note for r in ran if r.note)]
        if bad:
            lines.append(f"  passed: {', '.join(r.case.name for r in ran if r.passed) or 'none'}")
            if self.verdict in ("low_precision", "profile"):
                lines += self._advice(low)
            lines.append(f"reproduce: q, K, V, mask = case.arrays(rng={self.rng}, tau={worst.tau:g}) for the case "
                         f"above (varsim.testing.AttentionCase), or rerun with rng={self.rng}")
        return "\n".join(lines)


def _where(fn: Adapted, shape, idx, what: str) -> str:
    """``o[b=.., h=.., l=.., j=..]`` and, for the folded layouts, the row of the user's own batch."""
    b, h, l_, last = idx
    B, H, L = shape[:3]
    text = f"{what}[b={b}, h={h}, l={l_}, {'i' if what == 'w' else 'j'}={last}]"
    if fn.layout == "batch":
        text += f" (row {(b * H + h) * L + l_} of your batch)"
    elif fn.layout == "bld":
        text += f" (row {b * H + h}, query {l_} of your batch)"
    return text


def _nonfinite(fn, arr, what, shape) -> str | None:
    bad = ~np.isfinite(arr)
    if not bad.any():
        return None
    idx = np.unravel_index(int(np.argmax(bad)), arr.shape)
    return (f"{_where(fn, shape, idx, what)} = {arr[idx]} ({int(bad.sum())} non-finite value(s) in "
            f"{what}; an overflow? exp of logits that are not max-subtracted overflows at large logits)")


def _worst(fn, got, want, tol, what, shape) -> tuple[float, str]:
    err = np.abs(got - want)
    with np.errstate(over="ignore"):  # a wrong tiny weight is many orders beyond its tolerance
        ratio = err / tol
    idx = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
    r = float(ratio[idx])
    text = (f"{_where(fn, shape, idx, what)} = {got[idx]:.10g}, reference "
            f"{want[idx]:.10g}, |diff| {err[idx]:.3g} vs tolerance {np.broadcast_to(tol, ratio.shape)[idx]:.3g} "
            f"({r:.3g} x tolerance)")
    return r, text


def _precision_note(fn: Adapted, dtype: str, out_dtype: str) -> tuple[str, str]:
    """The dtype to compare at (the lower precision of the inputs and the output) and a note when it is the
    output's."""
    if out_dtype not in PRECISION_ORDER or PRECISION_ORDER[out_dtype] <= PRECISION_ORDER[dtype]:
        return dtype, ""
    return out_dtype, (f"attention_fn {fn.__qualname__} returned {out_dtype} for {dtype} inputs, so it is compared "
                       f"at {out_dtype} tolerances (JAX computes in float32 unless jax_enable_x64 is set)")


def _skip_reason(fn: Adapted, ref: Adapted, case: AttentionCase) -> str:
    for who, f in (("attention_fn", fn), ("reference", ref)):
        if case.mask == "padding" and "mask" not in f.accepts:
            return f"{who} {f.__qualname__} takes no mask= keyword"
        if case.mask == "causal" and not ({"mask", "causal"} & f.accepts):
            return f"{who} {f.__qualname__} takes no mask= or causal="
    return ""


@dataclasses.dataclass
class _Calibration:
    """What the tolerances of one case are built from: the reference's own float64 output and weights, the inputs
    of its products (``q, K, V`` after its own transforms) and the size of its logits; ``V_check`` the values that
    ``o = w V`` is checked with (None: the reference's output is not ``w V`` of the case's values)."""

    o: np.ndarray
    w: np.ndarray | None
    q: np.ndarray
    K: np.ndarray
    V: np.ndarray
    V_check: np.ndarray | None
    logit_abs: np.ndarray | None = None
    logit_extra: np.ndarray | None = None
    logits: np.ndarray | None = None


def _calibrate(ref: Adapted, q, K, V, tau, padding, causal) -> _Calibration:
    """The calibration of one case from the reference: exact for the default reference and a
    :class:`~varsim.testing.families.Family`, measured from the reference's own ``(o, w)`` otherwise."""
    full_mask = causal_mask(q.shape[2], K.shape[2]) if causal else padding
    raw_K, raw_V = K, V
    K, V = expand_kv_heads(q, K, V)
    if ref is DEFAULT_REFERENCE:
        o, w = _PLAIN(q, K, V, tau=tau, mask=full_mask)  # softmax_attention_nd, zeros on a row with no key
        return _Calibration(o, w, q, K, V, V)
    family = getattr(ref, "family", None)
    if family is not None:
        q2, K2, V2 = family.inputs(q, K, V)
        s, _ = family.logits(q2, K2, tau, full_mask)
        o, w = softmax_rows(*family.with_sinks(s, V2))
        w = w[..., :-1] if family.sinks else w
        b = family.bias(q.shape[1], q.shape[2], K.shape[2])
        return _Calibration(o, w, q2, K2, V2, V2, logit_extra=None if b is None else np.abs(b),
                            logits=np.where(np.isfinite(s), s, 0.0))
    try:
        o, w = ref.call4(q, raw_K, raw_V, tau=tau, mask=padding, causal=causal)
        if w is None:
            w = _derived_weights(ref, q, raw_K, raw_V, tau, padding, causal)
    except (AssertionError, TypeError) as exc:  # the reference returned something unusable
        raise type(exc)(f"reference: {exc}") from None
    consistent = np.allclose(np.matmul(w, V), o, rtol=1e-9, atol=1e-12 * (1.0 + np.abs(V).max()))
    a, extra = _measured_logit_sizes(q, K, w, tau)
    return _Calibration(o, w, q, K, V, V if consistent else None, logit_abs=a, logit_extra=extra)


def _derived_weights(ref: Adapted, q, K, V, tau, padding, causal, chunk: int = 64):
    """The weights of a reference that returns only its output: attention is linear in the values, so the output
    for the values ``I_N`` (one-hot, ``chunk`` columns at a time) is the weight matrix."""
    B, H, N = K.shape[0], K.shape[1], K.shape[2]  # the one-hot values have the keys' heads
    cols = []
    for start in range(0, N, chunk):
        eye = np.zeros((B, H, N, min(chunk, N - start)))
        eye[:, :, np.arange(start, start + eye.shape[-1]), np.arange(eye.shape[-1])] = 1.0
        cols.append(ref.call4(q, K, eye, tau=tau, mask=padding, causal=causal)[0])
    return np.concatenate(cols, axis=-1)


def _measured_logit_sizes(q, K, w, tau):
    """For a reference the kit cannot see into: ``a_i`` bounded by Cauchy-Schwarz, ``scale |q_l| max_h |k_hi|``
    (any head mapping, any norm-preserving rotation), times how much wider the reference's logits spread than the
    plain ones (a temperature per head); the bias term ``|log(w_i / max w)|`` (what was added beyond the
    products)."""
    scale = tau / math.sqrt(q.shape[-1])
    qn = np.linalg.norm(q, axis=-1)[..., :, None]  # (B, H, L, 1)
    kn = np.linalg.norm(K, axis=-1).max(axis=1, keepdims=True)[..., None, :]  # (B, 1, 1, N)
    a = scale * qn * kn
    with np.errstate(divide="ignore", invalid="ignore"):
        logw = np.log(w / w.max(axis=-1, keepdims=True))
    seen = np.isfinite(logw)
    plain = scale * np.matmul(q, np.swapaxes(K, -1, -2))  # K already has the query heads
    spread = lambda x: np.sqrt(np.nanvar(np.where(seen, x, np.nan), axis=-1, keepdims=True))  # noqa: E731
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        gamma = np.nan_to_num(spread(logw) / spread(plain), nan=1.0, posinf=1.0)
    extra = np.where(seen, np.abs(logw), 0.0)
    return a * np.clip(gamma, 1.0, None), extra


def _masked_rows(fn, o, w, padding, convention, shape):
    """Under ``masked_rows="nan"``: the rows with no key must be NaN (else a failure text); they are set to 0 so
    that the other rows are compared (and checked for NaN) as usual."""
    if convention != "nan" or padding is None:
        return o, w, ""
    empty = np.broadcast_to(~np.asarray(padding).any(axis=-1), shape[:3])  # (B, H, L)
    if not empty.any():
        return o, w, ""
    if not np.isnan(o[empty]).all():
        idx = tuple(int(i[0]) for i in np.nonzero(empty & ~np.isnan(o).all(axis=-1)))
        return o, w, (f"{_where(fn, shape, idx + (0,), 'o')} = {o[idx][0]:.6g} where the query has no key to attend: "
                      f"expected NaN (masked_rows='nan')")
    o = np.where(empty[..., None], 0.0, o)
    w = None if w is None else np.where(empty[..., None], 0.0, w)
    return o, w, ""


def _run_case(fn: Adapted, ref: Adapted, case: AttentionCase, root, tolerance, tol_factor, atol,
              profile=DEFAULT_PROFILE, masked_rows=None, timeout=None) -> CaseResult:
    skipped = _skip_reason(fn, ref, case)
    if case.empty_rows and masked_rows is None:
        skipped = skipped or ("a query with no key to attend: pass masked_rows='zeros' or 'nan' (your kernel's "
                              "convention) to run this case")
    if skipped:
        return CaseResult(case, True, 0.0, "", skipped=skipped)
    tau = case.tau if ("tau" in fn.accepts and "tau" in ref.accepts) else 1.0
    q, K, V, mask = case.arrays(root, tau=tau)
    q, K, V = (fn.rounding(a, case.dtype) for a in (q, K, V))
    causal = case.mask == "causal"
    padding = mask if case.mask == "padding" else None
    try:
        o, w = call_with_timeout(fn.call4, (q, K, V), dict(tau=tau, mask=padding, causal=causal,
                                                            case_dtype=case.dtype), timeout)
    except Hung:
        return CaseResult(case, False, math.inf, f"attention_fn {fn.__qualname__} did not return within {timeout:g} s "
                                                 f"(a hang? it is left running in a background thread)", tau=tau)
    except InputChanged as exc:
        return CaseResult(case, False, math.inf, str(exc), tau=tau)
    except Exception as exc:
        exc.add_note(f"while running attention_fn {fn.__qualname__} on {case.describe()}")
        raise
    dtype, note = _precision_note(fn, fn.input_dtype(case.dtype), fn.out_dtype)
    note = note or fn.dtype_note
    cal = _calibrate(ref, q, K, V, tau, padding, causal)
    shape = q.shape
    o, w, wrong = _masked_rows(fn, o, w, padding, masked_rows, shape)
    if wrong:
        return CaseResult(case, False, math.inf, wrong, tau=tau, dtype=dtype, note=note)
    for arr, what in ((o, "o"), (w, "w")):
        if arr is not None:
            bad = _nonfinite(fn, arr, what, shape)
            if bad:
                return CaseResult(case, False, math.inf, bad, tau=tau, dtype=dtype, note=note)

    def ratio_of(model, factor, prof=profile, c=cal, logit_var=None):
        return _ratio(fn, o, w, c, shape, tau=tau, dtype=dtype, model=model, factor=factor, atol=atol, profile=prof,
                      logit_var=logit_var)

    ratio, detail = ratio_of(tolerance, tol_factor)
    result = dict(tau=tau, dtype=dtype, note=note, verdict="pass" if ratio <= 1.0 else "fail")
    if result["verdict"] == "fail" and tolerance == "calibrated" and profile == DEFAULT_PROFILE:
        matched = _emulated_match(ratio_of, cal, ref, tau, padding, causal, dtype, tol_factor)
        if matched:
            result.update(verdict="pass", profile=matched[0], profile_ratio=matched[1], profiles=(matched[0],))
            return CaseResult(case, True, ratio, detail, **result)
        within = {n: r for n in DETECTED if PROFILES.find(n).applies(dtype)
                  for r in [ratio_of("calibrated", tol_factor, n)[0]] if r <= 1.0}  # the other profiles it passes
        if within:
            name = next(iter(within))
            result.update(verdict="low_precision" if name == "low_precision" else "profile", profile=name,
                          profile_ratio=within[name], profiles=tuple(within))
    return CaseResult(case, result["verdict"] == "pass", ratio, detail, **result)


def _ratio(fn, o, w, cal: _Calibration, shape, *, tau, dtype, model, factor, atol, profile, logit_var=None):
    """The worst ``|diff| / tolerance`` of the output (and weights, and ``o = w V``) against the calibration ``cal``
    under ``model`` and ``profile``, and its text."""
    tol_o, tol_w = (factor * e + atol for e in error_scale(
        cal.q, cal.K, cal.V, cal.w, cal.o, tau=tau, dtype=dtype, model=model, logit_abs=cal.logit_abs,
        logit_extra=cal.logit_extra, logits=cal.logits, profile=profile, logit_var=logit_var))
    checks = [_worst(fn, o, cal.o, tol_o, "o", shape)]
    if w is not None:
        checks.append(_worst(fn, w, cal.w, tol_w, "w", shape))
        if cal.V_check is not None:
            r, text = _worst(fn, o, np.matmul(w, cal.V_check), tol_o, "o", shape)
            checks.append((r, text + " -- the output disagrees with the returned weights (o != w V)"))
    return max(checks, key=lambda c: c[0])


def _emulated_match(ratio_of, cal: _Calibration, ref: Adapted, tau, padding, causal, dtype, tol_factor):
    """``(profile, ratio)`` of the first profile with an emulation (:attr:`Profile.emulate`) whose exactly emulated
    logits the case matches within the default model, plus the rounding ambiguity of each logit; None when none
    does. Only for the default reference, whose logits are the plain ``q.k`` the emulations round."""
    if ref is not DEFAULT_REFERENCE:
        return None
    full_mask = causal_mask(cal.q.shape[2], cal.K.shape[2]) if causal else padding
    for name in EMULATED:
        prof = PROFILES.find(name)
        if not prof.applies(dtype):
            continue
        s, delta = prof.emulate(cal.q, cal.K, tau / math.sqrt(cal.q.shape[-1]), dtype)
        if full_mask is not None:
            s = np.where(full_mask, s, -np.inf)
        o_e, w_e = softmax_rows(s, cal.V)
        emulated = dataclasses.replace(cal, o=o_e, w=w_e)
        r = ratio_of("calibrated", tol_factor, DEFAULT_PROFILE, emulated, delta * delta)[0]
        if r <= 1.0:
            return name, r
    return None


EMULATED = tuple(name for name in PROFILES if PROFILES.find(name).emulate is not None)
"""The profiles whose kernels the default check emulates exactly and accepts (named in the verdict)."""
DETECTED = ("prescaled", "positions", "tf32", "eager", "low_precision")
"""The profiles a failing case is tried under (tightest first) to name the one it matches."""
CHECK_OPTIONS = ("reference", "tolerance", "tol_factor", "atol", "profile", "masked_rows", "timeout")
"""The options of :func:`check_against_reference` besides the function, the cases and ``rng``."""


def validated_options(*, tolerance: str = "calibrated", tol_factor=None, atol=0.0, profile=DEFAULT_PROFILE,
                      masked_rows=None, timeout=DEFAULT_TIMEOUT) -> dict:
    """The tolerance options checked and completed (``tol_factor`` None: the model's default); a bad value is a
    ValueError naming the option."""
    tolerance = check_choice("tolerance", tolerance, tuple(TOLERANCES))
    tol_factor = DEFAULT_TOL_FACTOR[tolerance] if tol_factor is None else tol_factor
    tol_factor = check_real("tol_factor", tol_factor, minimum=0.0, strict_min=True)
    atol = check_real("atol", atol, minimum=0.0)
    if masked_rows is not None:
        masked_rows = check_choice("masked_rows", masked_rows, MASKED_ROWS)
    if timeout is not None:
        timeout = check_real("timeout", timeout, minimum=0.0, strict_min=True)
    return {"tolerance": tolerance, "tol_factor": tol_factor, "atol": atol, "profile": profile_of(profile).name,
            "masked_rows": masked_rows, "timeout": timeout}


def reference_adapter(reference) -> Adapted:
    """``reference=`` as the checks call it: the default float64 softmax for None, a
    :class:`~varsim.testing.families.Family` in the ``(B, H, L, d)`` layout (with its stages readable by the
    calibration), any other callable adapted like ``attention_fn``; anything else is a ValueError naming
    ``reference``."""
    if reference is None:
        return DEFAULT_REFERENCE
    if isinstance(reference, Family):
        ref = adapt(reference, layout="bhld", accepts=("tau", "mask", "causal"))
        ref.family = reference
        ref.__qualname__ = reference.describe()
        return ref
    if isinstance(reference, Adapted) or callable(reference):
        return adapt(reference)
    raise ValueError(f"reference must be a callable (an attention function or a varsim.testing.families.Family) or "
                     f"None, got {type(reference).__name__}")


def _in_hypothesis_test() -> bool:
    try:
        from hypothesis import currently_in_test_context
    except ImportError:
        return False
    return currently_in_test_context()


def check_against_reference(attention_fn, cases=None, *, reference=None, tolerance: str = "calibrated",
                            tol_factor: float | None = None, atol: float = 0.0, profile: str = DEFAULT_PROFILE,
                            masked_rows: str | None = None, timeout: float | None = DEFAULT_TIMEOUT,
                            rng=0) -> ReferenceReport:
    """Run ``attention_fn`` and ``reference`` on the same draws of every case and compare them elementwise.

    Parameters
    ----------
    attention_fn : callable or Adapted
        Your attention. A plain function is taken to be NumPy with the batch layout (``q (S, d_k)``,
        ``K (S, N, d_k)``, ``V (S, N, d_v)`` -> ``o (S, d_v)`` or ``(o, w)``); wrap others with
        :func:`~varsim.testing.adapt`. It gets ``tau=``, ``mask=``, ``causal=`` if its signature names them.
    cases : AttentionCase, sequence of them, or None
        None runs the standard battery :data:`~varsim.testing.REFERENCE_CASES`.
    reference : callable, optional
        Default: :func:`~varsim.testing.softmax_attention_nd` (float64). Any function, adapted like
        ``attention_fn`` (e.g. your previous implementation).
    tolerance : {"calibrated", "low_precision", "worst_case"}
        The error model (:data:`~varsim.testing.precision.TOLERANCES`).
    tol_factor : float, optional
        The multiple of the model's error allowed (default 4; 16 for ``"worst_case"``).
    atol : float
        Added to every tolerance.
    profile : str
        How your kernel computes (:data:`~varsim.testing.precision.PROFILES`): ``"sdpa"`` (default: float32
        accumulation, as PyTorch's SDPA backends), ``"eager"`` (Hugging Face eager: products in the dtype, softmax in
        float32), ``"prescaled"`` (q scaled in the dtype), ``"positions"`` (RoPE or ALiBi in the dtype), ``"tf32"``
        (float32 through TF32 tensor cores), ``"low_precision"`` (accumulation in the dtype). Under the default, a
        case beyond its tolerance but within another profile's gets the verdict ``"profile"`` naming it.
    masked_rows : {"zeros", "nan"}, optional
        Your kernel's output for a query with no key to attend (a fully masked row): zeros (flash kernels) or NaN.
        Cases with such rows run only when it is given; either way a NaN in any other row fails.
    timeout : float or None
        Seconds one call of ``attention_fn`` may take (default 60; None: no limit). It runs in a daemon thread, as
        in :func:`~varsim.testing.check_gradients`; a call past this fails its case in one line as a hang, and the
        cases after it are skipped. A function that writes to its inputs fails the case in one line naming the
        input.
    rng : int, SeedSequence or Generator
        Combined with each case's ``seed``.

    Returns
    -------
    ReferenceReport
        Every case's verdict. Nothing is asserted: see :func:`assert_matches_reference`.

    Raises
    ------
    ValueError
        A bad argument (named), or every case skipped.

    See Also
    --------
    assert_matches_reference : the same check as an assertion.
    varsim.testing.power_report : how small a bug this check catches in your configuration.
    adapt : for functions in other libraries and layouts.

    Notes
    -----
    Cases that need a keyword your function lacks (a mask) are skipped and listed; when every case is skipped that
    is an error, except inside a Hypothesis test, where the drawn example is discarded (so
    ``@given(attention_cases())`` works for a function without ``mask=``). A function that takes no ``tau`` is
    compared at ``tau = 1`` (the query norm carries ``beta``).

    Examples
    --------
    >>> from varsim.testing import check_against_reference, softmax_attention
    >>> check_against_reference(softmax_attention).verdict
    'pass'
    >>> def off_by_3_percent(q, K, V):
    ...     o, w = softmax_attention(q, K, V)
    ...     return 1.03 * o
    >>> report = check_against_reference(off_by_3_percent)
    >>> report.verdict, report.worst.ratio > 1
    ('fail', True)
    """
    fn = adapt(attention_fn)
    ref = reference_adapter(reference)
    tolerance, tol_factor, atol, profile, masked_rows, timeout = validated_options(
        tolerance=tolerance, tol_factor=tol_factor, atol=atol, profile=profile, masked_rows=masked_rows,
        timeout=timeout).values()
    cases = as_cases(cases)
    root = resolve_seed(None, rng)
    results, hung = [], None
    for c in cases:
        if hung is not None:
            results.append(CaseResult(c, True, 0.0, "", skipped=f"not run: attention_fn hung on case '{hung}'"))
            continue
        results.append(_run_case(fn, ref, c, root, tolerance, tol_factor, atol, profile, masked_rows, timeout))
        if results[-1].detail.startswith(f"attention_fn {fn.__qualname__} did not return within"):
            hung = c.name
    results = tuple(results)
    if all(r.skipped for r in results):
        if _in_hypothesis_test():  # a drawn case the function cannot take (a mask): discard the example
            from hypothesis import reject

            reject()
        raise ValueError(f"cases: every case was skipped ({results[0].skipped})")
    return ReferenceReport(fn_name(fn), fn_name(ref), results, describe_seed(root), tol_factor, tolerance, profile)


def assert_matches_reference(attention_fn, cases=None, **options) -> ReferenceReport:
    """Assert that ``attention_fn`` matches the reference on the same draws of every case.

    Runs :func:`check_against_reference` (the standard battery, identical draws, float64 reference by default).

    Parameters
    ----------
    attention_fn : callable or Adapted
        Your attention, as for :func:`check_against_reference`.
    cases : AttentionCase, sequence of them, or None
        None runs the standard battery.
    **options
        ``reference``, ``tolerance``, ``tol_factor``, ``atol``, ``profile``, ``masked_rows``, ``timeout``, ``rng``: as
        for :func:`check_against_reference`.

    Returns
    -------
    ReferenceReport
        The report, when every case passes.

    Raises
    ------
    AssertionError
        When any case fails (or passes only as a low-precision kernel): the message names the worst case, element
        and values, and how to reproduce the draw.

    See Also
    --------
    check_against_reference : the report without the assertion.

    Examples
    --------
    >>> from varsim.testing import assert_matches_reference, softmax_attention
    >>> assert_matches_reference(softmax_attention).passed
    True
    """
    report = check_against_reference(attention_fn, cases, **options)
    if not report.passed:
        raise AssertionError(report.describe())
    return report
