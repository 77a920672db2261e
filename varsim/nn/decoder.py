"""A causal decoder-only transformer with hand-written backprop (NumPy, no autograd), for the tasks as sequences.

Notation: B batch, N items, k tokens per item (the task's ``item_tokens``), T = N k + 1 tokens (the items' tokens in
order, then the query token last), D = d_model, H heads, Dh = D / H, F = d_hidden, C = n_outputs, n_in the task's
input features per token, L = n_blocks, P = max_positions.

Layer by layer (shapes of the training pass; ``ModelConfig`` chooses the variants; the ``"decoder"`` entry of
:mod:`varsim.nn.architectures`, its parameters in :mod:`varsim.nn.decoder_params`, its cost in
:mod:`varsim.nn.decoder_cost`; what both models share in :mod:`varsim.nn.base`)::

    feats (B, T, n_in)              the task's features (write_features): items' tokens, then the query row
    x = feats We + be               (B, T, D)    embed.w (n_in, D), embed.b (D,)
      + key_table[key ids]                       a learned key table (key encoding "embedding"): item/query keys
      x[:, T-1] = query                          a task whose query carries nothing: a learned query vector (D,)
      + pos_table[pos]                           positions "learned": pos.table (P, D)
    for l < L:                                   block l
      h = LN1(x)             pre-norm only       (B, T, D)
      qkv = h Wqkv + bqkv                        (B, T, 3D) -> q, k, v (B, H, T, Dh)     attn.w_qkv (D, 3D)
      q, k = rope(q), rope(k)  positions "rope"  (B, H, T, Dh)
      z = q k^T / sqrt(Dh)                       (B, H, R, T), R = T (R = 1 in the last block: row T-1 only)
        + alibi                positions "alibi" -m_h (i - j)
        -inf where j > i or key j is padding     causal mask
      u = map(z)                                 (B, H, R, T) the weight map of the registry (softmax, ssmax,
                                                 logn, sigmoid, entmax15, sparsemax; ipr_norm on top)
      heads = u v                                (B, H, R, Dh) -> (B, R, D)
      a = heads Wo + bo  [attention-output norm of varsim.nn.norms, per head before Wo or global after]
      pre-norm:  r = x + a;       y = r + MLP(LN2(r))        (B, R, D)
      post-norm: r = LN1(x + a);  y = LN2(r + MLP(r))        MLP: D -> F (activation) -> D
    zq = LNf(y[:, T-1])        pre-norm only     (B, D)
    logits = zq Wh                               (B, C)  head.w (D, C), or tied: Wh = embed.w[o:o+C]^T, the
                                                 embedding rows of the task's one-hot of its output classes

The token embedding is one linear layer and the head one linear map: the set model's ``item_mlp_depth`` and
``predictor_depth`` do not apply (nor ``residual=False``, which the decoder refuses). The last block computes only the
query row (its keys and values over all T tokens), as nothing else is read.
Variable set sizes in a batch are left-padded: an example's real tokens end at the query, padding comes first, is
never attended to by a real token, and positions count from the first real token (:mod:`varsim.nn.positions`).

Evaluation (``predict``, ``analysis``) runs the batch in chunks of examples (``decoder_cost.eval_chunk``) and each
block's attention in blocks of query rows over the keys up to the block's last row, so it never forms a T x T matrix:
memory is O(T D) per example, the time O(T^2 D). Training keeps the (B, H, T, T) weights of the blocks before the last;
a batch whose attention would exceed ``memory_budget`` bytes is refused (ValueError naming the set size).
"""

from __future__ import annotations

import math

import numpy as np

from varsim.tasks import get_key_encoding

from . import decoder_cost
from .architectures import Architecture, register_architecture
from .base import Model, value_moments
from .config import ModelConfig
from .decoder_params import parameter_table
from .layers import linear_backward, linear_forward, mlp_forward
from .positions import alibi_bias, get_positions, position_ids, rope_backward, rope_forward, rope_tables
from .weightmaps import AttentionSpec, make_attention

