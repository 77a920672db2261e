"""``varsim theory``: exact and asymptotic ``E[sum w^2]`` (= ``Var(o_c)/sigma_v^2``) for given N.

Examples::

    varsim theory --n 16 64 1024 --beta 1
    varsim theory --n 64 512 --d 16 --tau 1 --query random --json
    varsim theory --n 16 256 4096 --beta 1 --attention ssmax --ssmax-s 0.5
    varsim theory --n 64 --beta 1 --attention sigmoid --value-mean 1 --value-scale 1
    varsim theory --n 1e3 1e6 1e9 --beta 4 --law sphere --law-param d=64

With ``--attention NAME`` (and the variant's options, the same as ``varsim simulate``'s) the command prints the
variant's exact theory where it exists (fixed query only), by the theory kind of its registry entry
(:func:`varsim.theory.remedies.variant_theory`): ``exact_ipr`` (ssmax, logn, critical) is a softmax at the effective
scale ``beta_N = f(N) beta``, so ``E[sum w^2]`` and the REM phase are evaluated there; ``sigmoid_moments`` (sigmoid)
gives ``E[sum w^2]``, ``Var(sum w)``, ``E[sum w]`` and ``Var(o_j) = sigma_v^2 E[sum w^2] + mu_v^2 Var(sum w)``;
``bound`` (topk) the bound ``1/k <= sum w^2 <= 1`` (exact softmax when ``k >= N``); ``none`` (the other maps): Monte
Carlo only.

With ``--law NAME`` (a logit law of :data:`varsim.theory.laws.LAWS`, its parameters as ``--law-param KEY=VALUE``)
the logits of a fixed query are ``X = beta T`` with ``T`` of that law, and the table is its exact theory
(:mod:`varsim.theory.laws`): ``E[sum w^2]``, ``N E``, the local exponent, the annealed ``A(beta)/N`` and the
crossover scale ``beta*(N)`` at which ``A = N``; ``--law gaussian`` is the default table.

A fixed query with ``|q| = sqrt(d)`` has logit scale ``beta = tau``; a random query ``q ~ N(0, I_d)``
averages the fixed-query law over ``|q|`` (THEORY.md 2.1).
"""

from __future__ import annotations

import json
import math
import sys

from varsim._common.provenance import versions
from varsim._common.validate import check_choice, check_positive_int, check_real
from varsim.cli._options import MAX_ABS, add_variant_flags, count_option, real_option, variant_kwargs

DEFAULT_N = (16, 64, 256, 1024, 4096)
#: What a table cell shows where its quantity is not defined (JSON: null).
MARK = "n/a"


def register(parser) -> None:
    from varsim.theory import BETA_MAX, N_MAX

    parser.add_argument("--n", type=real_option(1.0, N_MAX), nargs="+", default=list(DEFAULT_N), metavar="N",
                        help="sequence lengths (real, 1 <= N <= 1e300; default: %(default)s)")
    parser.add_argument("--beta", type=real_option(0.0, BETA_MAX), default=None,
                        help=f"logit standard deviation of a fixed query, 0 <= beta <= {BETA_MAX:g} (the law depends "
                             "on |beta| only: a negative beta is refused rather than silently replaced)")
    parser.add_argument("--d", type=count_option(), default=None, help="key dimension d_k (use with --tau, --query)")
    parser.add_argument("--tau", type=real_option(0.0, BETA_MAX), default=None,
                        help=f"temperature, 0 <= tau <= {BETA_MAX:g} (with --d; default 1)")
    parser.add_argument("--query", default="fixed", help="with --d: 'fixed' (|q| = sqrt(d), beta = tau) or "
                                                         "'random' (q ~ N(0, I_d)); default fixed")
    parser.add_argument("--value-mean", type=real_option(-MAX_ABS, MAX_ABS), default=None, metavar="MU",
                        help="--attention sigmoid: value mean mu_v for Var(o_j) (default 0)")
    parser.add_argument("--value-scale", type=real_option(0.0, MAX_ABS), default=None, metavar="S",
                        help="--attention sigmoid: value standard deviation sigma_v for Var(o_j) (default 1)")
    from varsim.theory.laws import LAWS

    parser.add_argument("--law", default=None, metavar="NAME",
                        help=f"logit law of a fixed query's logits beta*T: one of {', '.join(LAWS)} (default gaussian; "
                             "with --beta)")
    parser.add_argument("--law-param", action="append", default=None, metavar="KEY=VALUE",
                        help="a parameter of --law: d=64 for the sphere, sample=@FILE (.npy or text) for the "
                             "empirical law (repeat for several)")
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON instead of a table")
    add_variant_flags(parser)
    parser.epilog = (f"A cell reads '{MARK}' where the quantity is not defined there: the series c1..c4 is shown only "
                     "where its terms |c_k|/N^k shrink with k (varsim.theory.truncated_series; roughly N > e^(4 "
                     "beta^2) for beta >~ 1), limit/N only where the limit exists and is a finite double, "
                     "1-a_N/beta only where it lies in (0, 1). JSON gives null there.")


