"""``varsim evaluate``: accuracy of a checkpoint at many set sizes, with Wilson 95% intervals.

Examples::

    varsim evaluate runs/argmax-ln                         # latest checkpoint of a run, N = 16 ... 16384
    varsim evaluate runs/x/ckpt-00002000.npz --lengths 16 256 4096 --examples 512 --json
    varsim evaluate runs/x -o runs/x/eval.json             # JSON file written atomically (with provenance)
"""

from __future__ import annotations

import argparse
import json


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("checkpoint", help="checkpoint file, or a run directory (its latest checkpoint)")
    parser.add_argument("--lengths", type=int, nargs="+", metavar="N",
                        help="set sizes to test (default 16 32 ... 16384)")
    parser.add_argument("--examples", type=int, default=1024, help="examples per length (default 1024)")
    parser.add_argument("--batch-size", type=int, default=64, help="examples per batch (default 64)")
    parser.add_argument("--seed", type=int, default=0, help="test-set seed (default 0; same seed = same examples)")
    parser.add_argument("--threads", type=int, default=None, help="BLAS threads (default: NumPy's)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.add_argument("-o", "--output", metavar="FILE", help="also write the JSON result to FILE")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None)


def run(args) -> int:
    from varsim._common.atomic import atomic_write_json, check_writable
    from varsim.train import DEFAULT_LENGTHS, evaluate

    if args.output:
        check_writable(args.output, "output")
    result = evaluate(
        args.checkpoint,
        lengths=DEFAULT_LENGTHS if args.lengths is None else args.lengths,
        n_examples=args.examples,
        batch_size=args.batch_size,
        seed=args.seed,
        progress=args.progress,
        blas_threads=args.threads,
    )
    if args.output:
        atomic_write_json(args.output, result)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{result['task']} checkpoint {result['checkpoint']} (step {result['step']}), "
              f"{result['n_examples']} examples per length")
        print(f"{'N':>7} {'accuracy':>9} {'95% CI':>17} {'time':>7}")
        for n, a, lo, hi, t in zip(result["lengths"], result["accuracy"], result["ci_low"], result["ci_high"],
                                   result["time_s"]):
            print(f"{n:>7} {a:>9.4f} [{lo:.4f}, {hi:.4f}] {t:>6.2f}s")
    return 0
