"""``varsim simulate``: Monte Carlo variance of the attention output over a grid of sequence lengths.

Every keyword of :func:`varsim.sim.simulate` has a flag. The command prints a table (with the exact
theory value wherever theory is exact: Gaussian keys and no key-value coupling) and the fitted
log-log slope; ``--json`` prints machine-readable results instead and ``-o FILE`` writes the same JSON
atomically (the path is checked before any work starts, and a failed run leaves an existing FILE intact).

Examples::

    varsim simulate --n 16 64 256 1024 --beta 1
    varsim simulate --n 16:16384:x4 --sampler logits --estimator rao_blackwell --json -o run.json
    varsim simulate --n 16:4096:x4 --attention ssmax --ssmax-s 0.5
    varsim simulate --n 16:4096:x4 --attention topk --topk 8

Sizes are checked before anything runs: a run whose estimated work exceeds ``--max-work`` (default 2e12
key-coordinates, about an hour on 2 cores) or that needs more than half the machine's memory is refused with the
estimate; raise ``--max-work`` for a deliberately long run (Ctrl-C interrupts it).

The JSON layout (``--json`` and ``-o``) is :meth:`varsim.sim.SimulationResult.to_dict` with an ``exact_var``
column: ``pandas.json_normalize(json.load(open(FILE)), "rows", meta=["slope", "seed"])`` gives one row per N.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from varsim._common.atomic import atomic_write_json, check_writable
from varsim.cli._options import (
    MAX_ABS,
    add_variant_flags,
    count_option,
    fmt_estimate,
    format_columns,
    output_file,
    parse_grid,
    parse_numbers,
    real_option,
    scalar_or_array,
    seed_option,
    threads_option,
    variant_kwargs,
)
from varsim.sim import DISTRIBUTIONS, KEY_DISTRIBUTIONS

__all__ = ["register", "run", "build_kwargs", "exact_variance", "result_to_json", "format_table"]

def register(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument_group("sequence lengths").add_argument
    add("--n", nargs="+", default=["16", "64", "256", "1024"], metavar="N",
        help="grid of sequence lengths: integers and/or ranges START:STOP:xFACTOR (geometric) or "
             "START:STOP:STEP (default: 16 64 256 1024)")

    group = parser.add_argument_group("model")
    add = group.add_argument
    add("--d-k", type=count_option(), default=64, metavar="D", help="key/query dimension (default 64)")
    add("--d-v", type=count_option(), default=64, metavar="D", help="value dimension (default 64)")
    add("--tau", type=real_option(-MAX_ABS, MAX_ABS), default=1.0, metavar="T",
        help="temperature multiplying the logits (default 1)")
    add("--query", default="fixed", metavar="KIND",
        help="fixed | random (q ~ N(0, I) per sequence) (default fixed)")
    which_query = group.add_mutually_exclusive_group()
    which_query.add_argument("--query-norm", type=real_option(0.0, MAX_ABS), default=None, metavar="R",
                             help="|q| of the fixed query (default sqrt(d_k), i.e. beta = tau)")
    which_query.add_argument("--beta", type=real_option(0.0, MAX_ABS), default=None, metavar="B",
                             help="logit spread beta = tau |q| / sqrt(d_k) of the fixed query (sets |q|)")
    which_query.add_argument("--query-vector", default=None, metavar="VEC",
                             help="the fixed query itself: comma-separated numbers or @FILE (.npy or text)")
    add("--key-dist", default="gaussian", metavar="DIST",
        help=f"{' | '.join(KEY_DISTRIBUTIONS)}, standardised (default gaussian; sphere: QK-norm keys, norm sqrt(d_k))")
    add("--value-dist", default="gaussian", metavar="DIST",
        help=f"{' | '.join(DISTRIBUTIONS)}, standardised (default gaussian)")
    add("--value-mean", default="0", metavar="MU",
        help="mean mu_v of the values: one number, or d_v numbers (comma-separated or @FILE)")
    add("--value-scale", type=real_option(0.0, MAX_ABS), default=1.0, metavar="S",
        help="standard deviation sigma_v of the values")
    add("--coupling", default=None, metavar="A",
        help="couple values to keys, v = A k + noise: a number a (v = a k[:d_v] + noise, needs d_v <= d_k), "
             "inline rows '1 0 0; 0 1 0', or @FILE with a d_v x d_k matrix")
    add("--coupling-noise", type=real_option(0.0, MAX_ABS), default=1.0, metavar="S",
        help="noise scale of the coupling (default 1)")

    add = parser.add_argument_group("Monte Carlo").add_argument
    add("--sequences", type=count_option(), default=10_000, metavar="M",
        help="independent sequences per N (default 10000); with --target-rse, the most per N")
    add("--target-rse", type=real_option(0.0, 1.0, strict_min=True), default=None, metavar="R",
        help="stop each N once the relative standard error of Var is at most R (e.g. 0.01), at most --sequences "
             "sequences; the table gives the sequences each N used (default: always --sequences)")
    add("--sampler", default="full", metavar="NAME", help="full | logits (exact shortcut for Gaussian keys)")
    add("--estimator", default="sample", metavar="NAME",
        help="sample | rao_blackwell (sigma_v^2 E[sum w^2]; exact when values are independent of keys)")
    add("--coordinate", type=count_option(0), default=0, metavar="J", help="output coordinate j reported as var_coord")
    add("--chunk-size", type=count_option(), default=None, metavar="C", help="sequences per chunk (default: automatic)")
    add("--max-work", type=real_option(0.0, MAX_ABS, strict_min=True), default=None, metavar="W",
        help="refuse runs whose estimated work exceeds W key-coordinates (default 2e12, about an hour on 2 cores)")
    add("--seed", type=seed_option(), default=0, metavar="S", help="root seed (default 0)")
    add("--threads", type=threads_option(), default=None, metavar="T", help="worker threads (default: all cores)")
    add("--progress", action=argparse.BooleanOptionalAction, default=None,
        help="progress on stderr (default: when stderr is a terminal)")

    add_variant_flags(parser)

    add = parser.add_argument_group("output").add_argument
    add("--json", action="store_true", help="print JSON results to stdout instead of a table")
    add("-o", "--output", type=output_file, default=None, metavar="FILE", help="also write the JSON results to FILE")


def build_kwargs(args: argparse.Namespace) -> dict:
    """Keyword arguments for :func:`varsim.sim.simulate` from parsed flags (syntax checks only)."""
    query_vector = None if args.query_vector is None else parse_numbers(args.query_vector, "query_vector")
    # the flags named like the simulator's keywords, then the ones parsed or renamed here
    same = ("d_k", "d_v", "tau", "query", "query_norm", "beta", "key_dist", "value_dist", "value_scale",
            "coupling_noise", "sampler", "estimator", "coordinate", "chunk_size", "seed", "threads", "max_work",
            "target_rse")
    return dict(
        {name: getattr(args, name) for name in same},
        n_grid=parse_grid(args.n, "n"),
        query_vector=query_vector,
        value_mean=scalar_or_array(parse_numbers(args.value_mean, "value_mean")),
        coupling=None if args.coupling is None else scalar_or_array(parse_numbers(args.coupling, "coupling")),
        n_sequences=args.sequences,
        progress=sys.stderr.isatty() if args.progress is None else args.progress,
        **variant_kwargs(args),
    )


def exact_variance(result) -> list | None:
    """sigma_v^2 E[sum w^2] (+ mu_v^2 Var(sum w) for maps whose weights do not sum to 1) per N where theory is exact:
    Gaussian keys, values independent of the keys, and the variant's theory (its registry entry's kind,
    :func:`varsim.theory.remedies.variant_theory`) exact at that N; None in the other cells.

    Fixed query: the logits are i.i.d. N(0, beta^2); random query q ~ N(0, I): the chi-square mixture (softmax only).
    Returns None for other configurations (non-Gaussian keys, coupling) and where the quadrature refuses beta.
    """
    cfg = result.config
    if cfg.get("key_dist") != "gaussian" or cfg.get("coupling") is not None:
        return None
    from varsim import theory
    from varsim.theory import remedies
    from varsim.variants import get_variant

    n = np.asarray(result.n, dtype=np.float64)
    scale2 = float(cfg.get("value_scale", 1.0)) ** 2
    spec = get_variant(cfg.get("attention", "softmax"))
    params = {p: cfg[p] for p in spec.param_names if p in cfg}
    try:
        if cfg.get("query") == "random":
            if spec.name != "softmax":
                return None
            return list(scale2 * np.asarray(theory.random_query_ipr(n, int(cfg["d_k"]), float(cfg["tau"]))))
        beta = float(np.asarray(result.beta, dtype=np.float64)[0])  # one fixed query: the same beta at every N
        exact = remedies.variant_theory(spec.name, n, beta, **params)
    except ValueError:  # outside the quadrature's range (e.g. |beta| > 50 for sigmoid): keep the simulation's output
        return None
    mu = np.asarray(cfg.get("value_mean", 0.0), dtype=np.float64)
    return exact.exact_var(scale2, float(np.mean(mu**2)))


def result_to_json(result, exact=None) -> dict:
    """The machine-readable record: :meth:`SimulationResult.to_dict` (one implementation of the layout) with the
    ``exact_var`` column (null where theory has no exact value)."""
    return result.to_dict(extra_columns={"exact_var": exact})


def format_table(record: dict) -> str:
    """Plain-text table of a :func:`result_to_json` record (columns the run did not produce are left out)."""
    cfg, rows = record["config"], record["rows"]
    j = cfg.get("coordinate", 0)

    def z_score(r):
        ex, v, se = r["exact_var"], r["var"], r["var_se"]
        return None if None in (ex, v, se) or se <= 0 else f"{(v - ex) / se:+.1f}"

    columns = [  # (header, cell per row)
        ("N", lambda r: str(r["n"])),
        ("sequences", lambda r: None if cfg.get("target_rse") is None or r.get("sequences") is None
         else str(r["sequences"])),
        ("Var pooled ± SE", lambda r: fmt_estimate(r["var"], r["var_se"])),
        ("exact", lambda r: None if r["exact_var"] is None else fmt_estimate(r["exact_var"])),
        ("z", z_score),
        (f"Var(o_{j}) ± SE",
         lambda r: None if r["var_coord"] is None else fmt_estimate(r["var_coord"], r["var_coord_se"])),
        ("E[sum w^2] ± SE", lambda r: None if r["ipr"] is None else fmt_estimate(r["ipr"], r["ipr_se"])),
        ("E[sum w] ± SE", lambda r: None if r.get("wsum") is None else fmt_estimate(r["wsum"], r["wsum_se"])),
        ("Var(sum w)", lambda r: None if r.get("wsum_var") is None else fmt_estimate(r["wsum_var"], r["wsum_var_se"])),
        ("N*Var", lambda r: None if r["var"] is None else f"{r['n'] * r['var']:.4f}"),
        (f"mean(o_{j}) ± SE", lambda r: None if r["mean"] is None else fmt_estimate(r["mean"], r["mean_se"])),
        ("global mean", lambda r: None if r["global_mean"] is None else fmt_estimate(r["global_mean"])),
        ("global var", lambda r: None if r["global_var"] is None else fmt_estimate(r["global_var"])),
    ]
    beta = rows[0].get("beta")
    from varsim.variants import VARIANTS

    attention = cfg.get("attention", "softmax")
    names = VARIANTS.find(attention).param_names if attention in VARIANTS else ()
    attn = " ".join([f"attention={attention}"] + [f"{p}={cfg[p]}" for p in names if p in cfg])
    out = [
        f"{attn} d_k={cfg.get('d_k')} d_v={cfg.get('d_v')} tau={cfg.get('tau')} query={cfg.get('query')}"
        + (f" beta={beta:.4g}" if beta is not None else "")
        + f" keys={cfg.get('key_dist')} values={cfg.get('value_dist')} sampler={cfg.get('sampler')}"
        + f" estimator={cfg.get('estimator')} sequences={cfg.get('n_sequences')}"
        + (f" target_rse={cfg['target_rse']:g}" if cfg.get("target_rse") is not None else "")
        + f" seed={record['seed']}",
        *format_columns(columns, rows, drop_empty=True),
    ]
    if record["slope"] is not None:
        out.append(f"log-log slope d ln Var / d ln N = {fmt_estimate(record['slope'], record['slope_se'])}")
    if any(r["exact_var"] is not None for r in rows):
        extra = " + mu_v^2 Var(sum w)" if any(r.get("wsum") is not None for r in rows) else ""
        out.append(f"exact = sigma_v^2 E[sum w^2]{extra} from varsim.theory; z = (Var - exact) / SE")
    if record.get("elapsed_s") is not None:
        out.append(f"elapsed {record['elapsed_s']:.2f} s")
    return "\n".join(out)


def run(args: argparse.Namespace) -> int:
    kwargs = build_kwargs(args)
    if args.output is not None:  # fail before the (possibly long) simulation, not after it
        check_writable(args.output, "output")
    from varsim.sim import simulate

    result = simulate(kwargs.pop("n_grid"), **kwargs)
    record = result_to_json(result, exact_variance(result))
    if args.output is not None:
        atomic_write_json(args.output, record)
    if args.json:
        sys.stdout.write(json.dumps(record, indent=2, allow_nan=False) + "\n")
    else:
        print(format_table(record))
        if args.output is not None:
            print(f"wrote {args.output}")
    return 0
