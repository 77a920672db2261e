"""SymPy derivations behind ``varsim.theory`` (never imported by the package at runtime).

Modules: ``series_coefficients`` (c1..c4), ``chi_square_mgf`` (random-query constant),
``rem_exponent`` (psi(b), thresholds, effective exponent, frozen PD(alpha, 0) mean),
``layernorm_moments`` (Beta law and moments), ``remedies_theory`` (sigmoid attention's moments, the top-k
bound). Each exposes functions returning SymPy expressions and prints its results when run as
``python derivations/<name>.py``. See README.md.
"""
