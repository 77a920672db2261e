"""Committed data is what the current code makes from its recorded inputs.

Each committed probe of a real model records the digest of the text it read; the current built-in text must have the
same digest (the text is built from Python's bundled documentation, so only on the Python version the data records).
Catches data left stale after the text (or its builder) changed.
"""

from __future__ import annotations

import json
import platform
from pathlib import Path

import pytest

from varsim.pretrained.text import builtin_text, text_digest

PROBE_DATA = Path(__file__).resolve().parents[1] / "varsim" / "figures" / "data" / "probe"


@pytest.mark.parametrize("path", sorted(PROBE_DATA.glob("*.json")), ids=lambda p: p.stem)
def test_probe_data_read_the_current_text(path):
    data = json.loads(path.read_text())
    recorded_python = data["provenance"]["versions"]["python"]
    if recorded_python.rsplit(".", 1)[0] != platform.python_version().rsplit(".", 1)[0]:
        pytest.skip(f"the built-in text depends on the Python version: data made on {recorded_python}")
    text = data["text"]
    assert text["sha256"] == text_digest(builtin_text(text["source"])), (
        f"{path.name} was made from another text than the current built-in {text['source']!r}")
