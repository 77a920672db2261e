"""The set transformer: a query token over a set of items, hand-written backprop, for any task of varsim.tasks.

Notation: B batch, N set size, T = N + 1 tokens (token 0 is the query token, tokens 1..N the items), D = d_model,
H heads, Dh = D / H, F = d_hidden, C = n_outputs (the task's output classes).

Architecture (``ModelConfig`` chooses the variants; PAPER.md, "The tasks as varsim defines them"; the
``"set_transformer"`` entry of :mod:`varsim.nn.architectures`, its cost in :mod:`varsim.nn.set_cost`):

1. Token embedding. Every item is embedded by a per-item MLP (depth ``item_mlp_depth``, ReLU or GELU between its
   Linear layers) from its input features, which the task writes (:meth:`varsim.tasks.Task.write_features`; e.g.
   argmax ``[priority, onehot(class)]``, dictionary ``[key code, onehot(value), 0]``). The query token is a learned
   vector when the task says its query carries nothing (``learned_query``, argmax), else the *same* MLP applied to
   the task's query features (dictionary: ``[key code of the query, 0, 1]``). Keys are encoded by the config's key
   encoding (:mod:`varsim.tasks.keys`): features (``"binary"``: the bits of the key id as +-1), and/or a learned
   table (``"embedding"``: a trained row per key id added to the first layer's pre-activation, the same as a one-hot
   block of input features).
2. ``n_blocks`` blocks, each:
     h = LN1(x) if pre_ln else x
     a = attention(h)                       multi-head attention, no positional encoding; the weight map is
                                            ``attention`` (softmax by default; varsim.nn.weightmaps), optionally
                                            with ipr_norm on each head's output (``attention_output``)
     a = W_o norm_ph(heads) | norm(W_o heads)   per-head norms act on each head's output before W_o,
                                                global ones on the attention output after W_o
     r = x + a if residual else a           residual=False: the (normalized) attention output feeds the MLP directly
     x = r + MLP(LN2(r) if pre_ln else r)   MLP D -> F -> D
   Who attends to whom: the query token attends over the real items only (never itself); in the blocks before the
   last, every item attends over the real items and the query token. Padded items are never attended to.
3. The class is read from the query token: final LayerNorm (pre_ln only), then the predictor MLP (depth
   ``predictor_depth``; its last Linear layer is the classifier).

The last block computes only the query token's row (the items' final states are never read), so a one-block model
costs O(N) per example. Blocks before the last are full self-attention, O(N^2) memory per example; set sizes whose
attention matrices would exceed ``memory_budget`` bytes are refused with a ValueError naming the set size.
``predict`` and ``analysis`` run the batch in chunks of examples, so evaluating a one-block model at N = 16384 needs
a few hundred MB whatever the batch size.
"""

from __future__ import annotations

import dataclasses
import hashlib

import numpy as np

from varsim._common.seeding import SEED_DEFAULT, child_generator, resolve_seed
from varsim._common.validate import check_positive_int
from varsim.tasks import KEY_ENCODINGS, TASKS, get_key_encoding

from . import set_cost
from .architectures import Architecture, register_architecture
from .attention import (
    attention_weights,
    query_attention_backward,
    query_attention_forward,
    self_attention_backward,
    self_attention_forward,
    self_attention_rows,
)
from .config import DTYPES, ModelConfig
from .layers import (
    activation_backward,
    activation_forward,
    embedding_backward,
    embedding_forward,
    linear_backward,
    linear_forward,
    mlp_backward,
    mlp_forward,
    softmax_cross_entropy_backward,
    softmax_cross_entropy_forward,
)
from .norms import get_norm, layernorm_backward, layernorm_forward
from .set_params import parameter_shapes, parameter_table, theta_name
from .weightmaps import TRAINABLE_MAPS

__all__ = [
    "ModelConfig", "Transformer", "parameter_shapes", "TASKS", "KEY_ENCODINGS", "DTYPES", "DEFAULT_MEMORY_BUDGET",
]

DEFAULT_MEMORY_BUDGET = 2 * 1024**3  # bytes of attention matrices a forward/backward pass may hold
#: tokens per chunk in predict/analysis (:data:`varsim.nn.set_cost.EVAL_CHUNK_TOKENS`)
EVAL_CHUNK_TOKENS = set_cost.EVAL_CHUNK_TOKENS


