"""The model base: what the set transformer (:mod:`varsim.nn.model`) and the causal decoder (:mod:`varsim.nn.decoder`)
share, so that each model's module holds only what differs (inputs, embedding, blocks, head), each a forward and its
mirrored backward. :class:`Model` owns the parameters (seeded initialisation, state dict, count, ``with_attention``),
the memory check, the evaluation in chunks of examples, the checks of the training path, and the layers both models
name alike (LayerNorm, MLP, the attention output's normalization and projection). A model class sets ``cost`` (its
cost module: ``attention_bytes``, ``eval_chunk``, ``EVAL_CHUNK_TOKENS``) and ``memory_note``, and defines::

    _parameter_table()                          (name, shape, init) rows in the stable order (its params module)
    _inputs(batch, training)                    the batch validated and turned into the model's inputs
    _forward(batch, record, inference, focus)   -> (logits (B, C), cache); ``record``: the analysis' entries
    _head_backward, _block_backward, _embed_backward   the backward of each part, run in reverse by ``_backward``
                                                       (the head's passes a tied head's gradient to the embedding)
    _query_weights(chunk, cache)                -> (B, H, N) the last block's query-row weights over the items

and may refine ``_check_config`` (refuse a config before allocating) and ``_focus`` (the set model's oracle control).
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
from concurrent.futures import ThreadPoolExecutor
from types import ModuleType

import numpy as np

from varsim._common.seeding import SEED_DEFAULT, child_generator, resolve_seed
from varsim._common.validate import check_positive_int

from .config import ModelConfig
from .layers import (
    linear_backward,
    linear_forward,
    mlp_backward,
    softmax_cross_entropy_backward,
    softmax_cross_entropy_forward,
)
from .norms import get_norm, layernorm_backward, layernorm_forward, layernorm_fused_backward, layernorm_fused_forward
from .set_params import theta_name
from .shards import sharded_loss_and_grads
from .weightmaps import TRAINABLE_MAPS

__all__ = ["Model", "DEFAULT_MEMORY_BUDGET", "value_moments"]

DEFAULT_MEMORY_BUDGET = 2 * 1024**3  # bytes of attention matrices a forward/backward pass may hold


def _name_key(name: str) -> int:
    """A stable 63-bit integer key for a parameter name (SeedSequence spawn keys must be non-negative ints)."""
    return int.from_bytes(hashlib.sha256(name.encode("utf-8")).digest()[:8], "little") >> 1


def value_moments(h: np.ndarray, w_qkv: np.ndarray, b_qkv: np.ndarray, keys: np.ndarray):
    """Mean and variance (B, D) over the keys ``keys`` (B, T) bool of the value vectors ``h Wv + bv`` of ``h``
    (B, T, D): the per-window ``vbar`` and ``s2`` of the attention probe (:mod:`varsim.train.attention_probe`)."""
    d = h.shape[-1]
    v = (h @ w_qkv[:, 2 * d:] + b_qkv[2 * d:]).astype(np.float64)  # (B, T, D)
    m = keys[..., None].astype(np.float64)
    count = m.sum(axis=1)  # (B, 1)
    mean = (v * m).sum(axis=1) / count
    var = (((v - mean[:, None]) ** 2) * m).sum(axis=1) / count
    return mean, var


class Model:
    """A model with parameters in ``params``, an ordered ``{name: array}`` dict (module docstring).

    ``seed`` or ``rng`` (SPEC 7) draws the initial parameters, each from a child stream keyed by its name, so models
    that differ only in some parameters (a normalization's gains) start from identical shared weights: N(0, std^2)
    with the table's std (1/fan_in for projections), or the table's constant. ``memory_budget`` (bytes) bounds the
    attention matrices a pass may hold. ``forward``/``backward``/``loss_and_grads`` are the training path (the cache
    holds the activations); ``predict``, ``logits_and_weights`` and ``analysis`` run the batch in chunks, no cache.
    """

    cost: ModuleType
    #: evaluation holds the attention matrices a training pass holds (False: it computes them in blocks of rows)
    eval_holds_attention = True
    #: what a refused set size is told: what holds the matrices, and what has no such limit
    memory_note = ""

    def __init__(self, config: ModelConfig, seed=SEED_DEFAULT, *, rng=None,
                 memory_budget: int = DEFAULT_MEMORY_BUDGET):
        if not isinstance(config, ModelConfig):
            raise ValueError(f"config must be a ModelConfig, got {type(config).__name__}")
        self._check_config(config)
        self.config = config
        self.memory_budget = check_positive_int("memory_budget", memory_budget)
        self.dtype = np.dtype(config.dtype)
        self.params: dict[str, np.ndarray] = {}
        seq = resolve_seed(seed, rng)
        for name, shape, init in self._parameter_table():
            if isinstance(init, tuple):  # ("fill", value)
                value = np.full(shape, init[1], dtype=self.dtype)
            elif init in ("zeros", "ones"):
                value = (np.zeros if init == "zeros" else np.ones)(shape, dtype=self.dtype)
            else:  # keyed by the parameter's name, not its position
                value = (child_generator(seq, _name_key(name)).standard_normal(shape) * init).astype(self.dtype)
            self.params[name] = value

    def _check_config(self, config: ModelConfig) -> None:
        """Refuse a config this model cannot build (ValueError naming the field); every config by default."""

    # ------------------------------------------------------------------------------------------------------------
    # Parameters

    @property
    def n_params(self) -> int:
        return int(sum(p.size for p in self.params.values()))

    def state_dict(self) -> dict[str, np.ndarray]:
        """Copies of the parameters, in the stable order."""
        return {k: v.copy() for k, v in self.params.items()}

    def load_state_dict(self, d) -> None:
        """Copy ``d`` into the parameters (in place); names, shapes and dtypes must match exactly."""
        if not isinstance(d, dict):
            raise ValueError(f"state dict must be a dict, got {type(d).__name__}")
        missing = [k for k in self.params if k not in d]
        unexpected = [k for k in d if k not in self.params]
        if missing or unexpected:
            raise ValueError(f"state dict does not match the model: missing {missing}, unexpected {unexpected}")
        for k, p in self.params.items():
            v = d[k]
            if not isinstance(v, np.ndarray) or v.shape != p.shape or v.dtype != p.dtype:
                got = f"{v.dtype}{v.shape}" if isinstance(v, np.ndarray) else type(v).__name__
                raise ValueError(f"state dict entry {k!r} is {got}, the model expects {p.dtype}{p.shape}")
        for k, p in self.params.items():
            np.copyto(p, d[k])

    def with_attention(self, attention: str, params: dict | None = None, **kwargs):
        """A copy of this model that evaluates with another weight map, e.g. ``model.with_attention("topk", k=8)``.

        ``attention`` is a name of :data:`varsim.variants.WEIGHT_MAPS`, ``params``/``kwargs`` its parameters
        (validated by the registry; defaults filled in). Every block uses the new map; the output normalization
        (``attention_output``) is kept. The copy holds copies of this model's parameters; a learned parameter the new
        map does not use (ssmax's ``s``) is dropped, one it needs and this model lacks starts at its initial value
        (``params``). Meant for evaluation: inference-only maps (topk, critical, adaptive_temperature) have no
        backward pass and refuse to train.
        """
        config = dataclasses.replace(self.config, attention=attention, attention_params={**(params or {}), **kwargs})
        return self._copy(config)

    def _copy(self, config: ModelConfig):
        """A model of ``config`` holding copies of this model's parameters of the same names."""
        other = type(self)(config, seed=0, memory_budget=self.memory_budget)
        for k, v in other.params.items():
            if k in self.params:
                np.copyto(v, self.params[k])
        return other

    def _theta_name(self, block: int) -> str | None:
        """Name of block ``block``'s learned weight-map parameter (e.g. ``block0.attn.ssmax_s``), or None."""
        return theta_name(self.config, block)

    # ------------------------------------------------------------------------------------------------------------
    # Memory and chunks

    def _attention_bytes(self, b: int, n: int, training: bool = True) -> int:
        """Bytes of attention matrices a pass over ``b`` examples of ``n`` items holds (the cost module's count)."""
        if not training and not self.eval_holds_attention:
            return 0
        return self.cost.attention_bytes(self.config, b, n)

    def _check_size(self, b: int, n: int, training: bool = True) -> None:
        """Refuse set size ``n`` with batch ``b`` whose attention matrices exceed ``memory_budget``, before anything
        of size ``n`` is allocated."""
        need = self._attention_bytes(b, n, training)
        if need > self.memory_budget:
            c = self.config
            raise ValueError(f"set size N={n} is too long for a {c.n_blocks}-block {c.architecture} model with batch "
                             f"{b}: its attention matrices need {need / 2**30:.2f} GiB, more than memory_budget="
                             f"{self.memory_budget / 2**30:.2f} GiB ({self.memory_note})")

    def _focus(self, batch, focus):
        """The checked ``focus`` of :meth:`predict` (this model has none: ValueError naming ``focus``)."""
        if focus is not None:
            raise ValueError(f"focus: the {self.config.architecture} model cannot point its query at one item")
        return None

    def _chunks(self, batch, focus=None) -> tuple[list, int]:
        """Split a batch into consecutive example ranges of at most the cost module's ``EVAL_CHUNK_TOKENS`` tokens
        (and within the memory budget): ``([(chunk, focus of its examples or None), ...], how many chunks fit in
        the memory budget at once)``."""
        focus = self._focus(batch, focus)
        mask = np.asarray(batch.get("mask")) if isinstance(batch, dict) else None
        if mask is None or mask.ndim != 2:
            self._inputs(batch, training=False)  # raises the precise error
        b, n = mask.shape
        self._check_size(1, n, training=False)
        per = self.cost.eval_chunk(self.config, n, self.cost.EVAL_CHUNK_TOKENS)
        need = self._attention_bytes(1, n, training=False)
        if need:
            per = max(1, min(per, self.memory_budget // need))
        at_once = max(1, self.memory_budget // (per * need)) if need else b
        return [({k: (np.asarray(v)[start:stop] if np.ndim(v) >= 1 else v) for k, v in batch.items()},
                 None if focus is None else focus[start:stop])
                for start, stop in ((s, min(b, s + per)) for s in range(0, b, per))], at_once

    def _map_chunks(self, fn, batch, focus, workers) -> list:
        """``fn(chunk, focus)`` for each chunk of :meth:`_chunks`, in chunk order; with ``workers`` > 1 in that many
        threads (at most as many chunks as the memory budget holds at once). The chunks do not depend on
        ``workers``, and each is computed alone, so the results are the same bits for every ``workers`` (with the
        same BLAS thread count: pair ``workers`` with ``varsim._common.blas.blas_threads(1)``, as
        :func:`varsim.train.evaluate` does)."""
        workers = check_positive_int("workers", workers)
        chunks, at_once = self._chunks(batch, focus)
        workers = min(workers, at_once, len(chunks))
        if workers == 1:
            return [fn(chunk, f) for chunk, f in chunks]
        # This thread and workers - 1 others take the next chunk index from one counter (its next() is atomic) and
        # store each result at its index: no future per chunk, whose bookkeeping holds the GIL that the large
        # gemms, ufuncs and Numba kernels let go. The first failure stops every thread at its next chunk.
        out: list = [None] * len(chunks)
        order, failed = itertools.count(), []

        def work():
            for i in order:
                if i >= len(chunks) or failed:
                    return
                try:
                    out[i] = fn(*chunks[i])
                except BaseException:
                    failed.append(i)
                    raise

        with ThreadPoolExecutor(workers - 1) as pool:
            others = [pool.submit(work) for _ in range(workers - 1)]
            work()
            for other in others:
                other.result()
        return out

    # ------------------------------------------------------------------------------------------------------------
    # Layers both models name the same way: forward and backward pairs reading and writing named parameters

    def _layers(self, prefix: str, depth: int):
        p = self.params
        return [(p[f"{prefix}.{i}.w"], p[f"{prefix}.{i}.b"]) for i in range(depth)]

    def _layernorm_forward(self, prefix: str, x):
        forward = layernorm_fused_forward if self.config.fused else layernorm_forward
        return forward(x, self.params[f"{prefix}.gamma"], self.params[f"{prefix}.beta"])

    def _layernorm_backward(self, prefix: str, dout, cache, grads):
        backward = layernorm_fused_backward if self.config.fused else layernorm_backward
        dx, grads[f"{prefix}.gamma"], grads[f"{prefix}.beta"] = backward(dout, cache)
        return dx

    def _mlp_backward(self, prefix: str, dout, cache, grads, first: int = 0):
        """``mlp_backward`` storing layer j's gradients as ``{prefix}.{first + j}.w``/``.b``."""
        dx, layer_grads = mlp_backward(dout, cache)
        for j, (dw, db) in enumerate(layer_grads, start=first):
            grads[f"{prefix}.{j}.w"], grads[f"{prefix}.{j}.b"] = dw, db
        return dx

    def _attn_out_forward(self, pre: str, heads):
        """Heads (B, R, D) -> ``(a_pre, a_post, a, cache)``: the attention output ``a`` (B, R, D) of block ``pre``,
        its normalization acting on each head's output before W_o (per-head norms: ``a_pre`` the heads) or on the
        attention output after W_o (``a_pre`` = heads W_o + b_o); ``a_post`` the normalized ``a_pre``."""
        c, p = self.config, self.params
        norm = get_norm(c.norm)
        norm_forward = norm.pair(c.fused)[0]
        norm_params = {name: p[f"{pre}.attn_norm.{name}"] for name, _ in norm.params}
        w_o, b_o = p[f"{pre}.attn.w_o"], p[f"{pre}.attn.b_o"]
        if norm.per_head:  # normalize each head's output, then project
            a_pre = heads
            a_post, norm_cache = norm_forward(heads, norm_params, c.n_heads)
            a, o_cache = linear_forward(a_post, w_o, b_o)
        else:  # project, then normalize the attention output
            a_pre, o_cache = linear_forward(heads, w_o, b_o)
            a_post, norm_cache = norm_forward(a_pre, norm_params, c.n_heads)
            a = a_post
        return a_pre, a_post, a, (norm_cache, o_cache)

    def _attn_out_backward(self, pre: str, da, cache, grads):
        """-> dheads (B, R, D), storing the gradients of W_o, b_o and the normalization's parameters."""
        norm_cache, o_cache = cache
        norm = get_norm(self.config.norm)
        norm_backward = norm.pair(self.config.fused)[1]
        if norm.per_head:
            dnormed, grads[f"{pre}.attn.w_o"], grads[f"{pre}.attn.b_o"] = linear_backward(da, o_cache)
            dheads, norm_grads = norm_backward(dnormed, norm_cache)
        else:
            da_pre, norm_grads = norm_backward(da, norm_cache)
            dheads, grads[f"{pre}.attn.w_o"], grads[f"{pre}.attn.b_o"] = linear_backward(da_pre, o_cache)
        for name, g in norm_grads.items():
            grads[f"{pre}.attn_norm.{name}"] = g
        return dheads

    # ------------------------------------------------------------------------------------------------------------
    # Training path

    def forward(self, batch):
        """-> ``(logits (B, n_outputs), cache)``; refuses set sizes whose attention would exceed the memory budget."""
        logits, cache = self._forward(batch)
        return logits, (logits.shape, cache)

    def _backward(self, dlogits, cache) -> dict[str, np.ndarray]:
        """``_forward`` in reverse: the head, the blocks from last to first, the embedding; gradients {name: array}
        (``cache``: the embedding's, the blocks' and the head's caches)."""
        embed_cache, block_caches, head_cache = cache
        grads: dict[str, np.ndarray] = {}
        dx, from_head = self._head_backward(dlogits, head_cache, grads)  # the last block's query row
        for i in range(self.config.n_blocks - 1, -1, -1):
            dx = self._block_backward(i, dx, block_caches[i], grads)  # (B, T, D)
        self._embed_backward(dx, embed_cache, grads, from_head)
        return grads

    def backward(self, dlogits, cache) -> dict[str, np.ndarray]:
        """Gradients of sum(logits * dlogits) with respect to every parameter: same names, order, shapes, dtype."""
        c = self.config
        if not c.attention_spec.trainable:
            raise ValueError(f"attention {c.attention!r} is inference-only and cannot be trained (no backward pass); "
                             f"train with one of {', '.join(TRAINABLE_MAPS)} and apply it with "
                             f"{type(self).__name__}.with_attention")
        shape, cache = cache
        dlogits = np.asarray(dlogits)
        if dlogits.shape != shape:
            raise ValueError(f"dlogits must have shape {shape}, got {dlogits.shape}")
        grads = self._backward(dlogits.astype(self.dtype, copy=False), cache)
        return {k: grads[k] for k in self.params}

    def loss_and_grads(self, batch, *, shards: int = 1, pool=None) -> tuple[float, float, dict[str, np.ndarray]]:
        """-> (mean cross-entropy, accuracy, gradients of the mean cross-entropy). ``shards`` > 1: the batch cut into
        that many shards, each shard's pass run on ``pool`` (a ``concurrent.futures.Executor``; None: in turn), the
        gradients summed in shard order: the same bits for any pool (:mod:`varsim.nn.shards`); ``shards=1`` is the
        unsplit pass."""
        if check_positive_int("shards", shards) > 1:
            return sharded_loss_and_grads(self, batch, shards, pool)
        target = self._target(batch)
        logits, cache = self.forward(batch)
        loss, ce_cache = softmax_cross_entropy_forward(logits, target)
        accuracy = float(np.mean(np.argmax(logits, axis=1) == target))
        grads = self.backward(softmax_cross_entropy_backward(1.0, ce_cache), cache)
        return loss, accuracy, grads

    def _target(self, batch) -> np.ndarray:
        if not isinstance(batch, dict) or "target" not in batch:
            raise ValueError("batch must be a dict with a 'target' entry")
        target = np.asarray(batch["target"])
        c = self.config
        if target.ndim != 1 or not np.issubdtype(target.dtype, np.integer):
            raise ValueError(f"batch['target'] must be an integer (B,) array, got {target.dtype}{target.shape}")
        if target.size and (target.min() < 0 or target.max() >= c.n_outputs):
            raise ValueError(f"batch['target'] has classes outside [0, {c.n_outputs})")
        return target

    # ------------------------------------------------------------------------------------------------------------
    # Evaluation paths (chunked, no cache kept)

    def predict(self, batch, focus=None, *, workers: int = 1) -> np.ndarray:
        """Predicted class (B,) int64; memory bounded by the chunk size, not by the batch size. ``workers``: threads
        evaluating the chunks at once (the same result for any number; see :meth:`_map_chunks`).

        ``focus`` (the set transformer only): None, or (B,) item indices: the query token then attends only to that
        item of each example, in every block (weight exactly 1 whatever the weight map; the items' own rows are
        unchanged). With the task's correct item (:meth:`varsim.tasks.Task.correct_item`) this is the ``oracle``
        control of :data:`varsim.variants.CONTROLS` (``with_attention("oracle")`` gives a copy that does it by
        itself)."""
        out = self._map_chunks(lambda chunk, f: np.argmax(self._forward(chunk, inference=True, focus=f)[0], axis=1),
                               batch, focus, workers)
        return np.concatenate(out).astype(np.int64, copy=False)

    def logits_and_weights(self, batch, focus=None, *, workers: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """``(logits (B, n_outputs), weights (B, H, N))``: the class scores and the last block's query-row attention
        weights over the items in item order (an item of several tokens gets the sum of its tokens' weights; 0 at
        padding), from the forward pass :meth:`predict` runs (``focus`` and ``workers`` as there). What the ranking
        decomposition (:mod:`varsim.train.ranking`) reads, without :meth:`analysis`'s records."""

        def one(chunk, f):
            z, cache = self._forward(chunk, inference=True, focus=f)
            return z, self._query_weights(chunk, cache)

        logits, weights = zip(*self._map_chunks(one, batch, focus, workers))
        return np.concatenate(logits, axis=0), np.concatenate(weights, axis=0)

    def analysis(self, batch, focus=None) -> dict[str, np.ndarray]:
        """What the query token sees, per block b (arrays over the whole batch; ``focus`` as in :meth:`predict`):
        ``block{b}.attn_pre_norm`` (B, D) the vector the attention-output normalization acts on (the attention output
        after W_o, or the concatenated head outputs before W_o for the per-head norms) and ``attn_post_norm`` the same
        after it; ``attn_weights`` the query row's weights over the items (B, H, N) (the decoder: over the item tokens
        in sequence order, (B, H, N k)), 0 at padding; ``next_input`` (B, D) the query token's state after the block;
        for the attention probe (:mod:`varsim.train.attention_probe`): ``key_weights`` the weights over the keys the
        query sees (the decoder: (B, H, T), every token, itself included), ``query_heads`` (B, D) the head outputs
        before W_o and any norm, ``attn_out`` (B, D) the attention output added to the residual stream,
        ``value_mean`` and ``value_var`` (B, D) the value vectors' moments over the keys the query sees; and
        ``logits`` (B, n_outputs).
        """
        parts: dict[str, list] = {}
        for chunk, f in self._chunks(batch, focus)[0]:
            record: dict[str, np.ndarray] = {}
            logits, _ = self._forward(chunk, record=record, inference=True, focus=f)
            record["logits"] = logits
            for k, v in record.items():
                parts.setdefault(k, []).append(v)
        return {k: np.concatenate(v, axis=0) for k, v in parts.items()}
