"""Positional encodings of the causal decoder (:mod:`varsim.nn.decoder`), as a registry with forward/backward pairs.

Notation: B batch, H heads, T tokens, R query rows, Dh = D / H head width, P = ``max_positions``.

An encoding acts in one of three places (its :class:`PositionEncoding` flags say which; the decoder reads the flags,
never the name):

- ``"none"`` (NoPE): nothing; the causal mask alone tells tokens apart by what they can see.
- ``"learned"`` (``table``): a trained absolute table ``pos.table`` (P, D) added to the token embedding,
  ``x[b, t] += table[pos[b, t]]``; sequences longer than P are refused (ValueError naming ``max_positions``), rows
  never reached in training keep their initial values.
- ``"rope"`` (``rotary``): queries and keys of every head rotated by their position (Su et al.; the half-split
  layout of GPT-NeoX and Llama): with ``x = [x1, x2]`` (halves of Dh), ``rope(x) = x cos + [-x2, x1] sin`` and
  ``cos``/``sin`` of ``pos * base^(-2i/Dh)``, i < Dh/2, each half repeated. Its backward is the transposed rotation,
  ``dx = dy cos + [dy2 sin2, -dy1 sin1]`` (:func:`rope_backward`). Needs an even Dh.
- ``"alibi"`` (``bias``): a fixed bias ``-m_h (i - j)`` added to the logit of query row i at key j (Press et al.),
  slopes ``m_h = 2^(-8 (h+1) / H)``; it is relative, so it needs no table and no gradient.

Positions count from a sequence's first real token (``pos = t - start_b``, ``start_b`` the padding in front of
example b), so a left-padded example has the positions it would have alone.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from varsim._common.registry import Registry

__all__ = [
    "PositionEncoding", "POSITIONS", "get_positions", "register_positions", "ROPE_BASE",
    "rope_tables", "rope_forward", "rope_backward", "alibi_slopes", "alibi_bias", "position_ids",
]

ROPE_BASE = 10000.0


@dataclasses.dataclass(frozen=True)
class PositionEncoding:
    """A positional encoding: where it acts (``table``: a learned (P, D) table added to the embedding; ``rotary``:
    RoPE on queries and keys; ``bias``: ALiBi on the logits)."""

    name: str
    description: str
    table: bool = False
    rotary: bool = False
    bias: bool = False


#: name -> PositionEncoding: ``register_positions`` adds one (a name taken raises), ``get_positions`` finds one
POSITIONS = Registry("positions", what="positional encoding", kind=PositionEncoding)
register_positions = POSITIONS.add
"""Add a :class:`PositionEncoding` to :data:`POSITIONS` under its name; a name already registered is refused."""
get_positions = POSITIONS.find
"""The positional encoding named ``name``; ValueError naming the parameter for an unknown name."""


register_positions(PositionEncoding("none", "no positional encoding (NoPE): only the causal mask orders tokens"))
register_positions(PositionEncoding("learned", "a learned absolute table added to the token embedding", table=True))
register_positions(PositionEncoding("rope", "rotary embedding of queries and keys (half-split layout)", rotary=True))
register_positions(PositionEncoding("alibi", "a linear bias -m_h (i - j) on the logits", bias=True))


def position_ids(start: np.ndarray | None, t: int) -> np.ndarray:
    """(B, T) int64 positions ``t - start_b`` (0 on padding), or (1, T) when ``start`` is None (no padding)."""
    pos = np.arange(t, dtype=np.int64)[None, :]
    if start is None:
        return pos
    return np.maximum(pos - start[:, None], 0)


def rope_tables(pos: np.ndarray, dh: int, dtype, base: float = ROPE_BASE) -> tuple[np.ndarray, np.ndarray]:
    """``cos``, ``sin`` of shape (B|1, 1, T, Dh) for positions ``pos`` (B|1, T); angles in float64, then cast."""
    if dh % 2:
        raise ValueError(f"rope needs an even head width, got Dh = {dh}")
    inv = base ** (-np.arange(0, dh, 2, dtype=np.float64) / dh)  # (Dh/2,)
    ang = pos[:, None, :, None].astype(np.float64) * inv  # (B, 1, T, Dh/2)
    ang = np.concatenate([ang, ang], axis=-1)  # (B, 1, T, Dh)
    return np.cos(ang).astype(dtype), np.sin(ang).astype(dtype)


def rope_forward(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """``x`` (B, H, T, Dh) -> ``x cos + rotate_half(x) sin``, ``rotate_half([x1, x2]) = [-x2, x1]``."""
    h = x.shape[-1] // 2
    rot = np.empty_like(x)
    np.negative(x[..., h:], out=rot[..., :h])
    rot[..., h:] = x[..., :h]
    rot *= sin
    out = x * cos
    out += rot
    return out


def rope_backward(dy: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """Vector-Jacobian product of :func:`rope_forward`: ``dy cos + rotate_half^T(dy sin)``,
    ``rotate_half^T([g1, g2]) = [g2, -g1]``."""
    h = dy.shape[-1] // 2
    g = dy * sin
    dx = dy * cos
    dx[..., :h] += g[..., h:]
    dx[..., h:] -= g[..., :h]
    return dx


def alibi_slopes(n_heads: int) -> np.ndarray:
    """(H,) float64 slopes ``2^(-8 (h+1) / H)``."""
    return 2.0 ** (-8.0 * np.arange(1, n_heads + 1) / n_heads)


def alibi_bias(n_heads: int, r0: int, r1: int, t_keys: int, dtype) -> np.ndarray:
    """(1, H, R, Tk) bias ``-m_h (i - j)`` for query rows ``i`` in ``[r0, r1)`` and keys ``j`` in ``[0, Tk)`` (keys
    after the row are masked by the caller; their bias is whatever the formula gives)."""
    dist = np.arange(r0, r1, dtype=np.float64)[:, None] - np.arange(t_keys, dtype=np.float64)[None, :]  # (R, Tk)
    return (-alibi_slopes(n_heads)[:, None, None] * dist).astype(dtype)[None]
