"""The parameters of the causal decoder (:class:`varsim.nn.decoder.Decoder`): names, shapes and initial values, in
their stable order, known without building the model (cost estimates, checkpoint checks)."""

from __future__ import annotations

import math

import numpy as np

from varsim.tasks import get_key_encoding

from .config import ModelConfig
from .norms import get_norm
from .positions import get_positions
from .set_params import theta_name

__all__ = ["parameter_table", "parameter_shapes"]


def parameter_table(config: ModelConfig) -> list[tuple]:
    """(name, shape, init std or 'zeros'/'ones' or ("fill", value)) in the stable parameter order."""
    c = config
    d, f = c.d_model, c.hidden
    task = c.task_spec
    n_in = c.n_features
    out = [("embed.w", (n_in, d), 1.0 / math.sqrt(n_in)), ("embed.b", (d,), "zeros")]
    if task.key_fields is not None and get_key_encoding(c.key_encoding).learned_table:
        out.append(("embed.key_table", (c.key_vocab, d), 1.0 / math.sqrt(n_in + 1)))
    if task.learned_query:
        out.append(("query", (d,), 1.0))
    if get_positions(c.positions).table:
        out.append(("pos.table", (c.max_positions, d), 1.0 / math.sqrt(d)))

    def ln(prefix):
        out.append((f"{prefix}.gamma", (d,), "ones"))
        out.append((f"{prefix}.beta", (d,), "zeros"))

    for b in range(c.n_blocks):
        p = f"block{b}"
        ln(f"{p}.ln1")
        out.append((f"{p}.attn.w_qkv", (d, 3 * d), 1.0 / math.sqrt(d)))
        theta = c.attention_spec.theta_init(c.n_heads, np.dtype(c.dtype))
        if theta is not None:  # the weight map's learned per-head parameter (ssmax: s)
            out.append((theta_name(c, b), theta.shape, ("fill", float(theta[0]))))
        out.append((f"{p}.attn.b_qkv", (3 * d,), "zeros"))
        for name, init in get_norm(c.norm).params:
            out.append((f"{p}.attn_norm.{name}", (d,), init))
        out.append((f"{p}.attn.w_o", (d, d), 1.0 / math.sqrt(d)))
        out.append((f"{p}.attn.b_o", (d,), "zeros"))
        ln(f"{p}.ln2")
        out.append((f"{p}.mlp.0.w", (d, f), 1.0 / math.sqrt(d)))
        out.append((f"{p}.mlp.0.b", (f,), "zeros"))
        out.append((f"{p}.mlp.1.w", (f, d), 1.0 / math.sqrt(f)))
        out.append((f"{p}.mlp.1.b", (d,), "zeros"))
    if c.pre_ln:
        ln("final_ln")
    if not c.tie_head:
        out.append(("head.w", (d, c.n_outputs), 1.0 / math.sqrt(d)))
    return out


def parameter_shapes(config: ModelConfig) -> dict[str, tuple[int, ...]]:
    """``{name: shape}`` of the parameters of ``Decoder(config)``, in their stable order."""
    if not isinstance(config, ModelConfig):
        raise ValueError(f"config must be a ModelConfig, got {type(config).__name__}")
    return {name: tuple(shape) for name, shape, _ in parameter_table(config)}
