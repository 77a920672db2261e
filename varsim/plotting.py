"""Plotting helpers for a user's own results: a simulation against its theory, the phase diagram of the exact local
decay exponent (or another quantity), sweep results as records or a DataFrame, and a save that keeps the provenance.

Each drawing helper draws onto the axes it is given (``ax=None``: a new figure at the size of ``style``, a name of
:data:`STYLE_NAMES` or a dict of rcParams); Matplotlib is imported only when a helper is called. The theory helpers
take ``law=``, a logit law of :data:`varsim.theory.laws.LAWS` by name with its parameters in ``law_params`` (or a
:class:`~varsim.theory.laws.LogitLaw` built by :func:`~varsim.theory.laws.logit_law`); the default, ``"gaussian"``,
draws what they drew before laws existed:

```python
from varsim import plotting
from varsim.sim import simulate
res = simulate([16, 64, 256, 1024], beta=2.0, sampler="logits", estimator="rao_blackwell")
ax = plotting.plot_result(res)           # Var(o_j) vs N, SE bars, exact line, asymptote
plotting.save(ax, "result.pdf")          # the file's metadata: the run's configuration and seed, versions, commit
pd = plotting.phase_diagram(levels=[-0.75, -0.5, -0.25])  # pd.values: the map on the grid pd.ln_n x pd.betas
qk = plotting.phase_diagram(law="sphere", law_params={"d": 64})  # the same map for keys on the sphere (QK-norm)
ax = plotting.plot_theory(betas=[1, 2, 3], law="uniform", law_params={"d": 8})  # exact E[sum w^2] against N
df = plotting.sweep_frame("sweep.json")  # one row per cell (needs pandas)
```
"""

from __future__ import annotations

import dataclasses

__all__ = ["plot_result", "plot_theory", "phase_diagram", "PhaseDiagram", "QUANTITIES", "THEORY_CURVES", "save",
           "read_provenance", "sweep_records", "sweep_frame", "style", "STYLE_NAMES"]

STYLE_NAMES = ("default", "column", "two-column", "slides")
"""The named figure styles: ``"default"``, ``"column"`` (3.3 in), ``"two-column"`` (6.9 in), ``"slides"``."""


def style(name=None):
    """A context manager that applies a figure style to what is drawn inside it.

    Parameters
    ----------
    name : str or dict, optional
        A name of :data:`STYLE_NAMES`, or a dict of Matplotlib rcParams (e.g. a ``tueplots`` bundle); None: the
        default style.

    Returns
    -------
    contextlib.AbstractContextManager
        Sets the style's rcParams on entry and restores the previous ones on exit.

    Examples
    --------
    >>> from varsim import plotting
    >>> with plotting.style("column"):
    ...     ax = plotting.phase_diagram().ax
    >>> [float(x) for x in ax.get_xlim()]
    [0.0, 14.0]
    """
    from varsim import style as styles

    return styles.style(name)


def _context(style, ax):
    """The style to draw in: ``style`` if given; none (the caller's rcParams) when drawing on the caller's axes."""
    import contextlib

    from varsim import style as styles

    return contextlib.nullcontext() if style is None and ax is not None else styles.style(style)


def _axes(ax, style, aspect=0.75):
    """``ax``, or the axes of a new figure at the width of ``style`` (constrained layout)."""
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    from varsim import style as styles

    spec = styles.spec(style)
    width = spec["width"] or 4.8
    with styles.style(style):
        fig, new = plt.subplots(figsize=(width, width * aspect), layout="constrained")
    return new


def _record(fig, entry: dict) -> None:
    """Remember what a helper drew on ``fig`` (a run's configuration, a grid): :func:`save` writes it."""
    drawn = getattr(fig, "_varsim_drawn", None)
    if drawn is None:
        drawn = fig._varsim_drawn = []
    drawn.append(entry)


def _logit_law(law, law_params):
    """The :class:`~varsim.theory.laws.LogitLaw` of ``law`` (a name of ``LAWS`` with ``law_params``, or a law);
    an unknown name, a missing or unknown parameter, or ``law_params`` beside a built law: ``ValueError``."""
    from varsim.theory.laws import LAWS, LogitLaw, logit_law

    if isinstance(law, LogitLaw):
        if law_params:
            raise ValueError(f"law_params: give the parameters of a law either in law_params with its name or in the "
                             f"law built by logit_law, not both (law={law!r})")
        return law
    if not isinstance(law, str):
        raise ValueError(f"law: expected a name of varsim.theory.laws.LAWS ({', '.join(LAWS)}) or a LogitLaw, got "
                         f"{type(law).__name__}")
    if law_params is not None and not isinstance(law_params, dict):
        raise ValueError(f"law_params: expected a dict of the law's parameters, got {type(law_params).__name__}")
    try:
        return logit_law(law, **(law_params or {}))
    except ValueError as exc:
        if str(exc).startswith("unknown law"):
            raise
        raise ValueError(f"law_params: {exc}") from None


def _is_gaussian(law) -> bool:
    from varsim.theory.laws import GaussianLaw

    return isinstance(law, GaussianLaw)


def _law_title(law) -> str:
    """``sphere d=64``: the law's name and parameters, for labels and records."""
    params = " ".join(f"{k}={v}" for k, v in law.params().items())
    return f"{law.name} {params}".strip()


def _law_record(law) -> dict:
    return {"name": law.name, **law.params()}


def _fixed_reference(result, cfg, beta, scale2):
    """Softmax, fixed query, Gaussian keys, values independent of keys: ``sigma_v^2 E[sum w^2](N, beta)`` exactly
    and the annealed asymptote ``sigma_v^2 e^{beta^2} / N`` (THEORY.md 1.1)."""
    import numpy as np

    from varsim.theory import expected_ipr

    return (lambda n: scale2 * expected_ipr(n, beta)), (lambda n: scale2 * np.exp(beta**2) / n), None


