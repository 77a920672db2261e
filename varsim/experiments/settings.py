"""The reproduction's grid and settings: which runs exist, and the full spec of each.

Grid: task (argmax retrieval, dictionary lookup) x architecture (``GRID_ARCHITECTURES``: residual around attention on /
off) x normalization after attention (none, layernorm, standardize, layernorm_per_head by default) x seed.

Pairing: seed index ``s`` fixes the initialization seed, the training-data stream, the test sets and the probe sets
of every normalization and architecture (all derived from ``root_seed`` and ``s`` only), so "norm X minus none"
is a paired difference per seed.

Variant axis (:mod:`varsim.experiments.variant_axis`, its fields and their validation, the remedies kind's checks
asked through :data:`varsim.experiments.grid_kind.KIND_CHECKS` like every kind's; off by default: the paper
grid's ``settings.json``, specs and records carry none of its keys, so the committed records stay valid): trained
attention variants, inference-only maps, depths, a selected lr grid, recipes, key encodings, long test lengths and a
pre-registered primary endpoint.
"""

from __future__ import annotations

import dataclasses
import json
from typing import NamedTuple

from varsim._common.validate import check_choice, check_fields, check_int, check_int_grid, check_real
from varsim.experiments.grid_kind import check_kind_settings
from varsim.experiments.variant_axis import BASELINE_ATTENTION, REMEDY_FIELDS, REPLICATE_KEY
from varsim.tasks import TASK_REGISTRY

__all__ = ["ReproductionSettings", "GRID_ARCHITECTURES", "DEFAULT_NORMS", "BASELINE_NORM", "BASELINE_ATTENTION",
           "REMEDY_FIELDS", "GROUP_KEYS", "REPLICATE_KEY", "Cell", "run_id",
           "job_specs", "selection_specs", "cells", "pow2_range"]

#: the grid's architecture labels (not the model registry ``varsim.nn.architectures.ARCHITECTURES``) -> the
#: :class:`varsim.nn.model.ModelConfig` fields each sets (its ``architecture``,
#: a model of :mod:`varsim.nn.architectures`, when not the set transformer, and that model's switches): the set
#: transformer with or without the residual around attention, and the causal decoder with each positional encoding
#: of :mod:`varsim.nn.positions` (the decoder grid, :mod:`varsim.experiments.decoder_grid`)
GRID_ARCHITECTURES = {"residual": {"residual": True}, "no_residual": {"residual": False},
                      **{f"decoder_{p}": {"architecture": "decoder", "positions": p}
                         for p in ("none", "rope", "alibi", "learned")}}


#: the paper grid's architectures (the default of ``architectures``)
PAPER_ARCHITECTURES = ("residual", "no_residual")
#: the tasks of the paper's grid (any registered task of varsim.tasks may be named in ``tasks``)
PAPER_TASKS = ("argmax", "dictionary")
DEFAULT_NORMS = ("none", "layernorm", "standardize", "layernorm_per_head")
BASELINE_NORM = "none"
# Work keys under root_seed for each seed index s: (s, key) -> one independent stream per purpose.
_SEED_KEYS = {"init": 0, "data": 1, "eval": 2, "in_distribution": 3, "probe": 4, "validation": 5,
              "init_replicate": 6, "data_replicate": 7}


def pow2_range(lo: int, hi: int) -> tuple[int, ...]:
    return tuple(2**k for k in range(lo, hi + 1))


