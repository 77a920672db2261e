"""What the set transformer (:class:`varsim.nn.model.Transformer`) costs, from its config alone: parameters,
multiply-adds and elementwise work per example, activation and attention memory, evaluation chunk size.

The model refuses batches by :func:`attention_bytes` and chunks its evaluation by :func:`eval_chunk`;
:mod:`varsim.train.budget` adds these up over a training run or an evaluation. ``t`` is the number of tokens of an
example (the query token and ``t - 1`` items).
"""

from __future__ import annotations

import dataclasses
import math

from .config import ModelConfig
from .set_params import parameter_shapes

__all__ = ["EVAL_CHUNK_TOKENS", "attention_bytes", "eval_chunk", "state", "forward_flops", "element_ops",
           "activation_bytes", "sizes"]

# Tokens per chunk in predict/analysis: bounds their memory for any batch size, and keeps a chunk's activations (and
# a 2-block model's T x T attention) near the CPU cache: 2^13 evaluates 4.6x faster than 2^16 at N = 1024 for a
# 2-block model and 1.2-1.5x for 1 block at N >= 256, with the same predictions (benchmarks/bench_eval_chunks.py).
EVAL_CHUNK_TOKENS = 1 << 13


def attention_bytes(config: ModelConfig, b: int, n: int) -> int:
    """Bytes of the T x T attention matrices a forward + backward pass over ``b`` examples of ``n`` items holds
    (0 for a one-block model: its last block computes the query row only)."""
    c = config
    if c.n_blocks == 1:
        return 0
    t = n + 1
    # weights kept for each full block, plus two same-size temporaries in the backward pass; a weight map other
    # than plain softmax keeps up to three more (effective weights, its own cache, the ipr_norm cache)
    per_block = 1 if c.attention_spec.is_plain_softmax else 4
    return (per_block * (c.n_blocks - 1) + 2) * b * c.n_heads * t * t * _itemsize(c)


def eval_chunk(config: ModelConfig, n: int, chunk_tokens: int = EVAL_CHUNK_TOKENS) -> int:
    """Examples per chunk of ``predict``/``analysis`` at set size ``n`` (``chunk_tokens`` tokens per chunk)."""
    return max(1, chunk_tokens // (n + 1))


def _itemsize(c: ModelConfig) -> int:
    return 4 if c.dtype == "float32" else 8


def state(config: ModelConfig, copies: int) -> tuple[int, int]:
    """(bytes of ``copies`` float copies of every parameter, plus the float64 draw of the largest at init; number
    of parameters). Blocks all have the same parameters, so the table is built for one and two blocks only."""
    one = [math.prod(s) for s in parameter_shapes(dataclasses.replace(config, n_blocks=1)).values()]
    two = [math.prod(s) for s in parameter_shapes(dataclasses.replace(config, n_blocks=2)).values()]
    count = sum(one) + (config.n_blocks - 1) * (sum(two) - sum(one))
    return copies * _itemsize(config) * count + 8 * max(one), count


def _embed_dims(config: ModelConfig) -> list[int]:
    shapes = parameter_shapes(dataclasses.replace(config, n_blocks=1))  # the item MLP does not depend on the blocks
    return [shapes["embed.0.w"][0]] + [shapes[f"embed.{i}.w"][1] for i in range(config.item_mlp_depth)]


def forward_flops(config: ModelConfig, t: int) -> float:
    """Multiply-adds (x2) of one example's forward pass with ``t`` tokens."""
    c = config
    d, f, h = c.d_model, c.hidden, c.n_heads
    dims = _embed_dims(c)
    per_token = 2.0 * sum(a * b for a, b in zip(dims[:-1], dims[1:]))  # the item MLP on every token
    full = 2.0 * (3 * d * d + 2 * t * d + d * d + 2 * d * f)  # a block before the last, per token
    per_token += (c.n_blocks - 1) * full
    per_token += 4.0 * d * h  # the last block: the query row's scores and weighted mean over the token
    head = 2.0 * (2 * d * f + d * d)  # the last block's projections and MLP, and the predictor, on the query row
    return t * per_token + c.n_blocks * head


def element_ops(config: ModelConfig, t: int) -> float:
    """Elementwise operations of one example's forward pass with ``t`` tokens (features, activations, masks,
    softmax): a few passes over every width a token goes through."""
    c = config
    d, h = c.d_model, c.n_heads
    per_token = 2 * sum(_embed_dims(c)) + (c.n_blocks - 1) * (12 * d + 4 * c.hidden + 4 * h * t)
    per_token += 4 * d + 4 * h
    return float(t * per_token)


def activation_bytes(config: ModelConfig, b: int, t: int, *, training: bool) -> int:
    """Bytes of the activations of ``b`` examples of ``t`` tokens: kept for the backward pass (training: with the
    attention matrices of :func:`attention_bytes`) or the few largest temporaries alive at once (evaluation)."""
    c = config
    d, f, h = c.d_model, c.hidden, c.n_heads
    dims = _embed_dims(c)
    if training:
        per_token = dims[0] + 3 * sum(dims[1:])  # features; each layer's pre-activation, activation and grad
        per_token += (c.n_blocks - 1) * (14 * d + 4 * f)  # projections, residuals, norms, MLP, their grads
        per_token += 4 * d + 4 * h  # the last block's query-row caches over the tokens
        return int(_itemsize(c) * b * t * 2 * per_token) + attention_bytes(c, b, t - 1)
    per_token = dims[0] + 2 * max(dims[1:]) + (c.n_blocks - 1) * (6 * d + 2 * f + 2 * h * t) + 2 * d + 2 * h
    return int(_itemsize(c) * b * t * per_token)


def sizes(config: ModelConfig) -> dict[str, tuple[float, float]]:
    """``{field: (value, default)}`` of the config's sizes that drive the cost."""
    c = config
    out = {"d_model": (c.d_model, 64), "n_blocks": (c.n_blocks, 1), "item_mlp_depth": (c.item_mlp_depth, 2),
           "predictor_depth": (c.predictor_depth, 2)}
    if c.d_hidden is not None:
        out["d_hidden"] = (c.d_hidden, 2 * c.d_model)
    return out