def _random_reference(result, cfg, beta, scale2):
    """Softmax, random query ``q ~ N(0, I_{d_k})``: the exact chi-square mixture ``sigma_v^2 E_q E[sum w^2]`` and
    its limit ``sigma_v^2 (1 - 2 tau^2/d_k)^{-d_k/2} / N`` (THEORY.md 2.1; no limit when ``2 tau^2 >= d_k``)."""
    from varsim.theory import random_query_ipr, random_query_limit

    d, tau = int(cfg["d_k"]), float(cfg["tau"])
    try:
        limit = random_query_limit(d, tau)
    except ValueError:
        return (lambda n: scale2 * random_query_ipr(n, d, tau)), None, "no finite limit: 2 tau^2 >= d_k"
    return (lambda n: scale2 * random_query_ipr(n, d, tau)), (lambda n: scale2 * limit / n), None


def _coupled_reference(result, cfg, beta, scale2):
    """Softmax, fixed query, Gaussian keys, values ``A k + c eta`` (a scalar coupling ``a`` is ``a`` on the first
    ``d_v`` diagonal entries): the large-N law of total variance (THEORY.md 2.4), pooled over the ``d_v``
    coordinates as ``result.var`` is, ``sigma_v^2 e^{beta^2} / N (c^2 + mean_c (A A^T)_cc + beta^2 mean_c
    (A q^)_c^2)``, ``q^`` the query's direction. No exact finite-N line: the ``(A q^)_c^2 Var(sum_i w_i g_i)``
    term has only its asymptote here."""
    import numpy as np

    d_k, d_v = int(cfg["d_k"]), int(cfg["d_v"])
    coupling = cfg["coupling"]
    a = (np.hstack([float(coupling) * np.eye(d_v), np.zeros((d_v, d_k - d_v))]) if np.ndim(coupling) == 0
         else np.asarray(coupling, dtype=float))
    q = np.ones(d_k) if cfg.get("query_vector") is None else np.asarray(cfg["query_vector"], dtype=float)
    q_hat = q / np.linalg.norm(q) if np.linalg.norm(q) > 0 else q
    level = float(cfg["coupling_noise"]) ** 2 + np.mean(np.sum(a * a, axis=1)) + beta**2 * np.mean((a @ q_hat) ** 2)
    return None, (lambda n: scale2 * level * np.exp(beta**2) / n), "values coupled to keys: asymptote only"


def _variant_reference(result, cfg, beta, scale2):
    """A weight map whose registry entry has exact theory of ``E[sum w^2]`` (``exact_ipr``: softmax at an
    N-dependent scale, ``ssmax``, ``logn``, ``critical``), fixed query, Gaussian keys, independent values:
    ``sigma_v^2 E[sum w^2]`` exactly (:func:`varsim.theory.variant_theory`); no asymptote."""
    import numpy as np

    from varsim.theory import variant_theory
    from varsim.variants import get_variant

    name = cfg["attention"]
    params = {k: cfg[k] for k in get_variant(name).param_names if k in cfg}

    def exact(n):
        ipr = variant_theory(name, n, beta, **params).ipr
        return scale2 * np.array([np.nan if v is None else v for v in ipr], dtype=float)

    return exact, None, None


def _law_reference(law, cfg, beta, scale2):
    """Softmax, fixed query, values independent of the weights, logits ``X = beta T`` of ``law``: the exact
    ``sigma_v^2 E[sum w^2]`` (:func:`varsim.theory.laws.law_ipr`) and ``sigma_v^2 A(beta) / N``, ``A`` the law's
    annealed limit (:func:`varsim.theory.laws.annealed_limit`)."""
    from varsim.theory.laws import annealed_limit, law_ipr

    if cfg.get("attention", "softmax") != "softmax" or cfg.get("coupling") is not None or beta is None:
        raise ValueError("law: the theory of a logit law is for softmax at a fixed query with values independent of "
                         "the weights; this run is not (attention, coupling or a random query)")
    limit = annealed_limit(law, beta)
    return (lambda n: scale2 * law_ipr(law, n, beta)), (lambda n: scale2 * limit / n), None


#: the theory references of :func:`plot_result`: the case of a run (:func:`_reference_case`) -> builder of
#: ``(exact(N) or None, asymptote(N) or None, note or None)``; a case not here has no theory line
_REFERENCES = {"fixed": _fixed_reference, "random": _random_reference, "coupled": _coupled_reference,
               "variant": _variant_reference}
#: why a run has no theory line, per case outside :data:`_REFERENCES`
_NO_REFERENCE = {
    "attention": "no theory line for attention {attention!r}",
    "keys": "no exact line: {key_dist} keys (the theory is for Gaussian keys)",
    "random_coupled": "no exact line: random query with values coupled to keys",
}


def _reference_case(result, cfg) -> str:
    if cfg.get("attention", "softmax") != "softmax":
        from varsim.variants import get_variant

        plain = (cfg.get("key_dist", "gaussian") == "gaussian" and cfg.get("coupling") is None
                 and result.beta is not None)
        return "variant" if plain and get_variant(cfg["attention"]).theory == "exact_ipr" else "attention"
    if cfg.get("key_dist", "gaussian") != "gaussian":
        return "keys"
    coupled = cfg.get("coupling") is not None
    if result.beta is None:
        return "random_coupled" if coupled else "random"
    return "coupled" if coupled else "fixed"


