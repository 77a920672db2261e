"""``varsim train``: train the small transformer on a synthetic task (config file and/or flags).

Examples::

    varsim train --task argmax --norm layernorm --steps 2000 --outdir runs/argmax-ln
    varsim train --config run.json --outdir runs/x          # JSON with TrainConfig fields (model nested)
    varsim train --config run.json --lr 3e-3 --outdir runs/y  # flags override the file
    varsim train --outdir runs/x --resume                      # continue an interrupted run with its own config
    varsim train --task argmax --attention ssmax --ssmax-s 0.5 --outdir runs/ssmax   # another weight map

``--attention NAME`` trains with a weight map the registry declares trainable (``varsim.variants.TRAINABLE_MAPS``),
with its parameters as ``--VARIANT-PARAM`` flags (those of ``varsim simulate``); without it the config file's map (or
softmax) is used, and parameter flags apply to that map.

Exit status: 0 when the run completes, 1 when it stops on a non-finite loss (the last good checkpoint is kept)
or the system refuses a write (full disk), 2 on bad input: unknown names, NaN/inf, sizes whose memory or time is
beyond the machine or --max-hours, an empty or unwritable --outdir, a run directory in use by another process,
a damaged metrics log on --resume.

--resume reads the run's own config.json (no flags needed); flags given with it must agree with the run (only
--checkpoint-every and --keep-checkpoints may change), and a directory that holds no run is refused.
On --resume a torn last line of metrics.jsonl (a write cut short by a kill or a full disk) is dropped with a notice
on stderr; a damaged line before it is refused naming the file and the line (repair or delete it, then resume).
A run that stops before its first checkpoint in a new directory removes what it wrote, so the same command can be
run again as it was.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from varsim.cli._options import (
    MAX_ABS,
    add_variant_flags,
    count_option,
    given_variant_params,
    int_option,
    real_option,
    refuse_variant_params,
    seed_option,
    threads_option,
)
from varsim.nn.config import MAX_MLP_DEPTH
from varsim.tasks import TASK_REGISTRY

# flag dest -> ModelConfig field
_MODEL_FLAGS = {
    "architecture": "architecture",
    "positions": "positions",
    "max_positions": "max_positions",
    "tie_head": "tie_head",
    "d_model": "d_model",
    "n_heads": "n_heads",
    "n_blocks": "n_blocks",
    "norm": "norm",
    "residual": "residual",
    "pre_ln": "pre_ln",
    "item_mlp_depth": "item_mlp_depth",
    "predictor_depth": "predictor_depth",
    "d_hidden": "d_hidden",
    "n_classes": "n_classes",
    "key_vocab": "key_vocab",
    "value_vocab": "value_vocab",
    "key_encoding": "key_encoding",
    "dtype": "dtype",
    "activation": "activation",
    "fused": "fused",
}
# flag dest -> TrainConfig field
_TRAIN_FLAGS = (
    "task",
    "optimizer",
    "lr",
    "weight_decay",
    "clip_norm",
    "warmup",
    "schedule",
    "min_lr_ratio",
    "steps",
    "batch_size",
    "train_min",
    "train_max",
    "seed",
    "data_seed",
    "checkpoint_every",
    "log_every",
    "keep_checkpoints",
    "shards",
)


_UNSET = object()  # --clip-norm none means "no clipping", so absence needs its own marker




def _task_help() -> str:
    """The registered tasks, those of several tokens an item marked as the sequence models' only."""
    return ", ".join(name + (" (sequence architectures only)" if task.item_tokens > 1 else "")
                     for name, task in TASK_REGISTRY.items())


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", metavar="FILE", help="JSON file with TrainConfig fields; flags override it")
    parser.add_argument("--outdir", required=True, help="run directory (checkpoints, metrics.jsonl, summary.json)")
    parser.add_argument("--resume", action="store_true",
                        help="continue the run in OUTDIR from its latest checkpoint, with the run's own config.json "
                             "(flags that differ from it are refused, except --checkpoint-every/--keep-checkpoints)")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="show progress on stderr (default: when it is a terminal)")
    parser.add_argument("--max-hours", type=real_option(0.0, strict_min=True, allow_inf=True), default=None,
                        help="refuse a run estimated to take longer than this (default 24; inf: no bound)")
    g = parser.add_argument_group("task and training")
    g.add_argument("--task", help=_task_help())
    g.add_argument("--optimizer", help="adam or adamw (default adamw)")
    g.add_argument("--lr", type=real_option(0.0, MAX_ABS, strict_min=True), help="peak learning rate (default 1e-3)")
    g.add_argument("--weight-decay", type=real_option(0.0, MAX_ABS))
    g.add_argument("--clip-norm", type=real_option(0.0, MAX_ABS, strict_min=True, words={"none": None, "off": None}),
                   default=_UNSET, help="global gradient-norm clip (default 1), or 'none'")
    g.add_argument("--warmup", type=count_option(0), help="warmup updates (default 5%% of steps)")
    g.add_argument("--schedule", help="cosine or constant")
    g.add_argument("--min-lr-ratio", type=real_option(0.0, 1.0))
    g.add_argument("--steps", type=count_option())
    g.add_argument("--batch-size", "--batch", type=count_option(), dest="batch_size")
    g.add_argument("--train-min", type=count_option(), help="smallest training set size (default: task's)")
    g.add_argument("--train-max", type=count_option(), help="largest training set size (default 16)")
    g.add_argument("--seed", type=seed_option(), help="initialization seed (default 0)")
    g.add_argument("--data-seed", type=seed_option(), help="training-data seed (default: --seed)")
    g.add_argument("--checkpoint-every", type=count_option())
    g.add_argument("--log-every", type=count_option())
    g.add_argument("--keep-checkpoints", type=count_option())
    g.add_argument("--shards", type=count_option(), help="shards of each batch, on their own threads (default 1; "
                   "the numbers depend on it, never on --threads)")
    g.add_argument("--threads", type=threads_option(), default=None,
                   help="threads running the shards (default: one per shard, at most one per core)")
    m = parser.add_argument_group("model")
    m.add_argument("--architecture", help="set_transformer (default) or decoder (varsim.nn.architectures)")
    m.add_argument("--positions", help="decoder only: none (default), learned, rope or alibi")
    m.add_argument("--max-positions", type=count_option(), help="decoder only: rows of the learned position table")
    m.add_argument("--tie-head", action=argparse.BooleanOptionalAction, default=None,
                   help="decoder only: the output head reuses the embedding of the output one-hot")
    m.add_argument("--d-model", type=count_option())
    m.add_argument("--n-heads", "--heads", type=count_option(), dest="n_heads")
    m.add_argument("--n-blocks", "--blocks", type=count_option(), dest="n_blocks")
    m.add_argument("--norm", help="attention-output normalization: none (default), layernorm, standardize, "
                   "layernorm_per_head, standardize_per_head")
    m.add_argument("--residual", action=argparse.BooleanOptionalAction, default=None,
                   help="residual connection around attention (default on)")
    m.add_argument("--pre-ln", action=argparse.BooleanOptionalAction, default=None)
    m.add_argument("--item-mlp-depth", type=int_option(1, MAX_MLP_DEPTH))
    m.add_argument("--predictor-depth", type=int_option(1, MAX_MLP_DEPTH))
    m.add_argument("--d-hidden", type=count_option())
    m.add_argument("--n-classes", type=count_option())
    m.add_argument("--key-vocab", type=count_option())
    m.add_argument("--value-vocab", type=count_option())
    m.add_argument("--key-encoding")
    m.add_argument("--dtype", help="float32 (default) or float64")
    m.add_argument("--activation", help="relu (default) or gelu")
    m.add_argument("--fused", action=argparse.BooleanOptionalAction, default=None,
                   help="attention's softmax, layer norm and ReLU's backward in fused Numba kernels "
                        "(default off: other float32 bits than the default path; recorded in the run's config)")
    from varsim.variants import TRAINABLE_MAPS

    add_variant_flags(parser, default=None, default_help="default: the config file's, else softmax",
                      names=TRAINABLE_MAPS)


