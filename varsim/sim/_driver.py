"""``simulate`` and ``measure_variance``: run chunks of sequences for each N and assemble a ``SimulationResult``."""

from __future__ import annotations

import math
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, as_completed, wait

import numpy as np

from varsim._common.progress import Progress
from varsim._common.provenance import provenance
from varsim._common.seeding import SEED_DEFAULT as _SEED_DEFAULT
from varsim._common.seeding import child_generator, resolve_seed
from varsim._common.validate import check_positive_int

from ._config import MIN_TARGET_CHUNKS, SimConfig, chunk_sizes, make_config, query_norm_for_beta
from ._kernel_args import sampler_args
from ._result import SimulationResult
from ._rngstate import new_state
from ._stats import combine_chunks, loglog_slope, summarise_chunk

__all__ = ["simulate", "measure_variance"]

_SQRT3 = math.sqrt(3.0)
# measure_variance streams are keyed (N, chunk, _MEASURE_STREAM): independent of simulate's (N, chunk) streams
# under the same seed (both derive from one SeedSequence; PCG64 and the kernel state would share its first words).
_MEASURE_STREAM = 1


def simulate(
    n_grid,
    *,
    d_k: int = 64,
    d_v: int = 64,
    tau: float = 1.0,
    query: str = "fixed",
    query_norm: float | None = None,
    query_vector=None,
    beta: float | None = None,
    key_dist: str = "gaussian",
    value_dist: str = "gaussian",
    value_mean=0.0,
    value_scale: float = 1.0,
    coupling=None,
    coupling_noise: float = 1.0,
    n_sequences: int = 10_000,
    sampler: str = "full",
    estimator: str = "sample",
    coordinate: int = 0,
    chunk_size: int | None = None,
    seed=_SEED_DEFAULT,
    rng=None,
    threads: int | None = None,
    progress: bool = False,
    keep_samples: bool = False,
    attention: str = "softmax",
    max_work: float | None = None,
    target_rse: float | None = None,
    **attention_params,
) -> SimulationResult:
    """Monte Carlo statistics of ``o = attention(tau q.K^T / sqrt(d_k)) V`` over ``n_sequences`` sequences per N
    (or, with ``target_rse``, as many as each N needs for that precision, at most ``n_sequences``).

    Parameters
    ----------
    n_grid : int or sequence of int
        Sequence lengths N >= 1 (distinct; sorted in the result).
    d_k, d_v : key/query and value dimensions.
    tau : temperature (>= 0) multiplying the logits ``q.k_i / sqrt(d_k)``.
    query : ``"fixed"`` (``query_vector``, else the all-ones direction scaled to ``query_norm``, default
        ``sqrt(d_k)`` so that ``beta = tau |q| / sqrt(d_k) = tau``) or ``"random"`` (``q ~ N(0, I)`` per sequence).
    beta : the logit spread ``beta = tau |q| / sqrt(d_k)`` of the fixed query, instead of ``query_norm``: it sets
        ``|q| = beta sqrt(d_k) / tau``. Refused with ``query="random"``, with ``query_norm`` or ``query_vector``, and
        with ``tau = 0`` (unless ``beta = 0``). The logits sampler depends on ``d_k``, ``tau`` and ``|q|`` only
        through ``beta`` (and, for a random query, on ``d_k`` through ``|q|^2 ~ chi^2_{d_k}``).
    key_dist, value_dist : ``"gaussian"``, ``"uniform"`` or ``"rademacher"``, each standardised to mean 0,
        variance 1, i.i.d. across keys and coordinates; ``key_dist`` may also be ``"sphere"`` (QK-norm keys: each
        key uniform on the sphere of radius ``sqrt(d_k)``; with a fixed query the logits are i.i.d. of the
        ``sphere`` law of :mod:`varsim.theory.laws` with ``d = d_k`` at the same ``beta``).
    value_mean, value_scale : values are ``value_mean + value_scale * eps`` (``value_mean`` scalar or length d_v).
    coupling, coupling_noise : key-value coupling (THEORY.md 2.4): a scalar ``a`` gives
        ``eps = a k[:d_v] + coupling_noise * eta`` (needs ``d_v <= d_k``), a ``(d_v, d_k)`` matrix ``A`` gives
        ``eps = A k + coupling_noise * eta``, with ``eta`` drawn from ``value_dist``; values stay
        ``value_mean + value_scale * eps``.
    n_sequences : sequences per N, split into ceil(n_sequences / chunk_size) chunks (default: about 32 chunks, 16 below
        64 sequences); at least 16 chunks of at least 2 sequences are required for the batch-means SEs, so
        ``n_sequences >= 32`` (an odd count needs >= 46). With ``target_rse`` it is the cap on sequences per N.
    target_rse : stop each N once the relative standard error ``var_se / var`` is at most this (0 < target_rse <= 1;
        default None: always ``n_sequences``). The cap ``n_sequences`` is cut into chunks as for a fixed run
        (default about 256 chunks, :data:`~varsim.sim._config.TARGET_CHUNKS`) and chunks are added in chunk order: the
        rule reads the first 32 chunks, then, while the target is missed, the larger of 1.25x as many and the count
        the current RSE predicts, up to the cap. The decision at a point depends only on its own chunks in chunk
        order, so results do not depend on ``threads``; a point that reaches the cap equals the fixed run with
        ``n_sequences`` (and the same ``chunk_size``). ``result.sequences`` gives the sequences each N used.
    sampler : ``"full"`` draws q, K and V for every sequence and supports every option; ``"logits"`` draws the
        logits ``beta g_i`` directly (exact for i.i.d. Gaussian keys only; random query: ``|q|^2 ~ chi^2_{d_k}``):
        it refuses ``key_dist`` other than Gaussian and ``coupling``, and the direction of ``query_vector`` does not
        matter to it, only its norm.
    estimator : ``"sample"`` (sample variance of ``o``) or ``"rao_blackwell"`` (``value_scale^2 E[sum w^2]``,
        exact when values are independent of keys; refused with coupling). With ``sampler="logits"`` it draws no
        values at all, and ``mean``/``global_*`` are None.
    coordinate : the output coordinate reported in ``var_coord`` and ``mean``.
    seed : int or ``numpy.random.SeedSequence`` (default 0); chunk ``c`` at length ``N`` uses the stream keyed
        ``(N, c)``, so results do not depend on ``threads`` and a grid point's numbers do not depend on the rest of
        the grid.
    rng : instead of ``seed``: an int or ``SeedSequence`` (identical results to ``seed`` with the same value) or a
        ``numpy.random.Generator`` (128 bits are drawn from it; ``result.seed`` records them, so ``seed=result.seed``
        reruns the run); giving both ``seed`` and ``rng`` is an error (``varsim._common.seeding``).
    threads : worker threads (default ``numba.get_num_threads()``); never changes the numbers.
    progress : print progress to stderr.
    keep_samples : keep per-sequence ``sum w^2`` and ``o_coordinate``.
    attention, **attention_params : the weight map, a name of ``varsim.variants.WEIGHT_MAPS`` (default
        ``"softmax"``) and its parameters, e.g. ``attention="ssmax", s=0.5`` or ``attention="topk", k=8``.
        Softmax with an N-dependent temperature (ssmax, logn, critical) runs the online-softmax kernels at the
        rescaled logit scale; the other maps keep a sequence's logits (and values) and apply the map to all of them.
        The full sampler draws the same keys and values for every variant under one seed (paired comparisons).
        For ``sigmoid`` (weights not summing to 1) ``wsum``/``wsum_var`` report ``sum w``, and the Rao-Blackwell
        estimator is ``sigma_v^2 E[sum w^2] + mu_v^2 Var(sum w)`` (REMEDIES 1).
    max_work : bound on the estimated work in key-coordinates (``n_sequences * sum(N) * coordinates per key``;
        default ``DEFAULT_MAX_WORK = 2e12``, about an hour on 2 cores): a larger run is refused before it starts
        (and one needing more than half the machine's memory always is); raise it for deliberately long runs.
    """
    threads = _check_threads(threads)
    keep_samples = _check_flag("keep_samples", keep_samples)
    query_norm = query_norm_for_beta(beta, tau=tau, d_k=d_k, query=query, query_norm=query_norm,
                                     query_vector=query_vector)
    cfg = make_config(
        n_grid, d_k=d_k, d_v=d_v, tau=tau, query=query, query_norm=query_norm, query_vector=query_vector,
        key_dist=key_dist, value_dist=value_dist, value_mean=value_mean, value_scale=value_scale, coupling=coupling,
        coupling_noise=coupling_noise, n_sequences=n_sequences, sampler=sampler, estimator=estimator,
        coordinate=coordinate, chunk_size=chunk_size, attention=attention, attention_params=attention_params,
        max_work=max_work, workers=threads, keep_samples=keep_samples, target_rse=target_rse,
    )
    root = resolve_seed(seed, rng)
    progress = _check_flag("progress", progress)
    runner = _ChunkRunner(cfg, keep_samples)
    start = time.perf_counter()

    def run_chunk(g, c, size):
        return runner(new_state(root, int(cfg.n_grid[g]), c), g, size)

    if cfg.target_rse is None:
        per_point = _run_items(cfg, run_chunk, threads, progress, "simulate")
    else:
        rb = cfg.value_scale**2 if cfg.estimator == "rao_blackwell" else None
        per_point = _run_targeted(cfg, run_chunk, threads, progress, "simulate", rb)
    rb = cfg.value_scale**2 if cfg.estimator == "rao_blackwell" else None
    return _assemble(cfg, per_point, rb, root, time.perf_counter() - start, keep_samples,
                     cfg.as_kwargs(), has_ipr=True)


