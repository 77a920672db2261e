"""Reading JSON files with errors that name the file, and turning results into plain JSON data.

:func:`read_json` is the one way varsim reads a JSON file it did not just write: every failure (missing, not a
regular file, unreadable, not UTF-8, empty, torn, not the expected kind of value) is a :class:`JSONFileError`, a
``ValueError`` whose one-line message names the file and what is wrong with it. Writing goes through
``varsim._common.atomic``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from varsim._common.atomic import is_special_file

__all__ = ["JSONFileError", "read_json", "jsonable"]


class JSONFileError(ValueError):
    """A JSON file that cannot be used; ``missing`` is True when it does not exist."""

    def __init__(self, message: str, *, path, missing: bool = False):
        super().__init__(message)
        self.path = Path(path)
        self.missing = missing


def read_json(path, *, what: str = "JSON file", expect: type | None = dict) -> Any:
    """The value stored in ``path``; :class:`JSONFileError` naming ``what`` and the path on any failure.

    ``expect`` is the type the top-level value must have (``dict``: a JSON object; ``None``: anything).
    """
    p = Path(path)
    label = f"{what} {str(p)!r}"
    if is_special_file(p):  # reading a FIFO waits for a writer, a device may never end: refused, never opened
        raise JSONFileError(f"{label} is not a regular file (a FIFO or device)", path=p)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise JSONFileError(f"{label} does not exist", path=p, missing=True) from None
    except IsADirectoryError:
        raise JSONFileError(f"{label} is a directory, not a file", path=p) from None
    except OSError as exc:
        raise JSONFileError(f"{label} is unreadable: {exc.strerror or exc}", path=p) from None
    if not raw.strip():
        raise JSONFileError(f"{label} is unreadable: it is empty", path=p)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise JSONFileError(f"{label} is unreadable: not UTF-8 text (byte {exc.start})", path=p) from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise JSONFileError(f"{label} is unreadable: not valid JSON ({exc.msg} at line {exc.lineno} column "
                            f"{exc.colno}; a torn or hand-edited file?)", path=p) from None
    if expect is not None and not isinstance(value, expect):
        kind = {dict: "an object", list: "a list"}.get(expect, expect.__name__)
        raise JSONFileError(f"{label} does not hold {kind} (found {type(value).__name__})", path=p)
    return value


def jsonable(obj):
    """``obj`` as plain JSON data (dicts with string keys, lists, str, int, float, bool, None).

    NumPy arrays and scalars become lists and numbers; NaN and infinities become None (JSON has no NaN).
    """
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if hasattr(obj, "tolist") and not isinstance(obj, (str, bytes)):
        return jsonable(obj.tolist())
    if isinstance(obj, bool) or obj is None or isinstance(obj, (str, int)):
        return obj
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    return obj