def _set_attention(args, model: dict) -> None:
    """``--attention`` and its parameter flags into the model fields ``attention``/``attention_params``: a new map
    drops the config file's parameters (they belong to its map); flags of another map are refused."""
    named = model.get("attention", "softmax")
    if args.attention is not None and args.attention != named:
        named = model["attention"] = args.attention
        model.pop("attention_params", None)
    given = given_variant_params(args)
    refuse_variant_params(given, (named,), f"not --attention {named}")
    if named in given:
        model["attention_params"] = {**(model.get("attention_params") or {}), **given[named]}


def run_config(outdir) -> dict:
    """The config a run in ``outdir`` recorded (its ``config.json``, else its latest checkpoint's), as a dict;
    ``ValueError`` naming the file when it is damaged, or saying that ``outdir`` holds no run to resume."""
    from varsim._common.jsonio import read_json
    from varsim.train import TrainConfig, latest_checkpoint, read_checkpoint

    out = Path(outdir)
    config_file = out / "config.json"
    if config_file.exists():
        recorded = read_json(config_file, what="run config")
        if not isinstance(recorded.get("config"), dict):
            raise ValueError(f"run config {str(config_file)!r} has no 'config' entry")
        return TrainConfig.from_dict_in(recorded["config"], f"run config {str(config_file)!r}").to_dict()
    latest = latest_checkpoint(out) if out.is_dir() else None
    if latest is None:
        raise ValueError(f"--resume: outdir {str(out)!r} holds no run to resume (no config.json, no checkpoint); "
                         "drop --resume to start a new run there")
    header, _ = read_checkpoint(latest)
    return TrainConfig.from_dict_in(header["config"], f"checkpoint {str(latest)!r}").to_dict()


