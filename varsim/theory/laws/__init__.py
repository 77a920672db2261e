"""Logit laws and the exact finite-N theory of softmax weights over i.i.d. logits of each (issue 47).

:data:`LAWS` registers the families (``gaussian``, ``sphere``, ``rademacher``, ``uniform``, ``student_t``,
``empirical``; see :mod:`varsim.theory.laws.families`); :func:`logit_law` builds one; :func:`law_ipr`,
:func:`law_decay_exponent`, :func:`law_ipr_and_exponent`, :func:`law_ipr_second_moment`, :func:`annealed_limit`
and :func:`crossover_beta` are its exact theory (:mod:`varsim.theory.laws.exact`).
"""

from varsim.theory.laws.exact import (
    annealed_limit,
    crossover_beta,
    law_decay_exponent,
    law_ipr,
    law_ipr_and_exponent,
    law_ipr_second_moment,
    logit_law,
)
from varsim.theory.laws.families import (
    LAWS,
    EmpiricalLaw,
    GaussianLaw,
    LogitLaw,
    RademacherLaw,
    SphereLaw,
    StudentTLaw,
    UniformLaw,
)

__all__ = [
    "LAWS",
    "EmpiricalLaw",
    "GaussianLaw",
    "LogitLaw",
    "RademacherLaw",
    "SphereLaw",
    "StudentTLaw",
    "UniformLaw",
    "annealed_limit",
    "crossover_beta",
    "law_decay_exponent",
    "law_ipr",
    "law_ipr_and_exponent",
    "law_ipr_second_moment",
    "logit_law",
]