def _model(args) -> dict:
    """Resolve the flags into ``{'query': ..., 'beta': ...}`` or ``{'query': 'random', 'd': ..., 'tau': ...}``."""
    query = check_choice("query", args.query, ("fixed", "random"))
    if args.beta is not None:
        if args.d is not None or args.tau is not None:
            raise ValueError("beta: give either --beta or --d/--tau, not both")
        if query == "random":
            raise ValueError("query: --query random needs --d (and --tau), not --beta")
        return {"query": "fixed", "beta": check_real("beta", args.beta, minimum=0.0)}
    if args.d is None:
        raise ValueError("beta: give --beta B, or --d D [--tau T] [--query fixed|random]")
    d = check_positive_int("d", args.d)
    tau = check_real("tau", 1.0 if args.tau is None else args.tau, minimum=0.0)
    if query == "fixed":
        return {"query": "fixed", "d": d, "tau": tau, "beta": tau}
    return {"query": "random", "d": d, "tau": tau}


def _law_params(given) -> dict:
    """``{key: value}`` from the ``--law-param KEY=VALUE`` flags: a number (an integer where it is one), or the
    numbers of a list or ``@FILE`` (.npy or text; the empirical law's ``sample``)."""
    from varsim.cli._options import parse_numbers

    params = {}
    for item in given or ():
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier() or not text.strip():
            raise ValueError(f"law_param: --law-param expects KEY=VALUE (e.g. d=64, sample=@logits.npy), got {item!r}")
        if key in params:
            raise ValueError(f"law_param: --law-param {key} given twice")
        arr = parse_numbers(text.strip(), f"law_param {key}").reshape(-1)
        if arr.size > 1:
            params[key] = arr
        else:
            value = float(arr[0])
            params[key] = int(value) if value.is_integer() and abs(value) < 2**53 else value
    return params


def _law(args, model: dict):
    """The :class:`~varsim.theory.laws.LogitLaw` of ``--law``/``--law-param`` (None: the Gaussian tables as
    before); refused beside a random query, ``--d/--tau`` or an attention variant."""
    from varsim.theory.laws import logit_law

    if args.law is None:
        if args.law_param:
            raise ValueError("law_param: --law-param needs --law NAME")
        return None
    params = _law_params(args.law_param)
    if "d" in model or model["query"] != "fixed":
        raise ValueError("law: --law takes the logit scale from --beta (the law's own parameters from --law-param), "
                         "not --d/--tau/--query")
    if args.attention not in (None, "softmax") or args.value_mean is not None or args.value_scale is not None:
        raise ValueError("law: --law is the theory of softmax weights; it takes no --attention or value flags")
    try:
        law = logit_law(args.law, **params)
    except ValueError as exc:
        which = "law" if str(exc).startswith("unknown law") else "law_param"
        raise ValueError(f"{which}: {exc}") from None
    return None if law.name == "gaussian" else law