def build_config(args):
    """The TrainConfig from ``--config`` (or, with ``--resume`` and no ``--config``, the run's own config) updated
    by the flags that were given."""
    from varsim.train import TrainConfig

    base: dict = {}
    if args.resume:
        recorded = run_config(args.outdir)  # also refuses --resume on a directory that holds no run
        if not args.config:
            base = recorded
    if args.config:
        base = TrainConfig.from_file(args.config).to_dict()
    for name in _TRAIN_FLAGS:
        value = getattr(args, name)
        if name == "clip_norm":
            if value is not _UNSET:
                base[name] = value
        elif value is not None:
            base[name] = value
    model = dict(base.get("model") or {})
    for dest, field in _MODEL_FLAGS.items():
        value = getattr(args, dest)
        if value is not None:
            model[field] = value
    _set_attention(args, model)
    if "task" not in base:
        raise ValueError(f"task is required (--task {'|'.join(TASK_REGISTRY)}, or a --config file)")
    if model.get("task", base["task"]) != base["task"]:  # --task overrides the file's model.task too
        model["task"] = base["task"]
    base["model"] = model
    return TrainConfig.from_dict(base)


def run(args) -> int:
    from varsim.train import train

    config = build_config(args)
    summary = train(config, args.outdir, resume=args.resume, progress=args.progress, max_hours=args.max_hours,
                    threads=args.threads)
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        loss, acc = summary["final_loss"], summary["train_accuracy"]
        stats = "" if loss is None else f", loss {loss:.4f}, train accuracy {acc:.3f}"
        print(f"{summary['message']}{stats}; {summary['wall_time_s']:.1f} s; checkpoint {summary['checkpoint']}")
    if summary["status"] != "completed":
        print(f"varsim train: {summary['message']}", file=sys.stderr)
        return 1
    return 0
