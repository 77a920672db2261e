"""The figures of a logit-law family (``fig_law_<family>``): one :class:`LawFigure` per family, the figure module
holding only its name, its law and its caption.

Each figure has three panels over ``N`` in ``[2, n_max]``, all exact theory (:mod:`varsim.theory.laws`):

1. ``N E[sum w^2]`` for several ``beta``, the family's law (solid) against Gaussian logits of the same standard
   deviation (dashed): flat where the ``1/N`` law holds, at the level ``A(beta) = E[e^{2X}] / E[e^X]^2``; a dot
   at the crossover ``N = A(beta)``;
2. the local exponent ``d ln E[sum w^2] / d ln N`` of the same curves: near 0 while the weights are frozen on the
   top logits, -1 in the ``1/N`` law;
3. the crossover scale ``beta*(N)`` (``A(beta*) = N``, :func:`varsim.theory.laws.crossover_beta`) for several
   members of the family against the Gaussian's ``sqrt(ln N)``; a curve stops where no ``beta`` reaches
   ``A = N`` (a law whose top is an atom of mass ``p`` has ``A <= 1/p``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from . import _style
from .params import Param, resolve


def _member(family: str, param: str, value, seed: int):
    """The law of ``family`` with ``param = value``: ``sample_size`` is the empirical law of that many standard
    normal draws (seeded by ``seed`` and the size), any other parameter the law's own."""
    from varsim.theory.laws import logit_law

    if param == "sample_size":
        from varsim._common.seeding import child_generator

        return logit_law(family, sample=child_generator(seed, int(value)).standard_normal(int(value)))
    return logit_law(family, **{param: value})


def _finite_or_none(values):
    return [float(v) if math.isfinite(v) else None for v in values]


