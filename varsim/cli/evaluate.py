"""``varsim evaluate``: accuracy of a checkpoint at many set sizes, with Wilson 95% intervals.

Examples::

    varsim evaluate runs/argmax-ln                         # latest checkpoint of a run, N = 16 ... 16384
    varsim evaluate runs/x/ckpt-00002000.npz --lengths 16 256 4096 --examples 512 --json
    varsim evaluate runs/x -o runs/x/eval.json             # JSON file written atomically (with provenance)
    varsim evaluate runs/x --attention topk --topk 8        # the trained weights with another weight map
    varsim evaluate runs/x --attention critical --critical-c 1 --critical-beta0 2

``--attention NAME`` evaluates the loaded weights with a weight map of ``varsim.variants`` (its parameters as the
same ``--VARIANT-PARAM`` flags as ``varsim simulate``, generated from the registry): an inference-only map (one
of ``varsim.variants.INFERENCE_ONLY_MAPS``) on any model, or any map on a softmax-trained model. The table's header
and the JSON's ``"attention"`` entry name the map used.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from varsim.cli._options import (
    add_variant_flags,
    count_option,
    given_variant_params,
    output_file,
    real_option,
    refuse_variant_params,
    seed_option,
    threads_option,
    variant_kwargs,
)


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("checkpoint", help="checkpoint file, or a run directory (its latest checkpoint)")
    parser.add_argument("--lengths", type=count_option(), nargs="+", metavar="N",
                        help="set sizes to test (default 16 32 ... 16384)")
    parser.add_argument("--examples", type=count_option(), default=1024, help="examples per length (default 1024)")
    parser.add_argument("--batch-size", type=count_option(), default=64, help="examples per batch (default 64)")
    parser.add_argument("--seed", type=seed_option(), default=0,
                        help="test-set seed (default 0; same seed = same examples)")
    parser.add_argument("--threads", type=threads_option(0), default=1,
                        help="deprecated (until 0.3.0): evaluation multiplies on one BLAS thread, so that no number "
                             "depends on the thread count; a value other than 1 only raises --workers to it "
                             "(0: one per core)")
    parser.add_argument("--workers", type=threads_option(0), default=0,
                        help="threads evaluating a batch's chunks at once (default 0: one per core; the results "
                             "do not depend on it)")
    parser.add_argument("--max-hours", type=real_option(0.0, strict_min=True, allow_inf=True), default=None,
                        help="refuse an evaluation estimated to take longer than this (default 2; inf: no bound)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("-o", "--output", type=output_file, metavar="FILE",
                        help="also write the JSON result to FILE (never a checkpoint or a run's own files)")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None)
    add_variant_flags(parser, default=None, default_help="default: the map the model was trained with; also the "
                                                        "controls of varsim.variants.CONTROLS, e.g. oracle: all "
                                                        "weight on the correct item")


def attention_kwargs(args) -> dict:
    """``attention`` and ``attention_params`` for :func:`varsim.train.evaluate` from the flags: a parameter flag
    without ``--attention``, or of another variant than the one named, is refused (ValueError naming the flag)."""
    from varsim.variants import CONTROLS, VARIANTS

    if args.attention is None:
        refuse_variant_params(given_variant_params(args), (), "and no --attention was given")
        return {"attention": None, "attention_params": None}
    if args.attention in CONTROLS and args.attention not in VARIANTS:  # a control that is not a weight map: no params
        refuse_variant_params(given_variant_params(args), (), f"not a parameter of the control {args.attention}")
        return {"attention": args.attention, "attention_params": {}}
    kwargs = variant_kwargs(args)
    return {"attention": kwargs.pop("attention"), "attention_params": kwargs}


def check_output(output, source) -> Path:
    """``-o FILE`` must be writable and must not replace a checkpoint (the one evaluated or any other) nor one of
    the files of a run directory; ValueError naming ``output`` otherwise. A device or FIFO is written through, as
    every output is: it is never opened here (reading it as a zip would block on a FIFO and spin on a device)."""
    from varsim._common.atomic import check_writable, is_special_file
    from varsim.train.checkpoint import is_checkpoint_file, is_checkpoint_name, resolve_checkpoint

    p = check_writable(output, "output")
    src = Path(source)
    if p.exists() and not is_special_file(p):
        try:
            same = src.exists() and os.path.samefile(p, resolve_checkpoint(src))
        except (OSError, ValueError):
            same = False
        if same:
            raise ValueError(f"output {str(p)!r} is the checkpoint being evaluated; write the result elsewhere")
        if is_checkpoint_file(p):
            raise ValueError(f"output {str(p)!r} is a checkpoint; write the result elsewhere")
    if is_checkpoint_name(p.name):
        raise ValueError(f"output {str(p)!r} has a checkpoint's name; write the result elsewhere")
    parent = p.parent
    if p.name in RUN_FILES and ((parent / "config.json").exists() or any(parent.glob("ckpt-*.npz"))):
        raise ValueError(f"output {str(p)!r} is a file of the run directory {str(parent)!r}; write the result "
                         "elsewhere (e.g. eval.json)")
    return p


RUN_FILES = ("config.json", "metrics.jsonl", "summary.json")


def run(args) -> int:
    from varsim._common.atomic import atomic_write_json
    from varsim.jobs.executor import default_workers
    from varsim.train import DEFAULT_LENGTHS, evaluate

    attention = attention_kwargs(args)
    if args.output is not None:
        check_output(args.output, args.checkpoint)
    workers = args.workers or default_workers()
    if args.threads != 1:
        print("varsim evaluate: --threads is deprecated and will be removed in 0.3.0: evaluation multiplies on one "
              "BLAS thread (more would change float32 bits); its threads go to --workers", file=sys.stderr)
        workers = max(workers, args.threads or default_workers())
    result = evaluate(
        args.checkpoint,
        lengths=DEFAULT_LENGTHS if args.lengths is None else args.lengths,
        n_examples=args.examples,
        batch_size=args.batch_size,
        seed=args.seed,
        progress=args.progress,
        workers=workers,
        max_hours=args.max_hours,
        **attention,
    )
    if args.output is not None:
        atomic_write_json(args.output, result)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{result['task']} checkpoint {result['checkpoint']} (step {result['step']}), "
              f"{result['n_examples']} examples per length")
        print(f"attention {_describe(result['attention'])}"
              + ("" if result["attention"] == result["trained_attention"]
                 else f" (trained with {_describe(result['trained_attention'])})"))
        print(f"{'N':>7} {'accuracy':>9} {'95% CI':>17} {'time':>7}")
        for n, a, lo, hi, t in zip(result["lengths"], result["accuracy"], result["ci_low"], result["ci_high"],
                                   result["time_s"]):
            print(f"{n:>7} {a:>9.4f} [{lo:.4f}, {hi:.4f}] {t:>6.2f}s")
    return 0


def _describe(attention: dict) -> str:
    """``topk(k=8)``, ``softmax``."""
    params = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in attention["params"].items())
    return attention["name"] + (f"({params})" if params else "")