def compute_law(law, beta: float, ns) -> list[dict]:
    """One row per N of a logit law's exact theory: ``E[sum w^2]``, ``N E``, the local exponent, the annealed
    ``A(beta)/N`` (where ``N >= A``, else ``None``) and the crossover scale ``beta*(N)`` (``None`` where no beta
    reaches ``A = N``: a law with an atom at its top)."""
    from varsim import theory as T
    from varsim.theory._args import real_array
    from varsim.theory.laws import annealed_limit, crossover_beta, law_ipr_and_exponent

    n_arr = real_array("n", ns, minimum=1.0, maximum=T.N_MAX).ravel()
    ipr, exponent = law_ipr_and_exponent(law, n_arr, beta)
    limit = float(annealed_limit(law, beta))
    rows = []
    for n, e, g in zip(n_arr, ipr, exponent):
        n = float(n)
        star = crossover_beta(law, n)
        rows.append({"n": n, "ipr": float(e), "n_ipr": n * float(e), "exponent": float(g),
                     "asymptote": limit / n if math.isfinite(limit) and n >= limit else None,
                     "crossover_beta": star if math.isfinite(star) else None})
    return rows


_LAW_COLUMNS = (
    ("n", "N", "{:>10.6g}"),
    ("ipr", "E[sum w^2]", "{:>13.6g}"),
    ("n_ipr", "N*E", "{:>10.6g}"),
    ("exponent", "dlnE/dlnN", "{:>10.4f}"),
    ("asymptote", "A/N", "{:>11.6g}"),
    ("crossover_beta", "beta*(N)", "{:>10.6g}"),
)


def _law_table(model: dict, rows: list[dict]) -> str:
    law = model["law"]
    params = " ".join(f"{k}={v}" for k, v in law.items() if k != "name")
    head = (f"law {law['name']}{' ' + params if params else ''}, fixed query, logits beta*T, beta = "
            f"{model['beta']:g}; A = lim N*E = {model['annealed_limit']:.6g}")
    lines = [head, "  ".join(f"{h:>{len(fmt.format(0.0))}}" for _, h, fmt in _LAW_COLUMNS)]
    for r in rows:
        lines.append("  ".join(f"{MARK:>{len(fmt.format(0.0))}}" if r[key] is None else fmt.format(r[key])
                               for key, _, fmt in _LAW_COLUMNS))
    lines.append(f"A/N: the annealed law, shown ({MARK} otherwise) where N >= A (frozen weights for N << A); "
                 f"beta*(N): the scale at which A = N ({MARK}: none, the law's top atom caps A)")
    return "\n".join(lines)


def _optional(fn, *a):
    """``fn(*a)`` or ``None`` where the quantity is undefined (e.g. a divergent series coefficient)."""
    try:
        value = fn(*a)
    except ValueError:
        return None
    return None if value is None or (isinstance(value, float) and not math.isfinite(value)) else value


def _annealed(beta: float, n: float):
    """``e^{beta^2}/N``, or ``None`` where it is not a finite double."""
    log_value = beta * beta - math.log(n)
    return math.exp(log_value) if log_value < 709.0 else None


def _series(T, n: float, coefs) -> dict:
    """The truncated series at ``n`` where it is meaningful (``truncated_series``' rule), else ``None``."""
    if not coefs:
        return {"series": None, "series_valid": False}
    value, ok = T.truncated_series(n, coefs)
    return {"series": float(value) if ok else None, "series_valid": bool(ok)}


def _frozen(T, n: float, beta: float):
    if n <= 1.0 or beta == 0.0:
        return None
    value = float(T.frozen_ipr(n, beta))
    return value if 0.0 < value < 1.0 else None


