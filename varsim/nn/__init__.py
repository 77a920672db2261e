"""Two small models with hand-written backprop (NumPy; no autograd), for the synthetic tasks.

Every layer is a ``xxx_forward(...) -> (out, cache)`` / ``xxx_backward(dout, cache) -> grads`` pair (``layers``,
``norms``, ``attention``); ``base`` holds what every model shares (:class:`~varsim.nn.base.Model`: parameters, state
dict, memory check, chunked evaluation); ``model`` assembles the layers into :class:`Transformer` (the set
transformer), configured by :class:`ModelConfig` (``config``), its parameters listed by ``set_params`` and its cost by
``set_cost``; ``decoder`` into :class:`Decoder` (a causal decoder; ``decoder_params``, ``decoder_cost``, its encodings
in ``positions``); ``architectures`` says which model a config builds (:func:`build_model`) and what it costs, for the
training budget; the task (``varsim.tasks``) supplies the input features and output classes; ``optim`` holds Adam and
AdamW; ``weightmaps`` the attention weight maps of ``varsim.variants`` (softmax, ssmax, logn, sigmoid, entmax15,
sparsemax with backward passes; critical, adaptive_temperature, topk for inference) and ipr_norm, chosen with
``ModelConfig(attention=..., attention_params=..., attention_output=...)``. This package never imports ``varsim.sim``.
"""

from . import layers as _layers
from .architectures import ARCHITECTURES, build_model, get_architecture
from .attention import (
    attention_backward,
    attention_forward,
    attention_weights,
    multihead_attention_backward,
    multihead_attention_forward,
    query_attention_backward,
    query_attention_forward,
    self_attention_backward,
    self_attention_forward,
    self_attention_rows,
)
from .decoder import Decoder  # registers the "decoder" architecture
from .layers import *  # noqa: F403 - the elementary layers' forward/backward pairs: every name of layers.__all__
from .model import ModelConfig, Transformer
from .norms import (
    NORMS,
    Normalization,
    get_norm,
    layernorm_backward,
    layernorm_forward,
    layernorm_per_head_backward,
    layernorm_per_head_forward,
    register_norm,
    standardize_backward,
    standardize_forward,
    standardize_per_head_backward,
    standardize_per_head_forward,
)
from .optim import Adam, AdamW
from .weightmaps import (
    INFERENCE_ONLY_MAPS,
    TRAINABLE_MAPS,
    AttentionSpec,
    ipr_norm_backward,
    ipr_norm_forward,
    make_attention,
    weight_map_backward,
    weight_map_forward,
)

__all__ = [
    "ModelConfig",
    "Transformer",
    "Decoder",
    "ARCHITECTURES",
    "build_model",
    "get_architecture",
    "NORMS",
    "Normalization",
    "register_norm",
    "get_norm",
    "Adam",
    "AdamW",
    "layernorm_forward",
    "layernorm_backward",
    "standardize_forward",
    "standardize_backward",
    "layernorm_per_head_forward",
    "layernorm_per_head_backward",
    "standardize_per_head_forward",
    "standardize_per_head_backward",
    "attention_forward",
    "attention_backward",
    "attention_weights",
    "self_attention_forward",
    "self_attention_rows",
    "self_attention_backward",
    "query_attention_forward",
    "query_attention_backward",
    "multihead_attention_forward",
    "multihead_attention_backward",
    "AttentionSpec",
    "make_attention",
    "TRAINABLE_MAPS",
    "INFERENCE_ONLY_MAPS",
    "weight_map_forward",
    "weight_map_backward",
    "ipr_norm_forward",
    "ipr_norm_backward",
]
__all__ += _layers.__all__