class _ChunkRunner:
    """Calls the right kernel for one chunk and reduces its per-sequence output (thread-safe, no shared state)."""

    def __init__(self, cfg: SimConfig, keep_samples: bool):
        from ._ziggurat import kernel_tables  # tables are computed once, outside the kernels

        self.cfg = cfg
        self.keep_samples = keep_samples
        self.tables = kernel_tables()
        self.d_out = cfg.d_v if cfg.draws_values else 0
        self.sums_to_one = cfg.variant.sums_to_one

    def __call__(self, state, g, size):
        cfg = self.cfg
        n_keys = int(cfg.n_grid[g])
        dev = np.empty((size, self.d_out))
        y2 = np.empty(size)
        s1 = None
        if cfg.streaming:  # softmax at the logit scale times the variant's factor f(N)
            from . import _kernels_attn as KA  # compiles (or loads from cache) on first use only

            p = sampler_args(cfg, n_keys, cfg.beta_factor(n_keys))
            chunk = KA.full_chunk if cfg.sampler == "full" else KA.logits_chunk
            chunk(state, p, self.tables, dev, y2)
        else:
            from . import _kernels_map as KM
            from ._variant_codes import pack

            s1 = np.empty(size)
            chunk = KM.map_full_chunk if cfg.sampler == "full" else KM.map_logits_chunk
            chunk(state, sampler_args(cfg, n_keys), pack(cfg.attention, cfg.attention_params, n_keys), self.tables,
                  dev, y2, s1)
            if self.sums_to_one:
                s1 = None
        return _reduce_chunk(cfg, dev if self.d_out else None, y2, self.keep_samples, s1)