def compute(model: dict, ns) -> list[dict]:
    """One row of exact and asymptotic values per N (``None`` where a quantity does not apply)."""
    import numpy as np

    from varsim import theory as T
    from varsim.theory._args import real_array

    n_arr = real_array("n", ns, minimum=1.0, maximum=T.N_MAX).ravel()
    rows = []
    if model["query"] == "fixed":
        beta = model["beta"]
        ipr, exponent = T.ipr_and_exponent(n_arr, beta)
        for n, e, g in zip(n_arr, ipr, exponent):
            n = float(n)
            rows.append({
                "n": n, "ipr": float(e), "n_ipr": n * float(e), "exponent": float(g),
                **_series(T, n, T.series_coefficients(beta)),
                "asymptote": _annealed(beta, n),
                "phase": T.phase(n, beta),
                "rem_exponent": float(T.effective_exponent(n, beta)),
                # 1 - a_N/beta only means something where it lies in (0, 1), i.e. beta > a_N.
                "frozen_ipr": _frozen(T, n, beta),
            })
        return rows
    d, tau = model["d"], model["tau"]
    ipr, exponent = (np.asarray(a) for a in T.random_query_ipr_and_exponent(n_arr, d, tau))
    coefs = T.random_query_series_coefficients(d, tau)
    limit = _optional(T.random_query_limit, d, tau)
    for n, e, g in zip(n_arr, ipr, exponent):
        n = float(n)
        rows.append({
            "n": n, "ipr": float(e), "n_ipr": n * float(e), "exponent": float(g),
            **_series(T, n, coefs),
            "series_order": len(coefs),
            "asymptote": None if limit is None else limit / n,
            "phase": None, "rem_exponent": None, "frozen_ipr": None,
        })
    return rows


_COLUMNS = (
    ("n", "N", "{:>10.6g}"),
    ("ipr", "E[sum w^2]", "{:>13.6g}"),
    ("n_ipr", "N*E", "{:>10.6g}"),
    ("exponent", "dlnE/dlnN", "{:>10.4f}"),
    ("series", "series c1..c4", "{:>14.6g}"),
    ("asymptote", "limit/N", "{:>11.6g}"),
    ("phase", "phase", "{:>13}"),
    ("rem_exponent", "large-beta rule", "{:>15.3f}"),
    ("frozen_ipr", "1-a_N/beta", "{:>11.4f}"),
)


def _table(model: dict, rows: list[dict]) -> str:
    if model["query"] == "fixed":
        head = f"fixed query, beta = {model['beta']:g}" + (
            f" (d = {model['d']}, tau = {model['tau']:g}, |q| = sqrt(d))" if "d" in model else "")
        asym = "e^{beta^2}/N"
    else:
        head = f"random query q ~ N(0, I_{model['d']}), tau = {model['tau']:g}"
        asym = "(1-2tau^2/d)^(-d/2)/N"
    # Every column that applies to the model and has a value in some row is shown, with MARK where its value is not
    # defined at that N; a column undefined in every row says nothing and is left out.
    fixed_only = ("phase", "rem_exponent", "frozen_ipr")
    cols = [c for c in _COLUMNS if (model["query"] == "fixed" or c[0] not in fixed_only)
            and any(r.get(c[0]) is not None for r in rows)]
    widths = [len(fmt.format(0.0 if key not in ("phase",) else "annealed")) for key, _, fmt in cols]
    lines = [head, "  ".join(f"{name:>{w}}" for (_, name, _), w in zip(cols, widths))]
    for r in rows:
        cells = []
        for (key, _, fmt), w in zip(cols, widths):
            v = r.get(key)
            cells.append(f"{MARK:>{w}}" if v is None else fmt.format(v))
        lines.append("  ".join(cells))
    if model["query"] == "fixed":
        shown = {c[0] for c in cols}
        series = f"; series = sum_k c_k/N^k, shown ({MARK} otherwise) only where its terms shrink with k (see --help)"
        notes = [f"limit/N = {asym}" + (series if "series" in shown else ""),
                 "phase and large-beta rule: random-energy-model limits (THEORY.md 3.2-3.4), reached as beta grows "
                 "at fixed ln N/beta^2; at finite beta the crossovers are broad, and dlnE/dlnN is the exact exponent"]
        if any(c[0] == "frozen_ipr" for c in cols):
            notes.append("1-a_N/beta: frozen-phase predictor, shown where beta > a_N")
    else:
        # E_q[c_k] grows like (1 - k(k+1) tau^2/d)^(-d/2): the series needs far larger N than for a fixed query
        order = rows[0].get("series_order", 0)
        notes = [f"limit/N = {asym}" if order
                 else "no finite limit or series: E_q[e^(beta^2)] diverges for d <= 2 tau^2"]
        if order:
            notes.append(f"series = sum_(k <= {order}) E_q[c_k]/N^k (asymptotic; E_q[c_k] is finite only for "
                         f"d > k(k+1) tau^2), shown ({MARK} otherwise) only where its terms shrink with k")
    return "\n".join(lines + notes)