__all__ = [
    "Decoder", "causal_mask", "causal_attention_forward", "causal_attention_backward", "causal_attention_rows",
    "ROW_BLOCK_ELEMENTS",
]

#: logits per block of query rows in evaluation (4 MiB in float32)
ROW_BLOCK_ELEMENTS = 1 << 20


# ----------------------------------------------------------------------------------------------------------------------
# Causal multi-head attention


def causal_mask(start: np.ndarray | None, r0: int, r1: int, t_keys: int) -> np.ndarray:
    """Bool (B|1, 1, R, Tk): query row i in ``[r0, r1)`` sees key j < Tk iff ``j <= i`` and key j is a real token
    (``j >= start_b``) or the row itself (a padding row sees only itself). ``start`` None: no padding."""
    i = np.arange(r0, r1)[:, None]
    j = np.arange(t_keys)[None, :]
    m = j <= i  # (R, Tk)
    if start is None:
        return m[None, None]
    real = j[None] >= start[:, None, None]  # (B, 1, Tk)
    return (m[None] & (real | (j == i)[None]))[:, None]


def _qkv_forward(h, w_qkv, b_qkv, n_heads, rope):
    """``h`` (B, T, D) -> q, k, v (B, H, T, Dh) (q and k rotated by ``rope`` = (cos, sin) when given)."""
    b, t, d = h.shape
    qkv, lin_cache = linear_forward(h, w_qkv, b_qkv)  # (B, T, 3D)
    q, k, v = qkv.reshape(b, t, 3, n_heads, d // n_heads).transpose(2, 0, 3, 1, 4)
    if rope is not None:
        q, k = rope_forward(q, *rope), rope_forward(k, *rope)
    return q, k, v, (lin_cache, rope)


def _qkv_backward(dq, dk, dv, cache):
    lin_cache, rope = cache
    if rope is not None:
        dq, dk = rope_backward(dq, *rope), rope_backward(dk, *rope)
    b, h, t, dh = dk.shape
    dqkv = np.empty((b, t, 3, h, dh), dtype=dk.dtype)  # (B, T, 3, H, Dh), the layout of the fused projection
    for j, g in enumerate((dq, dk, dv)):
        dqkv[:, :, j] = g.transpose(0, 2, 1, 3)
    return linear_backward(dqkv.reshape(b, t, 3 * h * dh), lin_cache)


def _logits(q_rows, k, scale, r0, alibi, start):
    """Masked logits (B, H, R, Tk) of query rows ``[r0, r0 + R)`` over keys ``[0, Tk)``, and their mask."""
    r1, t_keys = r0 + q_rows.shape[2], k.shape[2]
    z = q_rows @ k.swapaxes(-1, -2)  # (B, H, R, Tk)
    z *= scale
    if alibi:
        z += alibi_bias(q_rows.shape[1], r0, r1, t_keys, z.dtype)
    mask = causal_mask(start, r0, r1, t_keys)
    np.copyto(z, -np.inf, where=~mask)
    return z, mask


def _spec(attention):
    if attention is None:
        return make_attention()
    if not isinstance(attention, AttentionSpec):
        raise ValueError(f"attention must be an AttentionSpec (varsim.nn.weightmaps.make_attention) or None, "
                         f"got {type(attention).__name__}")
    return attention


def causal_attention_forward(h, w_qkv, b_qkv, n_heads, start=None, attention=None, theta=None, rope=None,
                             alibi=False, last_only=False):
    """Causal multi-head attention: ``h`` (B, T, D) -> concatenated head outputs (B, R, D) before the output
    projection, for every row (R = T) or the last row only (``last_only``, R = 1).

    ``start`` (B,) padding tokens in front of each example (None: none); ``attention`` an
    :class:`~varsim.nn.weightmaps.AttentionSpec` (None: softmax) with ``theta`` its learned per-head parameter;
    ``rope`` (cos, sin) tables (:func:`varsim.nn.positions.rope_tables`) or None; ``alibi``: add the ALiBi bias.
    """
    spec = _spec(attention)
    b, t, d = h.shape
    q, k, v, pcache = _qkv_forward(h, w_qkv, b_qkv, n_heads, rope)
    r0 = t - 1 if last_only else 0
    scale = 1.0 / math.sqrt(d // n_heads)
    z, mask = _logits(q[:, :, r0:], k, scale, r0, alibi, start)
    u, w, mcache = spec.forward(z, mask, theta)  # u: effective weights (ipr_norm), else the map's weights
    o = u @ v  # (B, H, R, Dh)
    heads = o.transpose(0, 2, 1, 3).reshape(b, t - r0, d)
    return heads, (pcache, q, k, v, u, w, mcache, spec, scale, r0)


def causal_attention_backward(dheads, cache):
    """-> ``(dh, dw_qkv, db_qkv)`` (then ``dtheta`` (H,) for a map with a learned parameter)."""
    pcache, q, k, v, u, w, mcache, spec, scale, r0 = cache
    b, n_heads, t, dh = k.shape
    do = dheads.reshape(b, t - r0, n_heads, dh).transpose(0, 2, 1, 3)  # (B, H, R, Dh)
    du = do @ v.swapaxes(-1, -2)  # (B, H, R, T)
    dv = u.swapaxes(-1, -2) @ do  # (B, H, T, Dh)
    dz, dtheta = spec.backward(du, mcache)
    dz *= scale
    dk = dz.swapaxes(-1, -2) @ q[:, :, r0:]  # (B, H, T, Dh)
    if r0:
        dq = np.zeros_like(q)
        dq[:, :, r0:] = dz @ k
    else:
        dq = dz @ k
    grads = _qkv_backward(dq, dk, dv, pcache)
    return grads if spec.trained_param is None else (*grads, dtheta)


def causal_attention_rows(h, w_qkv, b_qkv, n_heads, start=None, attention=None, theta=None, rope=None, alibi=False,
                          last_only=False, *, block_elements: int = ROW_BLOCK_ELEMENTS):
    """:func:`causal_attention_forward` for evaluation: the same head outputs, computed for blocks of query rows over
    the keys up to each block's last row (about ``block_elements`` logits at once), without a cache. Returns
    ``(heads (B, R, D), w_last (B, H, T))``, the last row's weights (the map's, before any ipr_norm)."""
    spec = _spec(attention)
    b, t, d = h.shape
    q, k, v, _ = _qkv_forward(h, w_qkv, b_qkv, n_heads, rope)
    first = t - 1 if last_only else 0
    scale = 1.0 / math.sqrt(d // n_heads)
    heads = np.empty((b, t - first, d), dtype=h.dtype)
    per = max(1, block_elements // max(1, b * n_heads * t))
    w = None
    for r0 in range(first, t, per):
        r1 = min(t, r0 + per)
        z, mask = _logits(q[:, :, r0:r1], k[:, :, :r1], scale, r0, alibi, start)
        u, w, _ = spec.forward(z, mask, theta)
        heads[:, r0 - first:r1 - first] = (u @ v[:, :, :r1]).transpose(0, 2, 1, 3).reshape(b, r1 - r0, d)
    return heads, w[:, :, -1, :]


# ----------------------------------------------------------------------------------------------------------------------
# The model


class Decoder(Model):
    """The model of the module docstring on :class:`varsim.nn.base.Model` (``seed``/``rng``, ``memory_budget``, the
    evaluation paths); the learned query starts N(0, 1), the position table N(0, 1/D)."""

    cost = decoder_cost
    eval_holds_attention = False
    memory_note = ("training holds the T x T weights of the blocks before the last; evaluation runs in blocks of "
                   "query rows and has no such limit")

    def _check_config(self, config: ModelConfig) -> None:
        if not config.residual:
            raise ValueError("residual: the decoder always has residual connections (residual=False is the set "
                             "model's option)")
        if get_positions(config.positions).rotary and (config.d_model // config.n_heads) % 2:
            raise ValueError(f"n_heads: positions 'rope' needs an even head width, got d_model / n_heads = "
                             f"{config.d_model // config.n_heads}")

    def _parameter_table(self):
        """(name, shape, init) of every parameter in the stable order (:mod:`varsim.nn.decoder_params`)."""
        return parameter_table(self.config)

    @property
    def positions(self):
        """The config's positional encoding (:data:`varsim.nn.positions.POSITIONS`)."""
        return get_positions(self.config.positions)

    def _check_size(self, b: int, n: int, training: bool = True) -> None:
        """As :meth:`varsim.nn.base.Model._check_size`, and no more tokens than a learned position table holds."""
        c = self.config
        t = n * c.task_spec.item_tokens + 1
        if self.positions.table and t > c.max_positions:
            raise ValueError(f"set size N={n} makes {t} tokens, more than max_positions={c.max_positions} of the "
                             "learned position table")
        super()._check_size(b, n, training)

    def _inputs(self, batch, training: bool = True):
        """-> (features (B, T, n_in) in sequence order, key ids (B, T) (-1: no key) or None, start (B,) or None)."""
        c = self.config
        task = c.task_spec
        k = task.item_tokens
        arrays = task.check_batch(batch, c.vocab)
        mask = arrays["mask"]
        b, n = mask.shape
        sizes = mask.sum(axis=1)
        if not np.array_equal(mask, np.arange(n)[None, :] < sizes[:, None]):
            raise ValueError("batch['mask']: the decoder needs each example's real items first (a prefix), padding "
                             "after them")
        self._check_size(b, n, training)
        t = n * k + 1
        items = np.zeros((b, n * k, c.n_features), dtype=self.dtype)
        query = np.zeros((b, c.n_features), dtype=self.dtype)
        task.write_features(arrays, c.vocab, c.key_encoding, items, query)
        keys = task.key_ids(arrays) if get_key_encoding(c.key_encoding).learned_table else None
        key_tok = None
        if keys is not None:  # a key on each item's first token and on the query
            key_tok = np.full((b, t), -1, dtype=np.int64)
            key_tok[:, 0:n * k:k] = keys[0]
            key_tok[:, -1] = keys[1]
        feats = np.empty((b, t, c.n_features), dtype=self.dtype)
        feats[:, -1] = query
        start = None
        if mask.all():
            feats[:, :-1] = items
        else:  # left-pad: row r of example b holds item token r - pad_b
            start = (n - sizes) * k  # (B,)
            src = np.arange(n * k)[None, :] - start[:, None]  # (B, Nk)
            valid = src >= 0
            src = np.maximum(src, 0)
            feats[:, :-1] = np.take_along_axis(items, src[..., None], axis=1) * valid[..., None]
            if key_tok is not None:
                key_tok[:, :-1] = np.where(valid, np.take_along_axis(key_tok[:, :-1], src, axis=1), -1)
        return feats, key_tok, start

    # ------------------------------------------------------------------------------------------------------------
    # Embedding: features, key table, learned query, position table

    def _embed_forward(self, feats, key_tok, start):
        c, p = self.config, self.params
        t = feats.shape[1]
        x, lin_cache = linear_forward(feats, p["embed.w"], p["embed.b"])  # (B, T, D)
        key_cache = None
        if key_tok is not None:
            sel = key_tok >= 0
            ids = key_tok[sel]
            x[sel] += p["embed.key_table"][ids]
            key_cache = (sel, ids)
        if c.task_spec.learned_query:
            x[:, -1] = p["query"]
        pos = None
        if self.positions.table:
            pos = position_ids(start, t)  # (B|1, T)
            x += p["pos.table"][pos]
        return x, (lin_cache, key_cache, pos)

    def _embed_backward(self, dx, cache, grads, dw_tied=None):
        """``dw_tied`` (D, C): the tied head's weight gradient, added to the embedding rows it reads."""
        c = self.config
        lin_cache, key_cache, pos = cache
        d = dx.shape[-1]
        if pos is not None:
            g = np.zeros_like(self.params["pos.table"])
            if pos.shape[0] == 1:
                g[:dx.shape[1]] = dx.sum(axis=0)
            else:
                np.add.at(g, pos.reshape(-1), dx.reshape(-1, d))
            grads["pos.table"] = g
        if c.task_spec.learned_query:
            grads["query"] = dx[:, -1].sum(axis=0)
            dx = dx.copy()
            dx[:, -1] = 0.0
        if key_cache is not None:
            sel, ids = key_cache
            g = np.zeros_like(self.params["embed.key_table"])
            np.add.at(g, ids, dx[sel])
            grads["embed.key_table"] = g
        _, grads["embed.w"], grads["embed.b"] = linear_backward(dx, lin_cache)
        if dw_tied is not None:
            o = c.task_spec.output_feature_offset(c.vocab, c.key_encoding)
            grads["embed.w"][o:o + c.n_outputs] += dw_tied.T

    # ------------------------------------------------------------------------------------------------------------
    # Block: causal attention, its output normalization and projection, residual, MLP; pre- or post-norm

    def _block_forward(self, i, x, start, rope, last, inference=False, record=None):
        """``x`` (B, T, D) -> (B, T, D), or (B, 1, D) (the query row) in the last block."""
        c, p = self.config, self.params
        pre = f"block{i}"
        h, ln1 = x, None
        if c.pre_ln:
            h, ln1 = self._layernorm_forward(f"{pre}.ln1", x)
        tname = self._theta_name(i)
        args = (h, p[f"{pre}.attn.w_qkv"], p[f"{pre}.attn.b_qkv"], c.n_heads, start, c.attention_spec,
                None if tname is None else p[tname], rope, self.positions.bias, last)
        if inference:
            heads, att = causal_attention_rows(*args)
        else:
            heads, att = causal_attention_forward(*args)
        a_pre, a_post, a, out_cache = self._attn_out_forward(pre, heads)
        r = (x[:, -1:] if last else x) + a
        if not c.pre_ln:  # post-norm: r = LN1(x + a)
            r, ln1 = self._layernorm_forward(f"{pre}.ln1", r)
        h2, ln2 = r, None
        if c.pre_ln:
            h2, ln2 = self._layernorm_forward(f"{pre}.ln2", r)
        m, mlp_cache = mlp_forward(h2, self._layers(f"{pre}.mlp", 2), c.activation)
        out = r + m
        if not c.pre_ln:  # post-norm: y = LN2(r + MLP(r))
            out, ln2 = self._layernorm_forward(f"{pre}.ln2", out)
        if record is not None:
            record[f"{pre}.attn_pre_norm"] = a_pre[:, -1].copy()
            record[f"{pre}.attn_post_norm"] = a_post[:, -1].copy()
            record[f"{pre}.attn_weights"] = att[:, :, :-1].copy()  # the query row over the item tokens (B, H, Nk)
            record[f"{pre}.next_input"] = out[:, -1].copy()
            keys = causal_mask(start, h.shape[1] - 1, h.shape[1], h.shape[1])[:, 0, 0]  # (B|1, T)
            keys = np.broadcast_to(keys, (h.shape[0], h.shape[1]))
            record[f"{pre}.key_weights"] = np.where(keys[:, None], att, 0.0)  # the query row over every token
            record[f"{pre}.query_heads"] = heads[:, -1].copy()
            record[f"{pre}.attn_out"] = a[:, -1].copy()
            record[f"{pre}.value_mean"], record[f"{pre}.value_var"] = value_moments(
                h, p[f"{pre}.attn.w_qkv"], p[f"{pre}.attn.b_qkv"], keys)
        if inference:
            return out, att  # the last row's weights over every token (B, H, T): what logits_and_weights reads
        return out, (ln1, att, out_cache, ln2, mlp_cache, last)

    def _block_backward(self, i, dout, cache, grads):
        c = self.config
        pre = f"block{i}"
        ln1, att, out_cache, ln2, mlp_cache, last = cache
        if not c.pre_ln:
            dout = self._layernorm_backward(f"{pre}.ln2", dout, ln2, grads)
        dh2 = self._mlp_backward(f"{pre}.mlp", dout, mlp_cache, grads)
        if c.pre_ln:
            dh2 = self._layernorm_backward(f"{pre}.ln2", dh2, ln2, grads)
        dr = dout + dh2
        if not c.pre_ln:
            dr = self._layernorm_backward(f"{pre}.ln1", dr, ln1, grads)
        dheads = self._attn_out_backward(pre, dr, out_cache, grads)
        dh, grads[f"{pre}.attn.w_qkv"], grads[f"{pre}.attn.b_qkv"], *dtheta = causal_attention_backward(dheads, att)
        if dtheta:
            grads[self._theta_name(i)] = dtheta[0]
        if c.pre_ln:
            dh = self._layernorm_backward(f"{pre}.ln1", dh, ln1, grads)
        rows = dh[:, -1:] if last else dh  # a view: the rows the residual branch reached
        rows += dr
        return dh

    # ------------------------------------------------------------------------------------------------------------
    # Head: final LayerNorm of the query row, the (tied) output map

    def _head_weight(self):
        """(D, C): ``head.w``, or the transposed embedding rows of the output one-hot (tied)."""
        c = self.config
        if not c.tie_head:
            return self.params["head.w"]
        o = c.task_spec.output_feature_offset(c.vocab, c.key_encoding)
        return self.params["embed.w"][o:o + c.n_outputs].T

    def _head_forward(self, y):
        """The last block's query row (B, 1, D) -> logits (B, C)."""
        z, fln = y[:, 0], None  # (B, D)
        if self.config.pre_ln:
            z, fln = self._layernorm_forward("final_ln", z)
        return z @ self._head_weight(), (fln, z)  # (B, C)

    def _head_backward(self, dlogits, cache, grads):
        """-> (d(query row) (B, 1, D), the tied head's weight gradient (D, C) or None)."""
        c = self.config
        fln, z = cache
        dw_head = z.T @ dlogits  # (D, C)
        dz = dlogits @ self._head_weight().T  # (B, D)
        if c.pre_ln:
            dz = self._layernorm_backward("final_ln", dz, fln, grads)
        if not c.tie_head:
            grads["head.w"] = dw_head
        return dz[:, None, :], (dw_head if c.tie_head else None)

    # ------------------------------------------------------------------------------------------------------------
    # The model: inputs, embedding, blocks, head; and back

    def _forward(self, batch, record=None, inference=False, focus=None):
        """``focus`` is always None here (:meth:`varsim.nn.base.Model._focus` refuses one)."""
        c = self.config
        feats, key_tok, start = self._inputs(batch, training=not inference)
        x, embed_cache = self._embed_forward(feats, key_tok, start)  # (B, T, D)
        rope = None if not self.positions.rotary else rope_tables(position_ids(start, x.shape[1]),
                                                                  c.d_model // c.n_heads, self.dtype)
        caches = []
        for i in range(c.n_blocks):
            x, cache = self._block_forward(i, x, start, rope, i == c.n_blocks - 1, inference, record)
            caches.append(cache)
        logits, head_cache = self._head_forward(x)  # (B, C)
        return logits, (embed_cache, caches, head_cache)

    def _query_weights(self, chunk, cache):
        """The last block's query-row (last position's) weights over the items in item order (B, H, N): an item of
        several tokens gets the sum of its tokens' weights; 0 at padding."""
        _, atts, _ = cache
        k = self.config.task_spec.item_tokens
        mask = np.asarray(chunk["mask"], dtype=bool)
        b, n = mask.shape
        w = atts[-1][:, :, :-1].reshape(b, -1, n, k).sum(axis=-1)  # (B, H, N) in sequence order
        pad = n - mask.sum(axis=1)  # left padding: item i sits at sequence slot pad_b + i
        if pad.any():
            src = np.minimum(np.arange(n)[None, :] + pad[:, None], n - 1)  # (B, N)
            w = np.take_along_axis(w, src[:, None, :], axis=2) * mask[:, None, :]
        return w


register_architecture(Architecture(
    "decoder",
    "a causal decoder-only transformer (varsim.nn.decoder): the items' tokens in order, then the query token; "
    "positions none/learned/rope/alibi",
    Decoder,
    decoder_cost,
    decoder_cost.sizes,
    sequence=True,
))