def _reduce_chunk(cfg: SimConfig, dev, y2, keep_samples: bool, s1=None) -> dict:
    """A chunk's summary sums, plus its per-sequence ``sum w^2`` and ``o_coordinate`` when samples are kept (the
    full ``dev = o - mu`` array is dropped here, so memory does not grow with ``n_sequences``)."""
    j = cfg.coordinate
    return {
        "summary": summarise_chunk(dev, y2, cfg.value_mean, s1),
        "ipr": y2 if keep_samples else None,
        "o": cfg.value_mean[j] + dev[:, j] if keep_samples and dev is not None else None,
    }


def _check_flag(name: str, value) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def _check_threads(threads) -> int:
    if threads is None:
        import numba

        return int(numba.get_num_threads())
    return check_positive_int("threads", threads)


def _run_items(cfg: SimConfig, run_chunk, threads: int, progress, label: str):
    """Run every (grid point, chunk) item; returns, per grid point, the chunk records in chunk order."""
    sizes = chunk_sizes(cfg.n_sequences, cfg.n_chunks)
    # largest N first so the last items to finish are short (better load balance); results are stored by index
    items = [(g, c) for g in reversed(range(len(cfg.n_grid))) for c in range(cfg.n_chunks)]
    out = [[None] * cfg.n_chunks for _ in cfg.n_grid]
    with Progress(len(items), label, enabled=bool(progress)) as bar:
        if threads == 1:
            for g, c in items:
                out[g][c] = run_chunk(g, c, int(sizes[c]))
                bar.update()
        else:
            with ThreadPoolExecutor(max_workers=threads) as pool:
                futures = {pool.submit(run_chunk, g, c, int(sizes[c])): (g, c) for g, c in items}
                for fut in as_completed(futures):
                    g, c = futures[fut]
                    out[g][c] = fut.result()
                    bar.update()
    return out