def _gather_rows(a: np.ndarray, sel: np.ndarray) -> np.ndarray:
    """(B, T, K) -> (M, K): the rows at flat indices ``sel``."""
    return a.reshape(-1, a.shape[-1])[sel]


def _scatter_rows(rows: np.ndarray, sel: np.ndarray, b: int, t: int) -> np.ndarray:
    """(M, K) -> (B, T, K): ``rows`` at flat indices ``sel``, zeros elsewhere."""
    out = np.zeros((b * t, rows.shape[-1]), dtype=rows.dtype)
    out[sel] = rows
    return out.reshape(b, t, rows.shape[-1])


def _check_focus(focus, batch):
    """``focus`` as a (B,) int64 array of item indices of ``batch``, or None; ValueError naming ``focus``."""
    if focus is None:
        return None
    mask = np.asarray(batch["mask"]) if isinstance(batch, dict) and "mask" in batch else None
    f = np.asarray(focus)
    if mask is None or mask.ndim != 2:
        raise ValueError("focus needs a batch with a (B, N) 'mask'")
    if f.shape != mask.shape[:1] or not np.issubdtype(f.dtype, np.integer):
        raise ValueError(f"focus must be an integer array of shape {mask.shape[:1]}, got {f.dtype}{f.shape}")
    if f.size and (f.min() < 0 or f.max() >= mask.shape[1] or not np.all(mask[np.arange(f.size), f])):
        raise ValueError("focus must name a real (unmasked) item of each example")
    return f.astype(np.int64, copy=False)


