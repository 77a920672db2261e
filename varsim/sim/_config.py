"""Validated simulation settings: every public argument of ``simulate`` checked once, with errors naming it."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field

import numpy as np

from varsim._common.argtypes import MAX_ABS
from varsim._common.validate import check_choice, check_finite_array, check_int, check_real, memory_limit_bytes

from ._kernel_args import KEY_BLOCK, LOGIT_BLOCK

__all__ = [
    "DISTRIBUTIONS", "KEY_DISTRIBUTIONS", "SAMPLERS", "ESTIMATORS", "QUERIES", "MIN_CHUNKS", "DEFAULT_MAX_WORK",
    "TARGET_CHUNKS",
    "MIN_TARGET_CHUNKS", "SimConfig", "make_config", "chunk_sizes", "estimate_cost", "simulate_work", "draws_values",
    "DEFAULT_FIGURE_MAX_WORK",
]

DISTRIBUTIONS = ("gaussian", "uniform", "rademacher")  # kernel codes 0, 1, 2 (``_kernels_rng``)
#: key laws: every law of :data:`DISTRIBUTIONS` and ``sphere`` (code 3: each key a Gaussian vector scaled to norm
#: ``sqrt(d_k)``, uniform on that sphere, so unit variance per coordinate: QK-norm keys; the logits are the
#: ``sphere`` law of :mod:`varsim.theory.laws` with ``d = d_k``)
KEY_DISTRIBUTIONS = DISTRIBUTIONS + ("sphere",)
SAMPLERS = ("full", "logits")
ESTIMATORS = ("sample", "rao_blackwell")
QUERIES = ("fixed", "random")
MIN_CHUNKS = 16  # batch-means standard errors need enough batches to estimate their own spread
_DEFAULT_CHUNKS = 32
#: With ``target_rse``, the cap ``n_sequences`` is cut into about this many chunks by default, so that a point can
#: stop at a small fraction of the cap; the stopping rule looks first after :data:`MIN_TARGET_CHUNKS` chunks (more
#: than :data:`MIN_CHUNKS`, because the rule trusts the batch-means SE it reads).
TARGET_CHUNKS = 256
MIN_TARGET_CHUNKS = 32
#: Default bound on the estimated work (key-coordinates, see :func:`estimate_cost`): about an hour on a 2-core
#: machine (benchmarks/bench_mc.py measures the full sampler at ~3e8 key-coordinates per CPU-second at d = 64 and
#: the logits + Rao-Blackwell path at ~1.4e8 keys per CPU-second). ``simulate(max_work=...)`` /
#: ``varsim simulate --max-work`` raise it for deliberately long runs.
DEFAULT_MAX_WORK = 2e12
#: Default bound on the summed estimated work of the figures one ``varsim figures`` call computes: about ten minutes
#: on 2 cores (the default figures take about a minute); ``varsim figures --max-work`` raises it.
DEFAULT_FIGURE_MAX_WORK = DEFAULT_MAX_WORK / 6


#: The share of the memory this process may use (:func:`varsim._common.validate.memory_limit_bytes`) that one
#: simulation may allocate.
MEMORY_SHARE = 0.5


def estimate_cost(n_grid, *, d_k, d_v, n_sequences, sampler="full", coupled=False, draws_values=True,
                  stores_keys=False, chunk_size=None, workers=1, keep_samples=False, materialises=False):
    """``(work, bytes)`` of a run, from the sizes alone (Python numbers, so any size gives an answer).

    ``work``: key-coordinates drawn and multiplied, ``n_sequences * sum(N) * per_key`` with ``per_key = d_k + d_v``
    (full sampler; ``+ d_k`` with coupling) or ``1 + d_v`` (logits sampler; ``1`` without values).
    ``bytes``: the largest allocation alive at once: per-worker block buffers, per-sequence key buffers of the
    non-streaming attention variants (``stores_keys``: ``N (d_v + 2)`` floats), the chunk's explicit arrays for
    ``measure_variance`` (``materialises``: ``3 chunk N (d_k + d_v)`` floats), the coupling matrix and kept samples.
    """
    grid = [int(v) for v in n_grid]
    n_max = max(grid)
    chunk = chunk_size or max(1, -(-n_sequences // 32))
    if sampler == "full" or materialises:
        per_key = d_k + d_v + (d_k if coupled else 0)
    else:
        per_key = 1 + (d_v if draws_values else 0)
    work = float(n_sequences) * float(sum(grid)) * per_key
    per_worker = 40.0 * (KEY_BLOCK * max(d_k, d_v) + LOGIT_BLOCK * max(d_v, 1)) + 24.0 * chunk * max(d_v, 1)
    if stores_keys:
        per_worker += 8.0 * n_max * (d_v + 2)
    if materialises:
        per_worker += 24.0 * chunk * n_max * (d_k + d_v)
    total = workers * per_worker + 8.0 * (d_k + d_v + (d_k * d_v if coupled else 0))
    if keep_samples:
        total += 16.0 * n_sequences * len(grid)
    return work, total


def draws_values(sampler: str, estimator: str) -> bool:
    """Whether a run draws the values (all but the logits sampler's Rao-Blackwell estimator, which needs none)."""
    return not (sampler == "logits" and estimator == "rao_blackwell")


def simulate_work(n_grid, *, n_sequences, d_k: int = 64, d_v: int = 64, sampler: str = "full",
                  estimator: str = "sample") -> float:
    """The estimated work of ``simulate(n_grid, ...)`` with these sizes at its sequence cap, in key-coordinates
    (:func:`estimate_cost`, what ``max_work`` bounds): for a caller that adds up several runs before starting any."""
    return estimate_cost(n_grid, d_k=d_k, d_v=d_v, n_sequences=n_sequences, sampler=sampler,
                         draws_values=draws_values(sampler, estimator))[0]


def _check_cost(grid, *, d_k, d_v, n_sequences, max_work, **kw):
    """Refuse up front (one line naming the sizes) a run whose work exceeds ``max_work`` or whose memory exceeds
    half the machine's."""
    work, mem = estimate_cost(grid, d_k=d_k, d_v=d_v, n_sequences=n_sequences, **kw)
    sizes = (f"n_grid (sum N = {float(sum(grid)):.3g}, max N = {float(max(grid)):.3g}), n_sequences={n_sequences:.3g}, "
             f"d_k={d_k:.3g}, d_v={d_v:.3g}")
    budget = MEMORY_SHARE * memory_limit_bytes()
    if mem > budget:
        raise ValueError(f"the run would need about {mem / 2**30:.3g} GiB of memory, more than the bound "
                         f"{budget / 2**30:.3g} GiB (half this machine's memory); reduce {sizes}")
    if work > max_work:
        raise ValueError(f"estimated work {work:.3g} key-coordinates (n_sequences x sum N x coordinates per key) "
                         f"exceeds max_work={max_work:.3g} (about an hour on 2 cores); reduce {sizes}, or raise "
                         f"max_work (--max-work) for a deliberately long run")


@dataclass(frozen=True)
class SimConfig:
    """Everything that determines a simulation's numbers (``threads`` and ``progress`` do not)."""

    n_grid: np.ndarray  # int64, strictly increasing
    d_k: int
    d_v: int
    tau: float
    query: str
    q_fixed: np.ndarray | None  # the fixed query (float64, length d_k); None for a random query
    query_norm: float | None  # as given (None: default norm sqrt(d_k), or a vector was given)
    query_vector_arg: list | None  # as given
    key_dist: str
    value_dist: str
    value_mean: np.ndarray  # float64, length d_v
    value_mean_arg: float | list  # as given (scalar or list), for the record
    value_scale: float
    coupling: np.ndarray | None  # (d_v, d_k) matrix A, or None
    coupling_arg: float | list | None
    coupling_noise: float
    n_sequences: int
    sampler: str
    estimator: str
    coordinate: int
    chunk_size: int
    n_chunks: int
    attention: str = "softmax"
    attention_params: dict = field(default_factory=dict)
    target_rse: float | None = None  # stop each N at this relative SE of var (n_sequences is then the cap)

    @property
    def variant(self):
        """The attention variant's registry entry (``varsim.variants``)."""
        from varsim.variants import get_variant

        return get_variant(self.attention)

    @property
    def streaming(self) -> bool:
        """True for softmax with an N-dependent temperature, which the online-softmax kernels run at a rescaled
        logit scale; the other variants need every logit of a sequence at once (the ``map_*`` kernels)."""
        return self.variant.is_scaled_softmax

    def beta_factor(self, n: int) -> float:
        """The variant's factor on the logits at length ``n`` (1 for softmax; only for streaming variants)."""
        return float(self.variant.beta_factor(n, **self.attention_params))

    @property
    def beta(self) -> float | None:
        """``tau |q| / sqrt(d_k)`` for a fixed query (the logit standard deviation for Gaussian keys)."""
        if self.q_fixed is None:
            return None
        return self.tau * float(np.linalg.norm(self.q_fixed)) / math.sqrt(self.d_k)

    @property
    def key_code(self) -> int:
        """The kernels' code of ``key_dist`` (its index in :data:`KEY_DISTRIBUTIONS`)."""
        return KEY_DISTRIBUTIONS.index(self.key_dist)

    @property
    def value_code(self) -> int:
        """The kernels' code of ``value_dist``."""
        return DISTRIBUTIONS.index(self.value_dist)

    @property
    def draws_values(self) -> bool:
        """False only on the fastest path (logits sampler with the Rao-Blackwell estimator): no o is formed."""
        return not (self.sampler == "logits" and self.estimator == "rao_blackwell")

    def as_kwargs(self) -> dict:
        """The ``simulate`` keyword arguments that reproduce this configuration (JSON-friendly)."""
        return {
            "n_grid": [int(n) for n in self.n_grid],
            "d_k": self.d_k,
            "d_v": self.d_v,
            "tau": self.tau,
            "query": self.query,
            "query_norm": self.query_norm,
            "query_vector": self.query_vector_arg,
            "key_dist": self.key_dist,
            "value_dist": self.value_dist,
            "value_mean": self.value_mean_arg,
            "value_scale": self.value_scale,
            "coupling": self.coupling_arg,
            "coupling_noise": self.coupling_noise,
            "n_sequences": self.n_sequences,
            "sampler": self.sampler,
            "estimator": self.estimator,
            "coordinate": self.coordinate,
            "chunk_size": self.chunk_size,
            "target_rse": self.target_rse,
            "attention": self.attention,
            **self.attention_params,
        }


def chunk_sizes(n_sequences: int, n_chunks: int) -> np.ndarray:
    """Sizes of the ``n_chunks`` chunks: as equal as possible, larger ones first."""
    base, extra = divmod(n_sequences, n_chunks)
    return np.array([base + (1 if i < extra else 0) for i in range(n_chunks)], dtype=np.int64)


def _valid_chunking(n_sequences: int, chunk_size: int) -> bool:
    """``ceil(n_sequences / chunk_size)`` chunks (sizes as in :func:`chunk_sizes`): >= MIN_CHUNKS, each >= 2."""
    n_chunks = -(-n_sequences // chunk_size)
    return n_chunks >= MIN_CHUNKS and n_sequences // n_chunks >= 2


def _target_chunk_size(n_sequences: int) -> int | None:
    """Default chunk size under ``target_rse``: ``ceil(n_sequences / TARGET_CHUNKS)``, at least 2; None when even
    chunks of 2 leave fewer than ``MIN_CHUNKS`` chunks."""
    size = max(2, -(-n_sequences // TARGET_CHUNKS))
    return size if _valid_chunking(n_sequences, size) else _auto_chunk_size(n_sequences)


def _auto_chunk_size(n_sequences: int) -> int | None:
    """Default chunk size: ``ceil(n_sequences / 32)`` (``/ 16`` below 64 sequences). Below 64 that rounding can
    leave fewer than 16 chunks (e.g. 50 sequences in chunks of 4 -> 13), so then take the largest chunk size that
    still gives >= 16 chunks of >= 2; None when none does (fewer than 32 sequences, or an odd number below 46)."""
    target = _DEFAULT_CHUNKS if n_sequences >= 2 * _DEFAULT_CHUNKS else MIN_CHUNKS
    first = -(-n_sequences // target)
    for size in (first, *range(n_sequences // MIN_CHUNKS, 1, -1)):
        if _valid_chunking(n_sequences, size):
            return size
    return None


def _vector_or_scalar(name, value, length):
    """A finite scalar (broadcast) or a finite vector of ``length``; returns (array, JSON form)."""
    if isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_)):
        v = check_real(name, value)
        return np.full(length, v), v
    arr = check_finite_array(name, value, ndim=1)
    if arr.size != length:
        raise ValueError(f"{name} must be a scalar or have length d_v={length}, got length {arr.size}")
    return arr.astype(np.float64).copy(), [float(x) for x in arr]


def _check_grid(n_grid) -> list[int]:
    """Sorted distinct Python ints >= 1 (not int64 yet: N = 1e30 must reach the cost check, not overflow)."""
    if np.isscalar(n_grid):
        n_grid = [n_grid]
    try:
        items = list(n_grid)
    except TypeError:
        raise ValueError(f"n_grid must be an integer or a sequence of integers, got {n_grid!r}") from None
    if not items:
        raise ValueError("n_grid must not be empty")
    grid = [check_int(f"n_grid[{i}]", v, minimum=1) for i, v in enumerate(items)]
    if len(set(grid)) != len(grid):
        raise ValueError(f"n_grid must not contain duplicates, got {grid}")
    return sorted(grid)


def make_config(
    n_grid, *, d_k, d_v, tau, query, query_norm, query_vector, key_dist, value_dist, value_mean, value_scale,
    coupling, coupling_noise, n_sequences, sampler, estimator, coordinate, chunk_size, attention="softmax",
    attention_params=None, max_work=None, workers=1, keep_samples=False, materialises=False, target_rse=None,
) -> SimConfig:
    """Validate the arguments of ``simulate`` (each error names its parameter) and refuse, before allocating
    anything, a run whose estimated work exceeds ``max_work`` (default :data:`DEFAULT_MAX_WORK`) or whose memory
    exceeds half the machine's."""
    from varsim.variants import get_variant

    grid_ints = _check_grid(n_grid)
    d_k = check_int("d_k", d_k, minimum=1)
    d_v = check_int("d_v", d_v, minimum=1)
    n_sequences = check_int("n_sequences", n_sequences, minimum=1)
    if target_rse is not None:
        target_rse = check_real("target_rse", target_rse, minimum=0.0, strict_min=True, maximum=1.0)
    max_work = DEFAULT_MAX_WORK if max_work is None else check_real("max_work", max_work, minimum=0.0,
                                                                     strict_min=True)
    variant = get_variant(attention)
    attention_params = variant.check_params(attention_params or {})
    sampler = check_choice("sampler", sampler, SAMPLERS)
    estimator = check_choice("estimator", estimator, ESTIMATORS)
    _check_cost(grid_ints, d_k=d_k, d_v=d_v, n_sequences=n_sequences, max_work=max_work, sampler=sampler,
                coupled=coupling is not None, draws_values=draws_values(sampler, estimator),
                stores_keys=not variant.is_scaled_softmax,
                chunk_size=chunk_size if isinstance(chunk_size, int) and chunk_size > 0 else None,
                workers=workers, keep_samples=keep_samples, materialises=materialises)
    if grid_ints[-1] > 2**62:
        raise ValueError(f"n_grid entries must be <= 2^62, got {grid_ints[-1]:.3g}")  # unreachable under max_work
    tau = check_real("tau", tau, minimum=0.0)
    query = check_choice("query", query, QUERIES)
    key_dist = check_choice("key_dist", key_dist, KEY_DISTRIBUTIONS)
    value_dist = check_choice("value_dist", value_dist, DISTRIBUTIONS)
    value_scale = check_real("value_scale", value_scale, minimum=0.0, strict_min=True)
    mu, mu_arg = _vector_or_scalar("value_mean", value_mean, d_v)
    coupling_noise = check_real("coupling_noise", coupling_noise, minimum=0.0)
    coordinate = check_int("coordinate", coordinate, minimum=0, maximum=d_v - 1)
    q, query_norm, q_arg = _check_query(query, query_norm, query_vector, d_k)
    a_mat, a_arg = _check_coupling(coupling, d_v, d_k)
    _check_magnitudes({"tau": tau, "value_scale": value_scale, "value_mean": mu, "coupling_noise": coupling_noise,
                       "coupling": a_mat, "query_norm": query_norm, "query_vector": q if q_arg is not None else None})
    _check_sampler_fits(sampler, estimator, key_dist, coupled=a_mat is not None)
    chunk_size, n_chunks = _check_chunking(n_sequences, chunk_size, targeted=target_rse is not None)
    return SimConfig(
        n_grid=np.array(grid_ints, dtype=np.int64), d_k=d_k, d_v=d_v, tau=tau, query=query, q_fixed=q,
        query_norm=query_norm, query_vector_arg=q_arg, key_dist=key_dist, value_dist=value_dist, value_mean=mu,
        value_mean_arg=mu_arg, value_scale=value_scale, coupling=a_mat, coupling_arg=a_arg,
        coupling_noise=coupling_noise, n_sequences=n_sequences, sampler=sampler, estimator=estimator,
        coordinate=coordinate, chunk_size=chunk_size, n_chunks=n_chunks, attention=variant.name,
        attention_params=attention_params, target_rse=target_rse,
    )


def query_norm_for_beta(beta, *, tau, d_k, query, query_norm=None, query_vector=None):
    """``|q|`` of the fixed query that gives the logit spread ``beta = tau |q| / sqrt(d_k)``: the simulators' ``beta=``
    (``query_norm`` unchanged when ``beta`` is None). Ambiguous or impossible combinations raise, naming ``beta``:
    a random query, a ``query_norm`` or ``query_vector`` given as well, ``tau = 0`` with ``beta > 0``."""
    if beta is None:
        return query_norm
    beta = check_real("beta", beta, minimum=0.0, maximum=1e30)
    if query == "random":
        raise ValueError("beta applies to query='fixed' only (query='random' draws q ~ N(0, I) per sequence)")
    for name, val in (("query_norm", query_norm), ("query_vector", query_vector)):
        if val is not None:
            raise ValueError(f"give beta or {name}, not both (beta = tau |q| / sqrt(d_k) sets |q|)")
    tau = check_real("tau", tau, minimum=0.0)
    if tau == 0:
        if beta != 0:
            raise ValueError(f"beta: needs tau > 0 (beta = tau |q| / sqrt(d_k)), got tau={tau}")
        return 0.0
    d_k = check_int("d_k", d_k, minimum=1)
    return beta * math.sqrt(d_k) / tau


def _check_query(query, query_norm, query_vector, d_k):
    """``(q_fixed or None, query_norm as recorded, query_vector as recorded)`` for a validated ``query`` mode."""
    if query == "random":
        for name, val in (("query_norm", query_norm), ("query_vector", query_vector)):
            if val is not None:
                raise ValueError(f"{name} applies to query='fixed' only (query='random' draws q ~ N(0, I))")
        return None, None, None
    if query_vector is not None and query_norm is not None:
        raise ValueError("give query_norm or query_vector, not both")
    if query_vector is not None:
        q = check_finite_array("query_vector", query_vector, ndim=1).astype(np.float64).copy()
        if q.size != d_k:
            raise ValueError(f"query_vector must have length d_k={d_k}, got {q.size}")
        return q, None, [float(x) for x in q]
    norm = math.sqrt(d_k) if query_norm is None else check_real("query_norm", query_norm, minimum=0.0)
    q = np.full(d_k, norm / math.sqrt(d_k))  # the all-ones direction, scaled to the norm
    return q, None if query_norm is None else norm, None


def _check_coupling(coupling, d_v, d_k):
    """``(A (d_v, d_k) float64 or None, coupling as recorded)``: a scalar ``a`` is ``a`` on the diagonal."""
    if coupling is None:
        return None, None
    if isinstance(coupling, numbers.Real) and not isinstance(coupling, (bool, np.bool_)):
        a = check_real("coupling", coupling)
        if d_v > d_k:
            raise ValueError(f"a scalar coupling (v = a k[:d_v] + noise) needs d_v <= d_k, got d_v={d_v}, d_k={d_k}")
        a_mat = np.zeros((d_v, d_k))
        a_mat[np.arange(d_v), np.arange(d_v)] = a
        return a_mat, a
    a_mat = check_finite_array("coupling", coupling, ndim=2).astype(np.float64).copy()
    if a_mat.shape != (d_v, d_k):
        raise ValueError(f"coupling matrix must have shape (d_v, d_k)=({d_v}, {d_k}), got {a_mat.shape}")
    return a_mat, a_mat.tolist()


def _check_magnitudes(magnitudes: dict) -> None:
    """Refuse a factor of the logits or of the variance beyond :data:`MAX_ABS` (None entries are skipped)."""
    for name, value in magnitudes.items():
        if value is not None and np.max(np.abs(value), initial=0.0) > MAX_ABS:
            raise ValueError(f"{name} must have magnitude <= {MAX_ABS:g} (larger overflows the logits or the "
                             f"variance in float64), got {np.max(np.abs(value)):g}")


def _check_sampler_fits(sampler, estimator, key_dist, *, coupled: bool) -> None:
    """The logits sampler needs keys whose logit law is the same for every query direction (Gaussian or sphere)
    without coupling; Rao-Blackwell needs values independent of
    keys."""
    if sampler == "logits":
        if key_dist not in ("gaussian", "sphere"):
            raise ValueError(
                f"sampler 'logits' is exact only for rotation-invariant keys (gaussian, sphere); key_dist={key_dist!r}"
                " needs sampler='full'"
            )
        if coupled:
            raise ValueError("sampler 'logits' cannot represent key-value coupling; use sampler='full'")
    if estimator == "rao_blackwell" and coupled:
        raise ValueError(
            "estimator 'rao_blackwell' is exact only when values are independent of keys; with coupling use "
            "estimator='sample'"
        )


def _check_chunking(n_sequences: int, chunk_size, targeted: bool = False) -> tuple[int, int]:
    """``(chunk_size, n_chunks)``: the default (:func:`_auto_chunk_size`, or :func:`_target_chunk_size` for a
    ``targeted`` run) or the given size, refused when it leaves fewer than ``MIN_CHUNKS`` chunks of >= 2 sequences."""
    if chunk_size is None:
        chunk_size = (_target_chunk_size if targeted else _auto_chunk_size)(n_sequences)
        if chunk_size is None:
            raise ValueError(
                f"n_sequences={n_sequences} cannot be split into >= {MIN_CHUNKS} chunks of >= 2 sequences, which the "
                f"batch-means standard errors need; use n_sequences >= {2 * MIN_CHUNKS} (an odd number needs "
                f">= {3 * MIN_CHUNKS - 2})"
            )
    else:
        chunk_size = check_int("chunk_size", chunk_size, minimum=1)
    n_chunks = -(-n_sequences // chunk_size)
    if not _valid_chunking(n_sequences, chunk_size):
        raise ValueError(
            f"n_sequences={n_sequences} with chunk_size={chunk_size} gives {n_chunks} chunk(s) of >= "
            f"{n_sequences // n_chunks} sequence(s); standard errors need >= {MIN_CHUNKS} chunks of >= 2 sequences "
            f"(n_sequences >= {2 * MIN_CHUNKS}, chunk_size <= n_sequences/{MIN_CHUNKS})"
        )
    return chunk_size, n_chunks