def plot_result(result, ax=None, *, exact: bool = True, asymptote: bool = True, label=None, color=None,
                marker: str = "o", legend: bool = True, style=None, law=None, law_params=None):
    """Draw a simulation's ``Var(o_j)`` against N with the theory that holds for the run.

    Log-log axes, standard-error bars; the run's theory as a solid line (exact) and a dashed one (large-N
    asymptote) over its N range, each where the theory has one:

    - softmax, fixed query, Gaussian keys, values independent of the keys: ``value_scale^2 E[sum w^2](N, beta)``
      exactly and the annealed ``value_scale^2 e^{beta^2} / N``;
    - a random query: the exact chi-square mixture (:func:`varsim.theory.random_query_ipr`) and its limit
      ``(1 - 2 tau^2/d_k)^{-d_k/2} / N``;
    - values coupled to keys (``coupling``): the asymptote of the law of total variance (THEORY.md 2.4), which
      includes the coupling's share; no exact line;
    - a weight map with exact theory (:func:`varsim.theory.variant_theory`: ``ssmax``, ``logn``, ``critical``) at a
      fixed query: its exact ``value_scale^2 E[sum w^2]``; no asymptote;
    - other weight maps, non-Gaussian keys, or a random query with coupling: no line;
    - ``law=`` given: the theory of that logit law at the run's beta (softmax, fixed query, independent values):
      the exact ``value_scale^2 E[sum w^2]`` (:func:`varsim.theory.laws.law_ipr`) and ``value_scale^2 A(beta)/N``
      (:func:`varsim.theory.laws.annealed_limit`). It states the law of the run's logits ``X = beta T``: for keys
      on the sphere, ``law="sphere", law_params={"d": d_k}``.

    Where a line is missing the legend entry says why ("values coupled to keys: asymptote only"), so the points
    are never drawn against a reference that does not apply to them.

    Parameters
    ----------
    result : SimulationResult
        A result of :func:`varsim.sim.simulate`.
    ax : matplotlib.axes.Axes, optional
        The axes to draw on (None: a new figure at the size of ``style``).
    exact : bool
        Draw the exact line (where the run has one).
    asymptote : bool
        Draw the asymptote (where the run has one).
    label : str, optional
        Names the points in the legend (default ``beta = ...``, or ``random query, d_k = ...``).
    color : color, optional
        The points' and lines' colour (default: the next of the axes' cycle).
    marker : str
        The points' marker.
    legend : bool
        Draw the legend (redrawn with every call, so several results share one).
    style : str or dict, optional
        A figure style (:func:`style`) for a new figure; None on the caller's axes keeps the caller's rcParams.
    law : str or LogitLaw, optional
        The logit law whose theory to draw (a name of :data:`varsim.theory.laws.LAWS` or a law); None: the theory
        of the run's own configuration, as listed above (Gaussian keys).
    law_params : dict, optional
        The parameters of the law named by ``law`` (``{"d": 64}`` for the sphere).

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on; the run's configuration is recorded on its figure, so :func:`save` writes it.

    Raises
    ------
    ValueError
        ``result`` is not a simulation result; an unknown law or bad ``law_params`` (named); ``law`` given for a run
        it does not describe (another weight map, coupled values, a random query).

    See Also
    --------
    varsim.theory.expected_ipr : the exact line of a fixed query.
    varsim.theory.random_query_ipr : the exact line of a random query.
    phase_diagram : where the run's beta and N lie.
    save : write the figure with its provenance.

    Examples
    --------
    >>> from varsim import plotting
    >>> from varsim.sim import simulate
    >>> res = simulate([16, 64, 256], beta=2.0, d_k=16, n_sequences=2000, seed=0)
    >>> ax = plotting.plot_result(res)
    >>> ax.get_xscale(), ax.get_yscale()
    ('log', 'log')
    >>> coupled = simulate([16, 64], beta=1.0, d_k=8, d_v=4, coupling=0.5, n_sequences=64, seed=0)
    >>> ax = plotting.plot_result(coupled, ax=ax)
    >>> print(ax.get_legend().get_texts()[-1].get_text())
    $\\beta = 1$ (values coupled to keys: asymptote only)
    """
    import numpy as np

    if not hasattr(result, "var") or not hasattr(result, "n"):
        raise ValueError(f"result: expected a varsim SimulationResult, got {type(result).__name__}")
    cfg = getattr(result, "config", None) or {}
    beta = None if result.beta is None else float(np.asarray(result.beta).ravel()[0])
    scale2 = float(cfg.get("value_scale", 1.0)) ** 2
    case = _reference_case(result, cfg)
    law = None if law is None and law_params is None else _logit_law("gaussian" if law is None else law, law_params)
    if law is not None and not (_is_gaussian(law) and case == "fixed"):
        exact_fn, asymptote_fn, note = _law_reference(law, cfg, beta, scale2)
        note = None if _is_gaussian(law) else _law_title(law)
    elif case in _REFERENCES:
        exact_fn, asymptote_fn, note = _REFERENCES[case](result, cfg, beta, scale2)
    else:
        exact_fn, asymptote_fn, note = None, None, _NO_REFERENCE[case].format(**{"attention": None,
                                                                              "key_dist": None, **cfg})
    with _context(style, ax):
        ax = _axes(ax, style)
        n = np.asarray(result.n, dtype=float)
        if label is None:
            label = rf"$\beta = {beta:.3g}$" if beta is not None else f"random query, $d_k = {cfg.get('d_k', '?')}$"
            if note and (exact or asymptote):
                label += f" ({note})"
        bars = ax.errorbar(n, result.var, result.var_se, fmt=marker, color=color, label=label, zorder=3)
        color = bars[0].get_color()
        dense = np.geomspace(n.min(), n.max(), 60) if n.size > 1 else n
        if exact and exact_fn is not None:
            ax.plot(dense, exact_fn(dense), color=color, zorder=2)
        if asymptote and asymptote_fn is not None:
            ax.plot(dense, asymptote_fn(dense), color=color, ls="--", lw=0.8 * _rc("lines.linewidth"), zorder=1)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("sequence length $N$")
        ax.set_ylabel(r"$\mathrm{Var}(o_j)$")
        if legend:
            ax.legend()
        entry = {**cfg, "seed": getattr(result, "seed", None)}
        _record(ax.figure, {"plot_result": entry if law is None or _is_gaussian(law) else
                            {**entry, "law": _law_record(law)}})
    return ax


#: the quantities :func:`plot_theory` draws against N: name -> (y label, y scale, the annealed asymptote's
#: ``f(N, A)`` or None)
THEORY_CURVES = {
    "ipr": (r"$E[\sum_i w_i^2]$", "log", lambda n, a: a / n),
    "n_ipr": (r"$N\,E[\sum_i w_i^2]$", "log", lambda n, a: a + 0.0 * n),
    "exponent": (r"$d\ln E[\sum_i w_i^2] / d\ln N$", "linear", None),
}


