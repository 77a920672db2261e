"""The public names of the backward-pass checks, gathered for :mod:`varsim.testing` (one import line there)."""

from .backward import GradientCaseResult, GradientReport, assert_gradients_match, check_gradients
from .grad_adapters import jax_gradients, torch_gradients
from .grad_cases import GRADIENT_CASES, GradientCase
from .grad_mutants import BACKWARD_MUTANTS, CORRECT_BACKWARD
from .grad_power import backward_power_report

__all__ = ["check_gradients", "assert_gradients_match", "GradientReport", "GradientCaseResult", "torch_gradients",
           "jax_gradients", "GradientCase", "GRADIENT_CASES", "BACKWARD_MUTANTS", "CORRECT_BACKWARD",
           "backward_power_report", "BACKWARD_NAMES"]
BACKWARD_NAMES = __all__[:-1]
"""The names :mod:`varsim.testing` exports from here."""