# ----------------------------------------------------------------------------------------------------------------------
# Attention variants (--attention NAME): what exact theory says about each map, keyed by kind


def _variant(args, model: dict) -> dict | None:
    """``{'attention': name, 'params': {...}, 'theory': kind}`` from the flags (``kind`` the registry entry's theory
    kind), or ``None`` for plain softmax."""
    from varsim.variants import VARIANTS, get_variant

    kwargs = variant_kwargs(args)  # unknown name, a flag of another variant, bad values: ValueError
    spec = get_variant(kwargs.pop("attention"))
    params = spec.check_params(kwargs)  # with the defaults filled in, for the record
    value_given = args.value_mean is not None or args.value_scale is not None
    if spec.name == "softmax" and not value_given:
        return None
    if value_given and spec.sums_to_one:
        unnormalized = " ".join(k for k, v in VARIANTS.items() if not v.sums_to_one)
        raise ValueError(f"value_mean: --value-mean/--value-scale apply to --attention {unnormalized} only (a map "
                         "summing to 1 has Var(o_j) = sigma_v^2 E[sum w^2] whatever mu_v)")
    if model["query"] != "fixed":
        raise ValueError(f"query: --query random is not supported with --attention {spec.name} (variant theory is for "
                         "a fixed query: use --beta or --d/--tau with --query fixed)")
    out = {"attention": spec.name, "params": params, "theory": spec.theory}
    if not spec.sums_to_one:
        out["value_mean"] = float(check_real("value_mean", 0.0 if args.value_mean is None else args.value_mean))
        out["value_scale"] = float(check_real("value_scale", 1.0 if args.value_scale is None else args.value_scale,
                                              minimum=0.0))
    return out


def _monte_carlo_note(name: str) -> str:
    return f"Monte Carlo only: {name} has no exact theory here; use varsim simulate --attention {name}"


def _rows_exact_ipr(T, th, variant):
    return [{"n": n, "beta_n": b, "ipr": e, "n_ipr": None if e is None else n * e, "phase": str(T.phase(n, b))}
            for n, b, e in zip(th.n, th.beta_n, th.ipr)]


def _rows_sigmoid_moments(T, th, variant):
    sv, mu = variant["value_scale"], variant["value_mean"]
    var = th.exact_var(sv * sv, mu * mu)
    return [{"n": n, "ipr": a, "n_ipr": None if a is None else n * a, "wsum_var": v, "wsum": m, "var": x}
            for n, a, v, m, x in zip(th.n, th.ipr, th.wsum_var, th.wsum, var)]


def _rows_bound(T, th, variant):
    return [{"n": n, "ipr_lower": lo, "ipr_upper": hi, "ipr": e}
            for n, lo, hi, e in zip(th.n, th.ipr_lower, th.ipr_upper, th.ipr)]