def _theory_grid(ns, betas):
    import numpy as np

    ns = np.geomspace(2.0, 1e12, 121) if ns is None else np.asarray(ns, dtype=float)
    if ns.ndim != 1 or ns.size < 2 or not np.all(np.isfinite(ns)) or np.any(np.diff(ns) <= 0) or ns[0] < 1:
        raise ValueError("ns: expected an increasing 1-D grid of at least 2 finite sequence lengths >= 1")
    betas = np.atleast_1d(np.asarray(betas, dtype=float))
    if betas.ndim != 1 or betas.size < 1 or betas.size > 12 or not np.all(np.isfinite(betas)):
        raise ValueError(f"betas: expected 1 to 12 finite logit scales, got {betas.tolist()!r}")
    return ns, betas


def plot_theory(ns=None, betas=(1.0, 2.0, 3.0), ax=None, *, quantity: str = "ipr", law="gaussian", law_params=None,
                asymptote: bool = True, legend: bool = True, style=None):
    """Draw the exact theory of a logit law against N, one curve per beta: ``E[sum w^2]`` (the output variance
    ``Var(o_j) / sigma_v^2`` for values independent of the weights), ``N E[sum w^2]`` or the local exponent.

    Each curve is exact (:func:`varsim.theory.laws.law_ipr_and_exponent`; for the Gaussian law
    :func:`varsim.theory.expected_ipr`); with ``asymptote`` the annealed law ``A(beta)/N`` (``A`` for
    ``n_ipr``, :func:`varsim.theory.laws.annealed_limit`) is dashed where it is below the bound ``E <= 1``
    (``N >= A``), and the crossover ``N = A(beta)`` marked with a dot where it lies on the axis: frozen weights to
    its left, the ``1/N`` law to its right.

    Parameters
    ----------
    ns : array_like, optional
        Increasing sequence lengths ``>= 1`` (x axis; default 121 points from 2 to ``1e12``).
    betas : float or array_like
        The logit scales (standard deviation of the logit for every law but the empirical one), 1 to 12 of them.
    ax : matplotlib.axes.Axes, optional
        The axes to draw on (None: a new figure at the size of ``style``).
    quantity : str
        A name of :data:`THEORY_CURVES`: ``"ipr"``, ``"n_ipr"`` (flat where the ``1/N`` law holds) or ``"exponent"``.
    law : str or LogitLaw
        A name of :data:`varsim.theory.laws.LAWS` (default ``"gaussian"``) or a law built by
        :func:`varsim.theory.laws.logit_law`.
    law_params : dict, optional
        The parameters of the law named by ``law`` (``{"d": 64}`` for the sphere).
    asymptote : bool
        Draw the annealed asymptote and mark the crossover.
    legend : bool
        Draw the legend.
    style : str or dict, optional
        A figure style (:func:`style`) for a new figure; None on the caller's axes keeps the caller's rcParams.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on (the law, the quantity and the grid are recorded on its figure for :func:`save`).

    Raises
    ------
    ValueError
        A bad grid, an unknown quantity or law, or bad ``law_params`` (each named).

    Examples
    --------
    >>> from varsim import plotting
    >>> ax = plotting.plot_theory(betas=[2.0, 4.0], quantity="n_ipr", law="sphere", law_params={"d": 64})
    >>> ax.get_title()
    'sphere d=64'
    """
    import numpy as np

    from varsim.theory.laws import annealed_limit, law_ipr_and_exponent

    ns, betas = _theory_grid(ns, betas)
    if not isinstance(quantity, str) or quantity not in THEORY_CURVES:
        raise ValueError(f"quantity: expected one of {', '.join(THEORY_CURVES)}, got {quantity!r}")
    law = _logit_law(law, law_params)
    ylabel, yscale, asymptote_fn = THEORY_CURVES[quantity]
    with _context(style, ax):
        ax = _axes(ax, style)
        for beta in betas:
            ipr, exponent = law_ipr_and_exponent(law, ns, beta)
            y = {"ipr": ipr, "n_ipr": ns * ipr, "exponent": exponent}[quantity]
            (line,) = ax.plot(ns, y, label=rf"$\beta = {beta:.3g}$")
            limit = annealed_limit(law, beta)
            where = ns >= limit  # the asymptote A/N only where it is below E's bound 1
            if asymptote and asymptote_fn is not None and np.count_nonzero(where) > 1:
                ax.plot(ns[where], asymptote_fn(ns[where], limit), color=line.get_color(), ls="--",
                        lw=0.8 * _rc("lines.linewidth"))
            if asymptote and ns[0] <= limit <= ns[-1]:
                at = float(np.interp(np.log(limit), np.log(ns), y))
                ax.plot([limit], [at], "o", color=line.get_color(), ms=4)
        ax.set_xscale("log")
        ax.set_yscale(yscale)
        ax.set_xlabel("sequence length $N$")
        ax.set_ylabel(ylabel)
        ax.set_title(_law_title(law))
        if legend:
            handles = ax.get_legend_handles_labels()[0]
            if asymptote and asymptote_fn is not None:
                text = r"annealed $A(\beta)/N$" if quantity == "ipr" else r"annealed $A(\beta)$"
                handles.append(ax.plot([], [], color="0.4", ls="--", label=text)[0])
            if asymptote:
                handles.append(ax.plot([], [], "o", color="0.4", ms=4, label=r"crossover $N = A(\beta)$")[0])
            # the corner the curves leave empty: below the falling E, under the rising N E, above the exponents
            ax.legend(handles=handles, loc={"ipr": "lower left", "n_ipr": "lower right"}.get(quantity, "upper right"))
        _record(ax.figure, {"plot_theory": {"law": _law_record(law), "quantity": quantity,
                                            "betas": betas.tolist(), "ns": [float(ns[0]), float(ns[-1]), ns.size]}})
    return ax