@dataclass(frozen=True)
class LawFigure:
    """The figure of one law family: ``family`` (a name of :data:`varsim.theory.laws.LAWS`), the parameter that
    sets a member (``param``: ``d``, or ``sample_size`` for the empirical law), the member of panels 1-2
    (``value``), the members of panel 3 (``members``), the logit scales of panels 1-2 (``betas``)."""

    name: str
    family: str
    param: str
    value: int
    members: tuple
    betas: tuple = (1.0, 2.0, 3.0)
    param_max: int = 10**6
    params: tuple = field(init=False)

    def __post_init__(self):
        what = "size of the sample of standard normal logits" if self.param == "sample_size" else "dimension d"
        object.__setattr__(self, "params", (
            Param("betas", "reals", self.betas, "logit scales beta (standard deviations) of panels 1-2",
                  minimum=0.05, maximum=20.0, max_len=len(_style.COLORS)),
            Param(self.param, "int", self.value, f"the {what} of panels 1-2", minimum=2, maximum=self.param_max),
            Param("members", "ints", self.members, f"the {what} of each crossover curve of panel 3", minimum=2,
                  maximum=self.param_max, max_len=len(_style.COLORS)),
            Param("n_max", "real", 1e12, "largest sequence length N", quick=1e6, minimum=10.0, maximum=1e300),
        ))

    def compute(self, quick: bool = False, seed: int = 0, *, progress: bool = False, source=None, out=None,
                **params) -> dict:
        """Exact curves of panels 1-2 and crossover scales of panel 3 (see the module docstring); ``params`` as
        declared in :attr:`params` (a bad value is a ValueError naming it). ``out``: also write the data as JSON."""
        from varsim.theory.laws import annealed_limit, crossover_beta, law_ipr_and_exponent, logit_law

        p = resolve(self.params, quick, **params)
        ns = np.geomspace(2.0, p["n_max"], 40 if quick else 121)
        law, gauss = _member(self.family, self.param, p[self.param], seed), logit_law("gaussian")
        curves = []
        for beta in (float(b) for b in p["betas"]):
            (e, g), (ge, gg) = law_ipr_and_exponent(law, ns, beta), law_ipr_and_exponent(gauss, ns, beta)
            curves.append({"beta": beta, "n_ipr": ns * e, "exponent": g, "limit": float(annealed_limit(law, beta)),
                           "gauss_n_ipr": ns * ge, "gauss_exponent": gg,
                           "gauss_limit": float(annealed_limit(gauss, beta))})
        nc = np.geomspace(10.0, p["n_max"], 25 if quick else 60)
        crossover = [{"value": int(m), "beta_star": _finite_or_none(
            [crossover_beta(_member(self.family, self.param, int(m), seed), n) for n in nc])} for m in p["members"]]
        return _style.computed_data(self.name, seed, quick, {
            "family": self.family, "param": self.param, "law": {"name": law.name, **law.params()}, "n": ns,
            "curves": curves, "crossover": {"n": nc, "gaussian": np.sqrt(np.log(nc)), "members": crossover},
            "params": {**p, "betas": [float(b) for b in p["betas"]], "members": [int(m) for m in p["members"]]}},
            out, smoke_reason="short N range")

    def draw(self, data: dict, ax=None, *, style=None, footer: bool = False):
        """The three panels of :meth:`compute`'s data."""
        A = _style.array
        with _style.style(style):
            # one row of three panels, or one column where the style has room for fewer than three side by side
            ncols = 3 if _style.style_spec(style)["max_cols"] >= 3 else 1
            fig, (left, mid, right) = _style.axes_grid(3, ax=ax, style=style, width=3.6, aspect=3.0 / 3.6,
                                                       ncols=ncols)
            n = A(data["n"])
            for i, c in enumerate(data["curves"]):
                color = _style.COLORS[i]
                left.loglog(n, A(c["n_ipr"]), color=color, label=rf"$\beta = {c['beta']:g}$")
                left.loglog(n, A(c["gauss_n_ipr"]), color=color, ls="--", lw=0.9)
                mid.semilogx(n, A(c["exponent"]), color=color)
                mid.semilogx(n, A(c["gauss_exponent"]), color=color, ls="--", lw=0.9)
                if n[0] <= c["limit"] <= n[-1]:
                    x = np.log(c["limit"])
                    left.plot([c["limit"]], [np.interp(x, np.log(n), A(c["n_ipr"]))], "o", color=color, ms=4)
                    mid.plot([c["limit"]], [np.interp(x, np.log(n), A(c["exponent"]))], "o", color=color, ms=4)
            self._draw_crossover(right, data)
            law = f"{data['family']} {self._symbol()}={data['params'][self.param]}"
            left.set(xlabel="$N$", ylabel=r"$N\,E[\sum_i w_i^2]$ (flat: 1/N law)", title=law)
            mid.set(xlabel="$N$", ylabel=r"$d\ln E[\sum_i w_i^2]/d\ln N$", ylim=(-1.05, 0.05),
                    title="local exponent (0: frozen)")
            handles = left.get_legend_handles_labels()[0] + [
                left.plot([], [], color="0.3", label=law)[0],
                left.plot([], [], color="0.3", ls="--", lw=0.9, label="Gaussian logits, same beta")[0],
                left.plot([], [], "o", color="0.3", ms=4, label=r"crossover $N = A(\beta)$")[0]]
            _style.legend_below(fig, handles)
            return _style.finish(fig, data, footer=footer)

    def _symbol(self) -> str:
        return "m" if self.param == "sample_size" else self.param

    def _draw_crossover(self, ax, data: dict) -> None:
        A = _style.array
        cross = data["crossover"]
        nc = A(cross["n"])
        symbol = self._symbol()
        for i, member in enumerate(cross["members"]):
            y = np.array([np.nan if v is None else v for v in member["beta_star"]], dtype=float)
            ax.loglog(nc, y, color=_style.COLORS[i], marker=_style.MARKERS[i % len(_style.MARKERS)], ms=3,
                      markevery=6, label=f"${symbol} = {member['value']}$")
        ax.loglog(nc, A(cross["gaussian"]), color="k", ls="--", lw=1.0, label=r"Gaussian $\sqrt{\ln N}$")
        ax.set(xlabel="$N$", ylabel=r"crossover scale $\beta^*(N)$", title=r"$A(\beta^*) = N$")
        ax.legend(fontsize="small")
