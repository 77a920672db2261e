"""Load a BERT encoder stored as safetensors (+ ``config.json`` + ``tokenizer.json``), e.g. all-MiniLM-L6-v2.

The model directory holds ``model.safetensors``, ``config.json`` (``model_type`` must be ``bert``) and
``tokenizer.json`` (read with the ``tokenizers`` library). Tensor names follow the Hugging Face BERT layout, with or
without a ``bert.`` prefix. Weights are read lazily, one tensor at a time, with ``safetensors.safe_open``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ._deps import require
from .model import ModelSpec, PretrainedModel

__all__ = ["load_safetensors_dir", "is_safetensors"]

_GLOBAL = {
    "embed": "embeddings.word_embeddings.weight", "pos_embed": "embeddings.position_embeddings.weight",
    "type_embed": "embeddings.token_type_embeddings.weight", "embed_norm.w": "embeddings.LayerNorm.weight",
    "embed_norm.b": "embeddings.LayerNorm.bias",
}
_LAYER = {
    "q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
    "o": "attention.output.dense", "up": "intermediate.dense", "down": "output.dense",
    "attn_norm": "attention.output.LayerNorm", "ffn_norm": "output.LayerNorm",
}


def is_safetensors(path) -> bool:
    """True when ``path`` starts like a safetensors file (8-byte little-endian header length, then a JSON object)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(9)
    except OSError:
        return False
    if len(head) < 9:
        return False
    n = int.from_bytes(head[:8], "little")
    return 2 <= n < (1 << 30) and head[8:9] == b"{"


def _hf_name(name: str) -> str:
    if name in _GLOBAL:
        return _GLOBAL[name]
    layer, part = name.split(".", 1)
    i = int(layer[1:])
    if part.endswith(".b"):
        base, kind = part[:-2], "bias"
    elif part.endswith(".w"):
        base, kind = part[:-2], "weight"
    else:
        base, kind = part, "weight"
    return f"encoder.layer.{i}.{_LAYER[base]}.{kind}"


def load_safetensors_dir(path) -> PretrainedModel:
    """``path``: a model directory or its ``model.safetensors`` file (``config.json`` and ``tokenizer.json`` next
    to it). Raises ``ValueError`` naming ``model`` for a file that is not safetensors or a non-BERT config."""
    st = require("safetensors", "reading safetensors models")
    path = Path(path)
    directory = path if path.is_dir() else path.parent
    file = directory / "model.safetensors" if path.is_dir() else path
    if not file.is_file() or not is_safetensors(file):
        raise ValueError(f"model {str(path)!r} is neither a GGUF file nor a safetensors model")
    cfg_path = directory / "config.json"
    if not cfg_path.is_file():
        raise ValueError(f"model {str(path)!r}: config.json missing next to the safetensors file")
    try:
        cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"model {str(path)!r}: cannot read config.json ({exc})") from None
    if cfg.get("model_type") != "bert":
        raise ValueError(f"model {str(path)!r}: unsupported architecture {cfg.get('model_type')!r} (supported: 'bert')")
    if cfg.get("position_embedding_type", "absolute") != "absolute" or cfg.get("hidden_act", "gelu") != "gelu":
        raise ValueError(f"model {str(path)!r}: only absolute positions and exact GELU are supported")
    d_model, n_head = int(cfg["hidden_size"]), int(cfg["num_attention_heads"])
    spec = ModelSpec(
        arch="bert", n_layer=int(cfg["num_hidden_layers"]), d_model=d_model, n_head=n_head, n_kv_head=n_head,
        d_head=d_model // n_head, d_ff=int(cfg["intermediate_size"]), vocab_size=int(cfg["vocab_size"]),
        context_length=int(cfg["max_position_embeddings"]), norm_eps=float(cfg.get("layer_norm_eps", 1e-12)),
        causal=False, name=str(cfg.get("_name_or_path") or directory.name),
    )
    try:
        handle = st.safe_open(str(file), framework="np")
    except Exception as exc:
        raise ValueError(f"model {str(path)!r}: cannot read safetensors ({exc})") from None
    names = set(handle.keys())
    prefix = "bert." if not any(n.startswith("embeddings.") for n in names) else ""

    def tensor_fn(name: str) -> np.ndarray:
        hf = prefix + _hf_name(name)
        if hf not in names:
            raise ValueError(f"model {str(path)!r}: tensor {hf!r} missing")
        return handle.get_tensor(hf).astype(np.float32)

    tok_path = directory / "tokenizer.json"
    tokenizer, special = None, {}
    if tok_path.is_file():
        tk = require("tokenizers", "reading tokenizer.json")
        tokenizer = tk.Tokenizer.from_file(str(tok_path))
        tokenizer.no_truncation()  # tokenizer.json may carry a truncation length (128 for MiniLM); windows are ours
        tokenizer.no_padding()
        for key, tok in (("cls", "[CLS]"), ("sep", "[SEP]")):
            tid = tokenizer.token_to_id(tok)
            if tid is None:
                raise ValueError(f"model {str(path)!r}: tokenizer has no {tok} token")
            special[key] = int(tid)
    return PretrainedModel(spec, tensor_fn, tokenizer=tokenizer, special=special,
                           source={"format": "safetensors", "path": str(file)})