#: theory kind -> (rows of the JSON and the table, table columns (key, header, format), the table's closing note)
_VARIANT_VIEWS = {
    "exact_ipr": (_rows_exact_ipr,
                  (("n", "N", "{:>10.6g}"), ("beta_n", "beta_N", "{:>10.6g}"), ("ipr", "E[sum w^2]", "{:>13.6g}"),
                   ("n_ipr", "N*E", "{:>10.6g}"), ("phase", "phase at beta_N", "{:>15}")),
                  lambda v: ("softmax at the effective scale beta_N = f(N) beta (varsim.theory.variant_beta); exact "
                             f"E[sum w^2] by quadrature ({MARK} where beta_N > {1e4:g}); phase: THEORY.md 3.2")),
    "sigmoid_moments": (_rows_sigmoid_moments,
                        (("n", "N", "{:>10.6g}"), ("ipr", "E[sum w^2]", "{:>13.6g}"),
                         ("wsum_var", "Var(sum w)", "{:>13.6g}"), ("wsum", "E[sum w]", "{:>13.6g}"),
                         ("var", "Var(o_j)", "{:>13.6g}")),
                        lambda v: (f"Var(o_j) = sigma_v^2 E[sum w^2] + mu_v^2 Var(sum w) with sigma_v = "
                                   f"{v['value_scale']:g}, mu_v = {v['value_mean']:g} (REMEDIES 1, 3; exact "
                                   f"quadrature; {MARK} where it underflows)")),
    "bound": (_rows_bound,
              (("n", "N", "{:>10.6g}"), ("ipr_lower", "1/k <=", "{:>10.6g}"), ("ipr_upper", "sum w^2 <=", "{:>10.6g}"),
               ("ipr", "exact (k>=N)", "{:>13.6g}")),
              lambda v: (f"top-k bound 1/k <= sum w^2 <= 1 for any logits (THEORY 4d); exact softmax value where "
                         f"k >= N, {MARK} otherwise (Monte Carlo: varsim simulate --attention {v['attention']})")),
}


def compute_variant(model: dict, variant: dict, ns) -> list[dict]:
    """One row per N of the variant's exact theory (see the module docstring); ``[]`` for Monte-Carlo-only maps."""
    from varsim import theory as T

    view = _VARIANT_VIEWS.get(variant["theory"])
    if view is None:
        return []
    th = T.variant_theory(variant["attention"], ns, model["beta"], **variant["params"])
    return view[0](T, th, variant)


def _variant_table(model: dict, variant: dict, rows: list[dict]) -> str:
    name = variant["attention"]
    params = " ".join(f"{k}={v:g}" if not isinstance(v, bool) else f"{k}={v}" for k, v in variant["params"].items())
    head = f"attention {name}{' ' + params if params else ''}, fixed query, beta = {model['beta']:g}"
    view = _VARIANT_VIEWS.get(variant["theory"])
    if view is None:
        return f"{head}\n{_monte_carlo_note(name)}"
    _, cols, note = view
    widths = [len(fmt.format("frozen" if key == "phase" else 0.0)) for key, _, fmt in cols]
    widths = [max(w, len(h)) for w, (_, h, _) in zip(widths, cols)]
    lines = [head, "  ".join(f"{h:>{w}}" for (_, h, _), w in zip(cols, widths))]
    for r in rows:
        lines.append("  ".join(f"{MARK:>{w}}" if r.get(key) is None else f"{fmt.format(r[key]):>{w}}"
                               for (key, _, fmt), w in zip(cols, widths)))
    lines.append(note(variant))
    return "\n".join(lines)


def run(args) -> int:
    model = _model(args)
    law = _law(args, model)
    if law is not None:
        from varsim.theory.laws import annealed_limit

        model = {**model, "law": {"name": law.name, **law.params()},
                 "annealed_limit": float(annealed_limit(law, model["beta"]))}
        record = {"model": model, "rows": compute_law(law, model["beta"], args.n)}
        return _emit(args, record, _law_table(model, record["rows"]))
    variant = _variant(args, model)
    if variant is None:
        record = {"model": model, "rows": compute(model, args.n)}
        text = _table(model, record["rows"]) if not args.json else None
    else:
        record = {"model": model, "variant": variant, "rows": compute_variant(model, variant, args.n)}
        if variant["theory"] not in _VARIANT_VIEWS:
            record["note"] = _monte_carlo_note(variant["attention"])
        text = _variant_table(model, variant, record["rows"]) if not args.json else None
    return _emit(args, record, text)


def _emit(args, record: dict, text) -> int:
    if args.json:
        json.dump({**record, "versions": versions()}, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(text)
    return 0