def _rc(key):
    import matplotlib as mpl

    return mpl.rcParams[key]


def _decay_exponent(n, beta):
    from varsim.theory import decay_exponent

    return decay_exponent(n, beta)


def _rule_exponent(n, beta):
    from varsim.theory import effective_exponent

    return effective_exponent(n, beta)


def _rule_error(n, beta):
    return _decay_exponent(n, beta) - _rule_exponent(n, beta)


def _log10_n_ipr(n, beta):
    import numpy as np

    from varsim.theory import expected_ipr

    return np.log10(n * expected_ipr(n, beta))


QUANTITIES = {
    "decay_exponent": (_decay_exponent, r"exact $d\ln E[\sum w^2]/d\ln N$", (-1.0, 0.0)),
    "rule_exponent": (_rule_exponent, r"rule $\mathrm{clamp}(1/2 - \ln N/\beta^2, -1, 0)$", (-1.0, 0.0)),
    "rule_error": (_rule_error, r"exact $-$ rule exponent", None),
    "log10_n_ipr": (_log10_n_ipr, r"$\log_{10} N\,E[\sum w^2]$", None),
}
r"""The quantities :func:`phase_diagram` maps over ``(ln N, beta)`` (its ``quantity=``), by name. Each is a tuple
``(f, label, limits)``: ``f(N, beta)`` broadcasts a row of N against a column of beta, ``label`` is the colour bar's
label, ``limits`` the colour limits (None: the data's range). Here $E[\sum_i w_i^2]$ is the exact mean inverse
participation ratio of softmax over N standard Gaussian logits of scale beta (:func:`varsim.theory.expected_ipr`).

| name | what it maps | formula | colour limits |
|---|---|---|---|
| `decay_exponent` | the exact local decay exponent of the mean IPR | $d\ln E[\sum_i w_i^2] \,/\, d\ln N$ | $[-1, 0]$ |
| `rule_exponent` | the three-phase rule for it | $\mathrm{clamp}(1/2 - \ln N/\beta^2,\ -1,\ 0)$ | $[-1, 0]$ |
| `rule_error` | how far the rule is off | `decay_exponent` $-$ `rule_exponent` | the data's range |
| `log10_n_ipr` | the mean IPR over its uniform value $1/N$ | $\log_{10}(N\,E[\sum_i w_i^2])$ | the data's range |

The exponents are :func:`varsim.theory.decay_exponent` and :func:`varsim.theory.effective_exponent`.
"""


@dataclasses.dataclass(frozen=True)
class PhaseDiagram:
    """What :func:`phase_diagram` drew: the axes, the grid and the values on it (``values[i, j]`` at ``betas[i]``
    and ``ln_n[j]``), the quantity's name (or the callable's), the contour levels and their ``ContourSet``, and the
    logit law (its name and parameters, ``"sphere d=64"``).

    Until 0.1.0 :func:`phase_diagram` returned the Axes; an attribute of the Axes asked of a PhaseDiagram
    (``pd.contour(...)``) still reaches ``pd.ax`` with a DeprecationWarning, until 0.3.0."""

    ax: object
    ln_n: object
    betas: object
    values: object
    quantity: str
    levels: object = None
    contours: object = None
    law: str = "gaussian"

    @property
    def figure(self):
        return self.ax.figure

    def __getattr__(self, name):
        """Deprecated: the Axes' attributes (``pd.contour(...)``, ``pd.set_title(...)``), as when
        :func:`phase_diagram` returned the Axes (until 0.1.0); use ``pd.ax``. Removed in 0.3.0."""
        if name.startswith("__") or name in {f.name for f in dataclasses.fields(PhaseDiagram)}:
            raise AttributeError(name)  # copies and pickles ask for dunders; a field not yet set is not the Axes'
        target = getattr(self.ax, name)  # an AttributeError here names the Axes' missing attribute
        import warnings

        warnings.warn(f"phase_diagram returns a PhaseDiagram since 0.2.0; its Axes is .ax: use .ax.{name} "
                      f"(PhaseDiagram.{name} forwards to the Axes until 0.3.0)", DeprecationWarning, stacklevel=2)
        return target


def _check_grid(name, v):
    import numpy as np

    if v.ndim != 1 or v.size < 2 or not np.all(np.isfinite(v)) or np.any(np.diff(v) <= 0):
        raise ValueError(f"{name}: expected an increasing 1-D grid of at least 2 finite values")
    return v


def _law_exponent(law):
    from varsim.theory.laws import law_decay_exponent

    return lambda n, beta: law_decay_exponent(law, n, beta)


def _law_log10_n_ipr(law):
    import numpy as np

    from varsim.theory.laws import law_ipr

    return lambda n, beta: np.log10(n * law_ipr(law, n, beta))


#: the quantities of :data:`QUANTITIES` that every logit law has: name -> builder of ``f(N, beta)`` for a law (the
#: REM rule and its error are the Gaussian law's alone)
_LAW_QUANTITIES = {"decay_exponent": _law_exponent, "log10_n_ipr": _law_log10_n_ipr}


def _quantity_of_law(quantity, label, law):
    """:func:`_quantity` for a logit law: the Gaussian's own, or a quantity of :data:`_LAW_QUANTITIES` of ``law``."""
    if _is_gaussian(law):
        return _quantity(quantity, label)
    if callable(quantity):
        raise ValueError(f"law: a callable quantity computes its own values; law={_law_title(law)!r} applies to the "
                         f"named quantities {', '.join(_LAW_QUANTITIES)}")
    if quantity in QUANTITIES and quantity not in _LAW_QUANTITIES:
        raise ValueError(f"quantity: {quantity!r} is the Gaussian random-energy-model rule; for law "
                         f"{_law_title(law)!r} expected one of {', '.join(_LAW_QUANTITIES)}")
    f, name, label, limits = _quantity(quantity, label)
    return _LAW_QUANTITIES[name](law), name, label, limits


