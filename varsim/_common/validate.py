"""Argument checks that raise ``ValueError`` naming the offending parameter."""

from __future__ import annotations

import dataclasses
import functools
import math
import numbers
import os
from typing import Iterable, Sequence

import numpy as np

__all__ = [
    "MAX_COUNT",
    "MAX_SEED",
    "check_int",
    "check_positive_int",
    "check_real",
    "check_finite_array",
    "check_choice",
    "check_int_grid",
    "check_fields",
    "parse_int",
    "memory_limit_bytes",
    "format_bytes",
    "format_seconds",
]


#: Largest count a configuration accepts (sizes, steps, examples): far beyond any run the cost checks let start,
#: and small enough that every cost estimate built from a few such counts stays a finite double.
MAX_COUNT = 10**15
#: Largest seed: what an int64 holds (seeds are recorded in checkpoints and JSON).
MAX_SEED = 2**63 - 1


def check_int(name: str, value, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """Return ``value`` as an ``int``; refuse bools, non-integral floats and out-of-range values."""
    if isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if isinstance(value, numbers.Integral):
        ivalue = int(value)
    elif isinstance(value, numbers.Real) and math.isfinite(float(value)) and float(value).is_integer():
        ivalue = int(value)
    else:
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if minimum is not None and ivalue < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {_short(ivalue)}")
    if maximum is not None and ivalue > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {_short(ivalue)}")
    return ivalue


def _short(i: int) -> str:
    """``12345``, or ``1.00e+308`` for an integer of more than 20 digits (a message stays one readable line)."""
    digits = str(abs(i))
    if len(digits) <= 20:
        return str(i)
    return f"{'-' if i < 0 else ''}{digits[0]}.{digits[1:3]}e+{len(digits) - 1}"


def check_positive_int(name: str, value) -> int:
    """An integer >= 1."""
    return check_int(name, value, minimum=1)


def check_real(
    name: str,
    value,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    strict_min: bool = False,
    allow_inf: bool = False,
) -> float:
    """Return ``value`` as a finite ``float`` within the given bounds."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number, got {value!r}")
    fvalue = float(value)
    if math.isnan(fvalue) or (math.isinf(fvalue) and not allow_inf):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if minimum is not None:
        if strict_min and not fvalue > minimum:
            raise ValueError(f"{name} must be > {minimum}, got {fvalue}")
        if not strict_min and fvalue < minimum:
            raise ValueError(f"{name} must be >= {minimum}, got {fvalue}")
    if maximum is not None and fvalue > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {fvalue}")
    return fvalue


def check_finite_array(
    name: str, value, *, ndim: int | None = None, dtype=np.float64, min_size: int = 0
) -> np.ndarray:
    """Return a finite array (copy-free when possible) of the requested dimension, with at least ``min_size``
    values."""
    try:
        arr = np.asarray(value, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be numeric array-like: {exc}") from None
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimension(s), got shape {arr.shape}")
    if arr.size < min_size:
        raise ValueError(f"{name} must have at least {min_size} value(s), got {arr.size}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must contain only finite values")
    return arr


def check_choice(name: str, value, choices: Iterable[str]) -> str:
    """``value`` must be one of ``choices`` (case-sensitive strings)."""
    choices = tuple(choices)
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"unknown {name} {value!r}; expected one of {', '.join(map(repr, choices))}")
    return value


_INT64_MAX = int(np.iinfo(np.int64).max)


def check_int_grid(name: str, values: Sequence | int, *, minimum: int = 1) -> np.ndarray:
    """A non-empty 1-D int64 array of integers >= ``minimum`` (e.g. a grid of sequence lengths)."""
    if np.isscalar(values):
        values = [values]
    items = list(values)
    if not items:
        raise ValueError(f"{name} must not be empty")
    out = np.array([check_int(f"{name}[{i}]", v, minimum=minimum, maximum=_INT64_MAX) for i, v in enumerate(items)],
                   dtype=np.int64)
    return out


def check_fields(label: str, data, cls, *, required: Sequence[str] = ()) -> dict:
    """``data`` must be a dict whose keys are fields of the dataclass ``cls`` and include ``required``; the
    ``from_dict`` check of every config class, with messages naming ``label`` and the offending keys."""
    if not isinstance(data, dict):
        raise ValueError(f"{label} must be a dict, got {type(data).__name__}")
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ValueError(f"unknown {label} field(s) {unknown}; expected some of {sorted(names)}")
    for key in required:
        if key not in data:
            raise ValueError(f"{label} needs a {key!r} field")
    return data


def parse_int(text: str) -> int:
    """An integer from the command line, written ``1024``, ``1_000`` or ``1e9`` (an integral float); ``ValueError``
    otherwise (argparse turns it into ``argument --x: invalid int value``). Exact for long digit strings."""
    text = str(text).strip()
    try:
        return int(text)
    except ValueError:
        pass
    value = float(text)  # ValueError for words
    if not math.isfinite(value) or not value.is_integer():
        raise ValueError(f"not an integer: {text!r}")
    return int(value)


parse_int.__name__ = "int"  # argparse names the type in its message: "invalid int value: '2.5'"


#: What :func:`memory_limit_bytes` assumes where the physical memory cannot be read (a non-POSIX system).
FALLBACK_MEMORY_BYTES = 32 * 2**30


@functools.lru_cache(maxsize=1)
def memory_limit_bytes() -> int:
    """The memory this process may use: the machine's physical memory, or the cgroup limit when it is lower (read
    once per process); :data:`FALLBACK_MEMORY_BYTES` where the physical memory cannot be read. The one answer to
    "how much memory may a run use": the bounds of the simulator, the tasks, training and prediction are this or a
    stated share of it."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        total = FALLBACK_MEMORY_BYTES
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path, encoding="ascii") as fh:
                text = fh.read().strip()
        except OSError:
            continue
        if text.isdigit():
            total = min(total, int(text))
    return int(total)


def format_bytes(n: float) -> str:
    """``12.3 GiB``-style size (powers of 1024, up to YiB and beyond as a power of ten)."""
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"):
        if abs(n) < 1024 or unit == "YiB":
            break
        n /= 1024
    return f"{n:.3g} {unit}" if n < 1e6 else f"{n:.2e} {unit}"


def format_seconds(s: float) -> str:
    """A duration in the largest unit that keeps it >= 1 (s, min, h, days, years)."""
    s = float(s)
    for unit, size in (("years", 365.25 * 86400), ("days", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if s >= size:
            v = s / size
            return f"{v:.3g} {unit}" if v < 1e6 else f"{v:.2e} {unit}"
    return f"{s:.3g} s"
