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
* **Types** are plain text in a table's Type column: a role there becomes the name it shows (``callable or
  :class:`Adapted``` -> ``callable or Adapted``, which griffe then parses and links like an annotation), an RST
  literal loses its double backquotes; a list of types (``int, SeedSequence or Generator``) shows without the
  parentheses of the tuple griffe parses it as.
* **Returns entries broken across rows**: numpy style reads every unindented line of a Returns (Yields, Raises ...)
  section as a new entry, so a description written flush left, or a paragraph after the entries, becomes rows whose
  "type" is prose. Such a row joins the description of the entry above (a first row becomes the description, its
  type taken from the signature's return annotation).
* **RST literal blocks** (a paragraph ending in ``::`` and an indented block under it) become a fenced Python block
  after a paragraph ending in ``:``.
* **See Also** sections (``name : what it is`` lines, or bare names) become a list of links to the named objects.
* **Constants documented by ``#:`` comments** (Sphinx's convention: the comment lines just above the assignment)
  take those lines as their docstring when they have none.
* **Constants documented by a table** (a registry of named entries, ``QUANTITIES``) show no value when the value
  names a private object (``{"decay_exponent": (_decay_exponent, ...)}``): a reader cannot use the private names,
  and the value's raw strings show their backslashes doubled. The docstring's table says what they hold.
* **Defaults that name a module constant** (``seed=SEED_DEFAULT``) show the constant's value (``seed=0``), in the
  signature and in the Parameters table: a constant whose value is a call of a private sentinel class with one
  argument (``SEED_DEFAULT = _DefaultSeed(0)``, which tells a default from a seed passed explicitly) shows that
  argument. A value longer than ``MAX_DEFAULT_CHARS`` keeps the name.
"""

from __future__ import annotations

import html
import re

import griffe

ROLE = re.compile(r":(?:py:)?(?P<role>[a-z]+):`(?P<target>[^`]+)`")
EXPLICIT_TITLE = re.compile(r"^(?P<title>.+?)\s*<(?P<target>[^<>]+)>$")
AUTOREF = re.compile(r'<autoref identifier="[^"]*" optional><code>(?P<title>[^<]*)</code></autoref>')
RST_LITERAL = re.compile(r"``(?P<text>[^`]+)``")
PARAMETER_SECTIONS = {"parameters", "other parameters"}
ENTRY_SECTIONS = {"returns", "yields", "receives", "raises", "warns"}
CONSTANT = re.compile(r"_?[A-Z][A-Z0-9_]*")
MAX_DEFAULT_CHARS = 60


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


def literal_blocks(text: str) -> str:
    """``text`` with each RST literal block (``para::`` and the indented block under it) as a fenced Python block."""
    lines = text.split("\n")
    out, i = [], 0
    while i < len(lines):
        line = lines[i]
        if not line.rstrip().endswith("::") or line.rstrip().endswith(":::"):
            out.append(line)
            i += 1
            continue
        indent = len(line) - len(line.lstrip())
        j = i + 1
        while j < len(lines) and not lines[j].strip():
            j += 1
        block_end = j
        while block_end < len(lines) and (not lines[block_end].strip()
                                          or len(lines[block_end]) - len(lines[block_end].lstrip()) > indent):
            block_end += 1
        while block_end > j and not lines[block_end - 1].strip():
            block_end -= 1
        if block_end == j:  # no indented block: not a literal block marker
            out.append(line)
            i += 1
            continue
        head = line.rstrip()[:-2].rstrip()
        if head.strip():
            out.append(head + ":")
        block = lines[j:block_end]
        depth = min(len(b) - len(b.lstrip()) for b in block if b.strip())
        pad = " " * indent
        out += ["", pad + "```python", *(pad + b[depth:] if b.strip() else "" for b in block), pad + "```"]
        i = block_end
    return "\n".join(out)


def plain_type(annotation, obj: griffe.Object):
    """A type as written in a docstring, without role markup or RST literals (parsed again as an expression)."""
    if not isinstance(annotation, str):
        return annotation
    text = RST_LITERAL.sub(lambda m: m["text"], AUTOREF.sub(lambda m: html.unescape(m["title"]), annotation))
    if text == annotation:
        return annotation
    return griffe.parse_docstring_annotation(text, obj.docstring)


def constant_value(obj: griffe.Object, default) -> str | None:
    """The value to show for a default that names a module constant, or None to keep the default as it is."""
    if not isinstance(default, (griffe.ExprName, str)) or not CONSTANT.fullmatch(str(default)):
        return None
    scope = obj.parent if obj.parent is not None else obj
    try:
        target = obj.modules_collection[scope.resolve(str(default))]
        if target.is_alias:
            target = target.final_target
    except (griffe.NameResolutionError, griffe.AliasResolutionError, KeyError):
        return None
    value = getattr(target, "value", None)
    if (isinstance(value, griffe.ExprCall) and str(value.function).lstrip("_") != str(value.function)
            and len(value.arguments) == 1):
        value = value.arguments[0]  # a private sentinel around the value (SEED_DEFAULT = _DefaultSeed(0))
    text = None if value is None else str(value)
    return text if text is not None and len(text) <= MAX_DEFAULT_CHARS else None


def see_also(text: str, obj: griffe.Object) -> str:
    """A numpy See Also section (``name : description`` entries, continuation lines indented) as a Markdown list of
    optional cross-references."""
    entries: list[list[str]] = []
    for line in text.splitlines():
        if line.strip() and (line[:1].isspace() and entries):
            entries[-1][1] += " " + line.strip()
        elif line.strip():
            names, _, description = line.partition(" : ")
            entries.append([names.strip(), description.strip()])
    items = []
    for names, description in entries:
        links = ", ".join(
            f'<autoref identifier="{html.escape(resolve(obj, n.strip()))}" optional><code>{html.escape(n.strip())}'
            "</code></autoref>" for n in names.split(",") if n.strip())
        items.append(f"- {links}" + (f": {description}" if description else ""))
    return "\n".join(items)


def fix_defaults(obj: griffe.Object) -> None:
    """Defaults that name a module constant show its value (see the module docstring)."""
    for parameter in getattr(obj, "parameters", None) or []:
        value = constant_value(obj, parameter.default)
        if value is not None:
            parameter.default = value


def fix_entries(obj: griffe.Object) -> None:
    """Join the rows of a Returns (Yields, Raises ...) entry broken across rows; plain types (module docstring)."""
    for section in obj.docstring.parsed:
        kind = section.kind.value
        if kind == "admonition" and getattr(section.value, "annotation", None) == "see-also":
            section.value.description = see_also(section.value.description, obj)
        if kind not in ENTRY_SECTIONS | PARAMETER_SECTIONS | {"attributes"}:
            continue
        if kind in ENTRY_SECTIONS:
            kept, joined = [], False
            for entry in section.value:
                annotation = "" if entry.annotation is None else str(entry.annotation)
                if not (annotation and looks_like_prose(annotation) and not entry.description):
                    kept.append(entry)
                    joined = False
                    continue
                if kept:
                    previous = kept[-1]
                    glue = " " if joined or not previous.description else "\n\n"
                    previous.description = f"{previous.description.rstrip()}{glue}{annotation}".strip()
                    joined = True
                else:
                    entry.description, entry.annotation = annotation, getattr(obj, "returns", None)
                    kept.append(entry)
                    joined = True
            section.value[:] = kept
        for entry in section.value:
            entry.annotation = plain_type(entry.annotation, obj)
            if isinstance(entry.annotation, griffe.ExprTuple):  # "int, SeedSequence or Generator": no parentheses
                entry.annotation.implicit = True


def looks_like_prose(annotation: str) -> bool:
    """Whether the "type" of a parameter entry is really its description (``name : what it is``)."""
    text = annotation.strip()
    if "``" in text and not literal_choices(text):
        return True
    return text.endswith(".") or ": " in text or ";" in text or len(text.split()) > 6


def literal_choices(text: str) -> bool:
    """Whether ``text`` lists literals only (``"fixed"`` or ``"random"``): a type, not a description."""
    return "``" in text and not re.sub(r"\b(?:or|and)\b|[\s,{}]", "", RST_LITERAL.sub("", text))


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


def comment_docstring(obj: griffe.Object) -> None:
    """Give an attribute without a docstring the ``#:`` comment lines just above its assignment, if any."""
    if not obj.is_attribute or obj.docstring is not None or obj.parent is None or not obj.lineno:
        return
    try:
        lines = obj.parent.lines if obj.parent.is_module else obj.parent.module.lines
    except (AttributeError, OSError):
        return
    comment, i = [], obj.lineno - 2
    while 0 <= i < len(lines) and lines[i].strip().startswith("#:"):
        comment.insert(0, lines[i].strip()[2:].strip())
        i -= 1
    if comment:
        owner = obj.parent.docstring
        obj.docstring = griffe.Docstring("\n".join(comment), lineno=i + 2, endlineno=obj.lineno - 1, parent=obj,
                                         parser=owner.parser if owner else None,
                                         parser_options=owner.parser_options if owner else None)


PRIVATE_NAME = re.compile(r"(?<![\w.'\"])_[A-Za-z]\w*")
TABLE_RULE = re.compile(r"^\|\s*:?-{3,}", re.MULTILINE)


def hide_private_value(obj: griffe.Object) -> None:
    """Drop the value of a public attribute documented by a Markdown table when the value names a private object."""
    if not obj.is_attribute or obj.name.startswith("_") or obj.value is None or obj.docstring is None:
        return
    if TABLE_RULE.search(obj.docstring.value) and PRIVATE_NAME.search(str(obj.value)):
        obj.value = None


def members(obj: griffe.Object):
    """``obj`` and every object defined under it (aliases are documented where they are defined)."""
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from members(member)


class VarsimDocstrings(griffe.Extension):
    """Translate Sphinx roles and RST literal blocks, repair short parameter entries and broken Returns entries,
    and show constants' values as defaults, in every docstring and signature of the loaded package."""

    def on_package(self, *, pkg: griffe.Module, **kwargs) -> None:
        for obj in members(pkg):
            if obj.is_function:
                fix_defaults(obj)
            comment_docstring(obj)
        for obj in members(pkg):
            if obj.docstring is None:
                continue
            hide_private_value(obj)
            obj.docstring.value = literal_blocks(translate_roles(obj.docstring.value, obj))
            if obj.is_function or obj.is_class:
                fix_parameters(obj)
            fix_entries(obj)