@dataclasses.dataclass(frozen=True)
class ReproductionSettings:
    """Everything that determines the numbers of a reproduction (stored as ``settings.json``).

    ``model`` and ``train`` are overrides of :class:`varsim.nn.model.ModelConfig` and
    :class:`varsim.train.TrainConfig` fields shared by every run (the grid sets ``task``, ``norm``, the fields of its
    ``architectures`` (``residual``), ``seed`` and ``data_seed``). A run "learned" when its accuracy at
    N = ``train.train_max`` on ``id_examples`` fresh examples is at least ``learned_threshold``.
    """

    tasks: tuple = PAPER_TASKS
    architectures: tuple = PAPER_ARCHITECTURES
    norms: tuple = DEFAULT_NORMS
    seeds: int = 6
    root_seed: int = 0
    model: dict = dataclasses.field(default_factory=dict)
    train: dict = dataclasses.field(default_factory=dict)
    eval_lengths: tuple = pow2_range(4, 14)
    eval_examples: int = 1024
    eval_batch_size: int = 64
    id_examples: int = 2048
    learned_threshold: float = 0.9
    probe_lengths: tuple = pow2_range(4, 14)
    probe_sets: int = 256
    hist_lengths: tuple = (16, 256, 4096)
    probe_max_items: int = 1 << 18
    # remedies axis (REMEDY_FIELDS): empty = the paper reproduction
    attentions: dict = dataclasses.field(default_factory=dict)
    inference_attentions: dict = dataclasses.field(default_factory=dict)
    depths: tuple = ()
    lr_grid: tuple = ()
    lr_select_seeds: int = 2
    validation_lengths: tuple = (4, 8, 16)
    validation_examples: int = 512
    recipes: dict = dataclasses.field(default_factory=dict)
    key_encodings: tuple = ()
    eval_long: dict = dataclasses.field(default_factory=dict)
    primary: dict = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        set_ = lambda k, v: object.__setattr__(self, k, v)  # noqa: E731  (frozen dataclass)

        def names(field, allowed):
            values = getattr(self, field)
            if isinstance(values, str) or not values:
                raise ValueError(f"{field} must be a non-empty list of names, got {values!r}")
            out = tuple(check_choice(field, v, allowed) for v in values)
            if len(set(out)) != len(out):
                raise ValueError(f"{field} has duplicates: {list(out)}")
            return out

        from varsim.nn.norms import NORMS

        set_("tasks", names("tasks", TASK_REGISTRY))
        set_("architectures", names("architectures", GRID_ARCHITECTURES))
        set_("norms", names("norms", NORMS))
        set_("seeds", check_int("seeds", self.seeds, minimum=1))
        set_("root_seed", check_int("root_seed", self.root_seed, minimum=0))
        for field in ("model", "train"):
            if not isinstance(getattr(self, field), dict):
                raise ValueError(f"{field} must be a dict of overrides, got {type(getattr(self, field)).__name__}")
            set_(field, dict(getattr(self, field)))
        fixed = ({"task", "norm"} | {k for a in self.architectures for k in GRID_ARCHITECTURES[a]}) & set(self.model)
        fixed |= {"task", "model", "seed", "data_seed"} & set(self.train)
        if fixed:
            raise ValueError(f"model/train overrides may not set {sorted(fixed)}: the grid sets them")
        for field in ("eval_lengths", "probe_lengths"):
            grid = tuple(int(v) for v in check_int_grid(field, getattr(self, field)))
            if any(b <= a for a, b in zip(grid, grid[1:])):
                raise ValueError(f"{field} must be strictly increasing, got {list(grid)}")
            set_(field, grid)
        set_("hist_lengths", tuple(int(v) for v in check_int_grid("hist_lengths", self.hist_lengths)))
        if not set(self.hist_lengths) <= set(self.probe_lengths):
            raise ValueError(f"hist_lengths {list(self.hist_lengths)} must be among probe_lengths")
        for field in ("eval_examples", "eval_batch_size", "id_examples", "probe_max_items"):
            set_(field, check_int(field, getattr(self, field), minimum=1))
        set_("probe_sets", check_int("probe_sets", self.probe_sets, minimum=2))
        set_("learned_threshold", check_real("learned_threshold", self.learned_threshold, minimum=0.0, maximum=1.0))
        check_kind_settings(self, set_)  # each grid kind's own checks, from its registry
        for cell in cells(self):  # build one config per cell now, so bad overrides fail before any work
            self.train_config(cell.task, cell.norm, cell.architecture, 0, attention=cell.attention, depth=cell.depth,
                              recipe=cell.recipe, encoding=cell.encoding)

    @property
    def remedies(self) -> bool:
        """True when any remedies field differs from its default (the grid has the variant axis)."""
        return any(getattr(self, k) != (tuple(v) if isinstance(v, tuple) else v) for k, v in REMEDY_FIELDS.items())

    @property
    def attention_labels(self) -> tuple:
        """The trained attention labels (``(None,)`` for the paper grid: the model's own attention)."""
        return tuple(self.attentions) or (None,)

    @property
    def depth_values(self) -> tuple:
        """The depths of the grid (``(None,)`` for the paper grid: the model's own ``n_blocks``)."""
        return self.depths or (None,)

    # ---------------------------------------------------------------------------------------------------------
    @classmethod
    def full(cls, *, seeds: int = 6, root_seed: int = 0, **changes) -> "ReproductionSettings":
        """The reported reproduction: 96 runs of 27-32 s of one core each (measured), about 25 min on 2 cores.

        Six seeds, not five: the exact sign-flip test over n seeds cannot go below 2/2**n, and 2/64 < 0.05."""
        base = dict(
            seeds=seeds,
            root_seed=root_seed,
            model={"d_model": 64, "n_heads": 4, "n_blocks": 1},
            train={"optimizer": "adamw", "lr": 1e-3, "weight_decay": 0.01, "clip_norm": 1.0,
                   "steps": 3000, "batch_size": 64, "train_max": 16, "checkpoint_every": 1000,
                   "keep_checkpoints": 1},
        )
        base.update(changes)
        return cls(**base)

    @classmethod
    def quick(cls, *, seeds: int = 2, root_seed: int = 0, **changes) -> "ReproductionSettings":
        """Tiny models, few steps, short lengths, one architecture: the whole grid in well under a minute."""
        base = dict(
            seeds=seeds,
            root_seed=root_seed,
            architectures=("residual",),
            model={"d_model": 16, "n_heads": 2, "d_hidden": 32},
            train={"lr": 3e-3, "steps": 400, "batch_size": 32, "train_max": 16, "checkpoint_every": 200,
                   "keep_checkpoints": 1, "log_every": 50},
            eval_lengths=pow2_range(4, 8),
            eval_examples=128,
            id_examples=256,
            probe_lengths=pow2_range(4, 8),
            probe_sets=64,
            hist_lengths=(16, 256),
        )
        base.update(changes)
        return cls(**base)

    def to_dict(self) -> dict:
        """All fields as on disk (tuples -> lists); the remedies fields only when they differ from their defaults
        (a paper grid's settings carry no remedies key)."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        for k, default in REMEDY_FIELDS.items():
            if out[k] == (tuple(default) if isinstance(default, tuple) else default):
                del out[k]
        return json.loads(json.dumps(out))  # tuples -> lists: the form it has on disk

    @classmethod
    def from_dict(cls, d: dict) -> "ReproductionSettings":
        return cls(**check_fields("settings", d, cls))

    # ---------------------------------------------------------------------------------------------------------
    def seed_for(self, seed_index: int, purpose: str) -> int:
        """The integer seed of ``purpose`` (init, data, eval, in_distribution, probe) for seed index ``s``."""
        from varsim._common.seeding import child_sequence

        return int(child_sequence(self.root_seed, seed_index, _SEED_KEYS[purpose]).generate_state(1)[0])

    def train_config(self, task: str, norm: str, architecture: str, seed_index: int, *, attention=None,
                     depth=None, lr=None, recipe=None, encoding=None):
        """The TrainConfig of one run; ``attention`` (a label of ``attentions``), ``depth``, ``lr``, ``recipe`` (a
        label of ``recipes``) and ``encoding`` (a key encoding) only on the remedies axis (None: the paper grid's
        config, unchanged). A replicate of softmax (``{"replicate": true}``) trains plain softmax from the seed
        index's replicate streams."""
        from varsim.train import TrainConfig

        model = {**self.model, "task": task, "norm": norm, **GRID_ARCHITECTURES[architecture]}
        replicate = False
        if attention is not None:
            overrides = dict(self.attentions[attention])
            replicate = bool(overrides.pop(REPLICATE_KEY, False))
            model.update(overrides)
        if depth is not None:
            model["n_blocks"] = depth
        if encoding is not None:
            model["key_encoding"] = encoding
        train = dict(self.train)
        if recipe is not None:
            train.update(self.recipes[recipe])
        if lr is not None:
            train["lr"] = lr
        elif self.lr_grid:
            train["lr"] = self.lr_grid[0]
        suffix = "_replicate" if replicate else ""
        return TrainConfig(
            **{**train, "task": task, "model": model,
               "seed": self.seed_for(seed_index, "init" + suffix),
               "data_seed": self.seed_for(seed_index, "data" + suffix)}
        )


