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
import math
import os
import re
import sys
import warnings

import numpy as np

from varsim._common.atomic import atomic_write_json, check_writable
from varsim._common.validate import check_int, check_real

__all__ = ["register", "run", "parse_grid", "build_kwargs", "result_to_json", "variant_option"]

_RANGE = re.compile(r"^\s*([^:]+):([^:]+):(x?)([^:]+)\s*$")
_MAX_GRID = 10_000  # a longer grid is a typo (e.g. 1:1e9:1), not a simulation anyone waits for


def _parse_int(token: str, name: str) -> int:
    """An integer written as ``1024`` or ``1e4``; refuses ``2.5``."""
    try:
        value = float(token)
    except ValueError:
        raise ValueError(f"{name}: cannot parse {token!r} as an integer") from None
    if not math.isfinite(value) or not value.is_integer():
        raise ValueError(f"{name} must be an integer, got {token!r}")
    return int(value)


def parse_grid(tokens, name: str = "n") -> list[int]:
    """Expand ``16 64 256`` and ranges ``START:STOP:xFACTOR`` (geometric) / ``START:STOP:STEP``.

    Ranges include STOP when it lies on the progression. The result is sorted and de-duplicated (a
    grid of sequence lengths is a set), and every entry must be an integer >= 1.
    """
    values: list[int] = []
    for token in tokens:
        m = _RANGE.match(str(token))
        if m is None:
            values.append(_parse_int(str(token), name))
            continue
        start, stop = _parse_int(m.group(1), name), _parse_int(m.group(2), name)
        geometric = m.group(3) == "x"
        try:
            step = float(m.group(4))
        except ValueError:
            raise ValueError(f"{name}: bad range step in {token!r}") from None
        if start < 1 or stop < start:
            raise ValueError(f"{name}: range {token!r} needs 1 <= START <= STOP")
        if geometric:
            if not (math.isfinite(step) and step > 1):
                raise ValueError(f"{name}: range factor in {token!r} must be > 1")
            count = math.floor(math.log(stop / start) / math.log(step) + 1e-9) + 1
        else:
            if not (math.isfinite(step) and step >= 1 and step.is_integer()):
                raise ValueError(f"{name}: range step in {token!r} must be an integer >= 1")
            count = (stop - start) // int(step) + 1
        if len(values) + count > _MAX_GRID:
            raise ValueError(f"{name}: range {token!r} gives more than {_MAX_GRID} grid points")
        if geometric:
            values.extend(int(round(start * step**k)) for k in range(count))
        else:
            values.extend(range(start, stop + 1, int(step)))
    # Python ints (no int64 conversion here: 1e30 must reach the simulator's cost check, not overflow)
    return sorted(set(check_int(name, v, minimum=1) for v in values))


def _int_arg(token: str) -> int:
    """argparse type for sizes: ``64``, ``1e4``, ``1e12`` (any size; the simulator refuses what cannot run)."""
    try:
        return _parse_int(token, "value")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _parse_numbers(text: str, name: str) -> np.ndarray:
    """A vector/matrix given inline (``1,0,0`` or ``"1 0; 0 1"``) or as ``@FILE`` (.npy or text)."""
    if text.startswith("@"):
        path = text[1:]
        if not os.path.isfile(path):
            raise ValueError(f"{name}: file {path!r} not found")
        try:
            with warnings.catch_warnings():  # e.g. loadtxt's "input contained no data": reported below instead
                warnings.simplefilter("ignore")
                arr = np.load(path) if path.endswith(".npy") else np.loadtxt(path, ndmin=1)
        except (OSError, ValueError, EOFError) as exc:
            raise ValueError(f"{name}: cannot read {path!r}: {str(exc).splitlines()[0] if str(exc) else exc}") from None
        if np.size(arr) == 0:
            raise ValueError(f"{name}: file {path!r} contains no numbers")
    else:
        rows = [r for r in text.split(";") if r.strip()]
        try:
            parsed = [[float(x) for x in re.split(r"[,\s]+", r.strip()) if x] for r in rows]
            arr = np.array(parsed if len(parsed) > 1 else parsed[0], dtype=np.float64)
        except (ValueError, IndexError):
            raise ValueError(f"{name}: cannot parse {text!r} as numbers (use 1,0,0 or '1 0; 0 1' or @FILE)") from None
    arr = np.asarray(arr, dtype=np.float64)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must contain only finite values")
    return arr