def _quantity(quantity, label):
    """``(f, name, label, limits)`` of a name of :data:`QUANTITIES` or a callable ``f(N, beta)``."""
    if callable(quantity):
        name = getattr(quantity, "__name__", "quantity")
        return quantity, name, label if label is not None else name, None
    if not isinstance(quantity, str) or quantity not in QUANTITIES:
        raise ValueError(f"quantity: expected one of {', '.join(QUANTITIES)} or a callable f(N, beta), got "
                         f"{quantity!r}")
    f, default_label, limits = QUANTITIES[quantity]
    return f, quantity, label if label is not None else default_label, limits


def _levels(levels):
    import numbers

    import numpy as np

    if levels is None:
        return None
    if isinstance(levels, numbers.Integral) and not isinstance(levels, bool):
        if not 1 <= int(levels) <= 100:
            raise ValueError(f"levels: a count must be between 1 and 100, got {levels}")
        return int(levels)
    arr = np.asarray(levels, dtype=float) if not isinstance(levels, (str, bytes)) else np.array([])
    if arr.ndim != 1 or arr.size < 1 or not np.all(np.isfinite(arr)) or np.any(np.diff(arr) <= 0):
        raise ValueError(f"levels: expected a count or an increasing sequence of finite values, got {levels!r}")
    return arr


def phase_diagram(ln_n=None, betas=None, ax=None, *, quantity="decay_exponent", levels=None, label=None,
                  boundaries: bool = True, colorbar: bool = True, cmap: str = "viridis", style=None,
                  law="gaussian", law_params=None) -> PhaseDiagram:
    """Draw the phase diagram: a heat map of the exact local decay exponent (or another quantity) over ``ln N``
    and ``beta``, with contour lines at ``levels``.

    The default quantity is ``d ln E[sum w^2] / d ln N`` (:func:`varsim.theory.decay_exponent`), from 0 (no decay)
    to -1 (``1/N``); the REM phase boundaries ``ln N = beta^2/2`` and ``3 beta^2/2``
    (:func:`varsim.theory.phase_boundaries`, asymptotic) are drawn as white dashed lines and the phases named.
    With another logit law (``law="sphere", law_params={"d": 64}``) the map is that law's exact exponent
    (:func:`varsim.theory.laws.law_decay_exponent`) and the boundary is its crossover ``ln N = ln A(beta)``,
    ``A = lim N E[sum w^2]`` (:func:`varsim.theory.laws.annealed_limit`): frozen on its left, ``A/N`` on its right.

    Parameters
    ----------
    ln_n : array_like, optional
        Increasing grid of ``ln N`` (x axis, >= 0; default 141 points over 0..14).
    betas : array_like, optional
        Increasing grid of ``beta`` (y axis; default 79 points over 0.1..4).
    ax : matplotlib.axes.Axes, optional
        The axes to draw on (None: a new figure at the size of ``style``).
    quantity : str or callable
        A name of :data:`QUANTITIES` (``"decay_exponent"``, ``"rule_exponent"``, ``"rule_error"``,
        ``"log10_n_ipr"``) or a function ``f(N, beta)`` that broadcasts a row of N against a column of beta
        (e.g. ``lambda n, b: varsim.theory.random_query_decay_exponent(n, 16, b)``).
    levels : int or array_like, optional
        Contour lines: their count, or their values (increasing), labelled on the map.
    label : str, optional
        The colour bar's label (default: the quantity's).
    boundaries : bool
        Draw the phase boundaries and name the phases.
    colorbar : bool
        Add a colour bar.
    cmap : str
        The Matplotlib colour map.
    style : str or dict, optional
        A figure style (:func:`style`) for a new figure.
    law : str or LogitLaw
        The law of the logits ``X = beta T``: a name of :data:`varsim.theory.laws.LAWS` (default ``"gaussian"``,
        the diagram as before laws existed) or a law built by :func:`varsim.theory.laws.logit_law`. Other laws
        have the quantities ``"decay_exponent"`` and ``"log10_n_ipr"`` (the REM rule is the Gaussian's).
    law_params : dict, optional
        The parameters of the law named by ``law`` (``{"d": 64}`` for the sphere).

    Returns
    -------
    PhaseDiagram
        ``.ax`` the axes drawn on; ``.ln_n``, ``.betas`` the grid; ``.values`` the quantity on it, shape
        ``(len(betas), len(ln_n))``; ``.levels`` and ``.contours`` the contour lines (None without ``levels``).
        Changed in 0.2.0: the Axes until then; the Axes' attributes asked of it still reach ``.ax``, with a
        DeprecationWarning, until 0.3.0.

    Raises
    ------
    ValueError
        A grid that is not increasing, 1-D and finite with at least 2 values, ``ln_n`` below 0, an unknown
        quantity or one whose values do not have the grid's shape, bad ``levels``, an unknown law or bad
        ``law_params`` (each named), or a Gaussian-only quantity with another law.

    See Also
    --------
    varsim.theory.phase : the phase at a given (N, beta).
    save : write the figure with its provenance (and the grid's description).

    Examples
    --------
    >>> import numpy as np
    >>> from varsim import plotting
    >>> pd = plotting.phase_diagram(ln_n=np.linspace(0, 10, 50), betas=np.linspace(0.2, 3, 40), colorbar=False,
    ...                             levels=[-0.75, -0.5, -0.25])
    >>> [float(x) for x in pd.ax.get_xlim() + pd.ax.get_ylim()], pd.values.shape
    ([0.0, 10.0, 0.2, 3.0], (40, 50))
    >>> [float(v) for v in pd.contours.levels]
    [-0.75, -0.5, -0.25]
    """
    import numpy as np

    ln_n = _check_grid("ln_n", np.linspace(0.0, 14.0, 141) if ln_n is None else np.asarray(ln_n, dtype=float))
    betas = _check_grid("betas", np.linspace(0.1, 4.0, 79) if betas is None else np.asarray(betas, dtype=float))
    if ln_n[0] < 0:
        raise ValueError("ln_n: must be >= 0 (N >= 1)")
    law = _logit_law(law, law_params)
    f, name, label, limits = _quantity_of_law(quantity, label, law)
    levels = _levels(levels)
    values = np.asarray(f(np.exp(ln_n)[None, :], betas[:, None]), dtype=float)
    if values.shape != (betas.size, ln_n.size):
        raise ValueError(f"quantity: {name} gave values of shape {values.shape}, expected (len(betas), len(ln_n)) "
                         f"= {(betas.size, ln_n.size)}")
    vmin, vmax = limits if limits is not None else (np.nanmin(values), np.nanmax(values))
    with _context(style, ax):
        ax = _axes(ax, style, aspect=0.8)
        mesh = ax.pcolormesh(ln_n, betas, values, cmap=cmap, vmin=vmin, vmax=vmax, shading="nearest",
                             rasterized=True)
        ax.grid(False)
        contours = None
        if levels is not None:
            contours = ax.contour(ln_n, betas, values, levels=levels, colors="k", linewidths=0.8)
            ax.clabel(contours, fmt="%.3g", fontsize=_rc("legend.fontsize"))
        if boundaries:
            _draw_boundaries(ax, ln_n, betas, law)
        ax.set_xlabel(r"$\ln N$")
        ax.set_ylabel(r"$\beta$")
        if not _is_gaussian(law):
            ax.set_title(f"logit law: {_law_title(law)}")
        if colorbar:
            ax.figure.colorbar(mesh, ax=ax, label=label)
        drawn = {"quantity": name, "ln_n": [float(ln_n[0]), float(ln_n[-1]), int(ln_n.size)],
                 "betas": [float(betas[0]), float(betas[-1]), int(betas.size)],
                 "levels": None if levels is None else np.atleast_1d(levels).tolist()}
        _record(ax.figure, {"phase_diagram": drawn if _is_gaussian(law) else {**drawn, "law": _law_record(law)}})
    return PhaseDiagram(ax=ax, ln_n=ln_n, betas=betas, values=values, quantity=name,
                        levels=None if contours is None else np.asarray(contours.levels), contours=contours,
                        law=_law_title(law))


