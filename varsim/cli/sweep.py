"""``varsim sweep``: the simulator over (attention variant, variant parameters, beta, N) in one call, with theory.

Every cell ``(variant, parameters, beta, N)`` is one :func:`varsim.sim.simulate` job (logits sampler with the
Rao-Blackwell estimator by default), run on local worker processes or, with ``--scheduler ADDRESS``, on a Dask
cluster; the numbers are the same either way (see :mod:`varsim.sim.sweep`). The variant parameter flags are
those of ``varsim simulate`` (``--ssmax-s``, ``--logn-n0``, ``--topk``, ...), each taking one or more values.

Examples::

    varsim sweep --attention ssmax --ssmax-s 0.25 0.5 1 --beta 1 2 --n 16:65536:x4 -o sweep.json
    varsim sweep --attention softmax ssmax logn sigmoid topk --topk 4 16 --beta 1 --n 16:4096:x4
    varsim sweep --attention critical --beta 1 2 --n 16:65536:x4 --scheduler tcp://host:8786 -o crit.json

The table gives per cell E[sum w^2] ± SE, the exact value (or the top-k bound) and z = (MC - exact) / SE; ``-o FILE``
writes (and, on a rerun, resumes) the results JSON, ``--json`` prints it.
"""

from __future__ import annotations

import argparse
import json
import sys

from varsim.cli._options import (
    MAX_ABS,
    add_attention_flag,
    add_variant_param_flags,
    count_option,
    fmt_estimate,
    format_columns,
    given_variant_params,
    output_file,
    parse_grid,
    real_option,
    refuse_variant_params,
    seed_option,
    threads_option,
)

__all__ = ["register", "run", "build_grid", "format_table"]


def register(parser: argparse.ArgumentParser) -> None:
    axes = parser.add_argument_group("axes")
    add_attention_flag(axes, default=["softmax"], default_help="default softmax", multi=True,
                       what="weight maps to sweep")
    add = axes.add_argument
    add("--beta", nargs="+", type=real_option(0.0, MAX_ABS), default=[1.0], metavar="B",
        help="logit scales beta >= 0 (default 1)")
    add("--n", nargs="+", default=["16:65536:x4"], metavar="N",
        help="sequence lengths: integers and/or ranges START:STOP:xFACTOR or START:STOP:STEP (default 16:65536:x4)")

    add_variant_param_flags(parser.add_argument_group(
        "variant parameters (each takes one or more values; default: the variant's)"), multi=True)

    add = parser.add_argument_group("Monte Carlo").add_argument
    add("--sequences", type=count_option(), default=4000, metavar="M",
        help="sequences per cell (default 4000); with --target-rse or --max-cell-logits, the most per cell")
    add("--target-rse", type=real_option(0.0, 1.0, strict_min=True), default=None, metavar="R",
        help="stop each cell at this relative standard error of Var(o_j) (default: every cell runs --sequences)")
    add("--max-cell-logits", type=count_option(), default=None, metavar="L",
        help="run a cell of length N for at most L // N sequences (at least 32): a budget in logits, so the longest "
             "cells do not take most of the sweep (default: none)")
    add("--sampler", default="logits", metavar="NAME", help="logits (default, exact for Gaussian keys) | full")
    add("--estimator", default="rao_blackwell", metavar="NAME", help="rao_blackwell (default) | sample")
    add("--d-k", type=count_option(), default=64, metavar="D", help="key dimension of the full sampler (default 64)")
    add("--d-v", type=count_option(), default=64, metavar="D", help="value dimension of the full sampler (default 64)")
    add("--value-mean", type=real_option(-MAX_ABS, MAX_ABS), default=0.0, metavar="MU",
        help="mean mu_v of the values (default 0)")
    add("--value-scale", type=real_option(0.0, MAX_ABS), default=1.0, metavar="S",
        help="standard deviation sigma_v of the values")
    add("--max-work", type=real_option(0.0, MAX_ABS, strict_min=True), default=None, metavar="W",
        help="refuse a sweep whose total estimated work exceeds W key-coordinates (default 2e12, about an hour)")
    add("--seed", type=seed_option(), default=0, metavar="S", help="root seed (default 0)")

    add = parser.add_argument_group("execution").add_argument
    add("--scheduler", default=None, metavar="ADDR", help="run the cells on this Dask cluster (tcp://host:port)")
    add("--workers", type=threads_option(), default=None, metavar="W",
        help="local worker processes (default: one per core)")
    add("--progress", action=argparse.BooleanOptionalAction, default=None,
        help="progress on stderr (default: when stderr is a terminal)")

    add = parser.add_argument_group("output").add_argument
    add("--json", action="store_true", help="print the JSON results instead of a table")
    add("-o", "--output", type=output_file, default=None, metavar="FILE",
        help="write (or resume) the results JSON in FILE")


