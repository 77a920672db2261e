"""Predict a one-block model's accuracy at long N, and each inference-time map's, from training lengths only.

The account (issue 34; pre-registered in ``docs/experiments/prediction_preregistration.md``). The class is read from
the query token's state, whose attention output in head ``h`` is ``w_c v_c + sum_{i != c} w_i v_i``. Two things go
wrong as N grows:

- **ranking**: a distractor's logit rises above the correct item's (``c`` is no longer the top of the best head);
- **dispersion**: ``c`` stays on top but its weight ``w_c`` falls below what the readout needs. The rest of the
  output is noise of variance proportional to ``S2 = sum_{i != c} w_i^2`` (THEORY: ``E[sum w^2]``), so

      P(correct | c on top) = (1 - lapse) Phi((w_c - kappa tau) / (sigma sqrt(S2)))

  and as ``S2`` vanishes with N this is a threshold on ``w_c`` (``lapse``: the readout's errors that no weight on
  ``c`` repairs).

Everything the prediction uses is measured on sets of exactly the training maximum ``n0`` (:func:`measure`):

1. the best head ``h*`` of the (single) block: the largest mean weight on the correct item;
2. the exact pre-softmax logit of ``h*`` for every item of ``n_sets`` measurement sets: in a one-block model without
   positions an item's logit depends only on the item and the query, not on N (checked against the model's weights);
3. ``tau, sigma, lapse``: the readout's requirement, by maximum likelihood on an intervention at ``n0``: every
   head's logits multiplied by ``f`` in :data:`TEMPERATURES` (:func:`scaled_scores`: the query projection scaled,
   the model's own map applied), which lowers ``w_c`` and raises ``S2``, and whether the model still answers.

The model's weight map may be any registered map of those logits at the set's length N (:func:`own_map`: softmax,
or a trained remedy such as SSMax with its learned per-head scale, log-N scaling, 1.5-entmax): the map, its
parameters and, for a map with a learned per-head parameter, the best head's learned value, are read from the model
(the model's ``attention_spec``), and step 2 checks that the map of the logits is the model's weights in every head.

:func:`simulate` then builds long sets from the measured items by the task's composition law (:data:`COMPOSITIONS`:
argmax, the item of largest priority among N drawn from the pool; dictionary, the base example's pair and N - 1
other items scored under its query), applies each weight map's NumPy reference (:func:`varsim.variants.weights`) to
the best head's logits at the long set's N (by default the model's own map; for a softmax model also the inference
maps), and :meth:`Simulation.table` reads accuracy, the ranking-correct fraction and the dispersion error for a
readout scale ``kappa``. ``gaussian=True`` replaces the measured logits by independent Gaussians of the
same moments (the ablation of the pre-registration). Examples whose top item is wrong score the chance level.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from varsim._common.registry import Registry
from varsim._common.seeding import resolve_seed
from varsim._common.validate import check_int, format_bytes, memory_limit_bytes

__all__ = ["TEMPERATURES", "COMPOSITIONS", "Composition", "composition_of", "TrainingLengthStats", "Simulation",
           "item_logits", "own_map", "scaled_scores", "measure", "fit_readout", "simulate", "check_prediction",
           "predict", "readout_probability"]

#: the intervention's logit factors at n0 (pre-registered)
TEMPERATURES = (1.0, 0.75, 0.5, 0.35, 0.25, 0.18, 0.12, 0.08, 0.05)


@dataclass
class TrainingLengthStats:
    """What :func:`measure` reads from a model at its training maximum ``n0``.

    ``items`` (P, D) the measurement sets' item states as the block sees them (P = n_sets n0); ``queries`` (n_sets, D)
    the best head's query pulled back to token space and scaled (an item's logit is ``items[i] @ queries[e]``);
    ``correct`` (n_sets,) the flat pool index of each set's correct item; ``item_set`` (P,) the set of each pool item;
    ``priority``/``key`` (P,) the task's item fields the composition law reads (None where absent); ``query_key``
    (n_sets,) the dictionary's query keys (None otherwise); ``tau, sigma, lapse`` the readout fit; ``accuracy_n0`` the
    model's accuracy on the measurement sets; ``readout`` the intervention's per-example arrays; ``attention`` the
    model's weight map and ``map_params`` its parameters in the best head (:func:`own_map`)."""

    task: str
    n0: int
    chance: float
    best_head: int
    items: np.ndarray
    queries: np.ndarray
    correct: np.ndarray
    item_set: np.ndarray
    priority: np.ndarray | None
    key: np.ndarray | None
    query_key: np.ndarray | None
    tau: float
    sigma: float
    lapse: float
    accuracy_n0: float
    readout: dict
    attention: str = "softmax"
    map_params: dict = field(default_factory=dict)

    @property
    def own_maps(self) -> dict:
        """``{attention: (map name, params)}``: the model's own map in the best head (:func:`simulate`'s default)."""
        return {self.attention: (self.attention, dict(self.map_params))}

    def correct_logits(self) -> np.ndarray:
        """(n_sets,) the correct item's logit in its own set."""
        return np.einsum("ed,ed->e", self.items[self.correct], self.queries)

    def distractor_logits(self) -> np.ndarray:
        """The logits of every non-correct item of the measurement sets under its own set's query."""
        own = np.einsum("pd,pd->p", self.items, self.queries[self.item_set])
        keep = np.ones(own.size, dtype=bool)
        keep[self.correct] = False
        return own[keep]