def next_checkpoint(done: int, n_chunks: int, var: float, var_se: float, target: float) -> int | None:
    """The stopping rule of ``simulate(target_rse=...)``: after the first ``done`` chunks of a point, whose pooled
    ``var`` has standard error ``var_se``, None to stop (the target met, or all ``n_chunks`` run), else the chunk
    count to run to before looking again: the larger of ``1.25 * done`` and the count that scaling
    ``SE ~ 1/sqrt(chunks)`` predicts for the target, at most ``n_chunks``. A variance of 0 with an SE of 0 has met any
    target; a non-finite RSE runs on to the cap. The prediction is computed in log space, so that any legal target
    (down to the smallest subnormal) and any finite RSE give a count, never an overflow."""
    if done >= n_chunks:
        return None
    rse = 0.0 if var_se == 0 else (var_se / abs(var) if var != 0 and math.isfinite(var_se / var) else math.inf)
    if rse <= target:
        return None
    log_predicted = math.log(done) + 2.0 * (math.log(rse) - math.log(target)) if math.isfinite(rse) else math.inf
    predicted = n_chunks if log_predicted >= math.log(n_chunks) else math.exp(log_predicted)
    return int(min(n_chunks, max(math.ceil(1.25 * done), math.ceil(predicted))))


def _run_targeted(cfg: SimConfig, run_chunk, threads: int, progress, label: str, rb):
    """Run each grid point's chunks in chunk order until :func:`next_checkpoint` stops it; returns, per grid point,
    the chunk records used (a prefix of its chunks). Chunks may be computed ahead on other threads, but a point's
    decisions read only its own first chunks, so what is returned does not depend on ``threads``."""
    sizes = chunk_sizes(cfg.n_sequences, cfg.n_chunks)
    n_points = len(cfg.n_grid)
    out = [[None] * cfg.n_chunks for _ in cfg.n_grid]
    used = [0] * n_points

    def decide(g: int, upto: int) -> int | None:
        row = combine_chunks([c["summary"] for c in out[g][:upto]], cfg.value_mean, cfg.coordinate, rb)
        nxt = next_checkpoint(upto, cfg.n_chunks, row["var"], row["var_se"], cfg.target_rse)
        if nxt is None:
            used[g] = upto
        return nxt

    first = min(cfg.n_chunks, MIN_TARGET_CHUNKS)
    order = list(reversed(range(n_points)))  # largest N first, as in _run_items
    with Progress(n_points * cfg.n_chunks, label, enabled=bool(progress)) as bar:
        def finish(g: int, upto: int) -> None:
            bar.total -= cfg.n_chunks - upto
            bar.update(0)

        if threads == 1:
            for g in order:
                done, upto = 0, first
                while upto is not None:
                    for c in range(done, upto):
                        out[g][c] = run_chunk(g, c, int(sizes[c]))
                        bar.update()
                    done, upto = upto, decide(g, upto)
                finish(g, done)
        else:
            with ThreadPoolExecutor(max_workers=threads) as pool:
                pending, waiting = {}, {}

                def submit(g: int, lo: int, hi: int) -> None:
                    waiting[g] = (hi, hi - lo)
                    for c in range(lo, hi):
                        pending[pool.submit(run_chunk, g, c, int(sizes[c]))] = (g, c)

                for g in order:
                    submit(g, 0, first)
                while pending:
                    finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                    for fut in finished:
                        g, c = pending.pop(fut)
                        out[g][c] = fut.result()
                        bar.update()
                        upto, left = waiting[g]
                        waiting[g] = (upto, left - 1)
                        if left == 1:
                            nxt = decide(g, upto)
                            if nxt is None:
                                finish(g, upto)
                            else:
                                submit(g, upto, nxt)
    return [chunks[:n] for chunks, n in zip(out, used)]


