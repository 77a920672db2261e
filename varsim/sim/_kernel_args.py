"""The arguments of the chunk kernels and their NumPy twins: block sizes and one structure per sampler.

Private, and free of Numba so that the driver builds the arguments without importing a kernel module. A chunk
kernel takes ``(state, sampler, [wmap,] tables, outputs...)``: ``state`` the generator state (``_rngstate``),
``sampler`` a :class:`FullSampler` or :class:`LogitsSampler` (what is drawn and how values are formed), ``wmap`` the
``(code, vparams)`` pair of ``_variant_codes.pack`` (map kernels only), ``tables`` the ziggurat tables
``(zw, zk, zf)`` of ``_ziggurat.kernel_tables``, then the output arrays. Numba passes the named tuples as typed
tuples, so a kernel reads ``sampler.scale`` at no cost.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

__all__ = ["KEY_BLOCK", "LOGIT_BLOCK", "FullSampler", "LogitsSampler", "sampler_args"]

KEY_BLOCK = 32  # keys per block in the full sampler (a block of keys and values stays in L1)
LOGIT_BLOCK = 1024  # logits per block in the logits sampler


class FullSampler(NamedTuple):
    """Full sampler: a query, then blocks of ``KEY_BLOCK`` keys and their value noise.

    ``q_fixed`` float64[d_k] (ignored with ``random_query``); ``scale`` multiplies ``q`` (``tau / sqrt(d_k)``, times
    the variant's factor in the streaming kernel); distribution codes ``key_dist``, ``value_dist``; values are
    ``mu + sigma (A k + noise eps)`` with ``a_mat`` float64[d_v, d_k] when ``coupled``, else ``mu + sigma eps``;
    ``mu`` float64[d_v] cancels from the kernels' ``o - mu`` and is there for the twins' sake.
    """

    n_keys: int
    q_fixed: np.ndarray
    random_query: bool
    scale: float
    key_dist: int
    value_dist: int
    coupled: bool
    a_mat: np.ndarray
    noise: float
    mu: np.ndarray
    sigma: float


class LogitsSampler(NamedTuple):
    """Logits sampler (keys of a rotation-invariant law): the logit scale ``beta``, then blocks of ``LOGIT_BLOCK``
    logits ``beta g_i`` and their value noise.

    ``beta = beta_fixed``, or ``scale * |q|`` with ``|q|^2`` a sum of ``d_k`` squared Gaussians per sequence
    (``random_query``); values ``mu + sigma eps`` with ``mu`` float64[d_v], ``d_v`` the outputs' width (0: no values
    are drawn, the Rao-Blackwell path). ``key_dist``: Gaussian keys (code 0, ``g_i ~ N(0, 1)``) or sphere keys
    (code 3, ``g_i = sqrt(d_k) z_1 / |z|``, ``z ~ N(0, I_{d_k})``: the cosine to any fixed query, the ``sphere`` law).
    """

    n_keys: int
    beta_fixed: float
    random_query: bool
    d_k: int
    scale: float
    value_dist: int
    mu: np.ndarray
    sigma: float
    key_dist: int = 0


def sampler_args(cfg, n_keys: int, factor: float = 1.0) -> FullSampler | LogitsSampler:
    """The sampler structure of the validated ``SimConfig`` ``cfg`` at length ``n_keys``, with the logits
    multiplied by ``factor`` (a streaming variant's ``f(N)``; the map kernels apply their variant themselves)."""
    scale = factor * (cfg.tau / math.sqrt(cfg.d_k))
    random_query = cfg.query == "random"
    if cfg.sampler == "logits":
        mu = cfg.value_mean[: cfg.d_v if cfg.draws_values else 0]
        return LogitsSampler(int(n_keys), factor * float(cfg.beta or 0.0), random_query, cfg.d_k, scale,
                             cfg.value_code, mu, cfg.value_scale, cfg.key_code)
    coupled = cfg.coupling is not None
    return FullSampler(int(n_keys), cfg.q_fixed if cfg.q_fixed is not None else np.zeros(cfg.d_k), random_query,
                       scale, cfg.key_code, cfg.value_code, coupled,
                       cfg.coupling if coupled else np.zeros((cfg.d_v, cfg.d_k)), cfg.coupling_noise, cfg.value_mean,
                       cfg.value_scale)