def _focus_mask(focus: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """(B, T) key mask of the query token that lets it see only item ``focus`` of each example."""
    b, n = mask.shape
    out = np.zeros((b, n + 1), dtype=bool)
    out[np.arange(b), 1 + focus] = True
    return out


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


class Transformer:
    """The model of the module docstring, with parameters in ``params`` (an ordered ``{name: array}`` dict).

    ``seed`` or ``rng`` (SPEC 7) draws the initial parameters, each from a child stream keyed by its name: weights
    N(0, 1/fan_in), biases 0, LayerNorm gains 1, the learned query vector (a task with ``learned_query``) N(0, 1).
    ``memory_budget`` (bytes) bounds the T x T attention matrices of the blocks before the last.

    ``forward``/``backward`` are the training path (the cache holds the activations); ``predict`` and ``analysis``
    are memory-lean evaluation paths that run the batch in chunks.
    """

    def __init__(self, config: ModelConfig, seed=SEED_DEFAULT, *, rng=None,
                 memory_budget: int = DEFAULT_MEMORY_BUDGET):
        if not isinstance(config, ModelConfig):
            raise ValueError(f"config must be a ModelConfig, got {type(config).__name__}")
        self.config = config
        self.memory_budget = check_positive_int("memory_budget", memory_budget)
        self.dtype = np.dtype(config.dtype)
        self.params: dict[str, np.ndarray] = {}
        self.control: str | None = None  # a control of varsim.variants.CONTROLS applied at inference (with_attention)
        self._init_params(resolve_seed(seed, rng))

    # ------------------------------------------------------------------------------------------------------------
    # Parameters

    def _shapes(self):
        """(name, shape, init) of every parameter in the stable order (:func:`varsim.nn.set_params.parameter_table`)."""
        return parameter_table(self.config)

    def _init_params(self, seq: np.random.SeedSequence) -> None:
        for name, shape, init in self._shapes():
            if isinstance(init, tuple):  # ("fill", value)
                value = np.full(shape, init[1], dtype=self.dtype)
            elif init == "zeros":
                value = np.zeros(shape, dtype=self.dtype)
            elif init == "ones":
                value = np.ones(shape, dtype=self.dtype)
            else:
                # keyed by the parameter's name, not its position: models that differ only in their normalization
                # (which adds LayerNorm gains) start from identical shared weights, so comparisons are paired
                value = (child_generator(seq, _name_key(name)).standard_normal(shape) * init).astype(self.dtype)
            self.params[name] = value

    def _theta_name(self, block: int) -> str | None:
        """Name of block ``block``'s learned weight-map parameter (e.g. ``block0.attn.ssmax_s``), or None."""
        return theta_name(self.config, block)

    def with_attention(self, attention: str, params: dict | None = None, **kwargs) -> "Transformer":
        """A copy of this model that evaluates with another weight map, e.g. ``model.with_attention("topk", k=8)``.

        ``attention`` is a name of :data:`varsim.variants.WEIGHT_MAPS`, ``params``/``kwargs`` its parameters
        (validated by the registry; defaults filled in). Every block uses the new map; the output normalization
        (``attention_output``) is kept. The copy holds copies of this model's parameters; a learned parameter the new
        map does not use (ssmax's ``s``) is dropped, one it needs and this model lacks starts at its initial value
        (``params``). Meant for evaluation: inference-only maps (topk, critical, adaptive_temperature) have no
        backward pass and refuse to train.

        ``attention`` may also name a control of :data:`varsim.variants.CONTROLS`: one with a weight map is that map;
        ``"oracle"`` (no weight map, no parameters) keeps this model's map and makes :meth:`predict` and
        :meth:`analysis` point the query token at each example's correct item (the task's
        :meth:`~varsim.tasks.Task.correct_item`; ``focus`` below). The copy's ``control`` names the control.
        """
        from varsim.variants import CONTROLS

        control = CONTROLS.get(attention) if isinstance(attention, str) else None
        if control is not None and control.weight_map is None:
            if params or kwargs:
                raise ValueError(f"attention_params: the control {attention!r} takes no parameters")
            config = self.config
        else:
            name = attention if control is None else control.weight_map
            config = dataclasses.replace(self.config, attention=name, attention_params={**(params or {}), **kwargs})
        other = Transformer(config, seed=0, memory_budget=self.memory_budget)
        for k, v in other.params.items():
            if k in self.params:
                np.copyto(v, self.params[k])
        other.control = None if control is None else control.name
        return other

    def _focus(self, batch, focus):
        """The checked ``focus`` of :meth:`predict`, or the correct items when this model is the oracle control."""
        if focus is None and self.control is not None:
            from varsim.variants import get_control

            if get_control(self.control).needs_correct_item:
                self.config.task_spec.check_batch(batch, self.config.vocab)
                focus = self.config.task_spec.correct_item(batch)
        return _check_focus(focus, batch)

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

    # ------------------------------------------------------------------------------------------------------------
    # Inputs

    def _inputs(self, batch):
        """Validate a batch against the task's schema and build (features (B, T, n_in): row 0 the query token, rows
        1..N the items; key ids (B, T) for a learned key table, else None; item mask (B, N))."""
        c = self.config
        task = c.task_spec
        arrays = task.check_batch(batch, c.vocab)
        mask = arrays["mask"]
        b, n = mask.shape
        self._check_memory(b, n)  # before allocating anything of size N
        feats = np.zeros((b, n + 1, c.n_features), dtype=self.dtype)
        task.write_features(arrays, c.vocab, c.key_encoding, feats[:, 1:], feats[:, 0])
        keys = task.key_ids(arrays)
        if keys is None or not get_key_encoding(c.key_encoding).learned_table:
            return feats, None, mask
        keys_all = np.empty((b, n + 1), dtype=np.int64)  # (B, T): the query key, then the item keys
        keys_all[:, 0] = keys[1]
        keys_all[:, 1:] = keys[0]
        return feats, keys_all, mask

    def _attention_bytes(self, b: int, n: int) -> int:
        """Bytes of the T x T attention matrices a forward + backward pass holds (0 for a one-block model)."""
        return set_cost.attention_bytes(self.config, b, n)

    def _check_memory(self, b: int, n: int) -> None:
        need = self._attention_bytes(b, n)
        if need > self.memory_budget:
            c = self.config
            raise ValueError(
                f"set size N={n} is too long for a {c.n_blocks}-block model with batch {b}: its "
                f"{c.n_blocks - 1} full attention block(s) need {need / 2**30:.2f} GiB of attention matrices, "
                f"more than memory_budget={self.memory_budget / 2**30:.2f} GiB "
                "(a one-block model is O(N) and has no such limit)"
            )

    # ------------------------------------------------------------------------------------------------------------
    # Forward / backward

    def _layers(self, prefix: str, depth: int):
        p = self.params
        return [(p[f"{prefix}.{i}.w"], p[f"{prefix}.{i}.b"]) for i in range(depth)]

    def _embed_forward(self, feats, keys_all, sel=None):
        """-> (B, T, D); ``sel``: flat indices of the real tokens (None: all), the only rows the MLP computes."""
        c, p = self.config, self.params
        b, t = feats.shape[:2]
        if sel is not None:  # padded items: rows of zeros, never attended to
            feats = _gather_rows(feats, sel)  # (M, n_in)
            keys_all = None if keys_all is None else keys_all.reshape(-1)[sel]
        h, lin_cache = linear_forward(feats, p["embed.0.w"], p["embed.0.b"])  # (B, T, F) or (B, T, D)
        emb_cache = None
        if keys_all is not None:  # learned key rows: a one-hot key block of the first layer's input
            e, emb_cache = embedding_forward(keys_all, p["embed.key_table"])  # (B, T, F)
            h += e
        act_cache = rest_cache = None
        if c.item_mlp_depth > 1:
            h, act_cache = activation_forward(h, c.activation)
            layers = [(p[f"embed.{i}.w"], p[f"embed.{i}.b"]) for i in range(1, c.item_mlp_depth)]
            h, rest_cache = mlp_forward(h, layers, c.activation)  # (B, T, D)
        if sel is not None:
            h = _scatter_rows(h, sel, b, t)
        if c.task_spec.learned_query:
            h[:, 0] = p["query"]  # the learned query token replaces the MLP's output on the (all-zero) row 0
        return h, (lin_cache, emb_cache, act_cache, rest_cache, sel)

    def _embed_backward(self, dx, cache, grads):
        c = self.config
        lin_cache, emb_cache, act_cache, rest_cache, sel = cache
        if c.task_spec.learned_query:
            grads["query"] = dx[:, 0].sum(axis=0)
            dx = dx.copy()
            dx[:, 0] = 0.0
        if sel is not None:
            dx = _gather_rows(dx, sel)  # (M, D)
        dh = dx
        if c.item_mlp_depth > 1:
            dh, rest_grads = mlp_backward(dx, rest_cache)
            for i, (dw, db) in enumerate(rest_grads, start=1):
                grads[f"embed.{i}.w"], grads[f"embed.{i}.b"] = dw, db
            dh = activation_backward(dh, act_cache, c.activation)
        if emb_cache is not None:
            grads["embed.key_table"] = embedding_backward(dh, emb_cache)
        feats, w, _ = lin_cache
        d2 = dh.reshape(-1, w.shape[1])
        grads["embed.0.w"] = feats.reshape(-1, w.shape[0]).T @ d2
        grads["embed.0.b"] = d2.sum(axis=0)

    def _norm_params(self, prefix: str) -> dict:
        return {name: self.params[f"{prefix}.{name}"] for name, _ in get_norm(self.config.norm).params}

    def _block_forward(self, i, x, key_mask, last, record=None, inference=False, sel=None):
        """``x`` (B, T, D) -> (B, T, D); the last block returns only the query token's row, (B, D).
        ``inference``: full blocks run ``self_attention_rows`` (faster, no cache for a backward pass). ``sel``: flat
        indices of a full block's real tokens (None: all), the only rows its MLP computes."""
        c, p = self.config, self.params
        pre = f"block{i}"
        ln1 = None
        h = x
        if c.pre_ln:
            h, ln1 = layernorm_forward(x, p[f"{pre}.ln1.gamma"], p[f"{pre}.ln1.beta"])  # (B, T, D)
        w_qkv, b_qkv = p[f"{pre}.attn.w_qkv"], p[f"{pre}.attn.b_qkv"]
        spec, theta_name = c.attention_spec, self._theta_name(i)
        theta = None if theta_name is None else p[theta_name]
        if last:  # query-row shortcut: (B, D)
            heads, att = query_attention_forward(h[:, 0], h, w_qkv, b_qkv, c.n_heads, key_mask, spec, theta)
            x_res = x[:, 0]
        elif inference:  # (B, T, D); att holds query row 0's weights (B, H, 1, T) only
            heads, att = self_attention_rows(h, w_qkv, b_qkv, c.n_heads, key_mask, spec, theta)
            x_res = x
        else:  # (B, T, D)
            heads, att = self_attention_forward(h, w_qkv, b_qkv, c.n_heads, key_mask, spec, theta)
            x_res = x
        w_o, b_o = p[f"{pre}.attn.w_o"], p[f"{pre}.attn.b_o"]
        norm = get_norm(c.norm)
        norm_params = self._norm_params(f"{pre}.attn_norm")
        if norm.per_head:  # normalize each head's output, then project
            a_pre = heads
            a_post, norm_cache = norm.forward(heads, norm_params, c.n_heads)
            a, o_cache = linear_forward(a_post, w_o, b_o)
        else:  # project, then normalize the attention output
            a_pre, o_cache = linear_forward(heads, w_o, b_o)
            a_post, norm_cache = norm.forward(a_pre, norm_params, c.n_heads)
            a = a_post
        r = x_res + a if c.residual else a
        h2, ln2 = r, None
        if c.pre_ln:
            h2, ln2 = layernorm_forward(r, p[f"{pre}.ln2.gamma"], p[f"{pre}.ln2.beta"])
        if sel is None:
            m, mlp_cache = mlp_forward(h2, self._layers(f"{pre}.mlp", 2), c.activation)
        else:  # padded items' rows stay 0: nothing reads them (masked as keys; the last block reads row 0 only)
            m, mlp_cache = mlp_forward(_gather_rows(h2, sel), self._layers(f"{pre}.mlp", 2), c.activation)
            m = _scatter_rows(m, sel, *h2.shape[:2])
        out = r + m
        if record is not None:
            q = (lambda z: z) if last else (lambda z: z[:, 0])
            w = att if inference and not last else attention_weights(att)  # (B, H, Tq, T)
            record[f"{pre}.attn_pre_norm"] = q(a_pre).copy()
            record[f"{pre}.attn_post_norm"] = q(a_post).copy()
            record[f"{pre}.attn_weights"] = w[:, :, 0, 1:].copy()  # the query row, over the items (B, H, N)
            record[f"{pre}.next_input"] = q(out).copy()
            keys = key_mask if last else key_mask[:, 0]  # (B, T): the keys the query row sees
            record[f"{pre}.key_weights"] = record[f"{pre}.attn_weights"]
            record[f"{pre}.query_heads"] = q(heads).copy()
            record[f"{pre}.attn_out"] = q(a).copy()
            record[f"{pre}.value_mean"], record[f"{pre}.value_var"] = value_moments(h, w_qkv, b_qkv, keys)
        return out, (ln1, att, norm_cache, o_cache, ln2, mlp_cache, last, sel)

    def _block_backward(self, i, dout, cache, grads):
        """-> dx (B, T, D), filling the block's parameter gradients into ``grads``."""
        c = self.config
        pre = f"block{i}"
        ln1, att, norm_cache, o_cache, ln2, mlp_cache, last, sel = cache
        if sel is None:
            dh2, mlp_grads = mlp_backward(dout, mlp_cache)
        else:
            dh2, mlp_grads = mlp_backward(_gather_rows(dout, sel), mlp_cache)
            dh2 = _scatter_rows(dh2, sel, *dout.shape[:2])
        for j, (dw, db) in enumerate(mlp_grads):
            grads[f"{pre}.mlp.{j}.w"], grads[f"{pre}.mlp.{j}.b"] = dw, db
        if c.pre_ln:
            dh2, grads[f"{pre}.ln2.gamma"], grads[f"{pre}.ln2.beta"] = layernorm_backward(dh2, ln2)
        dr = dout + dh2  # (B, T, D) or (B, D)
        norm = get_norm(c.norm)
        if norm.per_head:
            dnormed, grads[f"{pre}.attn.w_o"], grads[f"{pre}.attn.b_o"] = linear_backward(dr, o_cache)
            dheads, norm_grads = norm.backward(dnormed, norm_cache)
        else:
            da_pre, norm_grads = norm.backward(dr, norm_cache)
            dheads, grads[f"{pre}.attn.w_o"], grads[f"{pre}.attn.b_o"] = linear_backward(da_pre, o_cache)
        for name, g in norm_grads.items():
            grads[f"{pre}.attn_norm.{name}"] = g
        if last:
            dhq, dh, dw_qkv, db_qkv, *dtheta = query_attention_backward(dheads, att)  # dh (B, T, D)
            dh[:, 0] += dhq
        else:
            dh, dw_qkv, db_qkv, *dtheta = self_attention_backward(dheads, att)
        grads[f"{pre}.attn.w_qkv"], grads[f"{pre}.attn.b_qkv"] = dw_qkv, db_qkv
        if dtheta:  # the weight map's learned per-head parameter
            grads[self._theta_name(i)] = dtheta[0]
        if c.pre_ln:
            dh, grads[f"{pre}.ln1.gamma"], grads[f"{pre}.ln1.beta"] = layernorm_backward(dh, ln1)
        if c.residual:
            if last:
                dh[:, 0] += dr
            else:
                dh += dr
        return dh

    def _forward(self, batch, record=None, inference=False, focus=None):
        c, p = self.config, self.params
        feats, keys_all, mask = self._inputs(batch)  # refuses set sizes beyond the memory budget
        b, n = mask.shape
        t = n + 1
        # the query token (row 0) sees the real items only
        row_mask = np.empty((b, t), dtype=bool)  # (B, T)
        row_mask[:, 0] = False
        row_mask[:, 1:] = mask
        query_mask = row_mask if focus is None else _focus_mask(focus, mask)
        sel = None  # flat indices of the real tokens (the query and the real items) when some items are padding
        if not mask.all():
            tokens = row_mask.copy()
            tokens[:, 0] = True
            sel = np.flatnonzero(tokens)
        x, embed_cache = self._embed_forward(feats, keys_all, sel)  # (B, T, D)
        block_caches = []
        if c.n_blocks > 1:
            # full blocks: items see the real items and the query token; the query row as above
            full_mask = np.broadcast_to(row_mask[:, None, :], (b, t, t)).copy()  # (B, T, T)
            full_mask[:, 1:, 0] = True
            full_mask[:, 0] = query_mask
            for i in range(c.n_blocks - 1):
                x, cache = self._block_forward(i, x, full_mask, last=False, record=record, inference=inference,
                                               sel=sel)
                block_caches.append(cache)
        q, cache = self._block_forward(c.n_blocks - 1, x, query_mask, last=True, record=record)  # (B, D)
        block_caches.append(cache)
        z, fln = q, None
        if c.pre_ln:
            z, fln = layernorm_forward(q, p["final_ln.gamma"], p["final_ln.beta"])
        logits, head_cache = mlp_forward(z, self._layers("head", c.predictor_depth), c.activation)  # (B, C)
        return logits, (embed_cache, block_caches, fln, head_cache, x.shape)

    def forward(self, batch):
        """-> ``(logits (B, n_outputs), cache)``; refuses set sizes whose attention would exceed the memory budget."""
        return self._forward(batch)

    def backward(self, dlogits, cache) -> dict[str, np.ndarray]:
        """Gradients of sum(logits * dlogits) with respect to every parameter: same names, order, shapes, dtype."""
        c = self.config
        embed_cache, block_caches, fln, head_cache, x_shape = cache
        if not c.attention_spec.trainable:
            raise ValueError(f"attention {c.attention!r} is inference-only and cannot be trained (no backward pass); "
                             f"train with one of {', '.join(TRAINABLE_MAPS)} and apply it with "
                             "Transformer.with_attention")
        dlogits = np.asarray(dlogits)
        if dlogits.shape != (x_shape[0], c.n_outputs):
            raise ValueError(f"dlogits must have shape {(x_shape[0], c.n_outputs)}, got {dlogits.shape}")
        dlogits = dlogits.astype(self.dtype, copy=False)
        grads: dict[str, np.ndarray] = {}
        dz, head_grads = mlp_backward(dlogits, head_cache)
        for j, (dw, db) in enumerate(head_grads):
            grads[f"head.{j}.w"], grads[f"head.{j}.b"] = dw, db
        if c.pre_ln:
            dz, grads["final_ln.gamma"], grads["final_ln.beta"] = layernorm_backward(dz, fln)
        dx = self._block_backward(c.n_blocks - 1, dz, block_caches[-1], grads)  # (B, T, D)
        for i in range(c.n_blocks - 2, -1, -1):
            dx = self._block_backward(i, dx, block_caches[i], grads)
        self._embed_backward(dx, embed_cache, grads)
        return {k: grads[k] for k in self.params}

    def loss_and_grads(self, batch) -> tuple[float, float, dict[str, np.ndarray]]:
        """-> (mean cross-entropy, accuracy, gradients of the mean cross-entropy)."""
        target = self._target(batch)
        logits, cache = self._forward(batch)
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

    def _chunks(self, batch, focus=None):
        """Split a batch into consecutive example ranges of at most EVAL_CHUNK_TOKENS tokens (and within budget):
        ``(chunk, focus of its examples or None)``."""
        mask = np.asarray(batch.get("mask")) if isinstance(batch, dict) else None
        if mask is None or mask.ndim != 2:
            self._inputs(batch)  # raises the precise error
        b, n = mask.shape
        per = set_cost.eval_chunk(self.config, n, EVAL_CHUNK_TOKENS)
        if self.config.n_blocks > 1:
            self._check_memory(1, n)
            per = max(1, min(per, self.memory_budget // max(self._attention_bytes(1, n), 1)))
        for start in range(0, b, per):
            stop = min(b, start + per)
            yield ({k: (np.asarray(v)[start:stop] if np.ndim(v) >= 1 else v) for k, v in batch.items()},
                   None if focus is None else focus[start:stop])

    def predict(self, batch, focus=None) -> np.ndarray:
        """Predicted class (B,) int64; memory bounded by the chunk size, not by the batch size.

        ``focus``: None, or (B,) item indices: the query token then attends only to that item of each example, in
        every block (weight exactly 1 whatever the weight map; the items' own rows are unchanged). With the task's
        correct item (:meth:`varsim.tasks.Task.correct_item`) this is the ``oracle`` control of
        :data:`varsim.variants.CONTROLS` (``with_attention("oracle")`` gives a copy that does it by itself)."""
        focus = self._focus(batch, focus)
        out = [np.argmax(self._forward(chunk, inference=True, focus=f)[0], axis=1)
               for chunk, f in self._chunks(batch, focus)]
        return np.concatenate(out).astype(np.int64, copy=False)

    def logits_and_weights(self, batch, focus=None) -> tuple[np.ndarray, np.ndarray]:
        """``(logits (B, n_outputs), weights (B, H, N))``: the class scores and the last block's query-row attention
        weights over the items (0 at padding), from the forward pass :meth:`predict` runs (``focus`` as there).
        What the ranking decomposition (:mod:`varsim.train.ranking`) reads, without :meth:`analysis`'s records."""
        focus = self._focus(batch, focus)
        logits, weights = [], []
        for chunk, f in self._chunks(batch, focus):
            z, (_, block_caches, *_) = self._forward(chunk, inference=True, focus=f)
            logits.append(z)
            weights.append(attention_weights(block_caches[-1][1])[:, :, 0, 1:])
        return np.concatenate(logits, axis=0), np.concatenate(weights, axis=0)

    def analysis(self, batch, focus=None) -> dict[str, np.ndarray]:
        """What the query token sees, per block b (arrays over the whole batch; ``focus`` as in :meth:`predict`):

        - ``block{b}.attn_pre_norm`` (B, D): the vector the attention-output normalization acts on (the attention output
          after W_o for norm none/layernorm/standardize; the concatenated head outputs, before W_o, for the per-head
          norms);
        - ``block{b}.attn_post_norm`` (B, D): the same after the normalization (equal to pre_norm for norm="none");
        - ``block{b}.attn_weights`` (B, H, N): the query row's attention weights over the items (0 at padding);
        - ``block{b}.next_input`` (B, D): the query token's state after the block;
        - for the attention probe (:mod:`varsim.train.attention_probe`): ``block{b}.key_weights`` (B, H, N) (as
          ``attn_weights``: the keys the query sees), ``block{b}.query_heads`` (B, D) the head outputs before W_o
          and any norm, ``block{b}.attn_out`` (B, D) the attention output added to the residual stream,
          ``block{b}.value_mean`` and ``block{b}.value_var`` (B, D) the mean and variance of the value vectors over
          the keys the query sees;
        plus ``logits`` (B, n_outputs).
        """
        parts: dict[str, list] = {}
        focus = self._focus(batch, focus)
        for chunk, f in self._chunks(batch, focus):
            record: dict[str, np.ndarray] = {}
            logits, _ = self._forward(chunk, record=record, inference=True, focus=f)
            record["logits"] = logits
            for k, v in record.items():
                parts.setdefault(k, []).append(v)
        return {k: np.concatenate(v, axis=0) for k, v in parts.items()}


register_architecture(Architecture(
    "set_transformer",
    "the set transformer with a query token (this module): one or more blocks, no positions",
    Transformer,
    set_cost,
    set_cost.sizes,
))
