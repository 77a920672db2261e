"""A causal decoder-only transformer with hand-written backprop (NumPy, no autograd), for the tasks as sequences.

Notation: B batch, N items, k tokens per item (the task's ``item_tokens``), T = N k + 1 tokens (the items' tokens in
order, then the query token last), D = d_model, H heads, Dh = D / H, F = d_hidden, C = n_outputs, n_in the task's
input features per token, L = n_blocks, P = max_positions.

Layer by layer (shapes of the training pass; ``ModelConfig`` chooses the variants; the ``"decoder"`` entry of
:mod:`varsim.nn.architectures`, its parameters in :mod:`varsim.nn.decoder_params`, its cost in
:mod:`varsim.nn.decoder_cost`)::

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

import dataclasses
import math

import numpy as np

from varsim._common.seeding import child_generator, root_sequence
from varsim._common.validate import check_positive_int
from varsim.tasks import get_key_encoding

from . import decoder_cost
from .architectures import Architecture, register_architecture
from .config import ModelConfig
from .decoder_params import parameter_table
from .layers import (
    linear_backward,
    linear_forward,
    mlp_backward,
    mlp_forward,
    softmax_cross_entropy_backward,
    softmax_cross_entropy_forward,
)
from .model import Transformer, _name_key, value_moments
from .norms import get_norm, layernorm_backward, layernorm_forward
from .positions import alibi_bias, get_positions, position_ids, rope_backward, rope_forward, rope_tables
from .set_params import theta_name
from .weightmaps import TRAINABLE_MAPS, AttentionSpec, make_attention

__all__ = [
    "Decoder", "causal_mask", "causal_attention_forward", "causal_attention_backward", "causal_attention_rows",
    "DEFAULT_MEMORY_BUDGET", "ROW_BLOCK_ELEMENTS",
]

DEFAULT_MEMORY_BUDGET = 2 * 1024**3  # bytes of attention weights a training forward/backward pass may hold
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


class Decoder:
    """The model of the module docstring, with parameters in ``params`` (an ordered ``{name: array}`` dict).

    ``seed`` draws the initial parameters, each from a child stream keyed by its name (as the set transformer:
    weights N(0, 1/fan_in), biases 0, LayerNorm gains 1, the learned query N(0, 1), the position table
    N(0, 1/D)). ``forward``/``backward``/``loss_and_grads`` are the training path; ``predict`` and ``analysis`` the
    chunked evaluation paths.
    """

    def __init__(self, config: ModelConfig, seed=0, *, memory_budget: int = DEFAULT_MEMORY_BUDGET):
        if not isinstance(config, ModelConfig):
            raise ValueError(f"config must be a ModelConfig, got {type(config).__name__}")
        if not config.residual:
            raise ValueError("residual: the decoder always has residual connections (residual=False is the set "
                             "model's option)")
        self.config = config
        self.positions = get_positions(config.positions)
        if self.positions.rotary and (config.d_model // config.n_heads) % 2:
            raise ValueError(f"n_heads: positions 'rope' needs an even head width, got d_model / n_heads = "
                             f"{config.d_model // config.n_heads}")
        self.memory_budget = check_positive_int("memory_budget", memory_budget)
        self.dtype = np.dtype(config.dtype)
        self.params: dict[str, np.ndarray] = {}
        seq = root_sequence(seed)
        for name, shape, init in parameter_table(config):
            if isinstance(init, tuple):
                value = np.full(shape, init[1], dtype=self.dtype)
            elif init in ("zeros", "ones"):
                value = (np.zeros if init == "zeros" else np.ones)(shape, dtype=self.dtype)
            else:
                value = (child_generator(seq, _name_key(name)).standard_normal(shape) * init).astype(self.dtype)
            self.params[name] = value

    n_params = Transformer.n_params
    state_dict = Transformer.state_dict
    load_state_dict = Transformer.load_state_dict

    def with_attention(self, attention: str, params: dict | None = None, **kwargs) -> "Decoder":
        """A copy that evaluates with another weight map (as :meth:`varsim.nn.model.Transformer.with_attention`)."""
        config = dataclasses.replace(self.config, attention=attention, attention_params={**(params or {}), **kwargs})
        other = Decoder(config, seed=0, memory_budget=self.memory_budget)
        for k, v in other.params.items():
            if k in self.params:
                np.copyto(v, self.params[k])
        return other

    # ------------------------------------------------------------------------------------------------------------
    # Inputs

    def _check_size(self, b: int, n: int, training: bool) -> None:
        c = self.config
        t = n * c.task_spec.item_tokens + 1
        if self.positions.table and t > c.max_positions:
            raise ValueError(f"set size N={n} makes {t} tokens, more than max_positions={c.max_positions} of the "
                             "learned position table")
        need = decoder_cost.attention_bytes(c, b, n) if training else 0
        if need > self.memory_budget:
            raise ValueError(f"set size N={n} is too long to train a {c.n_blocks}-block decoder with batch {b}: its "
                             f"attention weights need {need / 2**30:.2f} GiB, more than memory_budget="
                             f"{self.memory_budget / 2**30:.2f} GiB")

    def _inputs(self, batch, training: bool):
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
    # Forward / backward

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

    def _embed_backward(self, dx, cache, grads):
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

    def _head_weight(self):
        """(D, C): ``head.w``, or the transposed embedding rows of the output one-hot (tied)."""
        c = self.config
        if not c.tie_head:
            return self.params["head.w"]
        o = c.task_spec.output_feature_offset(c.vocab, c.key_encoding)
        return self.params["embed.w"][o:o + c.n_outputs].T

    def _block_forward(self, i, x, start, rope, last, inference=False, record=None):
        """``x`` (B, T, D) -> (B, T, D), or (B, 1, D) (the query row) in the last block."""
        c, p = self.config, self.params
        pre = f"block{i}"
        h, ln1 = x, None
        if c.pre_ln:
            h, ln1 = layernorm_forward(x, p[f"{pre}.ln1.gamma"], p[f"{pre}.ln1.beta"])
        tname = theta_name(c, i)
        args = (h, p[f"{pre}.attn.w_qkv"], p[f"{pre}.attn.b_qkv"], c.n_heads, start, c.attention_spec,
                None if tname is None else p[tname], rope, self.positions.bias, last)
        if inference:
            heads, att = causal_attention_rows(*args)
        else:
            heads, att = causal_attention_forward(*args)
        norm = get_norm(c.norm)
        norm_params = {name: p[f"{pre}.attn_norm.{name}"] for name, _ in norm.params}
        w_o, b_o = p[f"{pre}.attn.w_o"], p[f"{pre}.attn.b_o"]
        if norm.per_head:
            a_pre = heads
            a_post, norm_cache = norm.forward(heads, norm_params, c.n_heads)
            a, o_cache = linear_forward(a_post, w_o, b_o)
        else:
            a_pre, o_cache = linear_forward(heads, w_o, b_o)
            a_post, norm_cache = norm.forward(a_pre, norm_params, c.n_heads)
            a = a_post
        r = (x[:, -1:] if last else x) + a
        if not c.pre_ln:
            r, ln1 = layernorm_forward(r, p[f"{pre}.ln1.gamma"], p[f"{pre}.ln1.beta"])
        h2, ln2 = r, None
        if c.pre_ln:
            h2, ln2 = layernorm_forward(r, p[f"{pre}.ln2.gamma"], p[f"{pre}.ln2.beta"])
        layers = [(p[f"{pre}.mlp.{j}.w"], p[f"{pre}.mlp.{j}.b"]) for j in range(2)]
        m, mlp_cache = mlp_forward(h2, layers, c.activation)
        out = r + m
        if not c.pre_ln:
            out, ln2 = layernorm_forward(out, p[f"{pre}.ln2.gamma"], p[f"{pre}.ln2.beta"])
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
        return out, (ln1, att, norm_cache, o_cache, ln2, mlp_cache, last)

    def _block_backward(self, i, dout, cache, grads):
        c = self.config
        pre = f"block{i}"
        ln1, att, norm_cache, o_cache, ln2, mlp_cache, last = cache
        if not c.pre_ln:
            dout, grads[f"{pre}.ln2.gamma"], grads[f"{pre}.ln2.beta"] = layernorm_backward(dout, ln2)
        dh2, mlp_grads = mlp_backward(dout, mlp_cache)
        for j, (dw, db) in enumerate(mlp_grads):
            grads[f"{pre}.mlp.{j}.w"], grads[f"{pre}.mlp.{j}.b"] = dw, db
        if c.pre_ln:
            dh2, grads[f"{pre}.ln2.gamma"], grads[f"{pre}.ln2.beta"] = layernorm_backward(dh2, ln2)
        dr = dout + dh2
        if not c.pre_ln:
            dr, grads[f"{pre}.ln1.gamma"], grads[f"{pre}.ln1.beta"] = layernorm_backward(dr, ln1)
        norm = get_norm(c.norm)
        if norm.per_head:
            dnormed, grads[f"{pre}.attn.w_o"], grads[f"{pre}.attn.b_o"] = linear_backward(dr, o_cache)
            dheads, norm_grads = norm.backward(dnormed, norm_cache)
        else:
            da_pre, norm_grads = norm.backward(dr, norm_cache)
            dheads, grads[f"{pre}.attn.w_o"], grads[f"{pre}.attn.b_o"] = linear_backward(da_pre, o_cache)
        for name, g in norm_grads.items():
            grads[f"{pre}.attn_norm.{name}"] = g
        dh, grads[f"{pre}.attn.w_qkv"], grads[f"{pre}.attn.b_qkv"], *dtheta = causal_attention_backward(dheads, att)
        if dtheta:
            grads[theta_name(c, i)] = dtheta[0]
        if c.pre_ln:
            dh, grads[f"{pre}.ln1.gamma"], grads[f"{pre}.ln1.beta"] = layernorm_backward(dh, ln1)
        if last:
            dh[:, -1:] += dr
        else:
            dh += dr
        return dh

    def _rope(self, start, t):
        if not self.positions.rotary:
            return None
        return rope_tables(position_ids(start, t), self.config.d_model // self.config.n_heads, self.dtype)

    def _forward(self, batch, inference=False, record=None):
        c, p = self.config, self.params
        feats, key_tok, start = self._inputs(batch, training=not inference)
        x, embed_cache = self._embed_forward(feats, key_tok, start)
        rope = self._rope(start, x.shape[1])
        caches = []
        for i in range(c.n_blocks):
            x, cache = self._block_forward(i, x, start, rope, i == c.n_blocks - 1, inference, record)
            caches.append(cache)
        z, fln = x[:, 0], None  # (B, D): the query row
        if c.pre_ln:
            z, fln = layernorm_forward(z, p["final_ln.gamma"], p["final_ln.beta"])
        logits = z @ self._head_weight()  # (B, C)
        return logits, (embed_cache, caches, fln, z)

    def forward(self, batch):
        """-> ``(logits (B, n_outputs), cache)``."""
        return self._forward(batch)

    def backward(self, dlogits, cache) -> dict[str, np.ndarray]:
        """Gradients of sum(logits * dlogits) with respect to every parameter: same names, order, shapes, dtype."""
        c = self.config
        if not c.attention_spec.trainable:
            raise ValueError(f"attention {c.attention!r} is inference-only and cannot be trained (no backward pass); "
                             f"train with one of {', '.join(TRAINABLE_MAPS)} and apply it with "
                             "Decoder.with_attention")
        embed_cache, caches, fln, z = cache
        dlogits = np.asarray(dlogits)
        if dlogits.shape != (z.shape[0], c.n_outputs):
            raise ValueError(f"dlogits must have shape {(z.shape[0], c.n_outputs)}, got {dlogits.shape}")
        dlogits = dlogits.astype(self.dtype, copy=False)
        grads: dict[str, np.ndarray] = {}
        w_head = self._head_weight()
        dw_head = z.T @ dlogits  # (D, C)
        dz = dlogits @ w_head.T  # (B, D)
        if c.pre_ln:
            dz, grads["final_ln.gamma"], grads["final_ln.beta"] = layernorm_backward(dz, fln)
        dx = dz[:, None, :]  # (B, 1, D): the last block's query row
        for i in range(c.n_blocks - 1, -1, -1):
            dx = self._block_backward(i, dx, caches[i], grads)
        self._embed_backward(dx, embed_cache, grads)
        if c.tie_head:
            o = c.task_spec.output_feature_offset(c.vocab, c.key_encoding)
            grads["embed.w"][o:o + c.n_outputs] += dw_head.T
        else:
            grads["head.w"] = dw_head
        return {k: grads[k] for k in self.params}

    def loss_and_grads(self, batch) -> tuple[float, float, dict[str, np.ndarray]]:
        """-> (mean cross-entropy, accuracy, gradients of the mean cross-entropy)."""
        target = Transformer._target(self, batch)
        logits, cache = self._forward(batch)
        loss, ce_cache = softmax_cross_entropy_forward(logits, target)
        accuracy = float(np.mean(np.argmax(logits, axis=1) == target))
        grads = self.backward(softmax_cross_entropy_backward(1.0, ce_cache), cache)
        return loss, accuracy, grads

    # ------------------------------------------------------------------------------------------------------------
    # Evaluation paths (chunked, no cache kept)

    def _chunks(self, batch):
        mask = np.asarray(batch.get("mask")) if isinstance(batch, dict) else None
        if mask is None or mask.ndim != 2:
            self._inputs(batch, training=False)  # raises the precise error
        b, n = mask.shape
        self._check_size(1, n, training=False)
        per = decoder_cost.eval_chunk(self.config, n)
        for start in range(0, b, per):
            stop = min(b, start + per)
            yield {k: (np.asarray(v)[start:stop] if np.ndim(v) >= 1 else v) for k, v in batch.items()}

    def predict(self, batch) -> np.ndarray:
        """Predicted class (B,) int64; memory bounded by the chunk size and the row blocks, not by B or T^2."""
        out = [np.argmax(self._forward(chunk, inference=True)[0], axis=1) for chunk in self._chunks(batch)]
        return np.concatenate(out).astype(np.int64, copy=False)

    def logits_and_weights(self, batch) -> tuple[np.ndarray, np.ndarray]:
        """``(logits (B, n_outputs), weights (B, H, N))``: the class scores and the last block's query-row (last
        position's) attention weights over the items in item order (an item of several tokens gets the sum of its
        tokens' weights; 0 at padding), from the forward pass :meth:`predict` runs. What the ranking decomposition
        (:mod:`varsim.train.ranking`) reads, as :meth:`varsim.nn.model.Transformer.logits_and_weights`."""
        k = self.config.task_spec.item_tokens
        logits, weights = [], []
        for chunk in self._chunks(batch):
            z, (_, atts, *_) = self._forward(chunk, inference=True)
            mask = np.asarray(chunk["mask"], dtype=bool)
            b, n = mask.shape
            w = atts[-1][:, :, :-1].reshape(b, -1, n, k).sum(axis=-1)  # (B, H, N) in sequence order
            pad = n - mask.sum(axis=1)  # left padding: item i sits at sequence slot pad_b + i
            if pad.any():
                src = np.minimum(np.arange(n)[None, :] + pad[:, None], n - 1)  # (B, N)
                w = np.take_along_axis(w, src[:, None, :], axis=2) * mask[:, None, :]
            logits.append(z)
            weights.append(w)
        return np.concatenate(logits, axis=0), np.concatenate(weights, axis=0)

    def analysis(self, batch) -> dict[str, np.ndarray]:
        """What the query token (the last row) sees, per block b, as :meth:`varsim.nn.model.Transformer.analysis`:
        ``block{b}.attn_pre_norm``/``attn_post_norm``/``next_input`` (B, D), ``block{b}.attn_weights`` (B, H, N k)
        the query row's weights over the item tokens in sequence order (0 at padding, which comes first), the probe's
        ``key_weights`` (B, H, T) (over every token, the query itself included), ``query_heads``, ``attn_out``,
        ``value_mean`` and ``value_var`` (B, D), and ``logits``."""
        parts: dict[str, list] = {}
        for chunk in self._chunks(batch):
            record: dict[str, np.ndarray] = {}
            record["logits"] = self._forward(chunk, inference=True, record=record)[0]
            for k, v in record.items():
                parts.setdefault(k, []).append(v)
        return {k: np.concatenate(v, axis=0) for k, v in parts.items()}


register_architecture(Architecture(
    "decoder",
    "a causal decoder-only transformer (varsim.nn.decoder): the items' tokens in order, then the query token; "
    "positions none/learned/rope/alibi",
    Decoder,
    decoder_cost,
    decoder_cost.sizes,
    sequence=True,
))