def _assemble(cfg, per_point, rb, root, elapsed, keep_samples, config_record, has_ipr) -> SimulationResult:
    rows = [combine_chunks([c["summary"] for c in chunks], cfg.value_mean, cfg.coordinate, rb) for chunks in per_point]
    fields = {}
    for key in rows[0]:
        vals = [r[key] for r in rows]
        fields[key] = None if vals[0] is None else np.array(vals, dtype=np.float64)
    if not has_ipr:
        fields["ipr"] = fields["ipr_se"] = None
    slope, slope_se = loglog_slope(cfg.n_grid, fields["var"], fields["var_se"])
    samples = None
    if keep_samples:
        samples = {
            key: [None if chunks[0][key] is None or (key == "ipr" and not has_ipr)
                  else np.concatenate([c[key] for c in chunks]) for chunks in per_point]
            for key in ("ipr", "o")
        }
    beta = cfg.beta
    fields["sequences"] = np.array([sum(c["summary"]["n"] for c in chunks) for chunks in per_point], dtype=np.int64)
    return SimulationResult(
        n=cfg.n_grid.copy(),
        beta=None if beta is None else np.full(len(cfg.n_grid), beta),
        slope=slope,
        slope_se=slope_se,
        config=config_record,
        seed=root.entropy,
        seed_spawn_key=[int(k) for k in root.spawn_key],
        provenance=provenance(),
        elapsed_s=round(elapsed, 3),
        samples=samples,
        **fields,
    )


