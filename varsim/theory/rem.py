"""Random-energy-model asymptotics of the mean IPR (THEORY.md 3.2-3.4).

``E[sum w^2]`` for i.i.d. ``N(0, beta^2)`` logits is the mean participation ratio of Derrida's REM with
``e^n = N`` configurations. With ``b = beta / sqrt(ln N)``:

* ``(1/ln N) ln E[Y2] -> psi(b)``: annealed ``b^2 - 1`` (``e^{beta^2}/N``) up to ``b = sqrt(2/3)``,
  ``-(2 - b^2)^2 / (8 b^2)`` up to ``b = sqrt(2)``, then frozen ``0``;
* local decay exponent ``~ clamp(1/2 - ln N / beta^2, -1, 0)`` (from ``d(n psi)/dn``);
* frozen phase: ``E[Y2] ~ 1 - a_N/beta`` with the extreme-value location ``a_N`` of N Gaussians.

These are heuristic limits (one big jump + LLN; THEORY.md 6), checked against the exact
quadrature; use :func:`varsim.theory.expected_ipr` for exact finite-N values.
``derivations/rem_exponent.py`` derives ``psi``, its thresholds and the exponent rule with SymPy.
"""

from __future__ import annotations

import math

import numpy as np

from varsim.theory._args import broadcast_pair, real_array, scalar_or_array, scalar_or_grid

__all__ = ["PHASES", "effective_exponent", "frozen_a_n", "frozen_ipr", "phase", "phase_boundaries", "rem_psi",
           "rem_thresholds"]

#: Phase names returned by :func:`phase`, from small to large ``beta`` at fixed ``N``.
PHASES = ("annealed", "intermediate", "frozen")

_B_ANNEALED = math.sqrt(2.0 / 3.0)
_B_FROZEN = math.sqrt(2.0)


def rem_thresholds() -> tuple[float, float]:
    """``(sqrt(2/3), sqrt(2))``: the values of ``b = beta/sqrt(ln N)`` where ``psi`` changes form (in ``ln N`` at a
    given beta: :func:`phase_boundaries`)."""
    return _B_ANNEALED, _B_FROZEN


def rem_psi(b):
    """Exponent ``psi(b) = lim (1/ln N) ln E[sum w^2]`` at ``beta = b sqrt(ln N)``; ``b >= 0``, arrays ok.

    Continuous and non-decreasing from ``-1`` (``b = 0``) to ``0`` (``b >= sqrt 2``).
    """
    b_arr = real_array("b", b, minimum=0.0)
    b2 = b_arr * b_arr
    with np.errstate(divide="ignore", invalid="ignore"):
        middle = -((2.0 - b2) ** 2) / (8.0 * b2)
    out = np.where(b_arr <= _B_ANNEALED, b2 - 1.0, np.where(b_arr < _B_FROZEN, middle, 0.0))
    return scalar_or_array(b, out)


def _n_beta(n, beta):
    n_b, b_b = broadcast_pair("n", n, "beta", beta, first_min=1.0)
    return n_b, np.abs(b_b)


def phase_boundaries(beta):
    """The REM phase boundaries at ``beta``, in ``ln N``: ``(beta^2/2, 3 beta^2/2)``.

    ``ln N`` below the first is the frozen phase (a few logits carry the weight), above the second the annealed one
    (``E[sum w^2] ~ e^{beta^2}/N``), in between the intermediate phase. These are asymptotic (``beta -> inf`` at
    fixed ``ln N / beta^2``); at finite beta the crossovers are broad: at ``beta = 2``, ``N = 4096`` (just past
    ``3 beta^2/2``) the exact ``E[sum w^2]`` is still about 27% below ``e^{beta^2}/N``. ``beta``: finite, scalar
    or array; returns two floats or two arrays of ``beta``'s shape. ``np.exp`` of them gives the boundaries in N
    (they overflow to inf beyond ``beta ~ 26``).
    """
    b = np.abs(real_array("beta", beta))
    lo, hi = 0.5 * b * b, 1.5 * b * b
    if np.ndim(beta) == 0:
        return float(lo.reshape(())), float(hi.reshape(()))
    return lo, hi


