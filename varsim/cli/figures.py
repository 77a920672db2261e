"""``varsim figures``: regenerate every figure (PNG + PDF) with the installed ``varsim.figures`` package.

The figure code and the compact records of the last full reproduction ship with the package, so this works the same
from a wheel as from a checkout. Options are those of :func:`varsim.figures.register` (each data source's from its
registry entry), plus the figure parameters and style that :func:`varsim.figures.make` takes (``--only NAME
--param tau=0.8 --beta 0.5 1 2 --style column``): ``--param NAME=VALUE`` sets any parameter the figure declares
(:mod:`varsim.figures.params`; ``--param list`` prints them), and ``--beta``, ``--d-k``, ``--n-max``,
``--sequences``, ``--target-rse`` are shortcuts for the parameters most figures share.
"""

from __future__ import annotations

import argparse

__all__ = ["register", "run"]


#: the figure parameters these options set (``--beta`` -> ``betas``): passed to each named figure's ``compute``
_PARAMS = {"beta": "betas", "d_k": "d_k", "n_max": "n_max", "sequences": "sequences", "target_rse": "target_rse"}


def register(parser: argparse.ArgumentParser) -> None:
    from varsim.cli._options import MAX_ABS, count_option, real_option
    from varsim.figures import register as add_figure_options

    add_figure_options(parser)
    group = parser.add_argument_group("figure parameters and style (with --only NAME; --replot restyles stored data; "
                                      "see varsim.figures.custom)")
    group.add_argument("--param", action="append", default=None, metavar="NAME=VALUE",
                       help="set a parameter the figure declares (repeatable; a list as 0.5,1,2; a flag as true/false; "
                            "none where allowed); `--only NAME --param list` lists them with their defaults")
    group.add_argument("--beta", type=real_option(0.0, MAX_ABS), nargs="+", default=None, metavar="B",
                       help="logit scales beta (fig_variance_vs_n, fig_decay_exponent, fig_variants_ipr)")
    group.add_argument("--d-k", type=count_option(), default=None,
                       help="key dimension d_k (fig_variance_vs_n, fig_decay_exponent)")
    group.add_argument("--n-max", type=count_option(), default=None,
                       help="largest sequence length N (the simulated figures)")
    group.add_argument("--sequences", type=count_option(), default=None,
                       help="most Monte Carlo sequences per N (the simulated figures)")
    group.add_argument("--target-rse", type=real_option(0.0, 1.0, strict_min=True), default=None, metavar="R",
                       help="stop each Monte Carlo point at this relative standard error (the simulated figures)")
    group.add_argument("--style", default=None, choices=("default", "column", "two-column", "slides"),
                       help="figure size and text: column = 3.3 in, two-column = 6.9 in, slides")
    group.add_argument("--footer", action="store_true", help="add a one-line provenance footer")


def _list_params(names) -> int:
    from varsim.figures.params import describe, figure_params

    for name in names or ():
        print(f"{name}:")
        print("\n".join("  " + line for line in (describe(figure_params(name)) or "(no parameters)").splitlines()))
    return 0


def run(args: argparse.Namespace) -> int:
    from varsim.figures import run_args
    from varsim.figures._style import headless_backend
    from varsim.figures.params import parse_assignment

    headless_backend()  # this command only writes files (the library paths keep the caller's backend)

    if args.param == ["list"]:
        if not args.only:
            raise ValueError("--param list: name the figures with --only NAME ...")
        return _list_params(args.only)
    texts = [parse_assignment(text) for text in args.param or ()]
    params = {key: getattr(args, opt) for opt, key in _PARAMS.items() if getattr(args, opt) is not None}
    if not params and not texts and args.style is None and not args.footer:
        return run_args(args)
    if args.jobs not in (None, 1):
        raise ValueError("jobs: --jobs draws the figures as they are; with figure parameters, --style or --footer "
                         "they are drawn one after the other (leave --jobs out)")
    if not args.only:
        raise ValueError("only: name the figures to draw with parameters or a style (--only NAME ...)")
    from varsim.figures import DEFAULT_OUTDIR, make, source_args

    written = make(args.only, outdir=DEFAULT_OUTDIR if args.outdir is None else args.outdir, params=params,
                   texts=texts, style=args.style, footer=args.footer, quick=args.quick, seed=args.seed,
                   progress=bool(args.progress), replot=args.replot, max_work=args.max_work,
                   **source_args(args),
                   flags={key: "--" + opt.replace("_", "-") for opt, key in _PARAMS.items()})
    for paths in written.values():
        for path in paths:
            print(path)
    return 0