def _scalar_or_array(arr: np.ndarray):
    """A one-element array becomes a float (the simulator broadcasts scalars its own way)."""
    return float(arr.reshape(-1)[0]) if arr.size == 1 else arr


def register(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument_group("sequence lengths").add_argument
    add("--n", nargs="+", default=["16", "64", "256", "1024"], metavar="N",
        help="grid of sequence lengths: integers and/or ranges START:STOP:xFACTOR (geometric) or "
             "START:STOP:STEP (default: 16 64 256 1024)")

    group = parser.add_argument_group("model")
    add = group.add_argument
    add("--d-k", type=_int_arg, default=64, metavar="D", help="key/query dimension (default 64)")
    add("--d-v", type=_int_arg, default=64, metavar="D", help="value dimension (default 64)")
    add("--tau", type=float, default=1.0, metavar="T", help="temperature multiplying the logits (default 1)")
    add("--query", default="fixed", metavar="KIND",
        help="fixed | random (q ~ N(0, I) per sequence) (default fixed)")
    which_query = group.add_mutually_exclusive_group()
    which_query.add_argument("--query-norm", type=float, default=None, metavar="R",
                             help="|q| of the fixed query (default sqrt(d_k), i.e. beta = tau)")
    which_query.add_argument("--beta", type=float, default=None, metavar="B",
                             help="logit spread beta = tau |q| / sqrt(d_k) of the fixed query (sets |q|)")
    which_query.add_argument("--query-vector", default=None, metavar="VEC",
                             help="the fixed query itself: comma-separated numbers or @FILE (.npy or text)")
    add("--key-dist", default="gaussian", metavar="DIST",
        help="gaussian | uniform | rademacher, standardised (default gaussian)")
    add("--value-dist", default="gaussian", metavar="DIST",
        help="gaussian | uniform | rademacher, standardised (default gaussian)")
    add("--value-mean", default="0", metavar="MU",
        help="mean mu_v of the values: one number, or d_v numbers (comma-separated or @FILE)")
    add("--value-scale", type=float, default=1.0, metavar="S", help="standard deviation sigma_v of the values")
    add("--coupling", default=None, metavar="A",
        help="couple values to keys, v = A k + noise: a number a (v = a k[:d_v] + noise, needs d_v <= d_k), "
             "inline rows '1 0 0; 0 1 0', or @FILE with a d_v x d_k matrix")
    add("--coupling-noise", type=float, default=1.0, metavar="S", help="noise scale of the coupling (default 1)")

    add = parser.add_argument_group("Monte Carlo").add_argument
    add("--sequences", type=_int_arg, default=10_000, metavar="M",
        help="independent sequences per N (default 10000)")
    add("--sampler", default="full", metavar="NAME", help="full | logits (exact shortcut for Gaussian keys)")
    add("--estimator", default="sample", metavar="NAME",
        help="sample | rao_blackwell (sigma_v^2 E[sum w^2]; exact when values are independent of keys)")
    add("--coordinate", type=int, default=0, metavar="J", help="output coordinate j reported as var_coord")
    add("--chunk-size", type=_int_arg, default=None, metavar="C", help="sequences per chunk (default: automatic)")
    add("--max-work", type=float, default=None, metavar="W",
        help="refuse runs whose estimated work exceeds W key-coordinates (default 2e12, about an hour on 2 cores)")
    add("--seed", type=int, default=0, metavar="S", help="root seed (default 0)")
    add("--threads", type=int, default=None, metavar="T", help="worker threads (default: all cores)")
    add("--progress", action=argparse.BooleanOptionalAction, default=None,
        help="progress on stderr (default: when stderr is a terminal)")

    _register_variants(parser)

    add = parser.add_argument_group("output").add_argument
    add("--json", action="store_true", help="print JSON results to stdout instead of a table")
    add("-o", "--output", default=None, metavar="FILE", help="also write the JSON results to FILE")


def variant_option(variant: str, param: str) -> str:
    """The command-line flag of a variant parameter: ``--VARIANT-PARAM`` (``--ssmax-s``, ``--logn-n0``), except
    ``--topk`` for top-k's ``k``."""
    if (variant, param) == ("topk", "k"):
        return "--topk"
    return f"--{variant.replace('_', '-')}-{param.replace('_', '-')}"


def _variant_dest(variant: str, param: str) -> str:
    return f"variant__{variant}__{param}"


def _register_variants(parser: argparse.ArgumentParser, default: str | None = "softmax",
                       default_help: str = "default softmax") -> None:
    """``--attention NAME`` (default ``default``) and one flag per variant parameter, generated from the registry."""
    from varsim.variants import VARIANTS

    group = parser.add_argument_group("attention variant (varsim.variants)")
    group.add_argument("--attention", default=default, metavar="NAME",
                       help=f"weight map: {' | '.join(VARIANTS)} ({default_help})")
    for name, spec in VARIANTS.items():
        for p in spec.params:
            flag = variant_option(name, p.name)
            help_ = f"{p.help} [--attention {name}]"
            if p.kind == "bool":
                group.add_argument(flag, dest=_variant_dest(name, p.name), action=argparse.BooleanOptionalAction,
                                   default=None, help=help_)
            else:
                group.add_argument(flag, dest=_variant_dest(name, p.name), type=float, default=None, metavar="X",
                                   help=help_)


def _variant_kwargs(args: argparse.Namespace) -> dict:
    """``attention`` and its parameters from the flags; a flag of another variant is refused."""
    from varsim.variants import VARIANTS, get_variant

    spec = get_variant(args.attention)
    params = {}
    for name, other in VARIANTS.items():
        for p in other.params:
            value = getattr(args, _variant_dest(name, p.name), None)
            if value is None:
                continue
            if name != spec.name:
                raise ValueError(f"{variant_option(name, p.name)} applies to --attention {name}, "
                                 f"not --attention {spec.name}")
            params[p.name] = value
    spec.check_params(params)  # names the flag's parameter on a bad value, before the run
    return {"attention": spec.name, **params}


def build_kwargs(args: argparse.Namespace) -> dict:
    """Keyword arguments for :func:`varsim.sim.simulate` from parsed flags (syntax checks only)."""
    query_norm = args.query_norm
    if args.beta is not None:
        if args.query == "random":  # name the flag the user gave, not the query_norm it would become
            raise ValueError("beta applies to --query fixed only (--query random draws q ~ N(0, I) per sequence)")
        beta = check_real("beta", args.beta, minimum=0.0, maximum=1e30)
        tau = check_real("tau", args.tau)
        if tau <= 0:
            raise ValueError(f"beta: needs tau > 0 (beta = tau |q| / sqrt(d_k)), got tau={tau}")
        if args.d_k < 1:
            raise ValueError(f"d_k must be >= 1, got {args.d_k}")
        query_norm = beta * math.sqrt(args.d_k) / tau
    query_vector = None if args.query_vector is None else _parse_numbers(args.query_vector, "query_vector")
    return dict(
        n_grid=parse_grid(args.n, "n"),
        d_k=args.d_k,
        d_v=args.d_v,
        tau=args.tau,
        query=args.query,
        query_norm=query_norm,
        query_vector=query_vector,
        key_dist=args.key_dist,
        value_dist=args.value_dist,
        value_mean=_scalar_or_array(_parse_numbers(args.value_mean, "value_mean")),
        value_scale=args.value_scale,
        coupling=None if args.coupling is None else _scalar_or_array(_parse_numbers(args.coupling, "coupling")),
        coupling_noise=args.coupling_noise,
        n_sequences=args.sequences,
        sampler=args.sampler,
        estimator=args.estimator,
        coordinate=args.coordinate,
        chunk_size=args.chunk_size,
        seed=args.seed,
        threads=args.threads,
        progress=sys.stderr.isatty() if args.progress is None else args.progress,
        max_work=args.max_work,
        **_variant_kwargs(args),
    )


def exact_variance(result) -> np.ndarray | None:
    """sigma_v^2 E[sum w^2] per N where theory is exact (Gaussian keys, values independent of keys).

    Fixed query: the logits are i.i.d. N(0, beta^2); random query q ~ N(0, I): the chi-square mixture.
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
            ipr = theory.random_query_ipr(n, int(cfg["d_k"]), float(cfg["tau"]))
        else:
            beta = float(np.asarray(result.beta, dtype=np.float64)[0])  # one fixed query: the same beta at every N
            if spec.name == "sigmoid":
                mu = np.asarray(cfg.get("value_mean", 0.0), dtype=np.float64)
                y2, var_s1, _ = remedies.sigmoid_moments(n, beta)
                return scale2 * np.asarray(y2) + float(np.mean(mu**2)) * np.asarray(var_s1)
            if not spec.is_scaled_softmax:
                return None
            ipr = remedies.variant_ipr(spec.name, n, beta, **params)
    except ValueError:  # outside the quadrature's range (e.g. beta > theory.BETA_MAX): keep the simulation's output
        return None
    return scale2 * np.asarray(ipr, dtype=np.float64)


def result_to_json(result, exact=None) -> dict:
    """The machine-readable record: :meth:`SimulationResult.to_dict` (one implementation of the layout) with the
    ``exact_var`` column (null where theory has no exact value)."""
    return result.to_dict(extra_columns={"exact_var": exact})


def _fmt(x, se=None) -> str:
    if x is None or not math.isfinite(x):
        return "-"
    return f"{x:.5g}" if se is None or not math.isfinite(se) else f"{x:.5g} ± {se:.2g}"


def format_table(record: dict) -> str:
    """Plain-text table of a :func:`result_to_json` record (columns the run did not produce are left out)."""
    cfg, rows = record["config"], record["rows"]
    j = cfg.get("coordinate", 0)

    def z_score(r):
        ex, v, se = r["exact_var"], r["var"], r["var_se"]
        return None if None in (ex, v, se) or se <= 0 else f"{(v - ex) / se:+.1f}"

    columns = [  # (header, cell per row)
        ("N", lambda r: str(r["n"])),
        ("Var pooled ± SE", lambda r: _fmt(r["var"], r["var_se"])),
        ("exact", lambda r: None if r["exact_var"] is None else _fmt(r["exact_var"])),
        ("z", z_score),
        (f"Var(o_{j}) ± SE", lambda r: None if r["var_coord"] is None else _fmt(r["var_coord"], r["var_coord_se"])),
        ("E[sum w^2] ± SE", lambda r: None if r["ipr"] is None else _fmt(r["ipr"], r["ipr_se"])),
        ("E[sum w] ± SE", lambda r: None if r.get("wsum") is None else _fmt(r["wsum"], r["wsum_se"])),
        ("Var(sum w)", lambda r: None if r.get("wsum_var") is None else _fmt(r["wsum_var"], r["wsum_var_se"])),
        ("N*Var", lambda r: None if r["var"] is None else f"{r['n'] * r['var']:.4f}"),
        (f"mean(o_{j}) ± SE", lambda r: None if r["mean"] is None else _fmt(r["mean"], r["mean_se"])),
        ("global mean", lambda r: None if r["global_mean"] is None else _fmt(r["global_mean"])),
        ("global var", lambda r: None if r["global_var"] is None else _fmt(r["global_var"])),
    ]
    table = [(h, [cell(r) for r in rows]) for h, cell in columns]
    table = [(h, ["-" if c is None else c for c in cells]) for h, cells in table if any(c is not None for c in cells)]
    widths = [max(len(h), *(len(c) for c in cells)) for h, cells in table]

    beta = rows[0].get("beta")
    from varsim.variants import get_variant

    attention = cfg.get("attention", "softmax")
    names = get_variant(attention).param_names if attention in _variant_names() else ()
    attn = " ".join([f"attention={attention}"] + [f"{p}={cfg[p]}" for p in names if p in cfg])
    out = [
        f"{attn} d_k={cfg.get('d_k')} d_v={cfg.get('d_v')} tau={cfg.get('tau')} query={cfg.get('query')}"
        + (f" beta={beta:.4g}" if beta is not None else "")
        + f" keys={cfg.get('key_dist')} values={cfg.get('value_dist')} sampler={cfg.get('sampler')}"
        + f" estimator={cfg.get('estimator')} sequences={cfg.get('n_sequences')} seed={record['seed']}",
        "  ".join(h.rjust(w) for (h, _), w in zip(table, widths)),
    ]
    for i in range(len(rows)):
        out.append("  ".join(cells[i].rjust(w) for (_, cells), w in zip(table, widths)))
    if record["slope"] is not None:
        out.append(f"log-log slope d ln Var / d ln N = {_fmt(record['slope'], record['slope_se'])}")
    if any(r["exact_var"] is not None for r in rows):
        extra = " + mu_v^2 Var(sum w)" if any(r.get("wsum") is not None for r in rows) else ""
        out.append(f"exact = sigma_v^2 E[sum w^2]{extra} from varsim.theory; z = (Var - exact) / SE")
    if record.get("elapsed_s") is not None:
        out.append(f"elapsed {record['elapsed_s']:.2f} s")
    return "\n".join(out)


def _variant_names():
    from varsim.variants import VARIANTS

    return VARIANTS


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
