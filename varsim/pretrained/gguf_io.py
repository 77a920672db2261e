"""Load a Llama-architecture GGUF file (e.g. SmolLM2) into a :class:`~varsim.pretrained.model.PretrainedModel`.

Weights are dequantized with the ``gguf`` package (NumPy) lazily, one tensor at a time; the token embedding is
dequantized row by row for the tokens in use (the full matrix only when next-token logits are requested).

Row layout: llama.cpp's converter permutes the rows of ``attn_q``/``attn_k`` within each head so that RoPE rotates
adjacent dimension pairs (2i, 2i+1) instead of Hugging Face's (i, i + d/2). We keep the GGUF rows as stored and use
the adjacent pairing (``rope_pairing="adjacent"``); the attention logits are then those of the original model.

Tokenizer: a byte-level BPE built with the ``tokenizers`` library from ``tokenizer.ggml.tokens`` and
``tokenizer.ggml.merges``; the pre-tokenizer follows ``tokenizer.ggml.pre`` (registry :data:`PRE_TOKENIZERS`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ._deps import require
from .model import ModelSpec, PretrainedModel

__all__ = ["load_gguf", "PRE_TOKENIZERS", "GGUF_MAGIC"]

GGUF_MAGIC = b"GGUF"

# internal name -> GGUF tensor name (per layer names get the layer index)
_GLOBAL = {"embed": "token_embd.weight", "out_norm": "output_norm.weight", "lm_head": "output.weight"}
_LAYER = {
    "attn_norm": "attn_norm.weight", "q": "attn_q.weight", "k": "attn_k.weight", "v": "attn_v.weight",
    "o": "attn_output.weight", "ffn_norm": "ffn_norm.weight", "gate": "ffn_gate.weight", "up": "ffn_up.weight",
    "down": "ffn_down.weight",
}


def _pre_gpt2(pre):
    return pre.ByteLevel(add_prefix_space=False, use_regex=True)


def _pre_smollm(pre):
    # digits split one by one, then the GPT-2 byte-level split (llama.cpp's "smollm" pre-tokenizer)
    return pre.Sequence([pre.Digits(individual_digits=True), pre.ByteLevel(add_prefix_space=False, use_regex=True)])


# tokenizer.ggml.pre -> builder of the `tokenizers` pre-tokenizer
PRE_TOKENIZERS = {"gpt2": _pre_gpt2, "smollm": _pre_smollm, "starcoder": _pre_smollm}


def _field(reader, key, default=None):
    f = reader.fields.get(key)
    if f is None:
        return default
    return f.contents()


def _build_tokenizer(reader, path: Path):
    tk = require("tokenizers", "building the GGUF tokenizer")
    model_kind = _field(reader, "tokenizer.ggml.model")
    if model_kind != "gpt2":
        raise ValueError(f"model {str(path)!r}: tokenizer type {model_kind!r} is not supported "
                         "(only byte-level BPE 'gpt2')")
    pre_kind = _field(reader, "tokenizer.ggml.pre", "gpt2")
    if pre_kind not in PRE_TOKENIZERS:
        raise ValueError(f"model {str(path)!r}: pre-tokenizer {pre_kind!r} is not supported; "
                         f"expected one of {sorted(PRE_TOKENIZERS)}")
    tokens = list(_field(reader, "tokenizer.ggml.tokens"))
    merges = [tuple(m.split(" ", 1)) for m in _field(reader, "tokenizer.ggml.merges")]
    types = _field(reader, "tokenizer.ggml.token_type") or [1] * len(tokens)
    vocab = {t: i for i, t in enumerate(tokens)}
    tok = tk.Tokenizer(tk.models.BPE(vocab=vocab, merges=merges, fuse_unk=False))
    tok.pre_tokenizer = PRE_TOKENIZERS[pre_kind](tk.pre_tokenizers)
    tok.decoder = tk.decoders.ByteLevel()
    specials = [t for t, ty in zip(tokens, types) if int(ty) == 3]  # control tokens are never split
    if specials:
        tok.add_special_tokens(specials)
    return tok


class _Truncated(ValueError):
    pass


def _checked_reader(gguf):
    """``gguf.GGUFReader`` that first checks every tensor's data lies inside the file: the reader itself maps a
    truncated file's tensors to short arrays and fails with "cannot reshape array of size ..."."""

    class Reader(gguf.GGUFReader):
        def _build_tensors(self, start_offs, fields):
            size = len(self.data)
            for field in fields:
                _, name, _, dims, raw_dtype, offset = field.parts
                block, type_size = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType(int(raw_dtype[0]))]
                end = int(start_offs) + int(offset[0]) + int(np.prod(dims, dtype=object)) * type_size // block
                if end > size:
                    raise _Truncated(f"tensor {bytes(name).decode('utf-8', 'replace')!r} ends at byte {end}, the "
                                     f"file has {size} bytes")
            super()._build_tensors(start_offs, fields)

    return Reader


