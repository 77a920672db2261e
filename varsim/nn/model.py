"""The set transformer: a query token over a set of items, hand-written backprop, for any task of varsim.tasks.

Notation: B batch, N set size, T = N + 1 tokens (token 0 is the query token, tokens 1..N the items), D = d_model,
H heads, F = d_hidden, C = n_outputs (the task's output classes), n_in the task's input features, L = n_blocks; a
block computes R = T rows, the last block the query row only (its arrays (B, D)).

Layer by layer (shapes of the training pass; ``ModelConfig`` chooses the variants; PAPER.md, "The tasks as varsim
defines them"; the ``"set_transformer"`` entry of :mod:`varsim.nn.architectures`, its parameters in
:mod:`varsim.nn.set_params`, its cost in :mod:`varsim.nn.set_cost`; what both models share in
:mod:`varsim.nn.base`)::

    feats (B, T, n_in)              the task's features (write_features): row 0 the query, rows 1..N the items
    x = itemMLP(feats)              (B, T, D)    embed.i, depth item_mlp_depth (n_in -> F -> ... -> D)
      + key_table[key ids]                       a learned key table (key encoding "embedding"): added to the first
                                                 layer's pre-activation (B, T, F), as a one-hot block of features
      x[:, 0] = query                            a task whose query carries nothing: a learned query vector (D,)
    for l < L:                                   block l
      h = LN1(x)             pre_ln only         (B, T, D)
      heads = attention(h)                       (B, R, D) multi-head, no positions; the weight map of the registry
                                                 (varsim.nn.weightmaps; ipr_norm on top with attention_output)
      a = heads Wo + bo  [attention-output norm of varsim.nn.norms, per head before Wo or global after]
      r = x + a              residual=True       (B, R, D); residual=False: r = a
      y = r + MLP(LN2(r) if pre_ln else r)       MLP: D -> F (activation) -> D
    zq = LNf(y[:, 0])          pre_ln only       (B, D)
    logits = predictorMLP(zq)                    (B, C)  head.i, depth predictor_depth (D -> F -> ... -> C)

The query token attends over the real items only (never itself); in the blocks before the last, every item attends
over the real items and the query token; padded items are never attended to and the MLPs skip their rows. The
features (e.g. argmax ``[priority, onehot(class)]``, dictionary ``[key code, onehot(value), 0]``) encode keys by the
config's key encoding (:mod:`varsim.tasks.keys`: ``"binary"``, the bits as +-1, and/or the learned table); a query
that carries something (dictionary: ``[key code of the query, 0, 1]``) goes through the *same* item MLP.

The last block computes only the query row (the items' final states are never read): a one-block model costs O(N)
per example. Blocks before the last are full self-attention, O(N^2) memory per example; set sizes whose attention
matrices would exceed ``memory_budget`` bytes are refused (ValueError naming the set size). ``predict`` and
``analysis`` run in chunks of examples: a one-block model at N = 16384 needs a few hundred MB whatever the batch.
"""

from __future__ import annotations

import numpy as np

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
from .base import Model, value_moments
from .config import DTYPES, ModelConfig
from .layers import (
    activation_backward,
    activation_forward,
    embedding_backward,
    embedding_forward,
    linear_bias_relu,
    linear_forward,
    mlp_forward,
)
from .set_params import parameter_shapes, parameter_table

__all__ = ["ModelConfig", "Transformer", "parameter_shapes", "TASKS", "KEY_ENCODINGS", "DTYPES"]


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