def _check_model(model, config) -> None:
    """ValueError naming ``checkpoint`` for a model the account does not cover."""
    mc = config.model
    if getattr(mc, "architecture", "set_transformer") != "set_transformer" or type(model).__name__ != "Transformer":
        raise ValueError(f"checkpoint: the predictor needs a set transformer, got architecture {mc.architecture!r}")
    if mc.n_blocks != 1:
        raise ValueError(f"checkpoint: the predictor needs one block (an item's logit must not depend on N), got "
                         f"n_blocks={mc.n_blocks}")
    if mc.attention_output != "none":
        raise ValueError(f"checkpoint: the predictor reads the weights themselves, got the output normalization "
                         f"{mc.attention_output!r}")
    if mc.norm != "none":
        raise ValueError(f"checkpoint: the predictor reads the weights themselves, got the attention-output "
                         f"normalization norm={mc.norm!r} (it rescales the readout's signal and noise together)")


def own_map(model, head: int) -> tuple[str, dict]:
    """``(name, params)``: the model's weight map as :func:`varsim.variants.weights` applies it to head ``head``'s
    logits, so that ``weights(name, z[:, head], n, **params)`` is the model's weights at any N: the map's validated
    parameters, and for a map with a learned per-head parameter (SSMax's ``s``) the head's learned value."""
    spec = model.config.attention_spec
    params = dict(spec.params)
    if spec.trained_param is not None:
        from varsim.nn.set_params import theta_name

        params[spec.trained_param] = float(model.params[theta_name(model.config, 0)][head])
    return spec.name, params


def scaled_scores(model, f: float):
    """A copy of the one-block ``model`` whose every head's pre-map scores (its query-key products) are multiplied by
    ``f``: the query projection scaled; the model's own weight map (and learned parameters) kept."""
    out = model.with_attention(model.config.attention, model.config.attention_params)
    d = model.config.d_model
    out.params["block0.attn.w_qkv"][:, :d] *= f
    out.params["block0.attn.b_qkv"][:d] *= f
    return out


