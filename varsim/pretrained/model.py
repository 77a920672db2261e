"""A float32 NumPy forward pass for pretrained decoder (Llama) and encoder (BERT) transformers, with probe hooks.

The loaders (:mod:`varsim.pretrained.gguf_io`, :mod:`varsim.pretrained.safetensors_io`) build a
:class:`PretrainedModel`: a :class:`ModelSpec` (shapes, architecture constants) plus a ``tensor(name)`` callable that
returns one float32 weight matrix ``(out, in)`` on demand (dequantized lazily, cached per tensor), so a run that only
needs the first layers never materialises the others.

:meth:`PretrainedModel.run` returns, for every probed layer, the attention weights of the chosen query positions,
the per-head attention outputs (before the output projection), the values and the full attention output
(after the output projection). Attention is computed one head and one block of query rows at a time, so memory is
``O(block * T)`` per head rather than ``O(heads * T^2)``. When nothing after the deepest probed layer is needed the
pass stops there, computing that layer's queries only at the probed positions and skipping its feed-forward block.

Naming (internal, architecture-neutral): ``embed``, ``pos_embed``, ``type_embed``, ``embed_norm.{w,b}``,
``l{i}.{attn_norm,q,k,v,o,ffn_norm,gate,up,down}`` (+ ``.b`` biases for BERT), ``out_norm``, ``lm_head``.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable, Sequence

import numpy as np

__all__ = ["ModelSpec", "PretrainedModel", "LayerRecord", "RunResult", "rope", "softmax"]

_ARCHS = ("llama", "bert")
_ROPE_PAIRINGS = ("adjacent", "half")


@dataclasses.dataclass(frozen=True)
class ModelSpec:
    """Architecture constants of a loaded model.

    ``rope_pairing``: ``"adjacent"`` rotates dimension pairs (2i, 2i+1) (llama.cpp's layout: the GGUF converter
    permutes the rows of the Q/K weights into it); ``"half"`` rotates (i, i + d_head/2) (the Hugging Face layout).
    Both give identical attention when the weights are in the matching layout.
    """

    arch: str
    n_layer: int
    d_model: int
    n_head: int
    n_kv_head: int
    d_head: int
    d_ff: int
    vocab_size: int
    context_length: int
    norm_eps: float
    causal: bool
    rope_base: float = 10000.0
    rope_pairing: str = "adjacent"
    name: str = ""

    def __post_init__(self):
        if self.arch not in _ARCHS:
            raise ValueError(f"unsupported architecture {self.arch!r}; expected one of {_ARCHS}")
        if self.rope_pairing not in _ROPE_PAIRINGS:
            raise ValueError(f"rope_pairing must be one of {_ROPE_PAIRINGS}, got {self.rope_pairing!r}")
        if self.n_head % self.n_kv_head:
            raise ValueError(f"n_head ({self.n_head}) must be a multiple of n_kv_head ({self.n_kv_head})")

    @property
    def group(self) -> int:
        """Query heads per key/value head (GQA); head ``h`` reads key/value head ``h // group``."""
        return self.n_head // self.n_kv_head


@dataclasses.dataclass
class LayerRecord:
    """What one probed layer exposes (Q = number of probed query positions, T = sequence length).

    weights   (n_head, Q, T)       softmax attention weights of the probed queries (zeros after a causal query)
    head_out  (n_head, Q, d_head)  per-head attention outputs, before the output projection
    values    (n_kv_head, T, d_head)  value vectors (after bias; before any output projection)
    attn_out  (Q, d_model)         full attention output (after the output projection and its bias)
    """

    layer: int
    weights: np.ndarray
    head_out: np.ndarray
    values: np.ndarray
    attn_out: np.ndarray