def run_id(task: str, architecture: str, norm: str, seed_index: int, *, attention=None, depth=None, recipe=None,
           encoding=None) -> str:
    """``task-architecture-norm-s<seed>``; on the remedies axis
    ``task-architecture-norm-attention-d<depth>[-recipe][-encoding]-s<seed>`` (recipe and key encoding when the grid
    has them)."""
    if attention is None and depth is None and recipe is None and encoding is None:
        return f"{task}-{architecture}-{norm}-s{seed_index}"
    extra = "".join(f"-{x}" for x in (recipe, encoding) if x is not None)
    return f"{task}-{architecture}-{norm}-{attention or 'default'}-d{depth or 0}{extra}-s{seed_index}"


class Cell(NamedTuple):
    """One cell of the grid: every factor but the seed (None where the grid does not have the factor)."""

    task: str
    architecture: str
    norm: str
    attention: str | None = None
    depth: int | None = None
    recipe: str | None = None
    encoding: str | None = None

    def run_id(self, seed_index: int) -> str:
        return run_id(self.task, self.architecture, self.norm, seed_index, attention=self.attention,
                      depth=self.depth, recipe=self.recipe, encoding=self.encoding)

    @property
    def group(self) -> tuple:
        """The cell without its attention: the runs a variant is paired with softmax in."""
        return self._replace(attention=None)


#: the fields of a cell's group (:attr:`Cell.group`), as the summaries name them
GROUP_KEYS = tuple(f for f in Cell._fields if f != "attention")