def _draw_boundaries(ax, ln_n, betas, law) -> None:
    """The phase boundaries as white dashed lines, the phases named on one row: the Gaussian's REM boundaries
    ``ln N = beta^2/2`` and ``3 beta^2/2`` (frozen, intermediate, annealed), another law's crossover
    ``ln N = ln A(beta)`` (frozen, annealed)."""
    import numpy as np

    from varsim.theory import phase_boundaries

    if _is_gaussian(law):
        lines = phase_boundaries(betas)
        # name the phases on the row where each is a third of the width wide (3 beta^2/2 = 0.6 ln N max)
        b = float(np.clip(np.sqrt(0.4 * ln_n[-1]), betas[0], betas[-1]))
        lo_b, hi_b = phase_boundaries(b)
        regions = ((ln_n[0], lo_b, "frozen"), (lo_b, hi_b, "intermediate"), (hi_b, ln_n[-1], "annealed"))
    else:
        from varsim.theory.laws import annealed_limit, crossover_beta

        lines = (np.log(annealed_limit(law, betas)),)
        # name the phases on the row whose crossover is at the middle of the axis
        b = float(np.clip(crossover_beta(law, float(np.exp(0.5 * (ln_n[0] + ln_n[-1])))), betas[0], betas[-1]))
        mid = float(np.log(annealed_limit(law, b)))
        regions = ((ln_n[0], mid, "frozen"), (mid, ln_n[-1], "annealed"))
    for line in lines:
        ax.plot(line, betas, color="white", lw=1.2, ls="--")
    ax.set_xlim(ln_n[0], ln_n[-1])
    ax.set_ylim(betas[0], betas[-1])
    for x0, x1, text in regions:
        x0, x1 = max(x0, ln_n[0]), min(x1, ln_n[-1])
        if x1 - x0 > 0.12 * (ln_n[-1] - ln_n[0]):
            ax.text((x0 + x1) / 2, b, text, color="white", ha="center", va="bottom", fontsize=_rc("legend.fontsize"))


def _figure_of(fig):
    """The Figure of a Figure, an Axes or a :class:`PhaseDiagram`."""
    if isinstance(fig, PhaseDiagram):
        fig = fig.ax
    if not hasattr(fig, "savefig") and hasattr(fig, "figure"):
        fig = fig.figure
    if not hasattr(fig, "savefig"):
        raise ValueError(f"fig: expected a Matplotlib Figure, Axes or PhaseDiagram, got {type(fig).__name__}")
    return fig


def save(fig, path, *, record: dict | None = None):
    """Write a figure to ``path`` (PNG, PDF or SVG, by its suffix) with its provenance in the file's metadata.

    The metadata (PNG ``Description``, PDF ``Subject``, SVG ``Description``) is one JSON object:
    ``provenance`` (:func:`varsim._common.provenance.provenance`: versions, platform, CPU and BLAS, git commit and
    whether the tree was modified, UTC time), ``figure`` (for a built-in figure's ``draw``: its name, parameters,
    seed, mode and footer), ``drawn`` (what :func:`plot_result` and :func:`phase_diagram` drew on it: each run's
    ``simulate`` arguments and seed, each grid) and ``record`` (yours, e.g. the parameters of your own plot).
    :func:`read_provenance` reads it back. The file is written atomically, at the figure styles' resolution and
    cropping (200 dpi, tight), without timestamps in the file itself.

    Parameters
    ----------
    fig : matplotlib.figure.Figure, matplotlib.axes.Axes or PhaseDiagram
        What to save (an Axes or a PhaseDiagram saves its whole figure).
    path : str or path-like
        The file, ending in ``.png``, ``.pdf`` or ``.svg``.
    record : dict, optional
        More to record (JSON-safe values).

    Returns
    -------
    pathlib.Path
        The file written.

    Raises
    ------
    ValueError
        ``fig`` is none of these, ``path`` has another suffix, or ``record`` holds a value JSON cannot (named).
    OSError
        ``path`` cannot be written (a missing folder, no permission, a full disk): the error names ``path``.

    See Also
    --------
    read_provenance : the record of a saved file.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from varsim import plotting
    >>> pd = plotting.phase_diagram(levels=3, colorbar=False)
    >>> path = plotting.save(pd, pathlib.Path(tempfile.mkdtemp()) / "phases.pdf", record={"note": "mine"})
    >>> meta = plotting.read_provenance(path)
    >>> meta["record"], meta["drawn"][0]["phase_diagram"]["quantity"], "versions" in meta["provenance"]
    ({'note': 'mine'}, 'decay_exponent', True)
    """
    import json

    import matplotlib as mpl

    from varsim import style as styles
    from varsim._common.jsonio import jsonable
    from varsim._common.provenance import provenance
    from varsim.figures._style import write_figure

    fig = _figure_of(fig)
    if record is not None and not isinstance(record, dict):
        raise ValueError(f"record: expected a dict, got {type(record).__name__}")
    if record is not None and (where := _not_json(jsonable(record), "record")):
        raise ValueError(f"record: expected JSON-safe values (dicts, lists, str, numbers, bool, None); {where}")
    described = getattr(fig, "_varsim_metadata", None)
    meta = {"provenance": provenance(), "figure": json.loads(described) if described else None,
            "drawn": getattr(fig, "_varsim_drawn", None), "record": record}
    with mpl.rc_context({k: v for k, v in styles.BASE_RC.items() if k.startswith("savefig.")}):
        return write_figure(fig, path, json.dumps(jsonable(meta), sort_keys=True))


