"""``AttentionConfig``: one drawn test case (what to sample, the attention's parameters, a seed), with its
reference values and the keyword arguments of the checks."""

from __future__ import annotations

import dataclasses
from typing import Any

from .reference import softmax_beta, softmax_ipr, softmax_variance

__all__ = ["AttentionConfig"]


@dataclasses.dataclass(frozen=True)
class AttentionConfig:
    """A valid attention test configuration (drawn by :func:`varsim.testing.strategies.attention_configs`).

    Attributes
    ----------
    n_grid : tuple of int
        Sequence lengths N (increasing).
    d_k, d_v : int
        Key/query and value dimensions.
    tau : float
        Temperature the attention under test should apply (pass it to your ``attention_fn``).
    query : {"fixed", "random"}
        Query law of :func:`varsim.sim.measure_variance`.
    query_norm : float or None
        Norm of the fixed query (None: ``sqrt(d_k)``).
    key_dist, value_dist : str
        ``"gaussian"``, ``"uniform"`` or ``"rademacher"`` (the exact references assume Gaussian keys).
    value_mean, value_scale : float
        Values are ``value_mean + value_scale * eps``.
    params : dict
        Drawn parameters of the attention variant under test (empty for plain softmax).
    seed : int
        ``rng`` of the Monte Carlo run.

    See Also
    --------
    varsim.testing.attention_configs : the Hypothesis strategy that draws these.

    Examples
    --------
    >>> from varsim.testing import AttentionConfig, assert_variance_matches, attention_fn
    >>> cfg = AttentionConfig(n_grid=(16, 64), d_k=8, d_v=4, tau=0.5, seed=3)
    >>> cfg.beta
    0.5
    >>> len(assert_variance_matches(attention_fn("softmax", tau=cfg.tau), cfg.expected_variance,
    ...                             **cfg.check_kwargs()))
    2
    """

    n_grid: tuple
    d_k: int
    d_v: int
    tau: float = 1.0
    query: str = "fixed"
    query_norm: float | None = None
    key_dist: str = "gaussian"
    value_dist: str = "gaussian"
    value_mean: float = 0.0
    value_scale: float = 1.0
    params: dict = dataclasses.field(default_factory=dict)
    seed: int = 0

    @property
    def beta(self) -> float | None:
        """Logit scale ``tau |q| / sqrt(d_k)`` of plain softmax attention (None for a random query)."""
        if self.query == "random":
            return None
        return softmax_beta(d_k=self.d_k, tau=self.tau, query_norm=self.query_norm)

    def measure_kwargs(self) -> dict[str, Any]:
        """The sampling options of :func:`varsim.sim.measure_variance` (everything but ``n_grid`` and the seed)."""
        return {
            "d_k": self.d_k, "d_v": self.d_v, "query": self.query, "query_norm": self.query_norm,
            "key_dist": self.key_dist, "value_dist": self.value_dist, "value_mean": self.value_mean,
            "value_scale": self.value_scale,
        }

    def check_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for the ``assert_*_matches`` checks: ``n``, the sampling options and ``rng``."""
        return {"n": list(self.n_grid), **self.measure_kwargs(), "rng": self.seed}

    def expected_variance(self, n):
        """Exact ``Var(o_j)`` of plain softmax attention at temperature ``tau`` (Gaussian keys)."""
        self._need_gaussian_keys()
        return softmax_variance(n, d_k=self.d_k, tau=self.tau, query=self.query, query_norm=self.query_norm,
                                value_scale=self.value_scale)

    def expected_ipr(self, n):
        """Exact ``E[sum w^2]`` of plain softmax attention at temperature ``tau`` (Gaussian keys)."""
        self._need_gaussian_keys()
        return softmax_ipr(n, d_k=self.d_k, tau=self.tau, query=self.query, query_norm=self.query_norm)

    def expected_mean(self, n):
        """``E[o_j] = value_mean`` for any attention whose weights sum to 1 (``n`` is ignored)."""
        return self.value_mean

    def _need_gaussian_keys(self):
        if self.key_dist != "gaussian":
            raise ValueError(f"key_dist {self.key_dist!r}: the exact softmax references assume Gaussian keys")