class Transformer(Model):
    """The model of the module docstring on :class:`varsim.nn.base.Model` (``seed``/``rng``, ``memory_budget``, the
    evaluation paths); the learned query vector starts N(0, 1). ``control``: the control of
    :data:`varsim.variants.CONTROLS` this model applies at inference (:meth:`with_attention`), or None."""

    cost = set_cost
    memory_note = ("its blocks before the last hold T x T attention matrices; a one-block model is O(N) and has no "
                   "such limit")
    control: str | None = None

    def _parameter_table(self):
        """(name, shape, init) of every parameter in the stable order (:mod:`varsim.nn.set_params`)."""
        return parameter_table(self.config)

    def with_attention(self, attention: str, params: dict | None = None, **kwargs) -> "Transformer":
        """A copy of this model that evaluates with another weight map (:meth:`varsim.nn.base.Model.with_attention`).

        ``attention`` may also name a control of :data:`varsim.variants.CONTROLS`: one with a weight map is that map;
        ``"oracle"`` (no weight map, no parameters) keeps this model's map and makes :meth:`predict` and
        :meth:`analysis` point the query token at each example's correct item (the task's
        :meth:`~varsim.tasks.Task.correct_item`; ``focus``). The copy's ``control`` names the control.
        """
        from varsim.variants import CONTROLS

        control = CONTROLS.get(attention) if isinstance(attention, str) else None
        if control is None:
            return super().with_attention(attention, params, **kwargs)
        if control.weight_map is None:
            if params or kwargs:
                raise ValueError(f"attention_params: the control {attention!r} takes no parameters")
            other = self._copy(self.config)
        else:
            other = super().with_attention(control.weight_map, params, **kwargs)
        other.control = control.name
        return other

    def _focus(self, batch, focus):
        """The checked ``focus`` of :meth:`predict`, or the correct items when this model is the oracle control."""
        if focus is None and self.control is not None:
            from varsim.variants import get_control

            if get_control(self.control).needs_correct_item:
                self.config.task_spec.check_batch(batch, self.config.vocab)
                focus = self.config.task_spec.correct_item(batch)
        return _check_focus(focus, batch)

    def _inputs(self, batch, training: bool = True):
        """Validate a batch against the task's schema and build (features (B, T, n_in): row 0 the query token, rows
        1..N the items; key ids (B, T) for a learned key table, else None; item mask (B, N))."""
        c = self.config
        task = c.task_spec
        arrays = task.check_batch(batch, c.vocab)
        mask = arrays["mask"]
        b, n = mask.shape
        self._check_size(b, n, training)  # before allocating anything of size N
        feats = np.zeros((b, n + 1, c.n_features), dtype=self.dtype)
        task.write_features(arrays, c.vocab, c.key_encoding, feats[:, 1:], feats[:, 0])
        keys = task.key_ids(arrays)
        if keys is None or not get_key_encoding(c.key_encoding).learned_table:
            return feats, None, mask
        keys_all = np.empty((b, n + 1), dtype=np.int64)  # (B, T): the query key, then the item keys
        keys_all[:, 0] = keys[1]
        keys_all[:, 1:] = keys[0]
        return feats, keys_all, mask

    # ------------------------------------------------------------------------------------------------------------
    # Embedding: the item MLP (and key table), the learned query

    def _embed_forward(self, feats, keys_all, sel=None):
        """-> (B, T, D); ``sel``: flat indices of the real tokens (None: all), the only rows the MLP computes."""
        c, p = self.config, self.params
        b, t = feats.shape[:2]
        if sel is not None:  # padded items: rows of zeros, never attended to
            feats = _gather_rows(feats, sel)  # (M, n_in)
            keys_all = None if keys_all is None else keys_all.reshape(-1)[sel]
        emb_cache = act_cache = rest_cache = None
        fused = keys_all is None and c.item_mlp_depth > 1 and c.activation == "relu"
        if fused:  # bias and ReLU in one pass (the same bits)
            h, lin_cache = linear_bias_relu(feats, p["embed.0.w"], p["embed.0.b"])  # (B, T, F)
            act_cache = h
        else:
            h, lin_cache = linear_forward(feats, p["embed.0.w"], p["embed.0.b"])  # (B, T, F) or (B, T, D)
        if keys_all is not None:  # learned key rows: a one-hot key block of the first layer's input
            e, emb_cache = embedding_forward(keys_all, p["embed.key_table"])  # (B, T, F)
            h += e
        if c.item_mlp_depth > 1:
            if not fused:
                h, act_cache = activation_forward(h, c.activation, overwrite=True)  # h: a fresh array
            h, rest_cache = mlp_forward(h, self._layers("embed", c.item_mlp_depth)[1:], c.activation,
                                        fused=c.fused)  # (B, T, D)
        if sel is not None:
            h = _scatter_rows(h, sel, b, t)
        if c.task_spec.learned_query:
            h[:, 0] = p["query"]  # the learned query token replaces the MLP's output on the (all-zero) row 0
        return h, (lin_cache, emb_cache, act_cache, rest_cache, sel)

    def _embed_backward(self, dx, cache, grads, from_head=None):
        """The embedding's gradients (``from_head`` is None: the set model's head ties no weights)."""
        c = self.config
        lin_cache, emb_cache, act_cache, rest_cache, sel = cache
        if c.task_spec.learned_query:
            grads["query"] = dx[:, 0].sum(axis=0)
            dx[:, 0] = 0.0  # dx: the first block's fresh gradient, read by nothing else
        if sel is not None:
            dx = _gather_rows(dx, sel)  # (M, D)
        dh = dx
        if c.item_mlp_depth > 1:
            dh = self._mlp_backward("embed", dx, rest_cache, grads, first=1)
            dh = activation_backward(dh, act_cache, c.activation, overwrite=True)  # dh: a fresh dx
        if emb_cache is not None:
            grads["embed.key_table"] = embedding_backward(dh, emb_cache)
        feats, w, _ = lin_cache
        d2 = dh.reshape(-1, w.shape[1])
        grads["embed.0.w"] = feats.reshape(-1, w.shape[0]).T @ d2
        grads["embed.0.b"] = d2.sum(axis=0)

    # ------------------------------------------------------------------------------------------------------------
    # Block: attention, its output normalization and projection, residual, MLP

    def _block_forward(self, i, x, key_mask, last, record=None, inference=False, sel=None):
        """``x`` (B, T, D) -> (B, T, D); the last block returns only the query token's row, (B, D).
        ``inference``: full blocks run ``self_attention_rows`` (faster, no cache for a backward pass). ``sel``: flat
        indices of a full block's real tokens (None: all), the only rows its MLP computes."""
        c, p = self.config, self.params
        pre = f"block{i}"
        ln1 = None
        h = x
        if c.pre_ln:
            h, ln1 = self._layernorm_forward(f"{pre}.ln1", x)  # (B, T, D)
        w_qkv, b_qkv = p[f"{pre}.attn.w_qkv"], p[f"{pre}.attn.b_qkv"]
        spec, theta_name = c.attention_spec, self._theta_name(i)
        theta = None if theta_name is None else p[theta_name]
        if last:  # query-row shortcut: (B, D)
            heads, att = query_attention_forward(h[:, 0], h, w_qkv, b_qkv, c.n_heads, key_mask, spec, theta,
                                                 fused=c.fused)
            x_res = x[:, 0]
        elif inference:  # (B, T, D); att holds query row 0's weights (B, H, 1, T) only
            heads, att = self_attention_rows(h, w_qkv, b_qkv, c.n_heads, key_mask, spec, theta, fused=c.fused)
            x_res = x
        else:  # (B, T, D)
            heads, att = self_attention_forward(h, w_qkv, b_qkv, c.n_heads, key_mask, spec, theta, fused=c.fused)
            x_res = x
        a_pre, a_post, a, out_cache = self._attn_out_forward(pre, heads)
        r = x_res + a if c.residual else a
        h2, ln2 = r, None
        if c.pre_ln:
            h2, ln2 = self._layernorm_forward(f"{pre}.ln2", r)
        if sel is None:
            m, mlp_cache = mlp_forward(h2, self._layers(f"{pre}.mlp", 2), c.activation, fused=c.fused)
        else:  # padded items' rows stay 0: nothing reads them (masked as keys; the last block reads row 0 only)
            m, mlp_cache = mlp_forward(_gather_rows(h2, sel), self._layers(f"{pre}.mlp", 2), c.activation,
                                       fused=c.fused)
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
        return out, (ln1, att, out_cache, ln2, mlp_cache, last, sel)

    def _block_backward(self, i, dout, cache, grads):
        """-> dx (B, T, D), filling the block's parameter gradients into ``grads``."""
        c = self.config
        pre = f"block{i}"
        ln1, att, out_cache, ln2, mlp_cache, last, sel = cache
        if sel is None:
            dh2 = self._mlp_backward(f"{pre}.mlp", dout, mlp_cache, grads)
        else:
            dh2 = self._mlp_backward(f"{pre}.mlp", _gather_rows(dout, sel), mlp_cache, grads)
            dh2 = _scatter_rows(dh2, sel, *dout.shape[:2])
        if c.pre_ln:
            dh2 = self._layernorm_backward(f"{pre}.ln2", dh2, ln2, grads)
        dr = dout + dh2  # (B, T, D) or (B, D)
        dheads = self._attn_out_backward(pre, dr, out_cache, grads)
        if last:
            dhq, dh, dw_qkv, db_qkv, *dtheta = query_attention_backward(dheads, att)  # dh (B, T, D)
            dh[:, 0] += dhq
        else:
            dh, dw_qkv, db_qkv, *dtheta = self_attention_backward(dheads, att)
        grads[f"{pre}.attn.w_qkv"], grads[f"{pre}.attn.b_qkv"] = dw_qkv, db_qkv
        if dtheta:  # the weight map's learned per-head parameter
            grads[self._theta_name(i)] = dtheta[0]
        if c.pre_ln:
            dh = self._layernorm_backward(f"{pre}.ln1", dh, ln1, grads)
        if c.residual:
            rows = dh[:, 0] if last else dh  # a view: the rows the residual branch reached
            rows += dr
        return dh

    # ------------------------------------------------------------------------------------------------------------
    # Head: final LayerNorm, the predictor MLP

    def _head_forward(self, q):
        """The query token's state (B, D) -> logits (B, C)."""
        c = self.config
        z, fln = q, None
        if c.pre_ln:
            z, fln = self._layernorm_forward("final_ln", q)
        logits, mlp_cache = mlp_forward(z, self._layers("head", c.predictor_depth), c.activation,
                                        fused=c.fused)  # (B, C)
        return logits, (fln, mlp_cache)

    def _head_backward(self, dlogits, cache, grads):
        """-> ``(d(query token's state) (B, D), None)``: no tied weights to pass to the embedding."""
        fln, mlp_cache = cache
        dz = self._mlp_backward("head", dlogits, mlp_cache, grads)
        if self.config.pre_ln:
            dz = self._layernorm_backward("final_ln", dz, fln, grads)
        return dz, None

    # ------------------------------------------------------------------------------------------------------------
    # The model: inputs, embedding, blocks, head; and back

    def _forward(self, batch, record=None, inference=False, focus=None):
        c = self.config
        feats, keys_all, mask = self._inputs(batch, training=not inference)  # refuses sets beyond the memory budget
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
        logits, head_cache = self._head_forward(q)  # (B, C)
        return logits, (embed_cache, block_caches, head_cache)

    def _query_weights(self, chunk, cache):
        """The last block's query-row weights over the items (B, H, N), 0 at padding."""
        _, block_caches, _ = cache
        return attention_weights(block_caches[-1][1])[:, :, 0, 1:]


register_architecture(Architecture(
    "set_transformer",
    "the set transformer with a query token (this module): one or more blocks, no positions",
    Transformer,
    set_cost,
    set_cost.sizes,
))