def _variants(args: argparse.Namespace) -> dict:
    """``{name: {param: [values]}}`` from ``--attention`` and the parameter flags; a flag of a variant that is not
    swept is refused."""
    from varsim.variants import get_variant

    names = list(dict.fromkeys(get_variant(a).name for a in args.attention))
    given = given_variant_params(args)
    refuse_variant_params(given, names, f"which is not swept (--attention {' '.join(names)})")
    return {name: given.get(name, {}) for name in names}


def build_grid(args: argparse.Namespace):
    """The :class:`~varsim.sim.sweep.SweepGrid` of the parsed flags."""
    from varsim.sim.sweep import SweepGrid

    return SweepGrid(variants=_variants(args), betas=args.beta, n_grid=parse_grid(args.n, "n"),
                     n_sequences=args.sequences, sampler=args.sampler, estimator=args.estimator, d_k=args.d_k,
                     d_v=args.d_v, value_mean=args.value_mean, value_scale=args.value_scale, max_work=args.max_work,
                     target_rse=args.target_rse, max_cell_logits=args.max_cell_logits)


def format_table(record: dict) -> str:
    """Plain-text table of a sweep record: one line per cell."""
    cells = record["cells"]

    def params(c):
        return " ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in c["params"].items()) or "-"

    def theory(c):
        if c["theory"] == "exact":
            return fmt_estimate(c["exact_ipr"])
        if c["theory"] == "bound":
            return f"[{c['ipr_lower']:.3g}, {c['ipr_upper']:.3g}]"
        return "-"

    def z(c):
        return "-" if c["z_ipr"] is None else f"{c['z_ipr']:+.1f}"

    columns = [
        ("attention", lambda c: c["attention"]),
        ("params", params),
        ("beta", lambda c: f"{c['beta']:g}"),
        ("N", lambda c: str(c["n"])),
        ("E[sum w^2] ± SE", lambda c: fmt_estimate(c["ipr"], c["ipr_se"])),
        ("exact", theory),
        ("z", z),
    ]
    # Var(o_j) = value_scale^2 E[sum w^2] (+ value_mean^2 Var(sum w) for maps whose weights do not sum to 1): where
    # that makes the two column groups equal in every cell, one is printed and the note says so.
    same = all(c["var"] == c["ipr"] and c["var_se"] == c["ipr_se"] and c["exact_var"] == c.get("exact_ipr")
               for c in cells)
    if not same:
        columns += [
            ("Var(o_j) ± SE", lambda c: fmt_estimate(c["var"], c["var_se"])),
            ("exact Var", lambda c: fmt_estimate(c["exact_var"])),
            ("z Var", lambda c: "-" if c["z_var"] is None else f"{c['z_var']:+.1f}"),
        ]
    if any(c.get("wsum") is not None for c in cells):
        columns.append(("E[sum w] ± SE", lambda c: fmt_estimate(c.get("wsum"), c.get("wsum_se"))))
    s = record["settings"]
    lines = [f"sweep: {len(cells)} cells, sampler={s['sampler']} estimator={s['estimator']} "
             f"sequences={s['n_sequences']} value_mean={s['value_mean']:g} value_scale={s['value_scale']:g} "
             f"seed={record['seed']}",
             *format_columns(columns, cells, left=2)]
    lines.append("exact: varsim.theory (softmax with an N-dependent temperature, sigmoid); [lo, hi]: the top-k bound; "
                 "z = (MC - exact) / SE")
    if same:
        lines.append("Var(o_j) equals E[sum w^2] in every cell here (value scale 1, no value-mean term): one column "
                     "group shows both (the JSON has both)")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from varsim.sim.sweep import run_sweep

    grid = build_grid(args)
    progress = sys.stderr.isatty() if args.progress is None else bool(args.progress)
    record = run_sweep(grid, output=args.output, seed=args.seed, scheduler=args.scheduler, workers=args.workers,
                       progress=progress)
    if args.json:
        sys.stdout.write(json.dumps(record, indent=2, allow_nan=False) + "\n")
        return 0
    print(format_table(record))
    if args.output is not None:
        print(f"{record['resumed']} of {len(record['cells'])} cells from {args.output}, the rest computed in "
              f"{record['elapsed_s']:.1f} s; wrote {args.output}")
    else:
        print(f"computed in {record['elapsed_s']:.1f} s")
    return 0
