"""Helpers of the remedies figure tests (tests/test_figures_remedies.py, tests/test_figures_layout.py).

``tests/data/remedies_quick_summary.json.gz`` is the unchanged ``summary.json`` of ``varsim reproduce DIR --preset
remedies --quick`` (tiny models that do not learn: the numbers mean nothing, the format is the one the full grid
writes), gzipped; :func:`quick_remedies_dir` lays it out as a results directory with the table and settings the run
writes beside it."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

QUICK_SUMMARY = Path(__file__).parent / "data" / "remedies_quick_summary.json.gz"


def quick_summary() -> dict:
    return json.loads(gzip.decompress(QUICK_SUMMARY.read_bytes()))


def quick_remedies_dir(path) -> Path:
    """A remedies results directory at ``path`` holding the quick summary, its table and its settings."""
    from varsim.experiments.aggregation import kind_of

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    summary = quick_summary()
    (path / "summary.json").write_text(json.dumps(summary))
    (path / "settings.json").write_text(json.dumps(summary["settings"], indent=2))
    (path / "table.md").write_text(kind_of(summary["settings"]).render(summary))
    return path


def committed_is_current() -> bool:
    """Whether the remedies summary committed in the package has the current summary format (until the full grid of
    the current design is committed, it holds the previous one)."""
    from varsim.experiments.remedies_summary import REMEDIES_SUMMARY_FORMAT
    from varsim.figures.remedies import COMMITTED_DIR

    path = COMMITTED_DIR / "summary.json"
    return path.is_file() and json.loads(path.read_text()).get("format") == REMEDIES_SUMMARY_FORMAT