def measure_variance(
    attention_fn,
    n_grid,
    *,
    d_k: int = 64,
    d_v: int = 64,
    query: str = "fixed",
    query_norm: float | None = None,
    query_vector=None,
    key_dist: str = "gaussian",
    value_dist: str = "gaussian",
    value_mean=0.0,
    value_scale: float = 1.0,
    n_sequences: int = 2_000,
    coordinate: int = 0,
    chunk_size: int | None = None,
    seed=_SEED_DEFAULT,
    rng=None,
    progress: bool = False,
    keep_samples: bool = False,
    max_work: float | None = None,
) -> SimulationResult:
    """Measure the output variance of a user-supplied NumPy attention function on sampled inputs.

    ``attention_fn(q, K, V)`` receives a batch ``q (S, d_k)``, ``K (S, N, d_k)``, ``V (S, N, d_v)`` (float64,
    drawn as in ``simulate``: q fixed or ``N(0, I)``, standardised keys, values ``value_mean + value_scale * eps``)
    and returns ``o (S, d_v)``, or ``(o, w)`` with attention weights ``w (S, N)`` to also report ``ipr``. The
    function owns its scaling (temperature, 1/sqrt(d_k), normalisation), so this property-tests attention variants
    (LayerNorm after attention, scalable softmax, ...) with the same statistics as ``simulate`` (sample-variance
    estimator, batch-means SEs over >= 16 chunks). Chunk ``c`` at length N draws from NumPy's PCG64 keyed
    ``(N, c, 1)`` under ``seed`` (or ``rng``, as in :func:`simulate`); chunks run sequentially (the function need
    not be thread-safe). ``max_work`` as in :func:`simulate`; the explicit arrays of a chunk must also fit in memory.
    A return value that is not a finite array of the stated shape raises ``ValueError`` naming ``attention_fn``.
    """
    if not callable(attention_fn):
        raise ValueError(f"attention_fn must be callable, got {type(attention_fn).__name__}")
    keep_samples = _check_flag("keep_samples", keep_samples)
    cfg = make_config(
        n_grid, d_k=d_k, d_v=d_v, tau=1.0, query=query, query_norm=query_norm, query_vector=query_vector,
        key_dist=key_dist, value_dist=value_dist, value_mean=value_mean, value_scale=value_scale, coupling=None,
        coupling_noise=1.0, n_sequences=n_sequences, sampler="full", estimator="sample", coordinate=coordinate,
        chunk_size=chunk_size, max_work=max_work, keep_samples=keep_samples, materialises=True,
    )
    root = resolve_seed(seed, rng)
    progress = _check_flag("progress", progress)
    record = cfg.as_kwargs()
    for key in ("tau", "coupling", "coupling_noise", "sampler", "estimator", "attention", "target_rse"):
        record.pop(key)
    record["attention_fn"] = getattr(attention_fn, "__qualname__", repr(attention_fn))
    seen_w = []

    def run_chunk(g, c, size):
        n_keys = int(cfg.n_grid[g])
        rng = child_generator(root, n_keys, c, _MEASURE_STREAM)
        if cfg.q_fixed is None:
            q = rng.standard_normal((size, cfg.d_k))
        else:
            q = np.broadcast_to(cfg.q_fixed, (size, cfg.d_k)).copy()
        K = _standardised(rng, cfg.key_dist, (size, n_keys, cfg.d_k))
        V = cfg.value_mean + cfg.value_scale * _standardised(rng, cfg.value_dist, (size, n_keys, cfg.d_v))
        out = attention_fn(q, K, V)
        w = None
        if isinstance(out, tuple):
            if len(out) != 2:
                raise ValueError(f"attention_fn must return o or a pair (o, w), got a tuple of {len(out)} items")
            out, w = out
            w = _returned_array(w, "weights", (size, n_keys))
        o = _returned_array(out, "output", (size, cfg.d_v))
        seen_w.append(w is not None)
        y2 = np.sum(w * w, axis=1) if w is not None else np.zeros(size)
        return _reduce_chunk(cfg, o - cfg.value_mean, y2, keep_samples)

    start = time.perf_counter()
    per_point = _run_items(cfg, run_chunk, 1, progress, "measure_variance")
    return _assemble(cfg, per_point, None, root, time.perf_counter() - start, keep_samples, record,
                     has_ipr=all(seen_w))


def _describe(value) -> str:
    """A short description of what a user function returned (type, shape, a few characters of its repr)."""
    shape = getattr(value, "shape", None)
    text = repr(value)
    text = text if len(text) <= 60 else text[:57] + "..."
    return f"{type(value).__name__}" + (f" of shape {tuple(shape)}" if shape is not None else "") + f" {text}"


def _returned_array(value, what: str, shape) -> np.ndarray:
    """``value`` as a finite float64 array of ``shape``, else ``ValueError`` naming attention_fn and the value."""
    expected = f"a finite float array of shape {shape}"
    if isinstance(value, (str, bytes)) or value is None:
        raise ValueError(f"attention_fn returned {what} {_describe(value)}; expected {expected}")
    try:
        with np.errstate(all="ignore"):
            arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):  # ragged lists, objects, strings inside lists
        raise ValueError(f"attention_fn returned {what} {_describe(value)}, which is not a numeric array; "
                         f"expected {expected}") from None
    if arr.shape != tuple(shape):
        raise ValueError(f"attention_fn returned {what} of shape {arr.shape}; expected {expected}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"attention_fn returned {what} with {int(np.sum(~np.isfinite(arr)))} non-finite value(s) "
                         f"(NaN or inf); expected {expected}")
    return arr


def _standardised(rng: np.random.Generator, dist: str, shape) -> np.ndarray:
    """Mean-0, variance-1 draws of ``dist`` with NumPy's generator."""
    if dist == "gaussian":
        return rng.standard_normal(shape)
    if dist == "uniform":
        return rng.uniform(-_SQRT3, _SQRT3, shape)
    if dist == "sphere":
        z = rng.standard_normal(shape)
        return z * np.sqrt(shape[-1] / np.sum(z * z, axis=-1, keepdims=True))
    return rng.integers(0, 2, shape).astype(np.float64) * 2.0 - 1.0
