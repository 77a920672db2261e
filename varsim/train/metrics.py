"""Accuracy intervals and the per-run metrics log (JSON lines)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from varsim._common.atomic import atomic_write_text
from varsim._common.validate import check_int, check_real

__all__ = ["wilson_bounds", "wilson_interval", "MetricsLog", "read_metrics"]

_Z95 = 1.959963984540054  # Phi^{-1}(0.975)


def wilson_bounds(successes, trials, z: float):
    """The Wilson score interval ``(low, high)`` for counts already checked (``0 <= successes <= trials``,
    ``trials >= 1``), elementwise on arrays; the one formula behind every accuracy interval in varsim.

    Unlike the Wald interval p +- z sqrt(p(1-p)/n) it stays inside [0, 1] and does not collapse to a point at
    p = 0 or 1, which matters for accuracies near 100% at short lengths and near chance at long ones.
    """
    k = np.asarray(successes, dtype=np.float64)
    n = np.asarray(trials, dtype=np.float64)
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # at k = 0 (k = n) the lower (upper) end is exactly 0 (1); do not let rounding say otherwise
    low = np.where(k == 0, 0.0, np.clip(centre - half, 0.0, 1.0))
    high = np.where(k == n, 1.0, np.clip(centre + half, 0.0, 1.0))
    return low, high


def wilson_interval(successes: int, n: int, *, z: float = _Z95) -> tuple[float, float]:
    """Wilson score interval (:func:`wilson_bounds`) for one accuracy, 95% by default; ``(0, 1)`` when ``n == 0``."""
    n = check_int("n", n, minimum=0)
    successes = check_int("successes", successes, minimum=0, maximum=n)
    z = check_real("z", z, minimum=0.0, strict_min=True)
    if n == 0:
        return 0.0, 1.0
    lo, hi = wilson_bounds(successes, n, z)
    return float(lo), float(hi)


def read_metrics(path) -> list[dict]:
    """The records of a metrics log; an unparsable (torn) last line from a killed run is skipped."""
    p = Path(path)
    if not p.exists():
        return []
    out = []
    for line in p.read_text(encoding="utf-8").splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(rec, dict):
            out.append(rec)
    return out


class MetricsLog:
    """Append-only JSON-lines log, flushed after every record so a killed run keeps what it logged."""

    def __init__(self, path):
        self.path = Path(path)

    def truncate_after(self, step: int) -> None:
        """Keep only records with ``step <= step`` (resuming from a checkpoint at ``step`` re-logs the rest)."""
        keep = [r for r in read_metrics(self.path) if int(r.get("step", 0)) <= step]
        atomic_write_text(self.path, "".join(_dumps(r) + "\n" for r in keep))

    def append(self, record: dict) -> None:
        """Write one record; non-finite numbers become ``null`` so every line stays standard JSON."""
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(_dumps(record) + "\n")
            fh.flush()


def _dumps(record: dict) -> str:
    clean = {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in record.items()}
    return json.dumps(clean, allow_nan=False)