def _not_json(value, where: str) -> str | None:
    """Where ``value`` (after ``jsonable``) holds something JSON cannot, as ``"record['when'] is a datetime"``;
    None when it is all JSON."""
    if isinstance(value, dict):
        return next((found for k, v in value.items() if (found := _not_json(v, f"{where}[{k!r}]"))), None)
    if isinstance(value, list):
        return next((found for i, v in enumerate(value) if (found := _not_json(v, f"{where}[{i}]"))), None)
    if value is None or isinstance(value, (str, int, float, bool)):
        return None
    return f"{where} is a {type(value).__name__}"


def _pdf_subject(raw: bytes) -> str | None:
    """The ``/Subject (...)`` string of a PDF's info dictionary, unescaped (Matplotlib writes ASCII there)."""
    start = raw.find(b"/Subject (")
    if start < 0:
        return None
    out, i, escapes = bytearray(), start + len(b"/Subject ("), {ord("n"): b"\n", ord("r"): b"\r"}
    while i < len(raw) and raw[i] != ord(")"):
        if raw[i] == ord("\\"):
            i += 1
            out += escapes.get(raw[i], bytes([raw[i]]))
        else:
            out.append(raw[i])
        i += 1
    return out.decode("ascii")


def read_provenance(path) -> dict:
    """The provenance record of a figure file written by :func:`save` (or by ``varsim figures``).

    Parameters
    ----------
    path : str or path-like
        A ``.png``, ``.pdf`` or ``.svg`` file.

    Returns
    -------
    dict
        The JSON object of the file's description metadata.

    Raises
    ------
    ValueError
        The file cannot be read or holds no such record.
    """
    import json
    import re
    from pathlib import Path

    path = Path(path)
    ext = path.suffix.lower()
    try:
        if ext == ".png":
            from PIL import Image

            with Image.open(path) as img:
                text = img.info.get("Description")
        elif ext == ".pdf":
            text = _pdf_subject(path.read_bytes())
        elif ext == ".svg":
            import html

            found = re.search(r"<dc:description>(.*?)</dc:description>", path.read_text(encoding="utf-8"), re.S)
            text = html.unescape(found.group(1)) if found else None
        else:
            raise ValueError(f"path {str(path)!r}: expected a .png, .pdf or .svg file")
    except OSError as exc:
        raise ValueError(f"path {str(path)!r}: cannot be read ({exc.strerror or exc})") from None
    if not text:
        raise ValueError(f"path {str(path)!r}: holds no varsim provenance record")
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise ValueError(f"path {str(path)!r}: its description is not a varsim provenance record") from None


def sweep_records(sweep) -> list[dict]:
    """The cells of a sweep as flat records, one dict per cell.

    Parameters
    ----------
    sweep : path or dict
        A ``varsim sweep`` / :func:`varsim.sim.sweep.run_sweep` JSON file, or the dict ``run_sweep`` returns.

    Returns
    -------
    list of dict
        Per cell: ``attention``, ``beta``, ``n``, each parameter as its own key, the estimates, their SEs, the
        theory and the z-scores (the ``key`` and nested ``params`` left out).

    Raises
    ------
    ValueError
        ``sweep`` is neither.

    See Also
    --------
    sweep_frame : the same as a pandas DataFrame.
    """
    from pathlib import Path

    from varsim.sim.sweep import load_sweep

    data = load_sweep(sweep) if isinstance(sweep, (str, Path)) else sweep
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise ValueError("sweep: expected a sweep JSON path or the dict run_sweep returns")
    records = []
    for cell in data["cells"]:
        flat = {k: v for k, v in cell.items() if k not in ("key", "params")}
        for p, v in (cell.get("params") or {}).items():
            flat.setdefault(p, v)
        records.append(flat)
    return records


def sweep_frame(sweep):
    """The cells of a sweep as a pandas DataFrame, one row per cell, sorted by attention, beta and n.

    Parameters
    ----------
    sweep : path or dict
        As for :func:`sweep_records`.

    Returns
    -------
    pandas.DataFrame
        The records of :func:`sweep_records`.

    Raises
    ------
    ImportError
        pandas is not installed (:func:`sweep_records` needs no pandas).
    """
    try:
        import pandas as pd
    except ImportError:
        raise ImportError("sweep_frame needs pandas (pip install pandas); sweep_records gives plain dicts") from None
    frame = pd.DataFrame(sweep_records(sweep))
    keys = [k for k in ("attention", "beta", "n") if k in frame.columns]
    return frame.sort_values(keys, kind="stable").reset_index(drop=True) if keys else frame
