"""The pieces of the Markdown reports (``table.md``) that every grid kind's table is made of: numbers with intervals,
paired differences, table heads and rows. Each kind renders its own table (:class:`varsim.experiments.grid_kind.
GridKind`)."""

from __future__ import annotations

import math

__all__ = ["fmt_ci", "fmt_diff", "diff_cell", "fmt_signed", "head", "row"]


def fmt_ci(mean, lo, hi, digits=3) -> str:
    if mean is None:
        return "n/a"
    if lo is None or hi is None:
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def fmt_diff(mean, lo, hi, pt, ps) -> str:
    """A paired difference with its interval and two p-values (t-test / sign-flip)."""
    if mean is None:
        return "n/a"
    ci = "" if lo is None or hi is None else f" [{lo:+.3f}, {hi:+.3f}]"
    pt_s = "n/a" if pt is None else f"{pt:.3g}"
    ps_s = "n/a" if ps is None else f"{ps:.3g}"
    return f"{mean:+.3f}{ci} p={pt_s} / {ps_s}"


def diff_cell(mean, lo, hi, p, *, star: bool) -> str:
    """A paired difference with its interval and one p-value, starred when significant."""
    p_text = "n/a" if p is None or not math.isfinite(p) else f"{p:.2g}"
    return f"{mean:+.3f} [{lo:+.3f}, {hi:+.3f}] p={p_text}" + ("*" if star else "")


def fmt_signed(x) -> str:
    return "n/a" if x is None or not math.isfinite(x) else f"{x:+.2f}"


def head(first: str, columns) -> list[str]:
    """A table's header and rule lines: ``first`` then ``columns``."""
    columns = list(columns)
    return [row(first, columns), "|---" * (len(columns) + 1) + "|"]


def row(first, cells) -> str:
    """A table row: ``first`` (may be empty) then ``cells``."""
    return (f"| {first} | " if first != "" else "| | ") + " | ".join(cells) + " |"