@dataclasses.dataclass
class RunResult:
    records: dict[int, LayerRecord]
    hidden: np.ndarray | None  # (T, d_model) final hidden state (after the final norm) when the whole stack ran
    layers_run: int


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Numerically stable softmax (max-subtracted); -inf entries get weight 0."""
    m = np.max(x, axis=axis, keepdims=True)
    e = np.exp(x - m)
    return e / np.sum(e, axis=axis, keepdims=True)


def rope(x: np.ndarray, positions: np.ndarray, base: float, pairing: str) -> np.ndarray:
    """Rotary position embedding of ``x`` (n_heads, T, d_head) at integer ``positions`` (T,).

    Pair ``i`` (frequency ``base^(-2i/d_head)``) is dimensions (2i, 2i+1) for ``"adjacent"`` and (i, i + d/2)
    for ``"half"``; each pair is rotated by ``position * frequency``.
    """
    d = x.shape[-1]
    inv = base ** (-np.arange(0, d, 2, dtype=np.float64) / d)  # (d/2,)
    ang = positions.astype(np.float64)[:, None] * inv[None, :]  # (T, d/2)
    cos, sin = np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)
    if pairing == "adjacent":
        a, b = x[..., 0::2], x[..., 1::2]
        out = np.empty_like(x)
        out[..., 0::2] = a * cos - b * sin
        out[..., 1::2] = a * sin + b * cos
        return out
    half = d // 2
    a, b = x[..., :half], x[..., half:]
    return np.concatenate([a * cos - b * sin, a * sin + b * cos], axis=-1)


def _rms_norm(x: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
    ms = np.mean(np.square(x, dtype=np.float32), axis=-1, keepdims=True)
    return (x / np.sqrt(ms + np.float32(eps))) * w


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mu = np.mean(x, axis=-1, keepdims=True)
    xc = x - mu
    var = np.mean(np.square(xc), axis=-1, keepdims=True)
    return xc / np.sqrt(var + np.float32(eps)) * w + b


def _gelu(x: np.ndarray) -> np.ndarray:
    from scipy.special import erf

    return (0.5 * x * (1.0 + erf(x / np.float32(math.sqrt(2.0))))).astype(np.float32)


def _silu(x: np.ndarray) -> np.ndarray:
    return x / (1.0 + np.exp(-x))


class PretrainedModel:
    """A loaded model: ``spec``, a weight accessor, a tokenizer (``tokenizers.Tokenizer``) and its special ids.

    ``tensor_fn(name) -> float32 array`` returns weights in the internal naming (see the module docstring); matrices
    are ``(out, in)``. ``embed_rows(ids) -> (len(ids), d_model)`` returns token-embedding rows (lets quantized
    embeddings be dequantized row by row). ``lm_head`` defaults to the embedding (tied weights).
    """

    def __init__(
        self,
        spec: ModelSpec,
        tensor_fn: Callable[[str], np.ndarray],
        *,
        embed_rows: Callable[[np.ndarray], np.ndarray] | None = None,
        tokenizer=None,
        special: dict | None = None,
        source: dict | None = None,
    ):
        self.spec = spec
        self._tensor_fn = tensor_fn
        self._cache: dict[str, np.ndarray] = {}
        self._embed_rows = embed_rows
        self.tokenizer = tokenizer
        self.special = dict(special or {})  # e.g. {"bos": 1} or {"cls": 101, "sep": 102}
        self.source = dict(source or {})

    # ---- weights -------------------------------------------------------------------------------------------
    def tensor(self, name: str) -> np.ndarray:
        if name not in self._cache:
            arr = np.ascontiguousarray(self._tensor_fn(name), dtype=np.float32)
            self._cache[name] = arr
        return self._cache[name]

    def clear_cache(self) -> None:
        """Deprecated since 0.2.0 (removed in 0.3.0): drop the converted weights kept by :meth:`tensor`; drop the
        model instead to free them."""
        import warnings

        warnings.warn("PretrainedModel.clear_cache is deprecated since 0.2.0: drop the model to free its weights",
                      DeprecationWarning, stacklevel=2)
        self._cache.clear()

    def embed(self, ids: np.ndarray) -> np.ndarray:
        if self._embed_rows is not None:
            return np.asarray(self._embed_rows(ids), dtype=np.float32)
        return self.tensor("embed")[ids]

    # ---- tokenization --------------------------------------------------------------------------------------
    def encode(self, text: str) -> np.ndarray:
        """Token ids of ``text`` without any special tokens."""
        if self.tokenizer is None:
            raise ValueError("model has no tokenizer")
        return np.asarray(self.tokenizer.encode(text, add_special_tokens=False).ids, dtype=np.int64)

    def frame(self, tokens: np.ndarray, *, bos: bool = False) -> np.ndarray:
        """The model input for a window of text tokens: BERT gets ``[CLS] tokens [SEP]``; a decoder gets ``tokens``
        (with the BOS token in front when ``bos``)."""
        tokens = np.asarray(tokens, dtype=np.int64)
        if self.spec.arch == "bert":
            return np.concatenate([[self.special["cls"]], tokens, [self.special["sep"]]]).astype(np.int64)
        if bos:
            return np.concatenate([[self.special["bos"]], tokens]).astype(np.int64)
        return tokens

    def n_special(self, *, bos: bool = False) -> int:
        """How many special tokens :meth:`frame` adds."""
        return 2 if self.spec.arch == "bert" else int(bool(bos))

    # ---- forward ---------------------------------------------------------------------------------------------
    def run(
        self,
        ids,
        *,
        layers: Sequence[int] = (),
        query_positions: Sequence[int] = (),
        full: bool = False,
        block: int = 256,
    ) -> RunResult:
        """Forward pass over one sequence ``ids`` (T,).

        layers           layers whose attention is recorded (0-based)
        query_positions  positions whose attention rows/outputs are recorded (negative = from the end)
        full             run the whole stack and return the final hidden state (after the final norm); otherwise
                         stop after the deepest recorded layer
        block            query rows per attention block (bounds memory to ``block * T`` floats per head)
        """
        sp = self.spec
        ids = np.asarray(ids, dtype=np.int64)
        if ids.ndim != 1 or ids.size == 0:
            raise ValueError(f"ids must be a non-empty 1-D sequence, got shape {ids.shape}")
        T = int(ids.size)
        if T > sp.context_length:
            raise ValueError(f"sequence length {T} exceeds the model's context length {sp.context_length}")
        if np.any(ids < 0) or np.any(ids >= sp.vocab_size):
            raise ValueError(f"ids must lie in [0, {sp.vocab_size})")
        layers = sorted({int(l) for l in layers})
        for l in layers:
            if not 0 <= l < sp.n_layer:
                raise ValueError(f"layers: {l} is outside 0..{sp.n_layer - 1}")
        qpos = np.array([p + T if p < 0 else p for p in query_positions], dtype=np.int64)
        if np.any(qpos < 0) or np.any(qpos >= T):
            raise ValueError(f"query_positions must lie in [-{T}, {T})")
        if not full and not layers:
            raise ValueError("nothing to compute: give layers to record or full=True")
        n_run = sp.n_layer if full else layers[-1] + 1

        x = self._embed_input(ids)  # (T, d_model)
        records: dict[int, LayerRecord] = {}
        for l in range(n_run):
            last = (not full) and l == n_run - 1
            x, rec = self._layer(l, x, qpos if l in layers else None, last_only=last, block=block)
            if rec is not None:
                records[l] = rec
            if last:
                break
        hidden = self._final_norm(x) if full else None
        return RunResult(records=records, hidden=hidden, layers_run=n_run)

    def logits(self, hidden: np.ndarray) -> np.ndarray:
        """Next-token logits ``hidden @ lm_head.T`` (decoders; tied to the embedding when no head is stored)."""
        return hidden @ self.tensor("lm_head").T

    # ---- pieces ----------------------------------------------------------------------------------------------
    def _embed_input(self, ids: np.ndarray) -> np.ndarray:
        sp = self.spec
        x = self.embed(ids)
        if sp.arch == "bert":
            x = x + self.tensor("pos_embed")[: ids.size] + self.tensor("type_embed")[0]
            x = _layer_norm(x, self.tensor("embed_norm.w"), self.tensor("embed_norm.b"), sp.norm_eps)
        return np.ascontiguousarray(x, dtype=np.float32)

    def _final_norm(self, x: np.ndarray) -> np.ndarray:
        if self.spec.arch == "llama":
            return _rms_norm(x, self.tensor("out_norm"), self.spec.norm_eps)
        return x  # BERT's post-norm layers already end with a LayerNorm

    def _proj(self, x: np.ndarray, name: str) -> np.ndarray:
        y = x @ self.tensor(name).T
        if self.spec.arch == "bert":
            y = y + self.tensor(name + ".b")
        return y

    def _layer(self, l: int, x: np.ndarray, qpos, *, last_only: bool, block: int):
        sp = self.spec
        T = x.shape[0]
        p = f"l{l}."
        h = _rms_norm(x, self.tensor(p + "attn_norm"), sp.norm_eps) if sp.arch == "llama" else x
        rows = qpos if last_only else np.arange(T)  # query rows to compute in this layer
        k = self._proj(h, p + "k").reshape(T, sp.n_kv_head, sp.d_head).transpose(1, 0, 2)
        v = self._proj(h, p + "v").reshape(T, sp.n_kv_head, sp.d_head).transpose(1, 0, 2)
        q = self._proj(h[rows], p + "q").reshape(len(rows), sp.n_head, sp.d_head).transpose(1, 0, 2)
        if sp.arch == "llama":
            k = rope(k, np.arange(T), sp.rope_base, sp.rope_pairing)
            q = rope(q, rows, sp.rope_base, sp.rope_pairing)
        k = np.ascontiguousarray(k)
        v = np.ascontiguousarray(v)
        scale = np.float32(1.0 / math.sqrt(sp.d_head))

        # ---- attention, one head and one block of query rows at a time
        out = np.empty((sp.n_head, len(rows), sp.d_head), dtype=np.float32)
        want = None if qpos is None else {int(r): i for i, r in enumerate(qpos)}
        rec_w = None if qpos is None else np.zeros((sp.n_head, len(qpos), T), dtype=np.float32)
        for hd in range(sp.n_head):
            kv = hd // sp.group
            for s in range(0, len(rows), block):
                r = rows[s : s + block]
                span = int(r.max()) + 1 if sp.causal else T  # causal rows never see keys past the last row
                sc = (q[hd, s : s + block] @ k[kv, :span].T) * scale  # (b, span)
                if sp.causal:
                    sc = np.where(np.arange(span)[None, :] <= r[:, None], sc, -np.inf)
                w = softmax(sc, axis=-1)
                out[hd, s : s + block] = w @ v[kv, :span]
                if want is not None:
                    for i, row in enumerate(r):
                        j = want.get(int(row))
                        if j is not None:
                            rec_w[hd, j, :span] = w[i]
        concat = out.transpose(1, 0, 2).reshape(len(rows), sp.n_head * sp.d_head)
        attn = self._proj(concat, p + "o")  # (rows, d_model)

        rec = None
        if qpos is not None:
            sel = np.arange(len(qpos)) if last_only else qpos
            rec = LayerRecord(layer=l, weights=rec_w, head_out=out[:, sel].copy(), values=v.copy(),
                              attn_out=attn[sel].copy())
        if last_only:
            return x, rec

        # ---- residual + feed-forward
        if sp.arch == "llama":
            x = x + attn
            h2 = _rms_norm(x, self.tensor(p + "ffn_norm"), sp.norm_eps)
            x = x + (_silu(h2 @ self.tensor(p + "gate").T) * (h2 @ self.tensor(p + "up").T)) @ self.tensor(p + "down").T
        else:
            x = _layer_norm(x + attn, self.tensor(p + "attn_norm.w"), self.tensor(p + "attn_norm.b"), sp.norm_eps)
            ff = self._proj(_gelu(self._proj(x, p + "up")), p + "down")
            x = _layer_norm(x + ff, self.tensor(p + "ffn_norm.w"), self.tensor(p + "ffn_norm.b"), sp.norm_eps)
        return np.ascontiguousarray(x, dtype=np.float32), rec
