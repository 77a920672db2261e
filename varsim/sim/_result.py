"""``SimulationResult``: per-N statistics over a grid, the log-log slope, and the record needed to rerun."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from varsim._common.atomic import atomic_write_json, check_writable

__all__ = ["SimulationResult", "ARRAY_FIELDS", "OPTIONAL_ARRAY_FIELDS"]

# Always present: one value per grid point.
ARRAY_FIELDS = ("n", "var", "var_se", "var_coord", "var_coord_se")
# None when the run did not produce them: no attention outputs (logits sampler + Rao-Blackwell estimator) for
# the mean/global fields, no weights (measure_variance) for ipr, a random query for beta.
OPTIONAL_ARRAY_FIELDS = (
    "ipr", "ipr_se", "mean", "mean_se", "global_mean", "global_mean_se", "global_var", "global_var_se", "beta",
    "wsum", "wsum_se", "wsum_var", "wsum_var_se", "sequences",
)
_INT_FIELDS = ("n", "sequences")
_SCALAR_FIELDS = ("slope", "slope_se")


def _array_field(value, name: str, source: str):
    """One array field of :meth:`SimulationResult.from_dict`: a list of numbers (null entries are NaN; integers where
    the field counts) as a NumPy array, None for an absent optional field; malformed input raises naming ``source``."""
    if value is None:
        if name in ARRAY_FIELDS:
            raise ValueError(f"{source}: field {name!r} must not be null")
        return None
    if not isinstance(value, list) or not all(
        v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)) for v in value
    ):
        raise ValueError(f"{source}: field {name!r} must be a list of numbers")
    if name in _INT_FIELDS and any(v is None or v != int(v) for v in value):
        raise ValueError(f"{source}: field {name!r} must be a list of integers")
    return np.array([np.nan if v is None else v for v in value], dtype=np.int64 if name in _INT_FIELDS else np.float64)


@dataclass(eq=False)  # arrays have no single truth value; compare fields explicitly
class SimulationResult:
    """Monte Carlo statistics of ``o = softmax(tau q.K^T / sqrt(d_k)) V`` for each sequence length ``N``.

    Per grid point (1-D arrays over ``n``, in increasing ``N``):

    - ``var``, ``var_se``: ``Var(o_j)`` pooled over the ``d_v`` coordinates (each coordinate about its own mean,
      then averaged) and its batch-means SE; with ``estimator='rao_blackwell'`` it is
      ``value_scale^2 * ipr`` instead.
    - ``var_coord``, ``var_coord_se``: the same for the chosen ``coordinate`` alone.
    - ``ipr``, ``ipr_se``: mean inverse participation ratio ``E[sum_i w_i^2]``.
    - ``mean``, ``mean_se``: mean of ``o_coordinate``.
    - ``global_mean``, ``global_var`` (+ ``_se``): per sequence, the mean and the (population, ddof=0) variance of
      ``o`` across its ``d_v`` features, averaged over sequences (the paper's Figure 3 quantities).
    - ``beta``: ``tau |q| / sqrt(d_k)`` for a fixed query (None for a random query); the logit scale before any
      N-dependent factor of the attention variant.
    - ``wsum``, ``wsum_var`` (+ ``_se``): mean and variance of ``sum_i w_i`` for weight maps that do not sum to 1
      (``attention='sigmoid'``), whose variance has the extra term ``mu_v^2 Var(sum w)``; None otherwise.
    - ``sequences``: the sequences simulated at each N (``n_sequences``, or fewer where ``target_rse`` stopped the
      point earlier); None in files written before it was recorded.

    Across the grid: ``slope``, ``slope_se`` of ``log var`` against ``log N`` (weighted least squares, delta-method
    SEs; None for a single grid point). ``config`` holds the ``simulate`` keyword arguments that reproduce the run
    with ``seed`` (the root entropy) and ``seed_spawn_key``; ``provenance`` records versions, platform and time.
    ``samples`` (only with ``keep_samples=True``, never written to JSON) maps ``"ipr"`` and ``"o"`` to lists of
    per-sequence arrays, one per grid point (``sum w^2`` and ``o_coordinate``; None where not computed).
    """

    n: np.ndarray
    var: np.ndarray
    var_se: np.ndarray
    var_coord: np.ndarray
    var_coord_se: np.ndarray
    ipr: np.ndarray | None
    ipr_se: np.ndarray | None
    mean: np.ndarray | None
    mean_se: np.ndarray | None
    global_mean: np.ndarray | None
    global_mean_se: np.ndarray | None
    global_var: np.ndarray | None
    global_var_se: np.ndarray | None
    beta: np.ndarray | None
    slope: float | None
    slope_se: float | None
    config: dict
    seed: int | list
    seed_spawn_key: list = field(default_factory=list)
    provenance: dict = field(default_factory=dict)
    elapsed_s: float | None = None
    samples: dict | None = field(default=None, repr=False, compare=False)
    wsum: np.ndarray | None = None
    wsum_se: np.ndarray | None = None
    wsum_var: np.ndarray | None = None
    wsum_var_se: np.ndarray | None = None
    sequences: np.ndarray | None = None

    def to_dict(self, extra_columns: dict | None = None) -> dict:
        """The JSON layout shared by :meth:`to_json` and ``varsim simulate --json`` / ``-o``: one record per N.

        ``{"rows": [{"n": 16, "var": ..., "var_se": ..., ...}, ...], "slope", "slope_se", "config", "seed",
        "seed_spawn_key", "versions", "provenance", "elapsed_s"}``; every per-N field of the class is a key of every
        row (null where not computed or not finite). ``extra_columns`` adds per-N columns (name -> sequence of the
        grid's length, or None for a column of nulls), e.g. the CLI's ``exact_var``. One line loads it as a table:
        ``pandas.json_normalize(json.load(open(path)), "rows", meta=["slope", "seed"])``.
        """
        columns = {}
        for name in ARRAY_FIELDS + OPTIONAL_ARRAY_FIELDS:
            arr = getattr(self, name)
            if arr is None:
                columns[name] = [None] * len(self.n)
            elif name in _INT_FIELDS:
                columns[name] = [int(v) for v in arr]
            else:
                columns[name] = [_finite_or_none(v) for v in arr]
        for name, values in (extra_columns or {}).items():
            if name in columns:
                raise ValueError(f"extra column {name!r} would overwrite a result field")
            if values is None:
                columns[name] = [None] * len(self.n)
            else:
                values = list(values)
                if len(values) != len(self.n):
                    raise ValueError(f"extra column {name!r} has length {len(values)}, expected {len(self.n)}")
                columns[name] = [_finite_or_none(v) for v in values]
        rows = [{name: col[i] for name, col in columns.items()} for i in range(len(self.n))]
        prov = _json_safe(self.provenance)
        return {
            "rows": rows,
            "slope": _finite_or_none(self.slope),
            "slope_se": _finite_or_none(self.slope_se),
            "config": _json_safe(self.config),
            "seed": _json_safe(self.seed),
            "seed_spawn_key": [int(k) for k in self.seed_spawn_key],
            "versions": prov.get("versions") if isinstance(prov, dict) else None,
            "provenance": prov,
            "elapsed_s": self.elapsed_s,
        }

    def to_json(self, path, extra_columns: dict | None = None) -> Path:
        """Write ``to_dict(extra_columns)`` atomically (a failed write leaves any existing file untouched)."""
        check_writable(path, "output")
        return atomic_write_json(path, self.to_dict(extra_columns))

    @classmethod
    def from_dict(cls, data: dict, *, source: str = "data") -> "SimulationResult":
        """Rebuild from ``to_dict()`` output; malformed input raises ValueError naming ``source``."""
        if not isinstance(data, dict):
            raise ValueError(f"{source}: expected a JSON object, got {type(data).__name__}")
        if "rows" in data:
            data = _columns_from_rows(data, source)
        required = ARRAY_FIELDS + _SCALAR_FIELDS + ("config", "seed")
        missing = [k for k in required if k not in data]
        if missing:
            raise ValueError(f"{source}: missing field(s) {', '.join(missing)}")
        kwargs = {}
        n_len = None
        for name in ARRAY_FIELDS + OPTIONAL_ARRAY_FIELDS:
            # optional fields added later (wsum*) may be absent from older files
            kwargs[name] = arr = _array_field(data.get(name), name, source)
            if arr is None:
                continue
            n_len = arr.size if n_len is None else n_len
            if arr.size != n_len:
                raise ValueError(f"{source}: field {name!r} has length {arr.size}, expected {n_len}")
        for name in _SCALAR_FIELDS:
            value = data[name]
            if value is not None and (not isinstance(value, (int, float)) or isinstance(value, bool)):
                raise ValueError(f"{source}: field {name!r} must be a number or null")
            kwargs[name] = None if value is None else float(value)
        if not isinstance(data["config"], dict):
            raise ValueError(f"{source}: field 'config' must be an object")
        kwargs["config"] = data["config"]
        kwargs["seed"] = data["seed"]
        kwargs["seed_spawn_key"] = list(data.get("seed_spawn_key") or [])
        kwargs["provenance"] = data.get("provenance") or {}
        kwargs["elapsed_s"] = data.get("elapsed_s")
        return cls(**kwargs)

    @classmethod
    def from_json(cls, path) -> "SimulationResult":
        """Read a file written by ``to_json``; a missing, unreadable or corrupt file raises ValueError naming it."""
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except OSError as exc:
            raise ValueError(f"{p}: cannot read simulation result ({exc.strerror or exc})") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{p}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
        return cls.from_dict(data, source=str(p))

    def table(self) -> str:
        """A fixed-width text table: one row per N, then the fitted slope."""
        cols = [("N", "{:>8d}"), ("Var(o_j)", "{:>12.5g}"), ("SE", "{:>10.2g}"), ("N*Var", "{:>9.4f}")]
        head = [f"{'N':>8}", f"{'Var(o_j)':>12}", f"{'SE':>10}", f"{'N*Var':>9}"]
        extras = [("ipr", "E[sum w^2]"), ("mean", "mean(o_j)"), ("global_mean", "glob.mean"),
                  ("global_var", "glob.var")]
        extras = [(k, lab) for k, lab in extras if getattr(self, k) is not None]
        head += [f"{lab:>12}" for _, lab in extras]
        lines = ["  ".join(head)]
        for i, n in enumerate(self.n):
            row = [cols[0][1].format(int(n)), cols[1][1].format(self.var[i]), cols[2][1].format(self.var_se[i]),
                   cols[3][1].format(n * self.var[i])]
            row += [f"{getattr(self, k)[i]:>12.5g}" for k, _ in extras]
            lines.append("  ".join(row))
        if self.slope is not None:
            lines.append(f"slope d log Var / d log N = {self.slope:.4f} +- {self.slope_se:.4f}")
        cfg = self.config
        keys = ("d_k", "d_v", "tau", "query", "sampler", "estimator", "n_sequences", "target_rse")
        desc = ", ".join(f"{k}={cfg[k]}" for k in keys if cfg.get(k) is not None)
        if self.beta is not None:
            desc += f", beta={self.beta[0]:.4g}"
        lines.append(f"({desc}, seed={self.seed})")
        return "\n".join(lines)


def _finite_or_none(v):
    if v is None:
        return None
    v = float(v)
    return v if math.isfinite(v) else None


def _json_safe(x):
    """JSON-ready copy: NumPy scalars/arrays -> Python numbers/lists, non-finite floats -> None."""
    if isinstance(x, (np.integer,)) and not isinstance(x, bool):
        return int(x)
    if isinstance(x, (np.floating, float)):
        return _finite_or_none(x)
    if isinstance(x, np.ndarray):
        return [_json_safe(v) for v in x.tolist()]
    if isinstance(x, (list, tuple)):
        return [_json_safe(v) for v in x]
    if isinstance(x, dict):
        return {str(k): _json_safe(v) for k, v in x.items()}
    return x


def _columns_from_rows(data: dict, source: str) -> dict:
    """The row layout of ``to_dict()`` (one record per N) in column form, for ``from_dict``."""
    rows = data["rows"]
    if not isinstance(rows, list) or not rows or not all(isinstance(r, dict) for r in rows):
        raise ValueError(f"{source}: field 'rows' must be a non-empty list of objects")
    out = {k: v for k, v in data.items() if k != "rows"}
    for name in ARRAY_FIELDS + OPTIONAL_ARRAY_FIELDS:
        if name in ARRAY_FIELDS and not all(name in r for r in rows):
            raise ValueError(f"{source}: every row needs the field {name!r}")
        column = [r.get(name) for r in rows]
        out[name] = None if name in OPTIONAL_ARRAY_FIELDS and all(v is None for v in column) else column
    return out
