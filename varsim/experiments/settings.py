"""The reproduction's grid and settings: which runs exist, and the full spec of each.

Grid: task (argmax retrieval, dictionary lookup) x architecture (residual around attention on / off) x
normalization after attention (none, layernorm, standardize, layernorm_per_head by default) x seed.

Pairing: seed index ``s`` fixes the initialization seed, the training-data stream, the test sets and the probe sets
of every normalization and architecture (all derived from ``root_seed`` and ``s`` only), so "norm X minus none"
is a paired difference per seed.
"""

from __future__ import annotations

import dataclasses
import json

from varsim._common.validate import check_choice, check_fields, check_int, check_int_grid, check_real
from varsim.tasks import TASKS

__all__ = ["ReproductionSettings", "ARCHITECTURES", "DEFAULT_NORMS", "BASELINE_NORM", "run_id", "job_specs"]

#: architecture name -> ``ModelConfig.residual``
ARCHITECTURES = {"residual": True, "no_residual": False}
DEFAULT_NORMS = ("none", "layernorm", "standardize", "layernorm_per_head")
BASELINE_NORM = "none"

# Work keys under root_seed for each seed index s: (s, key) -> one independent stream per purpose.
_SEED_KEYS = {"init": 0, "data": 1, "eval": 2, "in_distribution": 3, "probe": 4}


def _pow2(lo: int, hi: int) -> tuple[int, ...]:
    return tuple(2**k for k in range(lo, hi + 1))


@dataclasses.dataclass(frozen=True)
class ReproductionSettings:
    """Everything that determines the numbers of a reproduction (stored as ``settings.json``).

    ``model`` and ``train`` are overrides of :class:`varsim.nn.model.ModelConfig` and
    :class:`varsim.train.TrainConfig` fields shared by every run (the grid sets ``task``, ``norm``, ``residual``,
    ``seed`` and ``data_seed``). A run "learned" when its accuracy at N = ``train.train_max`` on
    ``id_examples`` fresh examples is at least ``learned_threshold``.
    """

    tasks: tuple = TASKS
    architectures: tuple = tuple(ARCHITECTURES)
    norms: tuple = DEFAULT_NORMS
    seeds: int = 6
    root_seed: int = 0
    model: dict = dataclasses.field(default_factory=dict)
    train: dict = dataclasses.field(default_factory=dict)
    eval_lengths: tuple = _pow2(4, 14)
    eval_examples: int = 1024
    eval_batch_size: int = 64
    id_examples: int = 2048
    learned_threshold: float = 0.9
    probe_lengths: tuple = _pow2(4, 14)
    probe_sets: int = 256
    hist_lengths: tuple = (16, 256, 4096)
    probe_max_items: int = 1 << 18

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

        set_("tasks", names("tasks", TASKS))
        set_("architectures", names("architectures", ARCHITECTURES))
        set_("norms", names("norms", NORMS))
        set_("seeds", check_int("seeds", self.seeds, minimum=1))
        set_("root_seed", check_int("root_seed", self.root_seed, minimum=0))
        for field in ("model", "train"):
            if not isinstance(getattr(self, field), dict):
                raise ValueError(f"{field} must be a dict of overrides, got {type(getattr(self, field)).__name__}")
            set_(field, dict(getattr(self, field)))
        fixed = {"task", "norm", "residual"} & set(self.model)
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
        for task in self.tasks:  # build one config per task now, so bad overrides fail before any work
            self.train_config(task, "none", "residual", 0)

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
            eval_lengths=_pow2(4, 8),
            eval_examples=128,
            id_examples=256,
            probe_lengths=_pow2(4, 8),
            probe_sets=64,
            hist_lengths=(16, 256),
        )
        base.update(changes)
        return cls(**base)

    def to_dict(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return json.loads(json.dumps(out))  # tuples -> lists: the form it has on disk

    @classmethod
    def from_dict(cls, d: dict) -> "ReproductionSettings":
        return cls(**check_fields("settings", d, cls))

    # ---------------------------------------------------------------------------------------------------------
    def seed_for(self, seed_index: int, purpose: str) -> int:
        """The integer seed of ``purpose`` (init, data, eval, in_distribution, probe) for seed index ``s``."""
        from varsim._common.seeding import child_sequence

        return int(child_sequence(self.root_seed, seed_index, _SEED_KEYS[purpose]).generate_state(1)[0])

    def train_config(self, task: str, norm: str, architecture: str, seed_index: int):
        from varsim.train import TrainConfig

        model = {**self.model, "task": task, "norm": norm, "residual": ARCHITECTURES[architecture]}
        return TrainConfig(
            **{**self.train, "task": task, "model": model,
               "seed": self.seed_for(seed_index, "init"), "data_seed": self.seed_for(seed_index, "data")}
        )


def run_id(task: str, architecture: str, norm: str, seed_index: int) -> str:
    return f"{task}-{architecture}-{norm}-s{seed_index}"


def job_specs(settings: ReproductionSettings) -> list[dict]:
    """One JSON-able spec per run, in a fixed order (task, architecture, norm, seed)."""
    specs = []
    for task in settings.tasks:
        for arch in settings.architectures:
            for norm in settings.norms:
                for s in range(settings.seeds):
                    cfg = settings.train_config(task, norm, arch, s)
                    specs.append({
                        "run_id": run_id(task, arch, norm, s),
                        "task": task,
                        "architecture": arch,
                        "norm": norm,
                        "seed_index": s,
                        "train_config": cfg.to_dict(),
                        "eval": {"lengths": list(settings.eval_lengths), "examples": settings.eval_examples,
                                 "batch_size": settings.eval_batch_size, "seed": settings.seed_for(s, "eval")},
                        "in_distribution": {"length": cfg.train_max, "examples": settings.id_examples,
                                            "seed": settings.seed_for(s, "in_distribution"),
                                            "threshold": settings.learned_threshold},
                        "probe": {"lengths": list(settings.probe_lengths), "sets": settings.probe_sets,
                                  "hist_lengths": list(settings.hist_lengths),
                                  "max_items": settings.probe_max_items, "seed": settings.seed_for(s, "probe")},
                    })
    return json.loads(json.dumps(specs))