def effective_exponent(n, beta):
    """Predicted local decay exponent ``d ln E[sum w^2] / d ln N ~ clamp(1/2 - ln N / beta^2, -1, 0)``.

    ``n``: real ``>= 1``; ``beta``: finite; scalars or arrays that broadcast together (``n`` of shape ``(k,)``
    with ``beta`` of shape ``(m, 1)`` gives an ``(m, k)`` grid). ``beta = 0`` gives ``-1`` (``E = 1/N`` exactly).
    Compare :func:`varsim.theory.decay_exponent` for the exact value; the rule is the
    ``beta -> inf`` limit at fixed ``ln N / beta^2`` and is off by up to ~0.4 at ``beta = 2`` (THEORY.md 3.4).
    """
    n_b, b_b = _n_beta(n, beta)
    with np.errstate(divide="ignore", invalid="ignore"):
        rule = np.clip(0.5 - np.log(n_b) / (b_b * b_b), -1.0, 0.0)
    return scalar_or_grid(n, beta, np.where(b_b == 0.0, -1.0, rule))


def phase(n, beta):
    """REM phase of the *mean* IPR: ``'annealed'`` iff ``ln N > 3 beta^2/2``, ``'frozen'`` iff ``ln N < beta^2/2``,
    else ``'intermediate'`` (:func:`phase_boundaries`). ``beta = 0`` is annealed for every ``N`` (``E = 1/N``).

    Returns a ``str`` when ``n`` and ``beta`` are scalars, else an array of ``str`` of their broadcast shape.
    """
    n_b, b_b = _n_beta(n, beta)
    ln_n = np.log(n_b)
    b2 = b_b * b_b
    labels = np.where((b_b == 0.0) | (ln_n > 1.5 * b2), PHASES[0],
                      np.where(ln_n < 0.5 * b2, PHASES[2], PHASES[1])).astype(object)
    return str(labels.reshape(())[()]) if np.ndim(n) == 0 and np.ndim(beta) == 0 else labels


def frozen_a_n(n):
    """Location of the maximum of ``N`` standard Gaussians:
    ``a_N = sqrt(2 ln N) - (ln ln N + ln 4 pi) / (2 sqrt(2 ln N))``.

    ``n``: real ``> 1`` (scalar or array). The extremes of ``g_i`` near ``a_N`` form a Poisson process
    with intensity ``e^{-x}`` on the scale ``1/a_N`` (THEORY.md 3.3).
    """
    n_arr = real_array("n", n, minimum=1.0, strict_min=True)
    ln_n = np.log(n_arr)
    root = np.sqrt(2.0 * ln_n)
    return scalar_or_array(n, root - (np.log(ln_n) + math.log(4.0 * math.pi)) / (2.0 * root))


def frozen_ipr(n, beta):
    """Finite-N frozen-phase predictor ``E[sum w^2] ~ 1 - a_N/beta`` (PD(alpha, 0) with ``alpha = a_N/beta``).

    Meaningful in the frozen phase (``beta > a_N``, where it lies in (0, 1)); the raw formula is returned
    elsewhere (negative once ``beta < a_N``). ``n``: real ``> 1``; ``beta``: finite, non-zero.
    An empirical finite-N refinement of ``1 - sqrt(2 ln N)/beta`` without an error bound (THEORY.md 6).
    """
    n_b, b_b = broadcast_pair("n", n, "beta", beta, first_min=1.0)
    if np.any(n_b <= 1.0):
        raise ValueError(f"n must be > 1.0, got {float(n_b[n_b <= 1.0].flat[0])!r}")
    if np.any(b_b == 0.0):
        raise ValueError("beta must be non-zero for the frozen-phase formula 1 - a_N/beta")
    return scalar_or_grid(n, beta, 1.0 - np.asarray(frozen_a_n(n_b)) / np.abs(b_b))
