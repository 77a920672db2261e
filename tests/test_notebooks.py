"""The teaching notebooks execute in a Jupyter kernel with their assertions; ``varsim demo`` lists and copies them.

Each notebook is a py:percent file (no outputs committed); jupytext turns it into a notebook and nbclient runs it
in a fresh ipykernel, so a cell that raises (an assertion about the numbers, an API that changed) fails the test.
The training notebook is marked slow.
"""

import json
from pathlib import Path

import pytest

from varsim.cli import main
from varsim.notebooks import notebooks_dir

NOTEBOOKS = notebooks_dir()  # varsim/notebooks/: the one copy, shipped in the package
SLOW = {"04_train_and_fail.py"}
ALL = sorted(p.name for p in NOTEBOOKS.glob("[0-9]*.py"))


def _execute(path: Path, workdir: Path):
    import jupytext
    from nbclient import NotebookClient

    nb = jupytext.read(path)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(workdir)}}).execute()
    return nb


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in ALL])
def test_notebook_executes_with_its_assertions(name, tmp_path):
    """Runs every cell; the notebooks assert their own numbers (Monte Carlo within 5 SE + 1% of the exact value,
    phase labels, the trained model failing at long N), so a wrong result fails here, not just a crash."""
    nb = _execute(NOTEBOOKS / name, tmp_path)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(c.get("outputs") is not None for c in code)
    assert not any(o.get("output_type") == "error" for c in code for o in c["outputs"])


def test_notebooks_are_stripped_percent_sources():
    """Diff-friendly: py:percent text with a Markdown title, no stored outputs or execution counts; the one copy is
    the package's (no second ``notebooks/`` folder at the repository root to drift from it)."""
    assert len(ALL) >= 4
    assert NOTEBOOKS == Path(__file__).resolve().parents[1] / "varsim" / "notebooks"
    assert not (NOTEBOOKS.parents[1] / "notebooks").exists()
    for name in ALL:
        text = (NOTEBOOKS / name).read_text()
        assert "format_name: percent" in text and "# %% [markdown]\n# # " in text, name
        assert "execution_count" not in text and "outputs" not in text.split("# %%")[0], name


def test_demo_lists_and_copies(tmp_path, capsys):
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    for name in ALL:
        assert name in out
    assert "jupyter lab" in out
    dest = tmp_path / "class"
    assert main(["demo", "--copy", str(dest)]) == 0
    copied = sorted(p.name for p in dest.iterdir())
    assert copied == [n.replace(".py", ".ipynb") for n in ALL]
    nb = json.loads((dest / copied[0]).read_text())
    assert nb["nbformat"] == 4 and nb["cells"][0]["cell_type"] == "markdown"
    assert all(not c.get("outputs") for c in nb["cells"])
    assert main(["demo", "--copy", str(dest), "--format", "py"]) == 0  # different names: no clash
    assert (dest / ALL[0]).read_text() == (NOTEBOOKS / ALL[0]).read_text()


def test_demo_bad_destinations(tmp_path, capsys):
    """Existing notebooks are not overwritten without --force; a file as DIR or a DIR that cannot be created is one
    line, exit status 2."""
    assert main(["demo", "--copy", str(tmp_path)]) == 0
    assert main(["demo", "--copy", str(tmp_path)]) == 2
    assert "--force" in capsys.readouterr().err
    assert main(["demo", "--copy", str(tmp_path), "--force"]) == 0
    f = tmp_path / "file"
    f.write_text("x")
    assert main(["demo", "--copy", str(f)]) == 2
    assert "not a directory" in capsys.readouterr().err
    rc = main(["demo", "--copy", str(f / "sub")])  # a path under a file: mkdir fails (even for root)
    err = capsys.readouterr().err
    assert rc == 2 and "--copy" in err and err.count("\n") == 1
