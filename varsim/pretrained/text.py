"""Real text for the probe, reachable offline, and reproducible windows of it.

Built-in source (:data:`SOURCES`):

``python-docs``
    The prose paragraphs of Python's own reference documentation as shipped in the standard library
    (``pydoc_data.topics``: the text ``help()`` shows for statements, operators and the data model). Only
    unindented paragraphs of at least 8 words are kept (no grammar rules, code examples, ``>>>`` sessions or
    headings), lines within
    a paragraph are joined, paragraphs are separated by a blank line. About 32,000 words (Python 3.11); the exact
    text depends on the Python version, so results record its sha256 and size.

Users may instead pass their own UTF-8 text files.

Windows: the token stream of the text is cut into ``floor(L / n)`` disjoint slots of ``n`` tokens after a random
offset; ``windows`` distinct slots are drawn without replacement. Disjoint windows keep the bootstrap over windows
honest (overlapping windows would share tokens).
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import numpy as np

from varsim._common.seeding import child_generator

__all__ = ["SOURCES", "builtin_text", "load_text", "text_digest", "draw_windows"]


def _python_docs() -> str:
    try:
        from pydoc_data import topics
    except ImportError:
        raise ValueError("text source 'python-docs' needs the standard library's pydoc_data, which this Python "
                         "lacks; pass your own text files instead") from None
    paras = []
    for key in sorted(topics.topics):
        for block in re.split(r"\n\s*\n", topics.topics[key]):
            lines = block.split("\n")
            if any(line.startswith((" ", "\t", ">>>", "...")) for line in lines):
                continue  # grammar, code examples (indented or interactive), indented lists
            if len(lines) >= 2 and set(lines[-1].strip()) <= set("*=-~^"):
                continue  # a heading with its underline
            para = " ".join(line.strip() for line in lines)
            if len(para.split()) >= 8:
                paras.append(para)
    return "\n\n".join(paras)


SOURCES = {"python-docs": _python_docs}


def builtin_text(name: str = "python-docs") -> str:
    if name not in SOURCES:
        raise ValueError(f"unknown text source {name!r}; expected one of {', '.join(SOURCES)}")
    return SOURCES[name]()


def load_text(paths) -> str:
    """Concatenate UTF-8 text files (separated by a blank line)."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    parts = []
    for p in paths:
        p = Path(p)
        try:
            parts.append(p.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ValueError(f"text file {str(p)!r} does not exist") from None
        except IsADirectoryError:
            raise ValueError(f"text file {str(p)!r} is a directory") from None
        except OSError as exc:
            raise ValueError(f"text file {str(p)!r} cannot be read: {exc.strerror or exc}") from None
        except UnicodeDecodeError as exc:
            raise ValueError(f"text file {str(p)!r} is not UTF-8 text (byte {exc.start})") from None
    text = "\n\n".join(parts)
    if not text.strip():
        raise ValueError("text is empty")
    return text


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def draw_windows(n_tokens: int, n: int, windows: int, seed, key: int) -> np.ndarray:
    """Start offsets of ``windows`` disjoint windows of ``n`` tokens in a stream of ``n_tokens`` tokens, drawn from
    the stream ``child_generator(seed, key)``. Raises ``ValueError`` (naming ``windows``) when the text is short."""
    slots = n_tokens // n
    if windows > slots:
        raise ValueError(
            f"windows: the text has {n_tokens} tokens, room for only {slots} disjoint windows of {n} tokens, "
            f"but {windows} were requested; pass more text or fewer windows / shorter lengths"
        )
    rng = child_generator(seed, key)
    offset = int(rng.integers(0, n_tokens - slots * n + 1))
    chosen = rng.choice(slots, size=windows, replace=False)
    return offset + chosen.astype(np.int64) * n
