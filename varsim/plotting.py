"""Plotting helpers for a user's own results: a simulation against the exact theory, the phase diagram of the exact
local decay exponent, and sweep results as records or a DataFrame.

Each helper draws onto the axes it is given (``ax=None``: a new figure at the size of ``style``, a name of
:data:`STYLE_NAMES` or a dict of rcParams) and returns that axes; Matplotlib is imported only when a helper is
called:

```python
from varsim import plotting
from varsim.sim import simulate
res = simulate([16, 64, 256, 1024], query_norm=16.0, sampler="logits", estimator="rao_blackwell")
ax = plotting.plot_result(res)           # Var(o_j) vs N, SE bars, exact line, asymptote
plotting.phase_diagram(ln_n=np.linspace(0, 12, 200), betas=np.linspace(0.2, 4, 120))
df = plotting.sweep_frame("sweep.json")  # one row per cell (needs pandas)
```
"""

from __future__ import annotations

__all__ = ["plot_result", "phase_diagram", "sweep_records", "sweep_frame", "style", "STYLE_NAMES"]

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
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from varsim import plotting
    >>> with plotting.style("column"):
    ...     ax = plotting.phase_diagram()
    >>> [float(x) for x in ax.get_xlim()]
    [0.0, 14.0]
    """
    from varsim.figures import _style

    return _style.style(name)


def _context(style, ax):
    """The style to draw in: ``style`` if given; none (the caller's rcParams) when drawing on the caller's axes."""
    import contextlib

    from varsim.figures import _style

    return contextlib.nullcontext() if style is None and ax is not None else _style.style(style)


def _axes(ax, style, aspect=0.75):
    from varsim.figures import _style

    if ax is not None:
        return ax
    with _style.style(style):
        _fig, (new,) = _style.axes_grid(1, style=style, width=4.8, aspect=aspect)
    return new


def plot_result(result, ax=None, *, exact: bool = True, asymptote: bool = True, label=None, color=None,
                marker: str = "o", legend: bool = True, style=None):
    """Draw a simulation's ``Var(o_j)`` against N with the exact theory at its logit scale.

    Log-log axes, standard-error bars; the exact i.i.d. value ``value_scale^2 E[sum w^2](N, beta)`` as a solid line
    over the run's N range and the annealed asymptote ``value_scale^2 e^{beta^2} / N`` dashed, both at the run's
    beta.

    Parameters
    ----------
    result : SimulationResult
        A result of :func:`varsim.sim.simulate`.
    ax : matplotlib.axes.Axes, optional
        The axes to draw on (None: a new figure at the size of ``style``).
    exact : bool
        Draw the exact value.
    asymptote : bool
        Draw the annealed asymptote.
    label : str, optional
        Names the points in the legend (default ``beta = ...``).
    color : color, optional
        The points' and lines' colour (default: the next of the axes' cycle).
    marker : str
        The points' marker.
    legend : bool
        Draw the legend (redrawn with every call, so several results share one).
    style : str or dict, optional
        A figure style (:func:`style`) for a new figure; None on the caller's axes keeps the caller's rcParams.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.

    Raises
    ------
    ValueError
        ``result`` is not a simulation result; or ``exact``/``asymptote`` for a run with a random query or a
        weight map other than softmax.

    See Also
    --------
    varsim.theory.expected_ipr : the exact line.
    phase_diagram : where the run's beta and N lie.

    Notes
    -----
    The lines are the theory of softmax with a fixed query and values independent of the keys: a run with coupled
    values, non-Gaussian keys or another weight map is drawn against that i.i.d. reference (which is what such a
    plot compares with).

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from varsim import plotting
    >>> from varsim.sim import simulate
    >>> res = simulate([16, 64, 256], query_norm=8.0, d_k=16, n_sequences=2000, seed=0)
    >>> ax = plotting.plot_result(res)
    >>> ax.get_xscale(), ax.get_yscale()
    ('log', 'log')
    """
    import numpy as np

    from varsim.theory import expected_ipr

    if not hasattr(result, "var") or not hasattr(result, "n"):
        raise ValueError(f"result: expected a varsim SimulationResult, got {type(result).__name__}")
    cfg = getattr(result, "config", None) or {}
    beta = None if result.beta is None else float(np.asarray(result.beta).ravel()[0])
    if (exact or asymptote) and (beta is None or cfg.get("attention", "softmax") != "softmax"):
        why = "a random query" if beta is None else f"attention {cfg.get('attention')!r}"
        raise ValueError(f"exact/asymptote: the theory lines are softmax's at a fixed query; this run has {why} "
                         "(pass exact=False, asymptote=False)")
    scale2 = float(cfg.get("value_scale", 1.0)) ** 2
    with _context(style, ax):
        ax = _axes(ax, style)
        n = np.asarray(result.n, dtype=float)
        name = label if label is not None else (rf"$\beta = {beta:.3g}$" if beta is not None else "simulation")
        bars = ax.errorbar(n, result.var, result.var_se, fmt=marker, color=color, label=name, zorder=3)
        color = bars[0].get_color()
        dense = np.geomspace(n.min(), n.max(), 60) if n.size > 1 else n
        if exact:
            ax.plot(dense, scale2 * expected_ipr(dense, beta), color=color, zorder=2)
        if asymptote:
            ax.plot(dense, scale2 * np.exp(beta**2) / dense, color=color, ls="--", lw=0.8 * _rc("lines.linewidth"),
                    zorder=1)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("sequence length $N$")
        ax.set_ylabel(r"$\mathrm{Var}(o_j)$")
        if legend:
            ax.legend()
    return ax


def _rc(key):
    import matplotlib as mpl

    return mpl.rcParams[key]


def phase_diagram(ln_n=None, betas=None, ax=None, *, boundaries: bool = True, colorbar: bool = True,
                  cmap: str = "viridis", style=None):
    """Draw the phase diagram: a heat map of the exact local decay exponent over ``ln N`` and ``beta``.

    The exponent is ``d ln E[sum w^2] / d ln N`` (:func:`varsim.theory.decay_exponent`), from 0 (no decay) to -1
    (``1/N``); the REM phase boundaries ``ln N = beta^2/2`` and ``3 beta^2/2`` (:func:`varsim.theory.phase_boundaries`,
    asymptotic) are drawn as white lines and the phases named.

    Parameters
    ----------
    ln_n : array_like, optional
        Increasing grid of ``ln N`` (x axis, >= 0; default 141 points over 0..14).
    betas : array_like, optional
        Increasing grid of ``beta`` (y axis; default 79 points over 0.1..4).
    ax : matplotlib.axes.Axes, optional
        The axes to draw on (None: a new figure at the size of ``style``).
    boundaries : bool
        Draw the phase boundaries and name the phases.
    colorbar : bool
        Add a colour bar.
    cmap : str
        The Matplotlib colour map.
    style : str or dict, optional
        A figure style (:func:`style`) for a new figure.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.

    Raises
    ------
    ValueError
        A grid that is not increasing, 1-D and finite with at least 2 values, or ``ln_n`` below 0.

    See Also
    --------
    varsim.theory.phase : the phase at a given (N, beta).

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> from varsim import plotting
    >>> ax = plotting.phase_diagram(ln_n=np.linspace(0, 10, 50), betas=np.linspace(0.2, 3, 40), colorbar=False)
    >>> [float(x) for x in ax.get_xlim() + ax.get_ylim()]
    [0.0, 10.0, 0.2, 3.0]
    """
    import numpy as np

    from varsim.theory import decay_exponent, phase_boundaries

    ln_n = np.linspace(0.0, 14.0, 141) if ln_n is None else np.asarray(ln_n, dtype=float)
    betas = np.linspace(0.1, 4.0, 79) if betas is None else np.asarray(betas, dtype=float)
    for name, v in (("ln_n", ln_n), ("betas", betas)):
        if v.ndim != 1 or v.size < 2 or not np.all(np.isfinite(v)) or np.any(np.diff(v) <= 0):
            raise ValueError(f"{name}: expected an increasing 1-D grid of at least 2 finite values")
    if ln_n[0] < 0:
        raise ValueError("ln_n: must be >= 0 (N >= 1)")
    expo = decay_exponent(np.exp(ln_n), betas[:, None])
    with _context(style, ax):
        ax = _axes(ax, style, aspect=0.8)
        mesh = ax.pcolormesh(ln_n, betas, expo, cmap=cmap, vmin=-1.0, vmax=0.0, shading="nearest",
                             rasterized=True)
        ax.grid(False)
        if boundaries:
            lo, hi = phase_boundaries(betas)
            for line in (lo, hi):
                ax.plot(line, betas, color="white", lw=1.2, ls="--")
            ax.set_xlim(ln_n[0], ln_n[-1])
            ax.set_ylim(betas[0], betas[-1])
            # name the phases on the row where each is a third of the width wide (3 beta^2/2 = 0.6 ln N max)
            b = float(np.clip(np.sqrt(0.4 * ln_n[-1]), betas[0], betas[-1]))
            lo_b, hi_b = phase_boundaries(b)
            for x0, x1, text in ((ln_n[0], lo_b, "frozen"), (lo_b, hi_b, "intermediate"), (hi_b, ln_n[-1], "annealed")):
                x0, x1 = max(x0, ln_n[0]), min(x1, ln_n[-1])
                if x1 - x0 > 0.12 * (ln_n[-1] - ln_n[0]):
                    ax.text((x0 + x1) / 2, b, text, color="white", ha="center", va="bottom",
                            fontsize=_rc("legend.fontsize"))
        ax.set_xlabel(r"$\ln N$")
        ax.set_ylabel(r"$\beta$")
        if colorbar:
            ax.figure.colorbar(mesh, ax=ax, label=r"$d\ln E[\sum w^2]/d\ln N$")
    return ax


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
