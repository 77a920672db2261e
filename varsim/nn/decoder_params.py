"""The parameters of the causal decoder (:class:`varsim.nn.decoder.Decoder`): names, shapes and initial values, in
their stable order, known without building the model (cost estimates, checkpoint checks)."""

from __future__ import annotations

import math

from varsim.tasks import get_key_encoding

from .config import ModelConfig
from .positions import get_positions
from .set_params import attention_rows, layernorm_rows

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

    for b in range(c.n_blocks):
        p = f"block{b}"
        out += layernorm_rows(f"{p}.ln1", d)
        out += attention_rows(c, b)
        out += layernorm_rows(f"{p}.ln2", d)
        out.append((f"{p}.mlp.0.w", (d, f), 1.0 / math.sqrt(d)))
        out.append((f"{p}.mlp.0.b", (f,), "zeros"))
        out.append((f"{p}.mlp.1.w", (f, d), 1.0 / math.sqrt(f)))
        out.append((f"{p}.mlp.1.b", (d,), "zeros"))
    if c.pre_ln:
        out += layernorm_rows("final_ln", d)
    if not c.tie_head:
        out.append(("head.w", (d, c.n_outputs), 1.0 / math.sqrt(d)))
    return out


def parameter_shapes(config: ModelConfig) -> dict[str, tuple[int, ...]]:
    """``{name: shape}`` of the parameters of ``Decoder(config)``, in their stable order."""
    if not isinstance(config, ModelConfig):
        raise ValueError(f"config must be a ModelConfig, got {type(config).__name__}")
    return {name: tuple(shape) for name, shape, _ in parameter_table(config)}