def _encodings(settings: ReproductionSettings, task: str) -> tuple:
    """The key encodings a task runs with: ``key_encodings`` for a task with keys, else ``(None,)``."""
    if settings.key_encodings and TASK_REGISTRY.find(task).key_fields:
        return settings.key_encodings
    return (None,)


def cells(settings: ReproductionSettings) -> list[Cell]:
    """The cells of the grid in run order (attention, depth, recipe and encoding are None on the paper grid)."""
    return [Cell(t, a, n, att, d, r, e) for t in settings.tasks for r in (tuple(settings.recipes) or (None,))
            for e in _encodings(settings, t) for a in settings.architectures for n in settings.norms
            for att in settings.attention_labels for d in settings.depth_values]


def cell_key(cell: Cell) -> str:
    """A cell as a string key of ``selection.json``: its run id without the seed."""
    return cell.run_id(0).rsplit("-s", 1)[0]


def selection_specs(settings: ReproductionSettings) -> list[dict]:
    """The learning-rate selection runs (remedies axis with an ``lr_grid``): every cell x lr x the first
    ``lr_select_seeds`` seeds, trained as the main runs are and scored on in-distribution validation sets only
    (``validation_lengths`` <= the training length, their own seed stream: never the test sets or long N)."""
    if not settings.lr_grid:
        return []
    specs = []
    for cell in cells(settings):
        task, arch, norm, att, depth = cell[:5]
        for i, lr in enumerate(settings.lr_grid):
            for s in range(settings.lr_select_seeds):
                cfg = settings.train_config(task, norm, arch, s, attention=att, depth=depth, lr=lr)
                specs.append({
                    "run_id": f"{cell_key(cell)}-lr{i}-s{s}", "kind": "select", "cell": cell_key(cell),
                    "lr": lr, "seed_index": s, "train_config": cfg.to_dict(),
                    "validation": {"lengths": list(settings.validation_lengths),
                                   "examples": settings.validation_examples,
                                   "batch_size": settings.eval_batch_size,
                                   "seed": settings.seed_for(s, "validation")},
                })
    return json.loads(json.dumps(specs))


def job_specs(settings: ReproductionSettings, selection: dict | None = None) -> list[dict]:
    """One JSON-able spec per run, in a fixed order (task, architecture, norm, [attention, depth,] seed).

    On the remedies axis with an ``lr_grid``, ``selection`` maps each cell key (:func:`cell_key`) to its chosen lr
    (:func:`varsim.experiments.selection.select_lr`); the specs then carry ``attention``, ``depth``, ``lr`` and the
    inference-only maps to apply. The paper grid's specs carry none of these keys.
    """
    if settings.lr_grid and selection is None:
        raise ValueError("selection: the lr of every cell must be selected before the main runs' specs exist")
    specs = []
    for cell in cells(settings):
        task, arch, norm, att, depth = cell[:5]
        lr = selection[cell_key(cell)] if settings.lr_grid else None
        for s in range(settings.seeds):
            cfg = settings.train_config(task, norm, arch, s, attention=att, depth=depth, lr=lr, recipe=cell.recipe,
                                        encoding=cell.encoding)
            extra = {}
            if settings.remedies:
                extra = {"attention": att, "depth": cfg.model.n_blocks, "lr": cfg.lr}
                if cell.recipe is not None:
                    extra["recipe"] = cell.recipe
                if cell.encoding is not None:
                    extra["key_encoding"] = cell.encoding
                if att == BASELINE_ATTENTION and settings.inference_attentions:
                    extra["inference"] = [{"label": k, **{"params": {}, **v}}
                                          for k, v in settings.inference_attentions.items()]
            long = {"long": {"lengths": list(settings.eval_long["lengths"]),
                                  "examples": settings.eval_long["examples"]}} if settings.eval_long else {}
            specs.append({
                "run_id": cell.run_id(s),
                "task": task,
                "architecture": arch,
                "norm": norm,
                **extra,
                "seed_index": s,
                "train_config": cfg.to_dict(),
                "eval": {"lengths": list(settings.eval_lengths), "examples": settings.eval_examples,
                         "batch_size": settings.eval_batch_size, "seed": settings.seed_for(s, "eval"),
                         **long},
                "in_distribution": {"length": cfg.train_max, "examples": settings.id_examples,
                                    "seed": settings.seed_for(s, "in_distribution"),
                                    "threshold": settings.learned_threshold},
                "probe": {"lengths": list(settings.probe_lengths), "sets": settings.probe_sets,
                          "hist_lengths": list(settings.hist_lengths),
                          "max_items": settings.probe_max_items, "seed": settings.seed_for(s, "probe")},
            })
    return json.loads(json.dumps(specs))
