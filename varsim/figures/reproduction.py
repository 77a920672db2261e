"""Where the reproduction figures get their numbers: compact per-run records, committed or made from a run directory.

A ``varsim reproduce`` directory holds one ~100 kB record per run (``runs/<run_id>.json``: the spec, accuracies,
every probe statistic, the raw histogram values) next to checkpoints. The figures need a few kB of it per run, so
:func:`compact_run` keeps exactly that (accuracies and test counts, the learned flag, the probe statistics the
figures and the README's claims use, the histogram values of seed 0 only, timing and provenance) rounded to 6
significant digits. :func:`write_compact` writes a directory of them:

    settings.json   the reproduction's settings (as ``varsim reproduce`` stored them)
    runs.json       {"format", "source", "settings", "commits", "versions", "runs": [compact record, ...]},
                    one run per line
    summary.json    ``varsim.experiments.aggregate``'s summary of the full records (accuracy intervals, paired
                    differences with p-values, probe slopes)
    table.md        its Markdown table

The last full run's compact directory ships with the package (:data:`COMMITTED_DIR`): that is what ``varsim
figures`` draws by default, so a fresh install needs no training. :class:`ReproductionSource` picks the source of one
``varsim figures`` call (committed records, a results directory, a re-run, or a quick smoke-test run) and loads it
once.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import math
import shutil
import sys
import tempfile
from pathlib import Path

from .source_spec import SourceOption

__all__ = [
    "COMMITTED_DIR",
    "COMPACT_FORMAT",
    "DEFAULT_RERUN_DIR",
    "compact_run",
    "read_results",
    "compact_results",
    "write_compact",
    "load_compact",
    "ReproductionSource",
]

#: The compact records of the last full reproduction, shipped with the package.
COMMITTED_DIR = Path(__file__).resolve().parent / "data" / "reproduction"
COMPACT_FORMAT = "varsim.figures.compact_runs/1"
RUN_FORMAT_PREFIX = "varsim.reproduce.run/"
#: ``varsim figures --rerun`` without ``--results`` runs the reproduction here (relative to the current directory).
DEFAULT_RERUN_DIR = Path("results") / "reproduce"

_SIG = 6  # significant digits kept in the compact records (the statistics' own SEs are ~1e-2 relative or more)
_SIG_HIST = 5  # raw histogram values


# ---------------------------------------------------------------------------------------------------------------
# Compaction


def _round(x, sig: int = _SIG):
    """Round every float in ``x`` to ``sig`` significant digits (NaN/inf become None, as in the records)."""
    if isinstance(x, dict):
        return {k: _round(v, sig) for k, v in x.items()}
    if isinstance(x, list):
        return [_round(v, sig) for v in x]
    if isinstance(x, float):
        return float(f"{x:.{sig}g}") if math.isfinite(x) else None
    return x


def _spec_hash(spec: dict) -> str:
    return hashlib.sha256(json.dumps(spec, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:16]


def compact_run(rec: dict) -> dict:
    """The part of a full ``varsim reproduce`` run record the figures and the README use (a few kB).

    The raw probe values of the fixed coordinate are kept for seed index 0 only, the one ``fig_repro_hist`` draws.
    Raises KeyError/TypeError on a record without the expected fields (see
    :func:`read_results`, which names the file).
    """
    spec, pr = rec["spec"], rec["probes"]
    coord = int(pr["coordinate"])

    def column(rows, fn):  # rows: (L, D) per-coordinate std -> (L,)
        return [fn(row) for row in rows]

    def median(row):
        s = sorted(v for v in row if v is not None)
        m = len(s)
        return None if m == 0 else (s[m // 2] if m % 2 else 0.5 * (s[m // 2 - 1] + s[m // 2]))

    out = {
        "run_id": rec["run_id"],
        "task": spec["task"],
        "architecture": spec["architecture"],
        "norm": spec["norm"],
        "seed_index": int(spec["seed_index"]),
        "spec_sha256_16": _spec_hash(spec),
        "train": {k: rec["train"].get(k) for k in ("status", "steps_done", "steps", "final_loss", "train_accuracy",
                                                    "evaluated_step")},
        "in_distribution": {k: rec["in_distribution"][k] for k in ("length", "examples", "correct", "accuracy",
                                                                    "learned", "threshold")},
        "eval": {k: rec["eval"][k] for k in ("lengths", "examples", "correct", "accuracy")},
        "probes": {
            "n_sets": pr["n_sets"],
            "lengths": pr["lengths"],
            "coordinate": coord,
            "std_coordinate": {s: column(pr[f"std_{s}"], lambda row: row[coord]) for s in ("pre", "post")},
            "std_median": {s: column(pr[f"std_{s}"], median) for s in ("pre", "post")},
            "global": pr["global"],
            "attn_correct": {k: pr["attn_correct"][k] for k in ("max_head", "max_head_se", "per_head")},
            "slopes": pr["slopes"],
        },
        "timing": {k: rec.get("timing", {}).get(k) for k in ("total_s", "cpu_s")},
        "provenance": {k: rec.get("provenance", {}).get(k) for k in ("git_commit", "git_dirty", "created_utc")},
    }
    out = _round(out)
    if int(spec["seed_index"]) == 0:
        h = pr["hist"]
        out["probes"]["hist"] = {"coordinate": int(h["coordinate"]), "lengths": h["lengths"],
                                 "pre": _round(h["pre"], _SIG_HIST), "post": _round(h["post"], _SIG_HIST)}
    return out


def _read_json(path: Path, what: str):
    from varsim._common.jsonio import read_json

    return read_json(path, what=f"{what}:", expect=None)


def read_results(results_dir) -> dict:
    """Settings and compact run records of a ``varsim reproduce`` directory (full records compacted on the fly).

    Returns ``{"settings": dict, "settings_file": dict, "runs": [compact, ...] in grid order, "missing": [cell
    names]}``. A record that is not JSON or lacks the expected fields is a ValueError naming the file and the command
    that redoes it; records outside the settings' grid are ignored.
    """
    from varsim.experiments import ReproductionSettings

    root = Path(results_dir)
    if not root.is_dir():
        raise ValueError(f"results {str(root)!r} is not a directory")
    stored = _read_json(root / "settings.json", "results")
    if not isinstance(stored, dict) or not isinstance(stored.get("settings"), dict):
        raise ValueError(f"results: {str(root / 'settings.json')!r} is not a varsim reproduce settings file")
    try:
        settings = ReproductionSettings.from_dict(stored["settings"]).to_dict()  # validates
    except ValueError as exc:
        raise ValueError(f"results: settings file {str(root / 'settings.json')!r}: {exc}") from None
    grid = [(t, a, n, s) for t in settings["tasks"] for a in settings["architectures"] for n in settings["norms"]
            for s in range(settings["seeds"])]
    found = {}
    for path in sorted((root / "runs").glob("*.json")):
        rec = _read_json(path, "results")
        try:
            if not str(rec.get("format", "")).startswith(RUN_FORMAT_PREFIX):
                raise KeyError("format")
            c = compact_run(rec)
        except (KeyError, TypeError, AttributeError, IndexError, ValueError) as exc:
            raise ValueError(f"results: run record {str(path)!r} is incomplete or corrupt ({type(exc).__name__}: "
                             f"{exc}); `varsim reproduce {root}` moves it aside and redoes the run") from None
        found[(c["task"], c["architecture"], c["norm"], c["seed_index"])] = c
    runs = [found[k] for k in grid if k in found]
    missing = ["-".join(map(str, k[:3])) + f"-s{k[3]}" for k in grid if k not in found]
    return {"settings": settings, "settings_file": stored, "runs": runs, "missing": missing}


def _summary(results_dir: Path, n_runs: int) -> dict:
    """The aggregation of ``results_dir``: its ``summary.json`` when it covers every record, else a fresh one."""
    from varsim.experiments import aggregate

    path = results_dir / "summary.json"
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
        if summary.get("runs", {}).get("found") == n_runs and (results_dir / "table.md").is_file():
            return summary
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError):
        pass
    return aggregate(results_dir)  # writes summary.json and table.md there


def _provenance_overview(runs: list[dict]) -> tuple[dict, list]:
    commits: dict[str, int] = {}
    for r in runs:
        p = r["provenance"]
        key = (p.get("git_commit") or "unknown") + ("+dirty" if p.get("git_dirty") else "")
        commits[key] = commits.get(key, 0) + 1
    times = sorted(r["provenance"].get("created_utc") or "" for r in runs)
    return commits, [times[0], times[-1]] if times else []


def compact_results(results_dir) -> dict:
    """The compact form of ``results_dir`` (what :func:`write_compact` stores and the figures read).

    ``{"format", "source", "settings", "summary", "table", "commits": {commit: n_runs}, "created_utc": [first,
    last], "versions", "runs", "missing"}``.
    """
    root = Path(results_dir)
    res = read_results(root)
    summary = _summary(root, len(res["runs"]))
    commits, span = _provenance_overview(res["runs"])
    versions = (res["settings_file"].get("provenance") or {}).get("versions")
    return {
        "format": COMPACT_FORMAT,
        "source": str(root),
        "settings": res["settings"],
        "summary": summary,
        "table": (root / "table.md").read_text(encoding="utf-8") if (root / "table.md").is_file() else None,
        "commits": commits,
        "created_utc": span,
        "versions": versions,
        "runs": res["runs"],
        "missing": res["missing"],
    }


def write_compact(results_dir, dest=COMMITTED_DIR) -> list[Path]:
    """Compact ``results_dir`` into ``dest`` (settings.json, runs.json, summary.json, table.md); return the paths.

    This is how the committed records are made: ``python -m varsim.figures.reproduction RESULTS_DIR [DEST]``.
    """
    from varsim._common.atomic import atomic_write_json, atomic_write_text

    c = compact_results(results_dir)
    if c["missing"]:
        raise ValueError(f"results: {str(results_dir)!r} is incomplete ({len(c['missing'])} runs missing, e.g. "
                         f"{c['missing'][0]}); finish it with `varsim reproduce {results_dir}` first")
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    header = {k: c[k] for k in ("format", "commits", "created_utc", "versions")}
    header["source"] = "compact records of a varsim reproduce directory (varsim.figures.reproduction.compact_run)"
    header["settings"] = c["settings"]
    # one run per line: small diffs, and each run greppable by its id
    lines = ",\n".join(json.dumps(r, separators=(",", ":"), allow_nan=False) for r in c["runs"])
    head = json.dumps(header, indent=1, allow_nan=False)[:-2]  # without the closing "\n}"
    text = f'{head},\n "runs": [\n{lines}\n]}}\n'
    json.loads(text)  # the hand-joined layout must stay valid JSON
    paths = [
        atomic_write_json(dest / "settings.json", _read_json(Path(results_dir) / "settings.json", "results")),
        atomic_write_text(dest / "runs.json", text),
        atomic_write_json(dest / "summary.json", c["summary"]),
    ]
    if c["table"] is not None:
        paths.append(atomic_write_text(dest / "table.md", c["table"]))
    return paths


def load_compact(directory=COMMITTED_DIR) -> dict:
    """Read a directory written by :func:`write_compact` into the form :func:`compact_results` returns."""
    d = Path(directory)
    runs_file = _read_json(d / "runs.json", "reproduction records")
    if not isinstance(runs_file, dict) or runs_file.get("format") != COMPACT_FORMAT:
        raise ValueError(f"reproduction records: {str(d / 'runs.json')!r} is not a {COMPACT_FORMAT} file")
    summary = _read_json(d / "summary.json", "reproduction records")
    if not isinstance(summary, dict) or "groups" not in summary or "paired" not in summary:
        raise ValueError(f"reproduction records: {str(d / 'summary.json')!r} is not a reproduction summary")
    return {**runs_file, "source": str(d), "summary": summary, "missing": [],
            "table": (d / "table.md").read_text(encoding="utf-8") if (d / "table.md").is_file() else None}


# ---------------------------------------------------------------------------------------------------------------
# The source of one `varsim figures` call

_QUICK_CACHE: dict[int, dict] = {}


def _short(commit: str) -> str:
    base, dirty = commit.split("+", 1) if "+" in commit else (commit, "")
    return base[:10] + ("+" + dirty if dirty else "")


class ReproductionSource:
    """Which reproduction the ``fig_repro_*`` figures draw, loaded once per ``varsim figures`` call.

    - default: the committed compact records (:data:`COMMITTED_DIR`) of the last full run;
    - ``results=DIR``: the ``varsim reproduce`` directory DIR (its full records, compacted in memory);
    - ``rerun=True``: run (or resume) the full reproduction into ``results`` (default :data:`DEFAULT_RERUN_DIR`)
      first, then draw from it;
    - ``quick=True`` (and no ``results``): a quick reproduction (tiny models that do not learn) run once per process
      and root seed into a temporary directory. A smoke test: the figures say so.
    """

    #: the options of varsim.figures.make it reads (varsim.figures.source_spec) and its gallery section
    OPTIONS = (
        SourceOption("results", "draw the reproduction figures from this `varsim reproduce` directory instead of the "
                                "committed records of the last full run"),
        SourceOption("rerun", "run (or resume) the full reproduction first (into --results, default "
                              "results/reproduce; about 30 min on 2 cores) and draw from it", switch=True),
    )
    GALLERY = "Reproduction"

    def __init__(self, *, quick: bool = False, seed: int = 0, results=None, rerun: bool = False,
                 progress: bool | None = None):
        from varsim._common.validate import check_int

        self.quick = bool(quick)
        self.seed = check_int("seed", seed, minimum=0)
        if results is not None and not str(results).strip():
            raise ValueError("results must not be empty")
        self.results = None if results is None else Path(results)
        self.rerun = bool(rerun)
        if self.rerun and self.quick:
            raise ValueError("rerun: --rerun runs the full reproduction; it cannot be combined with --quick")
        if self.rerun and self.results is None:
            self.results = DEFAULT_RERUN_DIR
        if self.results is not None and not self.rerun and not self.results.is_dir():
            raise ValueError(f"results {str(self.results)!r} is not a directory (use --rerun to run the "
                             "reproduction into it)")
        if self.rerun and (self.results / "settings.json").exists():
            self._check_rerun_settings()
        self.progress = sys.stderr.isatty() if progress is None else bool(progress)
        self._data: dict | None = None

    def _check_rerun_settings(self) -> None:
        """``--rerun`` into a directory that holds another reproduction (a quick one, another seed) is refused before
        anything runs: it would otherwise be refused only after the 30-minute run was started, or start one."""
        from varsim.experiments.records import read_settings
        from varsim.experiments.settings import ReproductionSettings

        held = read_settings(self.results).to_dict()
        full = ReproductionSettings.full(root_seed=self.seed).to_dict()
        if held != full:
            diff = sorted(k for k in set(held) | set(full) if held.get(k) != full.get(k))
            quick = ReproductionSettings.quick().to_dict()
            kind = "a quick reproduction" if held.get("model") == quick.get("model") else \
                "a reproduction with other settings"
            raise ValueError(f"results {str(self.results)!r} holds {kind} (differing from the full one in: "
                             f"{', '.join(diff)}); --rerun runs the full reproduction: drop --rerun to draw from it, "
                             "or give --rerun another --results directory")

    @property
    def available(self) -> bool:
        """False only for the default source (committed records) when this build has none."""
        return self.results is not None or self.quick or (COMMITTED_DIR / "runs.json").is_file()

    def check(self) -> None:
        """Fail before any work when the default source, the committed records, is missing from this build."""
        if not self.available:
            raise ValueError(f"results: this build has no committed reproduction records ({COMMITTED_DIR}); draw "
                             "the reproduction figures from a run directory with --results DIR, or run one with "
                             "--rerun (about 30 min on 2 cores)")

    @classmethod
    def from_options(cls, options: dict) -> ReproductionSource:
        """The source :func:`varsim.figures.make`'s arguments ``options`` ask for."""
        return cls(quick=options["quick"], seed=options["seed"], results=options["results"], rerun=options["rerun"],
                   progress=options["progress"])

    def prepare(self, names: list[str], *, explicit: bool, replot: bool, outdir) -> tuple[list[str], str]:
        """Before :func:`varsim.figures.make` draws the figures ``names``: check this source (ValueError), or, when
        all figures are drawn and this build has no committed records, return ``(names, why)`` to skip them."""
        if replot or not names:
            return [], ""
        if explicit or self.available:
            self.check()
            return [], ""
        return names, ("this build has no committed reproduction records (draw them with --results DIR, a "
                       "`varsim reproduce DIR` directory, or --rerun)")

    @property
    def smoke_test(self) -> bool:
        """True when the figures come from quick-mode models (which do not learn): not results."""
        return self.quick and self.results is None

    def load(self) -> dict:
        """The compact reproduction (see :func:`compact_results`) plus ``cells``, ``by_id``, ``origin`` and
        ``footer``; computed on the first call only."""
        if self._data is None:
            self._data = self._finish(self._load())
        return self._data

    def _load(self) -> dict:
        from varsim.experiments import run_reproduction

        if self.rerun:
            self.results.mkdir(parents=True, exist_ok=True)
            report = run_reproduction(self.results, root_seed=self.seed, progress=self.progress)
            if report["failed"]:
                first = report["failed"][0]
                raise ValueError(f"results: the reproduction in {str(self.results)!r} had {len(report['failed'])} "
                                 f"failed run(s), e.g. {first['run_id']}: {first['error']}; run `varsim reproduce "
                                 f"{self.results}` to retry")
            data = compact_results(self.results)
            data["origin"] = "re-run"
            return data
        if self.results is not None:
            data = compact_results(self.results)
            data["origin"] = "results directory"
            return data
        if self.quick:
            cached = _QUICK_CACHE.get(self.seed)
            if cached is None:
                outdir = Path(tempfile.mkdtemp(prefix=f"varsim-repro-quick-{self.seed}-"))
                atexit.register(shutil.rmtree, outdir, ignore_errors=True)  # a cache for this process only
                report = run_reproduction(outdir, quick=True, root_seed=self.seed, progress=self.progress)
                if report["failed"]:  # figures of a partial grid would silently miss lines
                    first = report["failed"][0]
                    raise ValueError(f"the quick reproduction in {str(outdir)!r} had {len(report['failed'])} failed "
                                     f"run(s), e.g. {first['run_id']}: {first['error']}")
                cached = _QUICK_CACHE[self.seed] = compact_results(outdir)
            data = dict(cached)
            data["origin"] = "quick smoke-test run"
            return data
        data = load_compact(COMMITTED_DIR)
        data["origin"] = "committed records"
        return data

    def _finish(self, data: dict) -> dict:
        st = data["settings"]
        by_id = {r["run_id"]: r for r in data["runs"]}
        cells: dict[tuple, list] = {}
        for r in data["runs"]:  # runs are in grid order, so each cell's list is in seed order
            cells.setdefault((r["task"], r["architecture"], r["norm"]), []).append(r)
        commits = data.get("commits") or {}
        made = ", ".join(f"{n} at commit {_short(c)}" for c, n in sorted(commits.items(), key=lambda kv: -kv[1]))
        span = data.get("created_utc") or []
        when = f" ({span[0][:10]})" if span and span[0] else ""
        where = "varsim/figures/data/reproduction" if data["origin"] == "committed records" else data["source"]
        footer = (f"{data['origin']}: {len(data['runs'])} runs, {st['seeds']} seeds ({made}){when}; from {where}")
        if data.get("missing"):
            footer += f"; {len(data['missing'])} runs missing"
        return {**data, "by_id": by_id, "cells": cells, "footer": footer, "smoke_test": self.smoke_test}


def main(argv=None) -> int:
    """``python -m varsim.figures.reproduction RESULTS_DIR [DEST]``: write the compact records of a finished run."""
    from ._commit import commit_main

    return commit_main(argv, prog="python -m varsim.figures.reproduction", description=main.__doc__,
                       results_help="a finished `varsim reproduce` directory", default_dest=COMMITTED_DIR,
                       write=write_compact)

if __name__ == "__main__":
    raise SystemExit(main())
