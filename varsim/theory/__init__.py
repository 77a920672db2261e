"""Exact and asymptotic theory of the softmax-attention output variance (NumPy/SciPy only).

For i.i.d. Gaussian keys and a fixed query the logits are i.i.d. ``N(0, beta^2)``,
``beta = tau |q| / sqrt(d_k)``, and ``Var(o_c) = sigma_v^2 E[sum_i w_i^2]`` (THEORY.md 1.1). This package gives

* :func:`expected_ipr`, :func:`decay_exponent`, :func:`ipr_second_moment` -- exact quadrature (``ipr``);
* :func:`series_coefficients`, :func:`generic_series_coefficients`, :func:`ipr_series`,
  :func:`truncated_series` (with the series' validity rule) -- large-N series (``series``);
* :func:`random_query_ipr`, :func:`random_query_decay_exponent`, :func:`random_query_ipr_and_exponent`,
  :func:`random_query_limit`,
  :func:`random_query_series_coefficients` -- query ``q ~ N(0, I_d)`` (``random_query``);
* :func:`rem_psi`, :func:`rem_thresholds`, :func:`phase_boundaries` (in ln N), :func:`effective_exponent`,
  :func:`phase`, :func:`frozen_a_n`,
  :func:`frozen_ipr` -- REM phases (``rem``);
* LayerNorm (``layernorm``) and standardisation / SSMax (``remedies``);
* attention variants of ``varsim.variants`` (``remedies``): :func:`variant_beta`, :func:`variant_ipr` (softmax with an
  N-dependent temperature: ssmax, logn, critical; and sigmoid), :func:`sigmoid_moments`, :func:`sigmoid_variance`,
  :func:`topk_ipr_bounds`, :func:`adaptive_switch_off_entropy`, and :func:`variant_theory`, everything the theory kind
  of a variant's registry entry gives;
* logit laws other than the Gaussian (``laws``): :data:`LAWS` (sphere / QK-norm, Rademacher and uniform keys,
  measured logits), :func:`logit_law`, :func:`law_ipr`, :func:`law_decay_exponent`, :func:`law_ipr_and_exponent`,
  :func:`law_ipr_second_moment`, :func:`annealed_limit`, :func:`crossover_beta`.

Every function validates its arguments and raises ``ValueError`` naming the parameter.
"""

from varsim.theory.ipr import BETA_MAX, N_MAX, decay_exponent, expected_ipr, ipr_and_exponent, ipr_second_moment
from varsim.theory.laws import (
    LAWS,
    annealed_limit,
    crossover_beta,
    law_decay_exponent,
    law_ipr,
    law_ipr_and_exponent,
    law_ipr_second_moment,
    logit_law,
)
from varsim.theory.layernorm import (
    Estimate,
    layernorm_beta_parameters,
    layernorm_conditional_variance,
    layernorm_marginal_pdf,
    layernorm_moments,
    layernorm_variance_eps,
    layernorm_variance_eps_upper,
)
from varsim.theory.random_query import (
    chi_nodes,
    random_query_decay_exponent,
    random_query_ipr,
    random_query_ipr_and_exponent,
    random_query_limit,
    random_query_series_coefficients,
)
from varsim.theory.rem import (
    PHASES,
    effective_exponent,
    frozen_a_n,
    frozen_ipr,
    phase,
    phase_boundaries,
    rem_psi,
    rem_thresholds,
)
from varsim.theory.remedies import (
    VariantTheory,
    adaptive_switch_off_entropy,
    fixed_standardized_variance,
    ipr_normalized_variance,
    sigmoid_moments,
    sigmoid_variance,
    ssmax_beta,
    ssmax_ipr,
    topk_ipr_bounds,
    variant_beta,
    variant_ipr,
    variant_theory,
)
from varsim.theory.series import generic_series_coefficients, ipr_series, series_coefficients, truncated_series

__all__ = [
    "BETA_MAX",
    "LAWS",
    "N_MAX",
    "PHASES",
    "Estimate",
    "adaptive_switch_off_entropy",
    "annealed_limit",
    "chi_nodes",
    "crossover_beta",
    "decay_exponent",
    "effective_exponent",
    "expected_ipr",
    "fixed_standardized_variance",
    "frozen_a_n",
    "frozen_ipr",
    "generic_series_coefficients",
    "ipr_and_exponent",
    "ipr_normalized_variance",
    "ipr_second_moment",
    "ipr_series",
    "law_decay_exponent",
    "law_ipr",
    "law_ipr_and_exponent",
    "law_ipr_second_moment",
    "layernorm_beta_parameters",
    "layernorm_conditional_variance",
    "layernorm_marginal_pdf",
    "layernorm_moments",
    "layernorm_variance_eps",
    "layernorm_variance_eps_upper",
    "logit_law",
    "phase",
    "phase_boundaries",
    "random_query_decay_exponent",
    "random_query_ipr",
    "random_query_ipr_and_exponent",
    "random_query_limit",
    "random_query_series_coefficients",
    "rem_psi",
    "rem_thresholds",
    "series_coefficients",
    "sigmoid_moments",
    "sigmoid_variance",
    "ssmax_beta",
    "ssmax_ipr",
    "topk_ipr_bounds",
    "truncated_series",
    "variant_beta",
    "variant_ipr",
    "variant_theory",
    "VariantTheory",
]
