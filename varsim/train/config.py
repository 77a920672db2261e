"""Training configuration: one validated, JSON-serializable record per run.

A run is a pure function of its :class:`TrainConfig` (and the library versions): the initialization comes from
``seed``, the batch of step k from ``child_generator(data_seed, k)``, so two runs that differ only in model options
(say ``norm``) but share ``data_seed`` see identical batches, which is what paired comparisons need.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

from varsim._common.validate import MAX_COUNT, MAX_SEED, check_choice, check_fields, check_int, check_real
from varsim.nn.model import ModelConfig
from varsim.nn.optim import OPTIMIZERS
from varsim.tasks import check_set_size, get_task

__all__ = ["TrainConfig", "SCHEDULES"]

SCHEDULES = ("cosine", "constant")

# Fields that may change between an interrupted run and its resumption: they do not affect the numbers.
RESUME_FREE_FIELDS = ("checkpoint_every", "keep_checkpoints")


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Everything that determines a training run (validated on construction: ValueError names the field).

    Parameters
    ----------
    task : str
        A registered task (:mod:`varsim.tasks`: ``"argmax"``, ``"dictionary"``).
    model : ModelConfig or dict, optional
        The model, or a dict of the fields of :class:`~varsim.nn.model.ModelConfig` (its ``task`` defaults to this
        config's ``task`` and must agree with it).
    optimizer : {"adamw", "adam"}
        The optimizer.
    lr : float
        The peak learning rate.
    weight_decay : float
        Decoupled weight decay (AdamW).
    clip_norm : float or None
        Gradient clipping by global norm; None disables it.
    warmup : int or None
        Updates of linear warmup (None: 5% of ``steps``).
    schedule : {"cosine", "constant"}
        After the warmup: cosine decay to ``min_lr_ratio * lr`` at ``steps``, or constant.
    min_lr_ratio : float
        The final learning rate of the cosine schedule, relative to ``lr`` (in [0, 1]).
    steps : int
        Updates.
    batch_size : int
        Examples per update.
    train_min, train_max : int
        Training set sizes are uniform on ``train_min..train_max`` (``train_min=None``: the task's
        ``default_train_range``).
    seed : int
        Seed of the model's initialization.
    data_seed : int or None
        Seed of the training batches (None: ``seed``).
    checkpoint_every, log_every : int
        Updates between checkpoints and between lines of ``metrics.jsonl``.
    keep_checkpoints : int
        How many of the latest checkpoints to keep.
    shards : int
        Each batch is cut into this many shards whose forward and backward passes run on their own threads (at
        most ``batch_size``; :mod:`varsim.nn.shards`), the gradients summed in shard order: the numbers depend on
        ``shards`` but never on the thread count (``train(threads=...)``). 1 (the default) is the unsplit pass, bit
        for bit the runs recorded before shards existed; left out of :meth:`to_dict` at 1, so their configs read
        the same.

    See Also
    --------
    train : runs it.
    training_batch : the batch of any update, recomputed.

    Examples
    --------
    >>> from varsim.train import TrainConfig
    >>> cfg = TrainConfig(task="argmax", model={"norm": "layernorm"}, steps=1000, lr=5e-3)
    >>> cfg.model.norm, cfg.train_range
    ('layernorm', (1, 16))
    """

    task: str
    model: Any = None
    optimizer: str = "adamw"
    lr: float = 1e-3
    weight_decay: float = 0.01
    clip_norm: float | None = 1.0
    warmup: int | None = None
    schedule: str = "cosine"
    min_lr_ratio: float = 0.0
    steps: int = 2000
    batch_size: int = 64
    train_min: int | None = None
    train_max: int = 16
    seed: int = 0
    data_seed: int | None = None
    checkpoint_every: int = 500
    log_every: int = 50
    keep_checkpoints: int = 2
    shards: int = 1

    def __post_init__(self):
        set_ = lambda k, v: object.__setattr__(self, k, v)  # noqa: E731  (frozen dataclass)
        get_task(self.task)  # unknown names: ValueError listing the registered tasks
        set_("model", _coerce_model(self.model, self.task))
        check_choice("optimizer", self.optimizer, OPTIMIZERS)
        set_("lr", check_real("lr", self.lr, minimum=0.0, strict_min=True))
        set_("weight_decay", check_real("weight_decay", self.weight_decay, minimum=0.0))
        if self.clip_norm is not None:
            set_("clip_norm", check_real("clip_norm", self.clip_norm, minimum=0.0, strict_min=True))
        check_choice("schedule", self.schedule, SCHEDULES)
        set_("min_lr_ratio", check_real("min_lr_ratio", self.min_lr_ratio, minimum=0.0, maximum=1.0))
        set_("steps", check_int("steps", self.steps, minimum=1, maximum=MAX_COUNT))
        if self.warmup is not None:
            set_("warmup", check_int("warmup", self.warmup, minimum=0, maximum=self.steps))
        set_("batch_size", check_int("batch_size", self.batch_size, minimum=1, maximum=MAX_COUNT))
        set_("train_max", check_int("train_max", self.train_max, minimum=1, maximum=MAX_COUNT))
        if self.train_min is not None:
            set_("train_min", check_int("train_min", self.train_min, minimum=1, maximum=self.train_max))
        lo, hi = self.train_range
        if lo > hi:
            raise ValueError(f"train_max ({hi}) must be >= the task's minimum training size {lo} (train_min)")
        check_set_size(self.task, (lo, hi), name="train_max", **self.model.vocab)
        set_("seed", check_int("seed", self.seed, minimum=0, maximum=MAX_SEED))
        if self.data_seed is not None:
            set_("data_seed", check_int("data_seed", self.data_seed, minimum=0, maximum=MAX_SEED))
        set_("checkpoint_every", check_int("checkpoint_every", self.checkpoint_every, minimum=1, maximum=MAX_COUNT))
        set_("log_every", check_int("log_every", self.log_every, minimum=1, maximum=MAX_COUNT))
        set_("keep_checkpoints", check_int("keep_checkpoints", self.keep_checkpoints, minimum=1, maximum=MAX_COUNT))
        set_("shards", check_int("shards", self.shards, minimum=1, maximum=self.batch_size))

    # Derived values -------------------------------------------------------------------------------------------
    @property
    def train_range(self) -> tuple[int, int]:
        lo = get_task(self.task).default_train_range[0] if self.train_min is None else self.train_min
        return lo, self.train_max

    @property
    def effective_data_seed(self) -> int:
        return self.seed if self.data_seed is None else self.data_seed

    @property
    def effective_warmup(self) -> int:
        return int(math.ceil(0.05 * self.steps)) if self.warmup is None else self.warmup

    def optimizer_kwargs(self) -> dict:
        """Keyword arguments for :func:`varsim.nn.optim.make_optimizer`."""
        return {
            "lr": self.lr,
            "weight_decay": self.weight_decay,
            "clip_norm": self.clip_norm,
            "warmup": self.effective_warmup,
            "total_steps": self.steps if self.schedule == "cosine" else None,
            "min_lr_ratio": self.min_lr_ratio,
        }

    def task_kwargs(self) -> dict:
        """Keyword arguments for :func:`varsim.tasks.make_batch`: the task's vocabulary sizes, from the model's."""
        return self.model.vocab

    # Serialization --------------------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["model"] = self.model.to_dict()
        if self.shards == 1:  # the default: configs recorded before shards existed read the same
            del out["shards"]
        return out

    @classmethod
    def from_dict(cls, d: dict) -> "TrainConfig":
        return cls(**check_fields("config", d, cls, required=("task",)))

    @classmethod
    def from_dict_in(cls, d, where: str) -> "TrainConfig":
        """:meth:`from_dict` of a config read from ``where`` (a file): its errors name the file."""
        try:
            return cls.from_dict(d)
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None

    @classmethod
    def from_file(cls, path) -> "TrainConfig":
        from varsim._common.jsonio import read_json

        return cls.from_dict_in(read_json(path, what="config file"), f"config file {str(Path(path))!r}")

    @classmethod
    def coerce(cls, config) -> "TrainConfig":
        """A TrainConfig from a TrainConfig, a dict or a JSON file path."""
        if isinstance(config, cls):
            return config
        if isinstance(config, dict):
            return cls.from_dict(config)
        if isinstance(config, (str, Path)):
            return cls.from_file(config)
        raise ValueError(f"config must be a TrainConfig, a dict or a JSON file path, got {type(config).__name__}")

    def replace(self, **changes) -> "TrainConfig":
        return dataclasses.replace(self, **changes)

    def differences(self, other: "TrainConfig", *, ignore=RESUME_FREE_FIELDS) -> dict:
        """``{field: (self value, other value)}`` for the fields (model fields as ``model.x``) that differ; every
        field with its value, also those :meth:`to_dict` leaves out at their defaults (``architecture``), and a
        parameter dict as a whole (``model.attention_params``)."""
        a, b = (_flatten({**c.to_dict(), "model": dataclasses.asdict(c.model)}) for c in (self, other))
        skip = set(ignore)
        return {k: (a.get(k), b.get(k)) for k in sorted(set(a) | set(b)) if k not in skip and a.get(k) != b.get(k)}


def _flatten(d: dict) -> dict:
    """The fields of a config dict with the model's as ``model.x`` (its parameter dicts kept whole)."""
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update({f"{k}.{kk}": vv for kk, vv in v.items()})
        else:
            out[k] = v
    return out


def _coerce_model(model, task: str) -> ModelConfig:
    if model is None:
        model = {}
    if isinstance(model, ModelConfig):
        if model.task != task:
            raise ValueError(f"model.task {model.task!r} differs from task {task!r}")
        return model
    if not isinstance(model, dict):
        raise ValueError(f"model must be a ModelConfig or a dict of its fields, got {type(model).__name__}")
    d = dict(model)
    if d.setdefault("task", task) != task:
        raise ValueError(f"model.task {d['task']!r} differs from task {task!r}")
    return ModelConfig.from_dict(d)
