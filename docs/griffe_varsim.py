"""Griffe extension for the API pages (mkdocstrings loads it, see mkdocs.yml): the docstrings as a reader sees them.

The docstrings are written for Python's ``help()`` and use two conventions that mkdocstrings does not render:

* **Sphinx roles** (``:func:`simulate```, ``:class:`~varsim.nn.model.ModelConfig```, ``:mod:``, ``:data:``,
  ``:meth:`` ...) would show as raw text. Each becomes an optional cross-reference: a link to the object's entry when
  the site documents it, otherwise the name in code font (``<autoref ... optional>``, resolved by mkdocs-autorefs,
  which stays silent for an object the site does not show). A relative name is resolved in the object's scope.
* **Short parameter entries** ``name : what it is`` on one line (numpy-style wants ``name : type`` with the
  description indented below) would put the whole description in the Type column. An entry whose "type" reads as
  prose moves it to the description and takes the type from the signature. Every documented parameter also takes
  its default from its own name in the signature: griffe gives entries that document several parameters at once
  (``value_mean, value_scale : ...``) the first one's default for all of them.
"""

from __future__ import annotations

import html
import re

import griffe

ROLE = re.compile(r":(?:py:)?(?P<role>[a-z]+):`(?P<target>[^`]+)`")
EXPLICIT_TITLE = re.compile(r"^(?P<title>.+?)\s*<(?P<target>[^<>]+)>$")
PARAMETER_SECTIONS = {"parameters", "other parameters"}


def resolve(obj: griffe.Object, target: str) -> str:
    """The full path of ``target`` as written in a role of ``obj``'s docstring (itself when it cannot be resolved)."""
    if target.startswith("varsim.") or target == "varsim":
        return target
    head, _, rest = target.partition(".")
    scope = obj if obj.is_module or obj.is_class else obj.parent
    try:
        path = scope.resolve(head) if scope is not None else target
    except griffe.NameResolutionError:
        return target
    return f"{path}.{rest}" if rest else path


def translate_roles(text: str, obj: griffe.Object) -> str:
    """``text`` with each Sphinx role replaced by an optional cross-reference (or code when it names nothing)."""

    def replace(match: re.Match) -> str:
        target = match["target"].strip()
        explicit = EXPLICIT_TITLE.match(target)
        title, target = (explicit["title"], explicit["target"]) if explicit else (None, target)
        short = target.startswith("~")
        target = target.lstrip("~").lstrip(".")
        if title is None:
            title = target.rsplit(".", 1)[-1] if short else target
        identifier = resolve(obj, target)
        return f'<autoref identifier="{html.escape(identifier)}" optional><code>{html.escape(title)}</code></autoref>'

    return ROLE.sub(replace, text)


def looks_like_prose(annotation: str) -> bool:
    """Whether the "type" of a parameter entry is really its description (``name : what it is``)."""
    text = annotation.strip()
    return text.endswith(".") or "``" in text or ": " in text or ";" in text or len(text.split()) > 6


def fix_parameters(obj: griffe.Object) -> None:
    """Move prose out of the Type column, and give each parameter its own default (see the module docstring)."""
    signature = {p.name: p for p in getattr(obj, "parameters", None) or []}
    for section in obj.docstring.parsed:
        if section.kind.value not in PARAMETER_SECTIONS:
            continue
        for parameter in section.value:
            own = signature.get(parameter.name.lstrip("*"))
            annotation = "" if parameter.annotation is None else str(parameter.annotation)
            if annotation and looks_like_prose(annotation):
                parameter.description = annotation + (f"\n{parameter.description}" if parameter.description else "")
                parameter.annotation = own.annotation if own is not None else None
            if own is not None:
                parameter.value = own.default


def members(obj: griffe.Object):
    """``obj`` and every object defined under it (aliases are documented where they are defined)."""
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from members(member)


class VarsimDocstrings(griffe.Extension):
    """Translate Sphinx roles and repair short parameter entries in every docstring of the loaded package."""

    def on_package(self, *, pkg: griffe.Module, **kwargs) -> None:
        for obj in members(pkg):
            if obj.docstring is None:
                continue
            obj.docstring.value = translate_roles(obj.docstring.value, obj)
            if obj.is_function or obj.is_class:
                fix_parameters(obj)