def load_gguf(path) -> PretrainedModel:
    """Open a GGUF file (memory-mapped) and return the model; raises ``ValueError`` naming ``model`` on a file that
    is not GGUF or an architecture other than ``llama``."""
    gguf = require("gguf", "reading GGUF models")
    path = Path(path)
    with open(path, "rb") as fh:
        if fh.read(4) != GGUF_MAGIC:
            raise ValueError(f"model {str(path)!r} is not a GGUF file")
    try:
        reader = _checked_reader(gguf)(str(path), "r")
    except _Truncated as exc:
        raise ValueError(f"model {str(path)!r} is truncated: {exc} (an interrupted download? fetch it again)") from None
    except Exception as exc:  # a damaged header or tensor table
        raise ValueError(f"model {str(path)!r}: cannot read GGUF, the file is truncated or corrupt "
                         f"({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})") from None
    arch = _field(reader, "general.architecture")
    if arch != "llama":
        raise ValueError(f"model {str(path)!r}: unsupported GGUF architecture {arch!r} (supported: 'llama')")

    def kv(name, default=None):
        return _field(reader, f"llama.{name}", default)

    d_model = int(kv("embedding_length"))
    n_head = int(kv("attention.head_count"))
    n_kv = int(kv("attention.head_count_kv", n_head))
    tensors = {t.name: t for t in reader.tensors}
    d_head = int(kv("rope.dimension_count", d_model // n_head))
    vocab = int(kv("vocab_size", 0) or tensors["token_embd.weight"].shape[1])
    spec = ModelSpec(
        arch="llama", n_layer=int(kv("block_count")), d_model=d_model, n_head=n_head, n_kv_head=n_kv,
        d_head=d_head, d_ff=int(kv("feed_forward_length")), vocab_size=vocab,
        context_length=int(kv("context_length")), norm_eps=float(kv("attention.layer_norm_rms_epsilon")),
        causal=True, rope_base=float(kv("rope.freq_base", 10000.0)), rope_pairing="adjacent",
        name=str(_field(reader, "general.name", path.stem)),
    )
    if d_head * n_head != d_model:
        raise ValueError(f"model {str(path)!r}: head_count * rope dimension != embedding_length (unsupported)")

    def gguf_name(name: str) -> str:
        if name in _GLOBAL:
            g = _GLOBAL[name]
            return "token_embd.weight" if g == "output.weight" and g not in tensors else g  # tied head
        layer, part = name.split(".", 1)
        return f"blk.{int(layer[1:])}.{_LAYER[part]}"

    def dequant(t, rows=None) -> np.ndarray:
        data = t.data if rows is None else t.data[rows]
        if t.tensor_type in (gguf.GGMLQuantizationType.F32, gguf.GGMLQuantizationType.F16):
            return np.asarray(data, dtype=np.float32)
        return gguf.quants.dequantize(np.asarray(data), t.tensor_type).astype(np.float32, copy=False)

    def tensor_fn(name: str) -> np.ndarray:
        gname = gguf_name(name)
        if gname not in tensors:
            raise ValueError(f"model {str(path)!r}: tensor {gname!r} missing")
        arr = dequant(tensors[gname])
        n_el = int(np.prod(tensors[gname].shape))
        if arr.size != n_el:
            raise ValueError(f"model {str(path)!r}: tensor {gname!r} has the wrong size")
        # GGUF shapes list the fastest axis first: (in, out) -> NumPy (out, in)
        return arr.reshape(tuple(int(s) for s in reversed(tensors[gname].shape)))

    emb = tensors["token_embd.weight"]

    def embed_rows(ids: np.ndarray) -> np.ndarray:
        uniq, inv = np.unique(ids, return_inverse=True)
        rows = dequant(emb, uniq).reshape(len(uniq), d_model)
        return rows[inv]

    bos = _field(reader, "tokenizer.ggml.bos_token_id")
    special = {} if bos is None else {"bos": int(bos)}
    tokenizer = _build_tokenizer(reader, path) if "tokenizer.ggml.tokens" in reader.fields else None
    return PretrainedModel(spec, tensor_fn, embed_rows=embed_rows, tokenizer=tokenizer, special=special,
                           source={"format": "gguf", "path": str(path)})
