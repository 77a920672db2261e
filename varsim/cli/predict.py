"""``varsim predict``: a one-block checkpoint's accuracy at long N (its own weight map: softmax or a trained remedy,
with its learned parameters), and each inference-time map's, predicted from statistics at its training maximum only
(:mod:`varsim.train.predict`; docs/experiments/prediction.md).

Examples::

    varsim predict runs/argmax                             # N = n0, 2 n0, ... 16384; softmax and the four maps
    varsim predict runs/argmax --lengths 256 1024 --maps softmax topk1 --json
    varsim predict runs/argmax --kappa 1 --json > prediction.json       # no fitted constant

Refused with a one-line error (exit 2): a checkpoint that is not a one-block set transformer whose weights are its
map of per-item logits (an output normalization, ``--norm`` or ``ipr_norm``, is refused too); a model
whose accuracy at its training maximum is below 0.9 (it has not learned the task); a length below the training
maximum or above the measured pool (``--sets`` x the training maximum); sizes that need more memory than the machine
has, or whose estimated time exceeds ``--max-hours`` (default 2).
"""

from __future__ import annotations

import argparse
import json
import sys

from varsim.cli._options import count_option, real_option, seed_option

#: ``--kappa``'s default: the readout scale fitted on the development runs of the pre-registered test (the committed
#: ``varsim/figures/data/prediction/analysis_test.json``, ``kappa.measured``; tested equal), the setting whose held-out
#: MAE the README and docs/experiments/prediction.md quote
DEFAULT_KAPPA = 0.5
#: the maps ``--maps`` can name: softmax and the remedies grid's inference-only maps
MAP_LABELS = ("softmax", "logn_temperature", "adaptive_temperature", "critical", "topk1")


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("checkpoint", help="checkpoint file, or a run directory (its latest checkpoint)")
    parser.add_argument("--lengths", type=count_option(), nargs="+", metavar="N",
                        help="set sizes to predict, each >= the training maximum (default n0, 2 n0, ... 16384)")
    parser.add_argument("--maps", nargs="+", choices=MAP_LABELS, default=list(MAP_LABELS),
                        help="weight maps applied to the trained logits in place of the model's own map, which is "
                             "always predicted (default: all)")
    parser.add_argument("--kappa", type=real_option(0.0, 1e3, strict_min=True), default=DEFAULT_KAPPA,
                        help=f"readout threshold scale (default {DEFAULT_KAPPA:g}: the value fitted on the development "
                             "runs of the pre-registered test, whose held-out MAE the README quotes; 1: no fitted "
                             "constant)")
    parser.add_argument("--sets", type=count_option(16), default=2048,
                        help="measurement sets at the training maximum (default 2048; their items are the pool the "
                             "long sets are drawn from, so the longest N is at most sets x the training maximum)")
    parser.add_argument("--sims", type=count_option(), default=1024, help="simulated long sets per N (default 1024)")
    parser.add_argument("--seed", type=seed_option(), default=0, help="seed of the measurement and simulation")
    parser.add_argument("--max-hours", type=real_option(0.0, strict_min=True, allow_inf=True), default=None,
                        help="refuse a prediction whose estimated time exceeds this (default 2; inf: no bound); "
                             "one that needs more memory than the machine's is always refused")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


def map_specs(labels) -> dict:
    """label -> (weight map, params) for the labels of :data:`MAP_LABELS`."""
    from varsim.experiments.remedies import INFERENCE_ATTENTIONS

    return {k: ("softmax", {}) if k == "softmax" else
            (INFERENCE_ATTENTIONS[k]["attention"], dict(INFERENCE_ATTENTIONS[k].get("params", {}))) for k in labels}


#: the CLI's names of :func:`varsim.train.predict.predict`'s sizes, for its errors
FLAGS = {"lengths": "--lengths", "n_sets": "--sets", "n_sim": "--sims"}


def run(args) -> int:
    from varsim._common.validate import format_bytes, format_seconds
    from varsim.train.checkpoint import load_checkpoint
    from varsim.train.predict import check_prediction, predict

    lengths = args.lengths
    _, config, _ = load_checkpoint(args.checkpoint)
    if lengths is None:
        n, lengths = int(config.train_max), []
        while n <= 16384:
            lengths.append(n)
            n *= 2
    maps = map_specs(dict.fromkeys(args.maps))
    *_, cost = check_prediction(config, lengths, n_maps=1 + len(maps), n_sets=args.sets, n_sim=args.sims,
                                max_hours=args.max_hours, names=FLAGS)  # the flags named before any work
    if cost.seconds > 60:
        print(f"varsim predict: estimated to take at least {format_seconds(cost.seconds)} (a lower bound), about "
              f"{format_bytes(cost.peak_bytes)} of memory", file=sys.stderr, flush=True)
    result = predict(args.checkpoint, lengths, maps=maps, kappa=args.kappa, n_sets=args.sets, n_sim=args.sims,
                     seed=args.seed, max_hours=args.max_hours)
    result["checkpoint"] = str(args.checkpoint)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    own_params = result["maps"][result["attention"]]["params"]
    print(f"{result['task']} checkpoint {args.checkpoint}: weight map {result['attention']}"
          + (f" ({', '.join(f'{k} {v:g}' if isinstance(v, float) else f'{k} {v}' for k, v in own_params.items())})"
             if own_params else "")
          + f"; accuracy {result['accuracy_n0']:.3f} at the training "
          f"maximum N = {result['n0']}; best head {result['best_head']}; readout tau {result['tau']:.3f}, sigma "
          f"{result['sigma']:.3g}, lapse {result['lapse']:.3f}; kappa {result['kappa']:g}")
    labels = list(result["prediction"])
    print(f"{'N':>7} " + " ".join(f"{k:>20}" for k in labels) + f" {'rank ok':>8} {'disp err':>8}")
    own = result["prediction"][result["attention"]]
    for i, n in enumerate(result["lengths"]):
        extra = f" {own['ranking_correct'][i]:>8.3f} {own['dispersion_error'][i]:>8.3f}"
        print(f"{n:>7} " + " ".join(f"{result['prediction'][k]['accuracy'][i]:>20.3f}" for k in labels) + extra)
    return 0
