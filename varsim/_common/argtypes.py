"""argparse types for number flags: integers and reals in a stated range, refused in one line naming the flag.

The one home of how a command-line number is read (``varsim.cli._options`` re-exports these for the commands;
``varsim.figures`` uses them for ``python -m varsim.figures``, which sits below the CLI).
"""

from __future__ import annotations

import argparse
import math

from varsim._common.validate import MAX_COUNT, MAX_SEED, parse_int

__all__ = ["MAX_THREADS", "MAX_ABS", "int_option", "count_option", "seed_option", "threads_option", "real_option"]



#: Largest thread or worker-process count.
MAX_THREADS = 4096
#: Largest magnitude of a real model parameter (a scale, a temperature): the simulator's bound, which keeps products of
#: a few of them far inside float64.
MAX_ABS = 1e30


def _num(v) -> str:
    """``64``, ``1e15`` (an integer power of ten from a million on), ``9223372036854775807``, ``0.5``, ``1e+30``."""
    if isinstance(v, int):
        digits = str(abs(v))
        if abs(v) >= 10**6 and digits.rstrip("0") == "1":
            return f"{'-' if v < 0 else ''}1e{len(digits) - 1}"
        return str(v)
    return f"{v:g}"


def _bounds_text(minimum, maximum, strict_min: bool = False) -> str:
    low = f"> {_num(minimum)}" if strict_min else f">= {_num(minimum)}"
    if minimum is not None and maximum is not None:
        if strict_min:
            return f"{low} and <= {_num(maximum)}"
        return f"between {_num(minimum)} and {_num(maximum)}"
    return low if minimum is not None else f"<= {_num(maximum)}"


def int_option(minimum: int | None = None, maximum: int | None = None, *, what: str = ""):
    """An argparse ``type`` for an integer flag in ``[minimum, maximum]`` (None: unbounded on that side), written
    ``1024``, ``1_000`` or ``1e9`` (an integral float; exact for long digit strings). Anything else is refused with
    ``argument --FLAG: must be an integer[ between ...], got 'TEXT'`` (one line, exit status 2); ``what`` names the
    parameter behind the flag in front of it (``argument --topk: topk parameter 'k' must be ...``)."""
    if minimum is not None and maximum is not None and minimum > maximum:
        raise ValueError(f"int_option: minimum {minimum} > maximum {maximum}")
    wanted = "an integer" + ("" if minimum is None and maximum is None else " " + _bounds_text(minimum, maximum))
    must = f"{what} must" if what else "must"

    def parse(text: str) -> int:
        try:
            value = parse_int(text)
        except (ValueError, OverflowError):
            raise argparse.ArgumentTypeError(f"{must} be {wanted}, got {text!r}") from None
        if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
            raise argparse.ArgumentTypeError(f"{must} be {wanted}, got {text!r}")
        return value

    parse.__name__ = "integer"
    parse.minimum, parse.maximum = minimum, maximum
    return parse


def count_option(minimum: int = 1):
    """An integer flag counting something (a size, steps, examples): ``[minimum, MAX_COUNT]``."""
    return int_option(minimum, MAX_COUNT)


def seed_option():
    """A seed flag: ``[0, MAX_SEED]``."""
    return int_option(0, MAX_SEED)


def threads_option(minimum: int = 1):
    """A thread or worker-process count: ``[minimum, MAX_THREADS]``."""
    return int_option(minimum, MAX_THREADS)


def real_option(minimum: float | None = None, maximum: float | None = None, *, allow_inf: bool = False,
                strict_min: bool = False, words: dict | None = None, what: str = ""):
    """An argparse ``type`` for a real flag in ``[minimum, maximum]`` (``strict_min``: ``minimum`` excluded); NaN is
    refused, and infinities unless ``allow_inf`` (then ``inf`` is a value like any other, bounds apply). ``words``
    maps special spellings to their values (``{"none": None}``). Errors read ``argument --FLAG: must be a real
    number ..., got 'TEXT'``.

    A flag whose values are bounded should say so here: a real option without a ``maximum`` is a bound with no bound
    (``--max-hours``) and takes ``allow_inf``."""
    words = dict(words or {})
    wanted = ("a real number" if allow_inf else "a finite real number") + (
        "" if minimum is None and maximum is None else " " + _bounds_text(minimum, maximum, strict_min))
    if words:
        wanted += " or " + " or ".join(repr(w) for w in words)
    must = f"{what} must" if what else "must"

    def parse(text: str) -> float:
        if text.strip().lower() in words:
            return words[text.strip().lower()]
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{must} be {wanted}, got {text!r}") from None
        low = minimum is not None and (value <= minimum if strict_min else value < minimum)
        if (math.isnan(value) or (math.isinf(value) and not allow_inf)
                or low or (maximum is not None and value > maximum)):
            raise argparse.ArgumentTypeError(f"{must} be {wanted}, got {text!r}")
        return value

    parse.__name__ = "real"
    parse.minimum, parse.maximum, parse.allow_inf, parse.strict_min = minimum, maximum, allow_inf, strict_min
    return parse
