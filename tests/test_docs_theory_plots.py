"""The four plots of docs/site/theory-plots.md run as written (with smaller N ranges and fewer sequences, so the test
takes seconds), each in at most 15 lines, and write their PDF."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[1] / "docs" / "site" / "theory-plots.md"
#: shrink the sizes only: the code is otherwise the page's
SMALLER = (("n_max=2**20", "n_max=2**8"), ("sequences=200", "sequences=64"),
           ("[16, 64, 256, 1024, 4096]", "[16, 64, 256]"),
           ("n_sequences=1000", "n_sequences=64"), ("[16, 64, 256, 1024]", "[16, 64]"),
           ("n_sequences=400", "n_sequences=64"), ("np.linspace(0, 14, 141)", "np.linspace(0, 14, 15)"),
           ("np.linspace(0.1, 4, 79)", "np.linspace(0.1, 4, 9)"))


def _blocks():
    return re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)


def test_four_plots_each_under_15_lines():
    blocks = _blocks()
    assert len(blocks) == 4
    lines = [len(b.strip().splitlines()) for b in blocks]
    assert max(lines) <= 15, lines


@pytest.mark.parametrize("index", range(4))
def test_plot_runs_and_writes_its_pdf(index, tmp_path, monkeypatch):
    code = _blocks()[index]
    for old, new in SMALLER:
        code = code.replace(old, new)
    monkeypatch.chdir(tmp_path)
    start = time.perf_counter()
    exec(compile(code, f"theory-plots block {index + 1}", "exec"), {"__name__": "__docs__"})
    elapsed = time.perf_counter() - start
    pdfs = list(tmp_path.glob("*.pdf"))
    assert len(pdfs) == 1 and pdfs[0].read_bytes().startswith(b"%PDF"), pdfs
    print(f"block {index + 1}: {elapsed:.1f} s")
    import matplotlib.pyplot as plt

    plt.close("all")
