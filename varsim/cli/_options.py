"""The options the CLI commands share: integer and real option types with a range, grids of sequence lengths, numbers
given inline or as a file, the attention-variant flags generated from the registry, and the results table.

Every parser here turns bad input into a one-line message naming the flag: an argparse ``type`` raises
``argparse.ArgumentTypeError`` (argparse prints ``argument --FLAG: MESSAGE`` and ``varsim`` exits with status 2); the
other helpers raise ``ValueError`` naming the option (``varsim.cli.main`` prints it on one line, status 2).

Attention variants: ``add_variant_flags`` adds ``--attention`` and one flag per variant parameter, ``--VARIANT-PARAM``
(:func:`variant_option`), from :data:`varsim.variants.VARIANTS`; ``multi=True`` makes each flag take one or more
values (``varsim sweep``). ``given_variant_params`` reads back what was given, and ``variant_kwargs`` turns a single
``--attention`` with its flags into ``{"attention": name, **params}``.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import warnings

import numpy as np

from varsim._common.argtypes import (
    MAX_ABS,
    MAX_THREADS,
    count_option,
    int_option,
    real_option,
    seed_option,
    threads_option,
)
from varsim._common.validate import MAX_COUNT, MAX_SEED, check_int, parse_int

__all__ = [
    "MAX_COUNT", "MAX_SEED", "MAX_THREADS", "MAX_ABS", "int_option", "count_option", "seed_option", "threads_option",
    "real_option", "output_file", "parse_grid", "parse_numbers", "scalar_or_array", "variant_option",
    "add_attention_flag", "add_variant_param_flags", "add_variant_flags", "given_variant_params",
    "refuse_variant_params", "variant_kwargs", "fmt_estimate", "format_columns",
]

_RANGE = re.compile(r"^\s*([^:]+):([^:]+):(x?)([^:]+)\s*$")
_MAX_GRID = 10_000  # a longer grid is a typo (e.g. 1:1e9:1), not a simulation anyone waits for


# ----------------------------------------------------------------------------------------------------------------------
# Numbers: varsim._common.argtypes (re-exported here)


def output_file(text: str) -> str:
    """The argparse ``type`` of every output-file flag (``-o FILE``): the file must be creatable or replaceable
    (:func:`varsim._common.atomic.check_writable`), checked before any work; a device or FIFO is written through
    (``-o /dev/stdout``). The command writes it with :mod:`varsim._common.atomic`, the one writer."""
    from varsim._common.atomic import check_writable

    try:
        check_writable(text, "output")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


output_file.__name__ = "output"


def _grid_int(token: str, name: str) -> int:
    try:
        return parse_int(token)
    except (ValueError, OverflowError):
        pass
    try:
        float(token)
    except ValueError:
        raise ValueError(f"{name}: cannot parse {token!r} as an integer") from None
    raise ValueError(f"{name} must be an integer, got {token!r}")


def parse_grid(tokens, name: str = "n") -> list[int]:
    """Expand ``16 64 256`` and ranges ``START:STOP:xFACTOR`` (geometric) / ``START:STOP:STEP``.

    Ranges include STOP when it lies on the progression. The result is sorted and de-duplicated (a
    grid of sequence lengths is a set), and every entry must be an integer >= 1.
    """
    values: list[int] = []
    for token in tokens:
        m = _RANGE.match(str(token))
        if m is None:
            values.append(_grid_int(str(token), name))
            continue
        start, stop = _grid_int(m.group(1), name), _grid_int(m.group(2), name)
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


def parse_numbers(text: str, name: str) -> np.ndarray:
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


def scalar_or_array(arr: np.ndarray):
    """A one-element array becomes a float (the simulator broadcasts scalars its own way)."""
    return float(arr.reshape(-1)[0]) if arr.size == 1 else arr


# ----------------------------------------------------------------------------------------------------------------------
# Attention variants


def variant_option(variant: str, param: str) -> str:
    """The command-line flag of a variant parameter: the one its registry entry names (``--topk`` for top-k's ``k``),
    else ``--VARIANT-PARAM`` (``--ssmax-s``, ``--logn-n0``)."""
    from varsim.variants import VARIANTS

    spec = VARIANTS.get(variant)
    flag = next((p.flag for p in spec.params if p.name == param), None) if spec is not None else None
    return flag or f"--{variant.replace('_', '-')}-{param.replace('_', '-')}"


def _dest(variant: str, param: str) -> str:
    return f"variant__{variant}__{param}"


def _variants(names=None) -> dict:
    from varsim.variants import VARIANTS

    return dict(VARIANTS) if names is None else {k: VARIANTS.find(k) for k in names}


def add_attention_flag(group, *, default, default_help: str, multi: bool = False, names=None,
                       what: str = "weight map") -> None:
    """``--attention NAME`` (``multi``: one or more names) listing the variants ``names`` (default: all)."""
    listed = " | ".join(_variants(names))
    group.add_argument("--attention", nargs="+" if multi else None, default=default, metavar="NAME",
                       help=f"{what}: {listed} ({default_help})")


def add_variant_param_flags(group, *, multi: bool = False, names=None) -> None:
    """One flag per parameter of the variants ``names`` (default: all): ``multi`` flags take one or more values."""
    for name, spec in _variants(names).items():
        for p in spec.params:
            kwargs = dict(dest=_dest(name, p.name), default=None, help=f"{p.help} [--attention {name}]")
            what = f"{name} parameter {p.name!r}"
            if p.kind == "bool" and multi:
                kwargs.update(nargs="+", choices=("true", "false"))
            elif p.kind == "bool":
                kwargs.update(action=argparse.BooleanOptionalAction)
            elif p.kind == "int":
                kwargs.update(type=int_option(_int_bound(p.minimum, p.strict), _int_bound(p.maximum), what=what),
                              metavar="K", nargs="+" if multi else None)
            else:
                kwargs.update(type=real_option(p.minimum, p.maximum, strict_min=p.strict, what=what), metavar="X",
                              nargs="+" if multi else None)
            group.add_argument(variant_option(name, p.name), **kwargs)


def _int_bound(bound, strict: bool = False):
    if bound is None:
        return None
    return math.floor(bound) + 1 if strict else int(bound)


def add_variant_flags(parser: argparse.ArgumentParser, *, default: str | None = "softmax",
                      default_help: str = "default softmax", names=None) -> None:
    """``--attention NAME`` and one flag per variant parameter in one group, for the variants ``names`` (all)."""
    group = parser.add_argument_group("attention variant (varsim.variants)")
    add_attention_flag(group, default=default, default_help=default_help, names=names)
    add_variant_param_flags(group, names=names)


def given_variant_params(args: argparse.Namespace) -> dict:
    """``{variant: {param: value}}`` of the parameter flags given (multi-valued bool flags as lists of bools)."""
    from varsim.variants import VARIANTS

    out: dict = {}
    for name, spec in VARIANTS.items():
        for p in spec.params:
            value = getattr(args, _dest(name, p.name), None)
            if value is None:
                continue
            if p.kind == "bool" and isinstance(value, list):
                value = [v == "true" for v in value]
            out.setdefault(name, {})[p.name] = value
    return out


def refuse_variant_params(given: dict, allowed, reason: str) -> None:
    """``ValueError`` naming the first flag in ``given`` (see :func:`given_variant_params`) whose variant is not in
    ``allowed``: ``FLAG applies to --attention NAME, REASON``."""
    for name, params in given.items():
        if name not in allowed:
            raise ValueError(f"{variant_option(name, next(iter(params)))} applies to --attention {name}, {reason}")


def variant_kwargs(args: argparse.Namespace) -> dict:
    """``{"attention": name, **params}`` from ``--attention`` and its flags; a flag of another variant is refused
    (ValueError naming the flag), bad values too (naming the parameter), before any work."""
    from varsim.variants import get_variant

    spec = get_variant(args.attention)
    given = given_variant_params(args)
    refuse_variant_params(given, (spec.name,), f"not --attention {spec.name}")
    params = given.get(spec.name, {})
    spec.check_params(params)
    return {"attention": spec.name, **params}


# ----------------------------------------------------------------------------------------------------------------------
# Results tables


def fmt_estimate(x, se=None) -> str:
    """``0.12346 ± 0.0012`` (5 and 2 significant digits), ``-`` for a missing or non-finite value."""
    if x is None or not math.isfinite(x):
        return "-"
    return f"{x:.5g}" if se is None or not math.isfinite(se) else f"{x:.5g} ± {se:.2g}"


def format_columns(columns, records, *, left: int = 0, drop_empty: bool = False) -> list[str]:
    """The header line and one line per record of a table: ``columns`` are ``(header, cell)`` pairs, ``cell(record)``
    a string or None (shown as ``-``). The first ``left`` columns are left-aligned, the others right-aligned;
    ``drop_empty`` leaves out the columns whose cells are all None."""
    table = [(h, [cell(r) for r in records]) for h, cell in columns]
    if drop_empty:
        table = [(h, cells) for h, cells in table if any(c is not None for c in cells)]
    table = [(h, ["-" if c is None else c for c in cells]) for h, cells in table]
    widths = [max(len(h), *(len(c) for c in cells)) if cells else len(h) for h, cells in table]

    def line(texts):
        return "  ".join(t.ljust(w) if i < left else t.rjust(w) for i, (t, w) in enumerate(zip(texts, widths)))

    return [line([h for h, _ in table])] + [line([cells[i] for _, cells in table]) for i in range(len(records))]
