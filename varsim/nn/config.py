"""``ModelConfig``: the sizes and variants of a model, validated on construction (ValueError names the field).

The task (:mod:`varsim.tasks`) sets the model's input features and output classes; the architecture
(:mod:`varsim.nn.architectures`) says which model the config builds and what it costs.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from varsim._common.validate import MAX_COUNT, check_choice, check_fields, check_int
from varsim.tasks import get_key_encoding, get_task
from varsim.tasks.keys import binary_key_bits

from .architectures import get_architecture
from .layers import ACTIVATIONS
from .norms import get_norm
from .positions import get_positions
from .weightmaps import AttentionSpec, make_attention

__all__ = ["ModelConfig", "DTYPES", "DEFAULT_ARCHITECTURE", "MAX_MLP_DEPTH"]

#: the deepest item MLP or predictor MLP (layers): far beyond any useful one, and small enough that the parameter
#: table (one row per layer) is built at once; a larger value is a typo, refused naming the field
MAX_MLP_DEPTH = 4096

DTYPES = ("float32", "float64")
#: the architecture of a config that does not name one (every config saved before the field existed)
DEFAULT_ARCHITECTURE = "set_transformer"
#: the sequence-model fields and their defaults (left out of ``to_dict`` at these values)
_SEQUENCE_DEFAULTS = {"positions": "none", "max_positions": 4096, "tie_head": False}


@dataclass(frozen=True)
class ModelConfig:
    """Sizes and variants of a model (validated on construction; ValueError names the field).

    ``architecture`` names an entry of :data:`varsim.nn.architectures.ARCHITECTURES`; ``task`` one of
    :mod:`varsim.tasks`, whose vocabulary sizes (``n_classes``; ``key_vocab``, ``value_vocab``) and key encoding
    (``key_encoding``, :mod:`varsim.tasks.keys`) set the input features and output classes.
    """

    task: str
    d_model: int = 64
    n_heads: int = 4
    n_blocks: int = 1
    norm: str = "none"
    residual: bool = True
    pre_ln: bool = False
    item_mlp_depth: int = 2
    predictor_depth: int = 2
    d_hidden: int | None = None  # default 2 * d_model
    n_classes: int = 10
    key_vocab: int = 16384
    value_vocab: int = 16
    key_encoding: str = "binary"
    dtype: str = "float32"
    activation: str = "relu"
    # attention weight map (a name of varsim.variants.WEIGHT_MAPS, with its parameters; ssmax's s is the initial value
    # of the learned per-head scale) and the output normalization acting on each head ("none" or "ipr_norm"), in
    # every block; configs without these fields load as plain softmax.
    attention: str = "softmax"
    attention_params: dict = field(default_factory=dict)
    attention_output: str = "none"
    attention_output_params: dict = field(default_factory=dict)
    architecture: str = DEFAULT_ARCHITECTURE
    # sequence models only (an architecture with ``sequence``, e.g. the causal decoder): the positional encoding (a
    # name of varsim.nn.positions.POSITIONS), the size of a learned position table, and whether the output head
    # reuses the embedding rows of the task's output one-hot (tied) or has its own weights
    positions: str = "none"
    max_positions: int = 4096
    tie_head: bool = False
    # the fused path (varsim.nn.fused): attention's softmax, layer norm and ReLU's backward (with the bias gradient)
    # in Numba kernels; opt-in because its float32 bits differ from the default path; left out of to_dict when False
    fused: bool = False

    def __post_init__(self):
        get_task(self.task)  # unknown names: ValueError listing the registered tasks
        arch = get_architecture(self.architecture)
        get_positions(self.positions)  # unknown names: ValueError listing the registered encodings
        get_norm(self.norm)  # unknown names: ValueError listing the registered normalizations
        get_key_encoding(self.key_encoding)
        check_choice("dtype", self.dtype, DTYPES)
        check_choice("activation", self.activation, ACTIVATIONS)
        ints = {
            "d_model": 1,
            "n_heads": 1,
            "n_blocks": 1,
            "item_mlp_depth": 1,
            "predictor_depth": 1,
            "n_classes": 2,
            "key_vocab": 1,
            "value_vocab": 2,
            "max_positions": 1,
        }
        for name, minimum in ints.items():
            maximum = MAX_MLP_DEPTH if name in ("item_mlp_depth", "predictor_depth") else MAX_COUNT
            object.__setattr__(self, name, check_int(name, getattr(self, name), minimum=minimum, maximum=maximum))
        if self.d_hidden is not None:
            object.__setattr__(self, "d_hidden", check_int("d_hidden", self.d_hidden, minimum=1, maximum=MAX_COUNT))
        if self.d_model % self.n_heads:
            raise ValueError(f"n_heads ({self.n_heads}) must divide d_model ({self.d_model})")
        for name in ("residual", "pre_ln", "tie_head", "fused"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise ValueError(f"{name} must be a bool, got {getattr(self, name)!r}")
            object.__setattr__(self, name, bool(getattr(self, name)))
        if not arch.sequence:
            used = [f"{k}={getattr(self, k)!r}" for k, v in _SEQUENCE_DEFAULTS.items() if getattr(self, k) != v]
            if used:
                raise ValueError(f"architecture {self.architecture!r} has no token order: {', '.join(used)} needs a "
                                 "sequence architecture (e.g. 'decoder')")
            if self.task_spec.item_tokens != 1:
                raise ValueError(f"task {self.task!r} writes {self.task_spec.item_tokens} tokens per item, which "
                                 f"architecture {self.architecture!r} cannot read (use a sequence architecture)")
        if self.tie_head and self.task_spec.output_feature_offset(self.vocab, self.key_encoding) is None:
            raise ValueError(f"tie_head: task {self.task!r} has no one-hot of its output classes among its features")
        for name in ("attention_params", "attention_output_params"):
            if getattr(self, name) is None:
                object.__setattr__(self, name, {})
            if not isinstance(getattr(self, name), dict):
                raise ValueError(f"{name} must be a dict, got {type(getattr(self, name)).__name__}")
        spec = make_attention(self.attention, self.attention_params, self.attention_output,
                              self.attention_output_params)  # ValueError naming the map or parameter
        object.__setattr__(self, "attention_params", dict(spec.params))  # validated, defaults filled in
        object.__setattr__(self, "attention_output_params", dict(spec.output_params))
        object.__setattr__(self, "_attention_spec", spec)

    def __hash__(self):  # the parameter dicts are not hashable: hash their sorted items
        items = [(k, tuple(sorted(v.items())) if isinstance(v, dict) else v) for k, v in self.to_dict().items()]
        return hash(tuple(items))

    @property
    def attention_spec(self) -> AttentionSpec:
        """The validated weight map and output normalization (:class:`varsim.nn.weightmaps.AttentionSpec`)."""
        return self._attention_spec

    @property
    def task_spec(self):
        """The registered task (:class:`varsim.tasks.Task`)."""
        return get_task(self.task)

    @property
    def vocab(self) -> dict:
        """The task's vocabulary sizes, read from this config (``{"n_classes": 10}`` for argmax)."""
        return self.task_spec.vocab_of(self)

    @property
    def n_outputs(self) -> int:
        """Number of classes the model predicts: the task's output vocabulary (argmax: ``n_classes``, dictionary:
        ``value_vocab``)."""
        return self.task_spec.n_outputs(self.vocab)

    @property
    def n_features(self) -> int:
        """Width of one token's input features (the task's, with this config's key encoding)."""
        return self.task_spec.n_features(self.vocab, self.key_encoding)

    @property
    def hidden(self) -> int:
        """The MLP hidden width F actually used."""
        return self.d_hidden if self.d_hidden is not None else 2 * self.d_model

    @property
    def key_bits(self) -> int:
        """Number of +-1 features of the binary key code: ceil(log2 key_vocab), at least 1."""
        return binary_key_bits(self.key_vocab)

    def to_dict(self) -> dict:
        """All fields, except those at the defaults of configs written before they existed (``attention="softmax"``,
        ``attention_output="none"``, the default ``architecture``, the sequence-model fields, ``fused=False``), so
        that records comparing config dicts (the reproduction's run specs) stay valid. ``from_dict`` fills them in."""
        d = dataclasses.asdict(self)
        if d["attention"] == "softmax":
            del d["attention"], d["attention_params"]
        if d["attention_output"] == "none":
            del d["attention_output"], d["attention_output_params"]
        if d["architecture"] == DEFAULT_ARCHITECTURE:
            del d["architecture"]
        for k, v in _SEQUENCE_DEFAULTS.items():
            if d[k] == v:
                del d[k]
        if not d["fused"]:  # the default path: configs recorded before the field existed read the same
            del d["fused"]
        return d

    @classmethod
    def from_dict(cls, d) -> "ModelConfig":
        return cls(**check_fields("model config", d, cls, required=("task",)))
