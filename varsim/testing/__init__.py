"""Property-test your own attention: same-draw reference checks, Monte Carlo checks with the 5 SE rule,
strategies, adapters for other array libraries.

::

    from varsim.testing import assert_matches_reference
    assert_matches_reference(my_attention)   # identical q, K, V (and masks) for yours and the reference

    from hypothesis import given
    from varsim.testing import assert_variance_matches, attention_configs, mc_settings

    @mc_settings(max_examples=5)
    @given(attention_configs())
    def test_my_attention(cfg):
        assert_variance_matches(MyAttention(tau=cfg.tau), cfg.expected_variance, **cfg.check_kwargs())

* Same-draw checks (:mod:`varsim.testing.same_draw`): :func:`assert_matches_reference` runs your attention and a
  reference (:func:`softmax_attention_nd` by default) on identical draws of the cases :data:`REFERENCE_CASES` (or
  :class:`AttentionCase` s of your own, or drawn by :func:`attention_cases`) and names the worst element on failure.
* Tolerances (:mod:`varsim.testing.precision`): per element, a multiple of the error a correct kernel of the
  dtype makes (float32 accumulation at float16/bfloat16); ``tolerance="low_precision"`` or ``"worst_case"``;
  precision profiles (:data:`~varsim.testing.precision.PROFILES`: ``profile="eager"``, ``"prescaled"``,
  ``"positions"``, ``"tf32"``, ``"low_precision"``) for kernels that round in more places than SDPA.
* Power (:mod:`varsim.testing.power`, :mod:`varsim.testing.mutants`): :func:`power_report` plants a catalogue of
  bug classes (:data:`MUTANTS`) and correct kernels (:data:`CORRECT`) into your configuration and runs your check.
* Reference families (:mod:`varsim.testing.families`): ALiBi, RoPE, sliding windows, grouped heads, a temperature
  per head, softcapping, as ``reference=`` whose tolerances come from the family's own logits, weights and output;
  any other ``reference=`` function is calibrated from its own float64 ``(o, w)`` (weights derived when it returns
  only ``o``).
* Adapters (:mod:`varsim.testing.arrays`): :func:`adapt` for torch, array-API namespaces, other layouts.
* Statistical checks (:mod:`varsim.testing.checks`): :func:`assert_variance_matches`, :func:`assert_ipr_matches`,
  :func:`assert_mean_matches` run :func:`varsim.sim.measure_variance` with a budget chosen for a target relative SE
  and assert ``|estimate - expected| <= 5 SE + 1%``; :func:`check_statistic` returns the numbers without asserting.
* References: :func:`softmax_attention` (NumPy, max-subtracted), the registry :data:`ATTENTION_FNS` /
  :func:`attention_fn`, and the exact values :func:`softmax_variance`, :func:`softmax_ipr`.
* Hypothesis (needs ``hypothesis``): :func:`attention_configs` and friends (:mod:`varsim.testing.strategies`), the
  settings profiles ``varsim-mc`` and ``varsim-mc-derandomized`` registered on import, and :func:`mc_settings`.

Every function that draws random numbers takes ``rng=`` (an int, a ``SeedSequence`` or a ``Generator``; SPEC 7).
"""

from . import families
from .arrays import LAYOUTS, Adapted, adapt, to_numpy
from .attention import ATTENTION_FNS, SoftmaxAttention, attention_fn, softmax_attention, softmax_attention_nd
from .cases import REFERENCE_CASES, AttentionCase, reference_cases
from .checks import (
    STATISTICS,
    CheckResult,
    assert_ipr_matches,
    assert_mean_matches,
    assert_statistic_matches,
    assert_variance_matches,
    check_statistic,
)
from .config import AttentionConfig
from .families import Family
from .mutants import CORRECT, MUTANTS
from .power import PowerReport, power_report
from .precision import TOLERANCES
from .reference import softmax_beta, softmax_ipr, softmax_variance
from .same_draw import CaseResult, ReferenceReport, assert_matches_reference, check_against_reference

__all__ = [
    "assert_matches_reference",
    "check_against_reference",
    "ReferenceReport",
    "CaseResult",
    "AttentionCase",
    "REFERENCE_CASES",
    "reference_cases",
    "adapt",
    "Adapted",
    "to_numpy",
    "LAYOUTS",
    "softmax_attention_nd",
    "assert_variance_matches",
    "assert_ipr_matches",
    "assert_mean_matches",
    "assert_statistic_matches",
    "check_statistic",
    "CheckResult",
    "STATISTICS",
    "softmax_attention",
    "SoftmaxAttention",
    "ATTENTION_FNS",
    "attention_fn",
    "softmax_beta",
    "softmax_ipr",
    "softmax_variance",
    "AttentionConfig",
    "families",
    "Family",
    "power_report",
    "PowerReport",
    "MUTANTS",
    "CORRECT",
    "TOLERANCES",
]
from .backward_api import *  # noqa: E402, F403 - the backward pass: check_gradients, adapters, cases, power

__all__ += BACKWARD_NAMES  # noqa: F405

_HYPOTHESIS_NAMES = {
    "attention_configs": "strategies", "n_grids": "strategies", "value_laws": "strategies", "seeds": "strategies",
    "annealed_beta_max": "strategies", "attention_cases": "strategies", "mc_settings": "profiles",
    "register_profiles": "profiles",
    "MC_PROFILE": "profiles", "MC_PROFILE_DERANDOMIZED": "profiles", "MC_MAX_EXAMPLES": "profiles",
}

try:  # register the Hypothesis profiles and export the strategies when Hypothesis is installed
    from .profiles import MC_MAX_EXAMPLES, MC_PROFILE, MC_PROFILE_DERANDOMIZED, mc_settings, register_profiles  # noqa: F401
    from .strategies import (  # noqa: F401
        annealed_beta_max,
        attention_cases,
        attention_configs,
        n_grids,
        seeds,
        value_laws,
    )

    __all__ += list(_HYPOTHESIS_NAMES)
except ImportError:  # pragma: no cover - exercised only without hypothesis
    def __getattr__(name):
        if name in _HYPOTHESIS_NAMES:
            raise ImportError(f"varsim.testing.{name} needs Hypothesis: pip install hypothesis (or varsim[test])")
        raise AttributeError(f"module 'varsim.testing' has no attribute {name!r}")
