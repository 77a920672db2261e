"""What the causal decoder (:class:`varsim.nn.decoder.Decoder`) costs, from its config alone: parameters,
multiply-adds and elementwise work per example, activation and attention memory, evaluation chunk size.

The functions take ``t = n + 1`` as :mod:`varsim.train.budget` passes it (n items and the query); the decoder's
sequence has ``n k + 1`` tokens (``k`` the task's ``item_tokens``), which they use.
"""

from __future__ import annotations

import math

from .config import ModelConfig
from .decoder_params import parameter_table
from .positions import get_positions

__all__ = ["EVAL_CHUNK_TOKENS", "attention_bytes", "eval_chunk", "state", "forward_flops", "element_ops",
           "activation_bytes", "sizes", "tokens"]

#: tokens per chunk of examples in predict/analysis
EVAL_CHUNK_TOKENS = 1 << 13
#: logits per block of query rows in evaluation (:data:`varsim.nn.decoder.ROW_BLOCK_ELEMENTS`)
_ROW_BLOCK = 1 << 20


def tokens(config: ModelConfig, n: int) -> int:
    """Sequence length of an example of ``n`` items: ``n * item_tokens + 1``."""
    return int(n) * config.task_spec.item_tokens + 1


def _itemsize(c: ModelConfig) -> int:
    return 4 if c.dtype == "float32" else 8


def attention_bytes(config: ModelConfig, b: int, n: int) -> int:
    """Bytes of the (B, H, T, T) attention arrays a training forward + backward pass over ``b`` examples of ``n``
    items holds: the weights of every block but the last (whose query row is O(T)), with the weight map's caches,
    and two same-size temporaries of the backward pass."""
    c = config
    t = tokens(c, n)
    per_block = 1 if c.attention_spec.is_plain_softmax else 4
    return (per_block * (c.n_blocks - 1) + 2) * b * c.n_heads * t * t * _itemsize(c)


def eval_chunk(config: ModelConfig, n: int, chunk_tokens: int = EVAL_CHUNK_TOKENS) -> int:
    """Examples per chunk of ``predict``/``analysis`` at ``n`` items."""
    return max(1, chunk_tokens // tokens(config, n))


def state(config: ModelConfig, copies: int) -> tuple[int, int]:
    """(bytes of ``copies`` float copies of every parameter plus the float64 draw of the largest; parameters)."""
    sizes_ = [math.prod(shape) for _, shape, _ in parameter_table(config)]
    count = sum(sizes_)
    return copies * _itemsize(config) * count + 8 * max(sizes_), count


def forward_flops(config: ModelConfig, t: int) -> float:
    """Multiply-adds (x2) of one example's forward pass (``t - 1`` items); causal attention counted over all keys."""
    c = config
    d, f = c.d_model, c.hidden
    tt = tokens(c, t - 1)
    per_token = 2.0 * c.n_features * d
    full = 2.0 * (3 * d * d + 2 * tt * d + d * d + 2 * d * f)
    per_token += (c.n_blocks - 1) * full + 2.0 * 3 * d * d  # the last block projects every token's q, k, v
    last = 2.0 * (2 * tt * d + d * d + 2 * d * f) + 2.0 * d * c.n_outputs
    return tt * per_token + last


def element_ops(config: ModelConfig, t: int) -> float:
    """Elementwise operations of one example's forward pass: a few passes over every width a token goes through,
    and the weight map's passes over the logits."""
    c = config
    d, h = c.d_model, c.n_heads
    tt = tokens(c, t - 1)
    per_token = 2 * c.n_features + 2 * d + (c.n_blocks - 1) * (16 * d + 4 * c.hidden + 6 * h * tt) + 8 * d
    return float(tt * per_token + 6 * h * tt)


def activation_bytes(config: ModelConfig, b: int, t: int, *, training: bool) -> int:
    """Bytes of the activations of ``b`` examples of ``t - 1`` items: kept for the backward pass (training, with
    :func:`attention_bytes`) or the largest temporaries alive at once (evaluation: every block's rows and one block
    of query rows' logits)."""
    c = config
    d, f = c.d_model, c.hidden
    tt = tokens(c, t - 1)
    isz = _itemsize(c)
    if training:
        per_token = c.n_features + 2 * d + c.n_blocks * (20 * d + 4 * f)
        return int(isz * b * tt * 2 * per_token) + attention_bytes(c, b, t - 1)
    per_token = c.n_features + 10 * d + 2 * f
    return int(isz * b * tt * per_token + 4 * isz * max(_ROW_BLOCK, b * c.n_heads * tt))


def sizes(config: ModelConfig) -> dict[str, tuple[float, float]]:
    """``{field: (value, default)}`` of the config's sizes that drive the cost."""
    c = config
    out = {"d_model": (c.d_model, 64), "n_blocks": (c.n_blocks, 1)}
    if c.d_hidden is not None:
        out["d_hidden"] = (c.d_hidden, 2 * c.d_model)
    if get_positions(c.positions).table:  # a learned table of max_positions rows
        out["max_positions"] = (c.max_positions, 4096)
    return out
