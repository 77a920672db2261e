"""The plots of docs/site/theory-plots.md run as written (with smaller N ranges and fewer sequences, so the test
takes seconds): each in at most 15 lines, each built-in figure with its own parameters in at most 10, and each
writes one figure file that keeps its provenance (``plotting.read_provenance`` reads the versions and, for a
built-in figure, its parameters back). The page's command lines run too."""

from __future__ import annotations

import ast
import re
import shlex
import time
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[1] / "docs" / "site" / "theory-plots.md"
#: shrink the sizes only (regex -> replacement): the code is otherwise the page's
SMALLER = ((r"n_max=2\*\*\d+", "n_max=2**8"), (r"n_max=4\*\*\d+", "n_max=4**4"), (r"\bsequences=\d+", "sequences=64"),
           (r"n_sequences=\d+", "n_sequences=64"), (r"\[16, 64, 256, 1024(, 4096)?\]", "[16, 64]"),
           (r"np\.linspace\(0, 14, 141\)", "np.linspace(0, 14, 15)"),
           (r"np\.linspace\(0\.1, 4, 79\)", "np.linspace(0.1, 4, 9)"), (r"--n-max 4096", "--n-max 64 --sequences 64"))


def _blocks(lang: str = "python"):
    return re.findall(rf"```{lang}\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)


def _smaller(code: str) -> str:
    for old, new in SMALLER:
        code = re.sub(old, new, code)
    return code


def test_every_plot_is_short_and_every_built_in_figure_at_most_10_lines():
    blocks = _blocks()
    figures = [b for b in blocks if ".compute(" in b]
    assert len(blocks) >= 8 and len(figures) >= 5
    assert max(len(b.strip().splitlines()) for b in blocks) <= 15
    assert max(len(b.strip().splitlines()) for b in figures) <= 10, [len(b.strip().splitlines()) for b in figures]
    assert all("plotting.save(" in b and "savefig" not in b for b in blocks)  # every plot keeps its provenance
    assert "query_norm" not in PAGE.read_text(encoding="utf-8")


@pytest.mark.parametrize("index", range(len(_blocks())))
def test_plot_runs_and_writes_its_figure_with_its_provenance(index, tmp_path, monkeypatch):
    from varsim import plotting

    code = _smaller(_blocks()[index])
    monkeypatch.chdir(tmp_path)
    start = time.perf_counter()
    exec(compile(code, f"theory-plots block {index + 1}", "exec"), {"__name__": "__docs__"})
    elapsed = time.perf_counter() - start
    files = [p for p in tmp_path.iterdir() if p.suffix in (".pdf", ".png", ".svg")]
    assert len(files) == 1 and files[0].read_bytes()[:4] in (b"%PDF", b"\x89PNG", b"<?xm"), files
    meta = plotting.read_provenance(files[0])
    assert meta["provenance"]["versions"]["varsim"]
    if ".compute(" in code:
        name = re.search(r"import (fig_\w+)", code).group(1)
        assert meta["figure"]["name"] == name
        call = next(n for n in ast.walk(ast.parse(code)) if isinstance(n, ast.Call)
                    and getattr(n.func, "attr", None) == "compute")
        params = meta["figure"].get("params", {})
        for kw in call.keywords:
            if kw.arg in params:  # the value the page gives is the value the file records
                value = eval(ast.unparse(kw.value), {})
                expected = [float(v) for v in value] if isinstance(value, tuple) else value
                assert params[kw.arg] == expected, (kw.arg, params[kw.arg], expected)
    print(f"block {index + 1}: {elapsed:.1f} s")
    import matplotlib.pyplot as plt

    plt.close("all")


def test_the_command_lines_run(tmp_path, capsys):
    from varsim.cli import main

    lines = [ln for b in _blocks("bash") for ln in b.strip().splitlines() if ln.startswith("varsim figures")]
    assert lines
    for line in lines:
        argv = shlex.split(_smaller(line))[1:] + ["--outdir", str(tmp_path), "--no-progress"]
        assert main(argv) == 0, capsys.readouterr().err
    assert (tmp_path / "fig_random_query.pdf").exists()
