"""Argument checks that raise ``ValueError`` naming the offending parameter."""

from __future__ import annotations

import dataclasses
import math
import numbers
from typing import Iterable, Sequence

import numpy as np

__all__ = [
    "check_int",
    "check_positive_int",
    "check_real",
    "check_finite_array",
    "check_choice",
    "check_int_grid",
    "check_fields",
]


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
        raise ValueError(f"{name} must be >= {minimum}, got {ivalue}")
    if maximum is not None and ivalue > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {ivalue}")
    return ivalue


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


def check_finite_array(name: str, value, *, ndim: int | None = None, dtype=np.float64) -> np.ndarray:
    """Return a finite array (copy-free when possible) of the requested dimension."""
    try:
        arr = np.asarray(value, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be numeric array-like: {exc}") from None
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimension(s), got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must contain only finite values")
    return arr


def check_choice(name: str, value, choices: Iterable[str]) -> str:
    """``value`` must be one of ``choices`` (case-sensitive strings)."""
    choices = tuple(choices)
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"unknown {name} {value!r}; expected one of {', '.join(map(repr, choices))}")
    return value


def check_int_grid(name: str, values: Sequence | int, *, minimum: int = 1) -> np.ndarray:
    """A non-empty 1-D array of integers >= ``minimum`` (e.g. a grid of sequence lengths)."""
    if np.isscalar(values):
        values = [values]
    items = list(values)
    if not items:
        raise ValueError(f"{name} must not be empty")
    out = np.array([check_int(f"{name}[{i}]", v, minimum=minimum) for i, v in enumerate(items)], dtype=np.int64)
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