def item_logits(model, batch) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(z (B, H, N), u (B, H, D), items (B, N, D))``: the single block's exact pre-softmax logits of the query over
    the items (``-inf`` at padding), without the key-bias term (the same for every item; softmax drops it), so that
    ``softmax(z)`` is a softmax model's weights (each head's :func:`own_map` of ``z`` in general) and
    ``z[b, h, i] = items[b, i] @ u[b, h]``; ``u`` each head's query pulled
    back to token space, scaled by ``1/sqrt(d_head)``; ``items`` the item states the block attends over."""
    c, p = model.config, model.params
    feats, keys_all, mask = model._inputs(batch, training=False)
    x, _ = model._embed_forward(feats, keys_all)
    h = (model._layernorm_forward("block0.ln1", x)[0] if c.pre_ln else x).astype(np.float64)
    w_qkv, b_qkv = p["block0.attn.w_qkv"].astype(np.float64), p["block0.attn.b_qkv"].astype(np.float64)
    d, nh = c.d_model, c.n_heads
    dh = d // nh
    q = h[:, 0] @ w_qkv[:, :d] + b_qkv[:d]  # (B, D)
    wk = w_qkv[:, d:2 * d].reshape(d, nh, dh).transpose(1, 2, 0)  # (H, Dh, D)
    u = np.einsum("bhk,hkd->bhd", q.reshape(-1, nh, dh), wk) / math.sqrt(dh)  # (B, H, D)
    z = np.einsum("bhd,bnd->bhn", u, h[:, 1:])
    return np.where(mask[:, None, :], z, -np.inf), u, h[:, 1:]


def readout_probability(w_c, s2, tau: float, sigma: float, lapse: float = 0.0) -> np.ndarray:
    """``(1 - lapse) Phi((w_c - tau) / (sigma sqrt(s2)))``, elementwise; the limit where ``s2 == 0`` (a step at tau)."""
    from scipy.special import ndtr

    w_c, s2 = np.asarray(w_c, dtype=np.float64), np.asarray(s2, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = (w_c - tau) / (sigma * np.sqrt(s2))
    z = np.where(s2 > 0, z, np.where(w_c > tau, np.inf, -np.inf))
    return (1.0 - lapse) * ndtr(z)


def fit_readout(w_c, s2, hit) -> tuple[float, float, float]:
    """Maximum-likelihood ``(tau, sigma, lapse)`` of ``P(hit) = (1 - lapse) Phi((w_c - tau) / (sigma sqrt(s2)))``:
    tau in (0, 1), sigma > 0, lapse in (0, 1/2) (the readout's errors that no weight repairs); Nelder-Mead from a
    3 x 3 grid of starts (tau, sigma), the best kept."""
    from scipy.optimize import minimize
    from scipy.special import expit, ndtr

    w_c, s2 = np.asarray(w_c, dtype=np.float64), np.maximum(np.asarray(s2, dtype=np.float64), 1e-300)
    y = np.asarray(hit, dtype=bool)
    if y.all() or not y.any():
        raise ValueError("hit: the readout fit needs both answered and missed examples")
    root = np.sqrt(s2)

    def unpack(theta):
        return expit(theta[0]), math.exp(min(max(theta[1], -40.0), 40.0)), 0.5 * expit(theta[2])

    def nll(theta):
        tau, sigma, lapse = unpack(theta)
        p = np.clip((1.0 - lapse) * ndtr((w_c - tau) / (sigma * root)), 1e-300, 1.0 - 1e-16)
        return -(np.log(p[y]).sum() + np.log1p(-p[~y]).sum())

    best = None
    for t0 in (-2.0, 0.0, 2.0):
        for s0 in (-2.0, 0.0, 2.0):
            r = minimize(nll, np.array([t0, s0, -4.0]), method="Nelder-Mead",
                         options={"xatol": 1e-7, "fatol": 1e-9, "maxiter": 4000})
            if best is None or r.fun < best.fun:
                best = r
    return tuple(float(v) for v in unpack(best.x))


def _weights_stats(w: np.ndarray, correct: np.ndarray):
    """``w`` (B, N), ``correct`` (B,) -> (w_c, S2 over the other items, top is correct)."""
    rows = np.arange(w.shape[0])
    wc = w[rows, correct]
    s2 = np.einsum("bn,bn->b", w, w) - wc * wc
    top_ok = np.argmax(w, axis=1) == correct
    return wc, np.maximum(s2, 0.0), top_ok


def measure(model, config, *, n_sets: int = 2048, min_accuracy: float = 0.9, seed: int = 0,
            rng=None) -> TrainingLengthStats:
    """The training-length statistics of ``model`` (its run's ``config``, a :class:`varsim.train.TrainConfig`): module
    docstring, steps 1-3. ValueError naming ``checkpoint`` for a model the account does not cover or one whose accuracy
    at n0 is below ``min_accuracy`` (it has not learned the task at training length)."""
    from varsim._common.seeding import child_generator
    from varsim.tasks import chance_level, correct_item, make_batch

    _check_model(model, config)
    n_sets = check_int("n_sets", n_sets, minimum=16)
    root = resolve_seed(seed, rng)
    task, n0 = config.task, int(config.train_max)
    batch = make_batch(task, n_sets, n0, child_generator(root, 0), **config.task_kwargs())
    target = np.asarray(batch["target"])
    correct = correct_item(task, batch)
    z, u, items = item_logits(model, batch)
    class_logits, weights = model.logits_and_weights(batch)
    from varsim.variants import weights as map_weights

    for h in range(z.shape[1]):
        name, params = own_map(model, h)
        if not np.allclose(map_weights(name, z[:, h], **params), weights[:, h], rtol=1e-3, atol=1e-5):  # float32
            raise ValueError(f"checkpoint: the model's weights are not its map {name!r} of per-item logits "
                             "(unsupported model)")
    rows = np.arange(n_sets)
    head = int(np.argmax(weights[rows, :, correct].mean(axis=0)))
    hit = np.argmax(class_logits, axis=1) == target
    acc = float(hit.mean())
    if acc < min_accuracy:
        raise ValueError(f"checkpoint: the model has not learned the task at its training length (accuracy {acc:.3f} "
                         f"at N = {n0} < {min_accuracy})")
    readout = {"f": [], "w_c": [], "s2": [], "top_ok": [], "hit": []}
    for f in TEMPERATURES:
        if f == 1.0:
            lw, w = class_logits, weights
        else:
            lw, w = scaled_scores(model, f).logits_and_weights(batch)
        wc, s2, top = _weights_stats(w[:, head], correct)
        readout["f"].append(np.full(n_sets, f))
        readout["w_c"].append(wc)
        readout["s2"].append(s2)
        readout["top_ok"].append(top)
        readout["hit"].append(np.argmax(lw, axis=1) == target)
    readout = {k: np.concatenate(v) for k, v in readout.items()}
    name, params = own_map(model, head)
    ok = readout["top_ok"]
    tau, sigma, lapse = fit_readout(readout["w_c"][ok], readout["s2"][ok], readout["hit"][ok])
    d = items.shape[-1]
    flat = items.reshape(-1, d)
    item_set = np.repeat(rows, n0)
    return TrainingLengthStats(
        task=task, n0=n0, chance=float(chance_level(task, config.model.vocab)), best_head=head, items=flat,
        queries=u[:, head], correct=rows * n0 + correct, item_set=item_set,
        priority=np.asarray(batch["priority"]).reshape(-1) if "priority" in batch else None,
        key=np.asarray(batch["key"]).reshape(-1) if "key" in batch else None,
        query_key=np.asarray(batch["query"]) if "query" in batch else None,
        tau=tau, sigma=sigma, lapse=lapse, accuracy_n0=acc, readout=readout, attention=name, map_params=params)


# ----------------------------------------------------------------------------------------------------------------------
# Composition laws: a long set from the measured pool


def _draw_without_replacement(rng, pool: int, m: int, n: int) -> np.ndarray:
    """(m, n) pool indices, each row distinct."""
    if n > pool:
        raise ValueError(f"lengths: N = {n} needs more than the {pool} measured items (raise n_sets)")
    return np.stack([rng.choice(pool, size=n, replace=False) for _ in range(m)])


def _compose_argmax(stats: TrainingLengthStats, bases: np.ndarray, n: int, rng):
    """N items of the pool; the correct one has the largest priority. -> (pool indices (m, n), correct column)."""
    idx = _draw_without_replacement(rng, stats.items.shape[0], bases.size, n)
    return idx, np.argmax(stats.priority[idx], axis=1)


def _compose_dictionary(stats: TrainingLengthStats, bases: np.ndarray, n: int, rng):
    """The base set's correct pair in column 0, then N - 1 pool items of other sets whose key is not the query."""
    p = stats.items.shape[0]
    idx = np.empty((bases.size, n), dtype=np.int64)
    idx[:, 0] = stats.correct[bases]
    for j, e in enumerate(bases):
        row = rng.choice(p, size=n - 1, replace=False) if n > 1 else np.empty(0, np.int64)
        bad = (stats.item_set[row] == e) | (stats.key[row] == stats.query_key[e])
        while bad.any():
            fresh = rng.choice(p, size=int(bad.sum()), replace=True)
            row[bad] = fresh
            bad = (stats.item_set[row] == e) | (stats.key[row] == stats.query_key[e])
        idx[j, 1:] = row
    return idx, np.zeros(bases.size, dtype=np.int64)


@dataclass(frozen=True)
class Composition:
    """The composition law of the task ``name``: ``law(stats, bases, n, rng) -> (pool indices (m, n), correct
    column (m,))``, the long sets built from the measured pool of :class:`TrainingLengthStats` (called as the law)."""

    name: str
    law: Callable = field(repr=False)

    def __call__(self, stats: TrainingLengthStats, bases: np.ndarray, n: int, rng):
        return self.law(stats, bases, n, rng)


#: task name -> :class:`Composition` (called as its law); :func:`composition_of` asks it, an unknown task raises
COMPOSITIONS = Registry("composition law", kind=Composition)
for _law in (Composition("argmax", _compose_argmax), Composition("dictionary", _compose_dictionary)):
    COMPOSITIONS.add(_law)


def composition_of(task: str) -> Composition:
    """The composition law of ``task`` (:data:`COMPOSITIONS`); ValueError naming ``checkpoint`` for a task without
    one."""
    try:
        return COMPOSITIONS.find(task)
    except ValueError as err:
        raise ValueError(f"checkpoint: {err}") from None


@dataclass
class Simulation:
    """Per simulated set, per length and map: ``w_c``, ``s2``, ``top_ok`` (arrays (len(lengths), m)); read with
    :meth:`table`."""

    lengths: list
    maps: dict
    w_c: dict
    s2: dict
    top_ok: dict
    tau: float
    sigma: float
    lapse: float
    chance: float

    def table(self, kappa: float = 1.0, *, readout: str = "top") -> dict:
        """label -> {"accuracy", "ranking_correct", "dispersion_error"} (lists over lengths) at readout scale
        ``kappa`` (the threshold ``kappa tau``). ``readout="top"``: the account above (an example whose top item is
        wrong scores chance); ``"any"``: every example is read from its ``w_c`` and a failed read scores chance
        (the exploratory variant of docs/experiments/prediction.md)."""
        if readout not in ("top", "any"):
            raise ValueError(f"readout must be 'top' or 'any', got {readout!r}")
        out = {}
        for label in self.maps:
            top = self.top_ok[label]
            p = readout_probability(self.w_c[label], self.s2[label], kappa * self.tau, self.sigma, self.lapse)
            rank = top.mean(axis=1)
            if readout == "top":
                good = np.where(top, p, 0.0).mean(axis=1)
                acc = good + (1.0 - rank) * self.chance
            else:
                good = np.where(top, p + (1.0 - p) * self.chance, 0.0).mean(axis=1)
                acc = (p + (1.0 - p) * self.chance).mean(axis=1)
            out[label] = {"accuracy": acc.tolist(), "ranking_correct": rank.tolist(),
                          "dispersion_error": (rank - good).tolist()}
        return out


def simulate(stats: TrainingLengthStats, lengths, *, maps: dict | None = None, n_sim: int = 1024,
             gaussian: bool = False, chunk: int = 32, seed: int = 0, rng=None) -> Simulation:
    """Long sets at each N of ``lengths`` (each >= the training maximum n0) from ``stats``, each map's weights of the
    best head at that N: module docstring. ``maps``: label -> (weight map name, params) (default: the model's own map,
    ``stats.own_maps``)."""
    from varsim._common.seeding import child_generator
    from varsim.variants import weights as map_weights

    maps = dict(stats.own_maps if maps is None else maps)
    lengths = [check_int("lengths", n, minimum=1) for n in lengths]
    if not lengths or min(lengths) < stats.n0:
        raise ValueError(f"lengths must be >= the training maximum {stats.n0}, got {lengths}")
    n_sim = check_int("n_sim", n_sim, minimum=1)
    need = float(n_sim) * len(lengths) * (17.0 * len(maps) + 48.0)  # the records (budget.prediction_cost)
    if need > memory_limit_bytes():
        raise ValueError(f"n_sim={n_sim} is too large: {len(lengths)} lengths x {len(maps)} maps of records need about "
                         f"{format_bytes(need)}, more than the {format_bytes(memory_limit_bytes())} of this machine")
    root = resolve_seed(seed, rng)
    compose = None if gaussian else composition_of(stats.task)
    if gaussian:
        zc, zd = stats.correct_logits(), stats.distractor_logits()
        mc, sc, md, sd = zc.mean(), zc.std(), zd.mean(), zd.std()
    res = {k: {m: np.empty((len(lengths), n_sim)) for m in maps} for k in ("w_c", "s2")}
    top = {m: np.empty((len(lengths), n_sim), dtype=bool) for m in maps}
    n_sets = stats.queries.shape[0]
    for li, n in enumerate(lengths):
        g = child_generator(root, n)
        bases_all = g.integers(0, n_sets, size=n_sim)
        for start in range(0, n_sim, chunk):
            bases = bases_all[start:start + chunk]
            if gaussian:
                z = g.normal(md, sd, size=(bases.size, n))
                z[:, 0] = g.normal(mc, sc, size=bases.size)
                col = np.zeros(bases.size, dtype=np.int64)
            else:
                idx, col = compose(stats, bases, n, g)
                pool = stats.items @ stats.queries[bases].T  # (P, m): every pool item under each base's query
                z = pool[idx, np.arange(bases.size)[:, None]]
            for label, (name, params) in maps.items():
                w = map_weights(name, z, n, **params)
                wc, s2, ok = _weights_stats(w, col)
                sl = slice(start, start + bases.size)
                res["w_c"][label][li, sl], res["s2"][label][li, sl], top[label][li, sl] = wc, s2, ok
    return Simulation(lengths=lengths, maps=maps, w_c=res["w_c"], s2=res["s2"], top_ok=top, tau=stats.tau,
                      sigma=stats.sigma, lapse=stats.lapse, chance=stats.chance)


def check_prediction(config, lengths, *, n_maps: int, n_sets: int = 2048, n_sim: int = 1024,
                     max_hours: float | None = None, names: dict | None = None):
    """Validate the sizes of a prediction of a model with ``config`` (its run's :class:`varsim.train.TrainConfig`)
    before anything runs: ``lengths`` (each >= the training maximum, at most the measured pool), ``n_sets`` (>= 16),
    ``n_sim`` (>= 1), and the estimated memory and time (:func:`varsim.train.budget.check_prediction_cost`,
    ``max_hours`` its time bound). ``names`` maps ``lengths``, ``n_sets`` and ``n_sim`` to the caller's names (the
    CLI's flags). Returns ``(lengths, n_sets, n_sim, cost)``: the sizes as Python ints, and the estimated
    :class:`varsim.train.budget.Cost`."""
    from varsim.train.budget import check_prediction_cost

    names = {"lengths": "lengths", "n_sets": "n_sets", "n_sim": "n_sim", **(names or {})}
    lengths = [check_int(names["lengths"], n, minimum=1) for n in lengths]
    if not lengths or min(lengths) < config.train_max:
        raise ValueError(f"{names['lengths']} must be >= the training maximum {config.train_max}, got {lengths}")
    n_sets = check_int(names["n_sets"], n_sets, minimum=16)
    n_sim = check_int(names["n_sim"], n_sim, minimum=1)
    cost = check_prediction_cost(config.model, config.train_max, lengths, n_sets, n_sim, n_maps, len(TEMPERATURES),
                                 max_hours=max_hours, names=names)
    return lengths, n_sets, n_sim, cost


def predict(checkpoint, lengths, *, maps: dict | None = None, kappa: float = 1.0, n_sets: int = 2048,
            n_sim: int = 1024, seed: int = 0, max_hours: float | None = None) -> dict:
    """Load ``checkpoint`` (file or run directory), measure it at its training maximum and predict the accuracy,
    ranking-correct fraction and dispersion error at ``lengths`` of the model's own map (labelled by its name, first)
    and of each map of ``maps`` applied in its place. JSON-able. Sizes beyond the machine's memory, or whose
    estimated time exceeds ``max_hours`` (default :data:`varsim.train.budget.PREDICT_MAX_HOURS`), are refused before
    the measurement (:func:`check_prediction`)."""
    from varsim.train.checkpoint import load_checkpoint

    model, config, _ = load_checkpoint(checkpoint)
    _check_model(model, config)
    lengths, n_sets, n_sim, _ = check_prediction(config, lengths, n_maps=1 + len(maps or {}), n_sets=n_sets,
                                                 n_sim=n_sim, max_hours=max_hours)
    stats = measure(model, config, n_sets=n_sets, seed=seed)
    sim = simulate(stats, lengths, maps={**stats.own_maps, **(maps or {})}, n_sim=n_sim, seed=seed)
    return {"task": stats.task, "attention": stats.attention, "n0": stats.n0, "best_head": stats.best_head,
            "accuracy_n0": stats.accuracy_n0,
            "tau": stats.tau, "sigma": stats.sigma, "lapse": stats.lapse, "kappa": kappa, "lengths": lengths,
            "maps": {k: {"attention": v[0], "params": v[1]} for k, v in sim.maps.items()},
            "prediction": sim.table(kappa)}
