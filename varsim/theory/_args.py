"""Argument checks for array-valued theory inputs (scalars go through ``varsim._common.validate``)."""

from __future__ import annotations

import numbers

import numpy as np

from varsim._common.validate import check_finite_array

__all__ = ["broadcast_pair", "real_array", "scalar_or_array", "scalar_or_grid"]


def real_array(name: str, value, *, minimum: float | None = None, maximum: float | None = None,
               strict_min: bool = False) -> np.ndarray:
    """``value`` as a finite float64 array (any shape) within the bounds, else ``ValueError`` naming it."""
    if isinstance(value, (bool, np.bool_, str, bytes)) or value is None:
        raise ValueError(f"{name} must be a real number or an array of them, got {value!r}")
    arr = np.asarray(value)
    if arr.dtype == bool or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == object):
        raise ValueError(f"{name} must be a real number or an array of them, got {value!r}")
    if np.iscomplexobj(arr):
        raise ValueError(f"{name} must be real, got {value!r}")
    arr = check_finite_array(name, arr)
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    if minimum is not None:
        bad = arr <= minimum if strict_min else arr < minimum
        if np.any(bad):
            op = ">" if strict_min else ">="
            raise ValueError(f"{name} must be {op} {minimum}, got {float(arr[bad].flat[0])!r}")
    if maximum is not None and np.any(arr > maximum):
        raise ValueError(f"{name} must be <= {maximum:g}, got {float(arr[arr > maximum].flat[0])!r}")
    return arr


def scalar_or_array(template, result):
    """Return ``result`` as a Python float when ``template`` was a scalar, else as an array."""
    if isinstance(template, numbers.Real) or np.ndim(template) == 0:
        return float(np.asarray(result).reshape(()))
    return result


def broadcast_pair(name_a: str, a, name_b: str, b, *, first_min: float | None = None,
                   first_max: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Two real array arguments validated (bounds on the first) and broadcast against each other by NumPy's rules:
    ``n`` of shape ``(k,)`` with ``beta`` of shape ``(m, 1)`` gives ``(m, k)`` grids. ``ValueError`` names the
    argument at fault, or both when the shapes do not broadcast."""
    a_arr = real_array(name_a, a, minimum=first_min, maximum=first_max)
    b_arr = real_array(name_b, b)
    try:
        a_b, b_b = np.broadcast_arrays(a_arr, b_arr)
    except ValueError:
        raise ValueError(f"{name_a} (shape {a_arr.shape}) and {name_b} (shape {b_arr.shape}) do not broadcast "
                         "together") from None
    return a_b, b_b


def scalar_or_grid(a, b, result):
    """A Python float when both arguments ``a`` and ``b`` were scalars, else ``result`` as an array."""
    if np.ndim(a) == 0 and np.ndim(b) == 0:
        return float(np.asarray(result).reshape(()))
    return result
