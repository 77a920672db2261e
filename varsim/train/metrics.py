"""The per-run metrics log (JSON lines). (Accuracy intervals: :mod:`varsim._common.intervals`.)"""

from __future__ import annotations

import json
import math
from pathlib import Path

from varsim._common.atomic import append_text, atomic_write_text, is_special_file

__all__ = ["MetricsLog", "read_metrics", "scan_metrics"]


def _parse_record(raw: bytes):
    """The record of one log line, or None when it is not a JSON object with an integer ``step`` >= 0."""
    try:
        rec = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(rec, dict):
        return None
    step = rec.get("step")
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        return None
    return rec


def scan_metrics(path) -> tuple[list[dict], int | None]:
    """``(records, torn)`` of a metrics log: ``torn`` is the number of the last line when it was dropped as torn
    (unparsable and not ended by a newline: a write cut short by a kill or a full disk), else None.

    Blank lines are skipped. Any other line that is not a JSON object with an integer ``step`` (a hand edit, a
    damaged file) raises ``ValueError`` naming the file and the line: guessing which records to keep would make the
    log disagree with the checkpoints.
    """
    p = Path(path)
    if is_special_file(p):  # reading a FIFO waits for a writer; a device never ends: refused, never opened
        raise ValueError(f"metrics log {str(p)!r} is not a regular file (a FIFO or device); a run directory's log is "
                         "read back on resume: remove it, or give another directory")
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        return [], None
    except OSError as exc:
        raise ValueError(f"metrics log {str(p)!r} is unreadable: {exc.strerror or exc}") from None
    lines = data.split(b"\n")  # the last item is b"" when the file ends with a newline
    out, torn = [], None
    for i, raw in enumerate(lines):
        if not raw.strip():
            continue
        rec = _parse_record(raw)
        if rec is None:
            if i == len(lines) - 1:  # no newline after it: a torn final write
                torn = i + 1
                continue
            shown = raw[:60].decode("utf-8", errors="replace")
            raise ValueError(
                f"metrics log {str(p)!r} line {i + 1} is not a metrics record (a JSON object with an integer "
                f"'step'): {shown!r}; repair or delete that line (or the file), then resume"
            )
        out.append(rec)
    return out, torn


def read_metrics(path) -> list[dict]:
    """The records of a metrics log (``metrics.jsonl`` of a run directory).

    Parameters
    ----------
    path : path
        The log file.

    Returns
    -------
    list of dict
        One per logged step (``step``, ``loss``, ``accuracy``, ``lr``, ``grad_norm``, ``steps_per_s``,
        ``elapsed_s``); ``[]`` when the file does not exist. A torn last line from a killed run is skipped.

    Raises
    ------
    ValueError
        Any other bad line, naming the file and line.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from varsim.train import read_metrics
    >>> log = pathlib.Path(tempfile.mkdtemp()) / "metrics.jsonl"
    >>> with open(log, "a") as f:  # a run killed while appending its third record
    ...     _ = f.write('{"step": 5, "loss": 2.3}\\n{"step": 10, "loss": 2.1}\\n{"step": 15, "lo')
    >>> [r["step"] for r in read_metrics(log)]
    [5, 10]
    """
    return scan_metrics(path)[0]


class MetricsLog:
    """Append-only JSON-lines log, flushed after every record so a killed run keeps what it logged."""

    def __init__(self, path):
        self.path = Path(path)

    def truncate_after(self, step: int) -> int | None:
        """Keep only records with ``step <= step`` (resuming from a checkpoint at ``step`` re-logs the rest);
        return the number of a torn last line that was dropped (None if there was none).

        The log is rewritten atomically only when something changes, so a full disk cannot lose the records.
        """
        records, torn = scan_metrics(self.path)
        keep = [r for r in records if r["step"] <= step]
        if len(keep) != len(records) or torn is not None:
            atomic_write_text(self.path, "".join(_dumps(r) + "\n" for r in keep))
        return torn

    def append(self, record: dict) -> None:
        """Write one record; non-finite numbers become ``null`` so every line stays standard JSON."""
        append_text(self.path, _dumps(record) + "\n")  # a full disk: OSError naming the log


def _dumps(record: dict) -> str:
    clean = {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in record.items()}
    return json.dumps(clean, allow_nan=False)
