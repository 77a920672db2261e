"""Hypothesis settings profiles for Monte Carlo property tests.

Loading one (``settings.load_profile("varsim-mc")``) or decorating a test with :func:`mc_settings` gives: no
deadline (one example runs a simulation, far beyond Hypothesis's default 200 ms), a small bounded number of
examples, no health-check failures for slow draws or discarded examples, and no shrinking: a failing example
fails the test at once (every check's message already names the configuration and the seed; shrinking a Monte
Carlo property reruns simulations for minutes). Pass ``shrink=True`` to :func:`mc_settings` to shrink anyway.
``varsim-mc-derandomized`` is the same with a fixed example sequence (what CI wants: a failure is reproducible
from the test alone).
"""

from __future__ import annotations

from hypothesis import HealthCheck, Phase, settings

__all__ = ["MC_PROFILE", "MC_PROFILE_DERANDOMIZED", "MC_MAX_EXAMPLES", "mc_settings", "register_profiles"]

MC_PROFILE = "varsim-mc"
"""The name of the Hypothesis profile for Monte Carlo tests (``settings.load_profile(MC_PROFILE)``)."""
MC_PROFILE_DERANDOMIZED = "varsim-mc-derandomized"
"""The same profile with a fixed example sequence (for CI: a failure is reproducible from the test alone)."""
MC_MAX_EXAMPLES = 10
"""The default number of examples per Monte Carlo test (each example runs simulations)."""
# filter_too_much: the same-draw check discards drawn masked cases for a function without mask=
_SUPPRESS = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]


def mc_settings(*, max_examples: int = MC_MAX_EXAMPLES, derandomize: bool = False, shrink: bool = False,
                **overrides) -> settings:
    """A ``hypothesis.settings`` object for Monte Carlo tests (usable as a decorator).

    Parameters
    ----------
    max_examples : int
        Examples per test (each runs simulations: keep it small).
    derandomize : bool
        Draw the same examples on every run.
    shrink : bool
        Let Hypothesis shrink a failing example (off: fail at the first failing example).
    **overrides
        Any other ``hypothesis.settings`` field.

    Returns
    -------
    hypothesis.settings
        No deadline, ``max_examples`` examples, slow-draw health checks suppressed, no shrinking unless asked.

    See Also
    --------
    register_profiles : the same settings as named profiles.

    Examples
    --------
    >>> from varsim.testing import mc_settings
    >>> s = mc_settings(max_examples=3, derandomize=True)
    >>> s.max_examples, s.deadline, s.derandomize
    (3, None, True)
    """
    phases = tuple(Phase) if shrink else (Phase.explicit, Phase.reuse, Phase.generate)
    options = dict(deadline=None, max_examples=max_examples, derandomize=derandomize, print_blob=True,
                   suppress_health_check=_SUPPRESS, phases=phases)
    options.update(overrides)
    return settings(**options)


def register_profiles() -> None:
    """Register the Hypothesis profiles ``varsim-mc`` and ``varsim-mc-derandomized`` (:func:`mc_settings`).

    Done on ``import varsim.testing``; call it again after something reset Hypothesis's profiles.

    Examples
    --------
    >>> from hypothesis import settings
    >>> from varsim.testing import MC_PROFILE, register_profiles
    >>> register_profiles()
    >>> settings.get_profile(MC_PROFILE).deadline is None
    True
    """
    settings.register_profile(MC_PROFILE, mc_settings())
    settings.register_profile(MC_PROFILE_DERANDOMIZED, mc_settings(derandomize=True))


register_profiles()
