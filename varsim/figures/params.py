"""The parameters of a built-in figure: each figure module declares ``PARAMS``, a tuple of :class:`Param`, and its
``compute`` resolves its keyword arguments with :func:`resolve` (defaults by mode, one-line ``ValueError`` naming the
parameter); ``varsim figures --only NAME --param name=value`` parses the same declarations (:func:`parse_assignment`).

A parameter's kind is a key of :data:`KINDS` (how a value is checked and how its text is read on the command line):
``real``, ``int``, ``reals``, ``ints``, ``flag``, ``text``. A figure that draws stored data declares only what it
chooses among that data (``fig_remedies_accuracy``'s ``recipe``); its data source stays as :func:`varsim.figures.make`
gives it.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Param", "KINDS", "figure_params", "resolve", "parse_assignment", "describe"]


def _check_real(p: Param, value):
    from varsim._common.validate import check_real

    return check_real(p.name, value, minimum=p.minimum, maximum=p.maximum, strict_min=p.strict_min)


def _check_int(p: Param, value):
    from varsim._common.validate import check_int

    return check_int(p.name, value, minimum=p.minimum, maximum=p.maximum)


def _check_sequence(item):
    def check(p: Param, value):
        import numbers

        if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
            if not isinstance(value, numbers.Real) or isinstance(value, bool):
                raise ValueError(f"{p.name} must be a sequence of numbers, got {value!r}")
            value = [value]
        values = tuple(item(p, v) for v in value)
        if not values or (p.max_len is not None and len(values) > p.max_len):
            most = "" if p.max_len is None else f" and at most {p.max_len}"
            raise ValueError(f"{p.name} must hold at least 1{most} value(s), got {len(values)}")
        if len(set(values)) != len(values):
            raise ValueError(f"{p.name} must not repeat a value, got {list(values)}")
        return values

    return check


def _check_flag(p: Param, value):
    if not isinstance(value, bool):
        raise ValueError(f"{p.name} must be True or False, got {value!r}")
    return value


def _check_text(p: Param, value):
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{p.name} must be a non-empty string, got {value!r}")
    return value


def _parse_number(cast):
    def parse(text: str):
        try:
            return cast(text)
        except ValueError:
            return text  # the check names the parameter and the value
    return parse


def _parse_int(text: str):
    from varsim._common.validate import parse_int

    try:
        return parse_int(text)
    except ValueError:
        return text


def _parse_list(item):
    def parse(text: str):
        parts = [t for t in text.replace(",", " ").split() if t]
        return [item(t) for t in parts] if parts else text
    return parse


_FLAGS = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}

#: kind -> (check(param, value) -> value, parse(text) -> value): how a value is validated, and read from ``--param``
KINDS = {
    "real": (_check_real, _parse_number(float)),
    "int": (_check_int, _parse_int),
    "reals": (_check_sequence(_check_real), _parse_list(_parse_number(float))),
    "ints": (_check_sequence(_check_int), _parse_list(_parse_int)),
    "flag": (_check_flag, lambda text: _FLAGS.get(text.strip().lower(), text)),
    "text": (_check_text, str),
}


@dataclass(frozen=True)
class Param:
    """One parameter of a figure's ``compute``.

    ``default`` is the full-mode value, ``quick`` the quick-mode one (when it differs); ``none``, when set, says what
    an explicit None means (``target_rse=None``: "no target, always the cap") and makes None a valid value; otherwise
    None means the mode's default. ``minimum``/``maximum`` bound a number (each value of a sequence), ``max_len`` a
    sequence's length."""

    name: str
    kind: str
    default: object
    help: str
    quick: object = None
    minimum: float | None = None
    maximum: float | None = None
    strict_min: bool = False
    max_len: int | None = None
    none: str | None = None

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"kind {self.kind!r} of parameter {self.name!r}: expected one of {', '.join(KINDS)}")

    def default_for(self, quick: bool):
        return self.quick if quick and self.quick is not None else self.default

    def check(self, value, quick: bool = False):
        """The validated value (``None``: the mode's default, or None itself when :attr:`none` is set)."""
        if value is None:
            return None if self.none is not None else self.default_for(quick)
        return KINDS[self.kind][0](self, value)

    def parse(self, text: str):
        """The value of ``--param name=TEXT``, checked (``none`` is None where :attr:`none` allows it)."""
        if self.none is not None and text.strip().lower() == "none":
            return None
        return self.check(KINDS[self.kind][1](text.strip()))


def figure_params(name: str) -> tuple[Param, ...]:
    """The parameters figure ``name`` declares (its module's ``PARAMS``; none for most data figures)."""
    from varsim.figures import load

    return tuple(getattr(load(name), "PARAMS", ()))


def resolve(params, quick: bool, **given) -> dict:
    """Every parameter of ``params`` checked, the mode's default where ``given`` has None or no value; a name not
    declared is a ValueError naming it."""
    declared = {p.name: p for p in params}
    for name in given:
        if name not in declared:
            raise ValueError(f"{name}: no such figure parameter (expected one of {', '.join(declared) or 'none'})")
    out = {}
    for name, p in declared.items():
        value = given.get(name)
        if value is None and p.none is not None and name not in given:
            value = p.default_for(quick)
        out[name] = p.check(value, quick)
    return out


def parse_assignment(text: str) -> tuple[str, str]:
    """``"name=value"`` -> ``(name, value)`` (the ``--param`` syntax; the value is read by the figure's
    declaration)."""
    name, sep, value = str(text).partition("=")
    if not sep or not name.strip() or not value.strip():
        raise ValueError(f"--param: expected NAME=VALUE, got {text!r}")
    return name.strip(), value.strip()


def describe(params) -> str:
    """One line per parameter: ``name=default (quick: ...)  help``, for ``--param help`` and the docs."""
    lines = []
    for p in params:
        default = p.default if not isinstance(p.default, tuple) else ",".join(f"{v:g}" for v in p.default)
        quick = "" if p.quick is None else f", quick {p.quick}"
        none = "" if p.none is None else f"; none: {p.none}"
        lines.append(f"{p.name}={default}{quick}  ({p.kind}) {p.help}{none}")
    return "\n".join(lines)
