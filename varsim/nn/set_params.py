"""The parameters of the set transformer (:class:`varsim.nn.model.Transformer`): names, shapes and initial values,
in their stable order, known without building the model (cost estimates, checkpoint checks)."""

from __future__ import annotations

import math

import numpy as np

from varsim.tasks import get_key_encoding

from .config import ModelConfig
from .norms import get_norm

__all__ = ["parameter_table", "parameter_shapes", "theta_name", "attention_rows", "layernorm_rows"]


def theta_name(config: ModelConfig, block: int) -> str | None:
    """Name of block ``block``'s learned weight-map parameter (e.g. ``block0.attn.ssmax_s``), or None."""
    spec = config.attention_spec
    return None if spec.trained_param is None else f"block{block}.attn.{spec.name}_{spec.trained_param}"


def layernorm_rows(prefix: str, d: int) -> list[tuple]:
    """The rows of a LayerNorm over ``d`` features: gain (ones) and bias (zeros)."""
    return [(f"{prefix}.gamma", (d,), "ones"), (f"{prefix}.beta", (d,), "zeros")]


def attention_rows(config: ModelConfig, block: int) -> list[tuple]:
    """The rows of block ``block``'s attention, the same in every architecture: the fused QKV projection, the weight
    map's learned per-head parameter (ssmax: s; a constant start), the output normalization's parameters and the
    output projection."""
    c, d, p = config, config.d_model, f"block{block}"
    out = [(f"{p}.attn.w_qkv", (d, 3 * d), 1.0 / math.sqrt(d))]
    theta = c.attention_spec.theta_init(c.n_heads, np.dtype(c.dtype))
    if theta is not None:
        out.append((theta_name(c, block), theta.shape, ("fill", float(theta[0]))))
    out.append((f"{p}.attn.b_qkv", (3 * d,), "zeros"))
    out += [(f"{p}.attn_norm.{name}", (d,), init) for name, init in get_norm(c.norm).params]
    out += [(f"{p}.attn.w_o", (d, d), 1.0 / math.sqrt(d)), (f"{p}.attn.b_o", (d,), "zeros")]
    return out


def parameter_table(config: ModelConfig) -> list[tuple]:
    """(name, shape, init std or the constant 'zeros'/'ones' or ("fill", value)) in the stable parameter order."""
    c = config
    d, f = c.d_model, c.hidden
    task = c.task_spec
    out = []

    def mlp(prefix, dims):
        for i, (a, b) in enumerate(zip(dims[:-1], dims[1:])):
            out.append((f"{prefix}.{i}.w", (a, b), 1.0 / math.sqrt(a)))
            out.append((f"{prefix}.{i}.b", (b,), "zeros"))

    def ln(prefix):
        out.extend(layernorm_rows(prefix, d))

    n_in = c.n_features
    embed_dims = [n_in] + [f] * (c.item_mlp_depth - 1) + [d]
    mlp("embed", embed_dims)
    if task.key_fields is not None and get_key_encoding(c.key_encoding).learned_table:
        # one-hot key block of the first layer's input: same scale as a weight row with fan-in n_in + 1
        out.append(("embed.key_table", (c.key_vocab, embed_dims[1]), 1.0 / math.sqrt(n_in + 1)))
    if task.learned_query:
        out.append(("query", (d,), 1.0))
    for b in range(c.n_blocks):
        p = f"block{b}"
        if c.pre_ln:
            ln(f"{p}.ln1")
        out.extend(attention_rows(c, b))
        if c.pre_ln:
            ln(f"{p}.ln2")
        mlp(f"{p}.mlp", [d, f, d])
    if c.pre_ln:
        ln("final_ln")
    mlp("head", [d] + [f] * (c.predictor_depth - 1) + [c.n_outputs])
    return out


def parameter_shapes(config: ModelConfig) -> dict[str, tuple[int, ...]]:
    """``{name: shape}`` of the parameters of ``Transformer(config)``, in their stable order, without allocating
    them (cost estimates, checkpoint checks). ``embed.0.w`` has shape ``(n_features, width)``."""
    if not isinstance(config, ModelConfig):
        raise ValueError(f"config must be a ModelConfig, got {type(config).__name__}")
    return {name: tuple(shape) for name, shape, _ in parameter_table(config)}
