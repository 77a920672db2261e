"""The teaching notebooks execute with their assertions and show their figures; ``varsim demo`` lists and copies them.

Each notebook is a py:percent file (no outputs committed) that jupytext reads as a notebook. Two runners:

* a real Jupyter kernel (nbclient + ipykernel, as a teacher's Jupyter runs it, with its ``inline`` backend): every
  notebook with each exercise's solution in place; a cell that raises fails the test and is named, and every cell
  that makes figures must show each as an ``image/png`` output (a module that switched the backend to Agg once left
  notebooks 4 and 5 with 0 of their figures: a script runner cannot see that). The kernel runs in the site's
  static-page mode (``VARSIM_STATIC_PAGE=1``), where the sliders' cells draw their static figures; a cell's time
  is bounded (``CELL_TIMEOUT``), so a kernel whose reply never comes fails that test alone;
* the code cells as one Python script in a fresh interpreter (matplotlib's Agg backend), for the many runs with
  other parameters.

Lessons, not demonstrations: each notebook has goals and prerequisites, "predict, then run" prompts, one cell tagged
``parameters`` (the one a student changes), 2-4 exercises whose solutions sit in ``<details>`` blocks (revealed by
the reader; their code is run here, in place, with its own assertions) and takeaways. A student may change any
parameter to any sensible value: :data:`ALTERNATIVES` runs each notebook with other values substituted into that
cell (one set per notebook by default, the wide sets and the training notebook's marked slow).
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from varsim.cli import main
from varsim.notebooks import drawing_cells, notebooks_dir

NOTEBOOKS = notebooks_dir()  # varsim/notebooks/: the one copy, shipped in the package
#: each run trains a model: all its alternatives are slow
SLOW_ALTERNATIVES = {"04_train_and_fail.py", "06_decoder_variance.py"}
ALL = sorted(p.name for p in NOTEBOOKS.glob("[0-9]*.py"))
SOLUTION = re.compile(r"<details><summary>Solution[^<]*</summary>(.*?)</details>", re.S)
CODE = re.compile(r"```python\n(.*?)```", re.S)

#: other values of each notebook's parameters cell (appended to it as assignments) that must run without an error;
#: the first set of each notebook runs by default, the others are slow (they are the "any sensible value" promise)
ALTERNATIVES = {
    "01_variance_vanishes.py": [
        {"BETAS": "(0.5, 3.0)", "N_GRID": "[8, 100, 2000]", "N_SEQUENCES": "200", "SEED": "7"},
        {"BETAS": "(0.0,)", "N_GRID": "[2, 3]", "D_K": "8", "D_V": "2", "N_SEQUENCES": "64"},
        {"BETAS": "(4.0, 1.5, 2.5)", "N_GRID": "[16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192]",
         "N_SEQUENCES": "300", "D_K": "64", "D_V": "4", "SEED": "123"},
    ],
    "02_phase_diagram.py": [
        {"CURVE_BETAS": "(0.25, 4.0)", "BETA": "3.5", "N": "50.0", "N_MAX": "1e12"},
        {"CURVE_BETAS": "(1.0,)", "BETA": "0.0", "N": "2.0", "N_MAX": "1e4"},
        {"CURVE_BETAS": "(0.5, 1.5, 2.5, 6.0)", "BETA": "8.0", "N": "1e15", "N_MAX": "1e30"},
    ],
    "03_property_test_your_attention.py": [
        {"D_K": "8", "D_V": "2", "N_GRID": "[16, 1000]", "TAU": "0.5", "SEED": "3", "MAX_EXAMPLES": "2"},
        {"D_K": "64", "D_V": "16", "N_GRID": "[32]", "TAU": "1.2", "SEED": "11", "MAX_EXAMPLES": "5"},
    ],
    "04_train_and_fail.py": [
        {"STEPS": "400", "D_MODEL": "16", "LENGTHS": "[8, 64, 512]", "SEED": "3"},
        {"STEPS": "30", "LR": "1e-4", "LENGTHS": "[2, 16, 128]"},  # does not learn: explained, not failed
        {"STEPS": "1000", "N_HEADS": "2", "TRAIN_MAX": "8", "LENGTHS": "[4, 8, 32, 256, 2048]", "SEED": "5"},
    ],
    "05_what_layernorm_fixes.py": [
        {"BETA": "2.0", "MARGIN": "5.0", "D": "8", "N_GRID": "[16, 256, 4096]", "N_PLANT": "[16, 256, 4096, 65536]"},
        {"BETA": "0.5", "MARGIN": "1.0", "D": "32", "N_GRID": "[8, 64]", "N_PLANT": "[8, 64, 512]", "SEED": "9"},
        {"BETA": "3.0", "MARGIN": "0.0", "D": "4", "N_GRID": "[4, 32, 256, 2048]", "N_PLANT": "[4, 16, 64, 256]"},
    ],
    "06_decoder_variance.py": [
        {"POSITIONS": '"alibi"', "STEPS": "300", "D_MODEL": "16", "LENGTHS": "[8, 64, 512]", "SEED": "3"},
        {"POSITIONS": '"none"', "STEPS": "30", "LR": "1e-4", "LENGTHS": "[2, 16, 128]"},  # does not learn
        {"POSITIONS": '"learned"', "N_HEADS": "4", "TRAIN_MAX": "8", "LENGTHS": "[4, 8, 32, 256]", "SEED": "5"},
    ],
}


def _notebook(name: str):
    import jupytext

    return jupytext.read(NOTEBOOKS / name)


CELL_MARK = "# ---- varsim test: cell {} ----"


def _execute(nb, workdir: Path, **env_vars):
    """Run the code cells of ``nb`` in order as one script in a fresh interpreter (``env_vars`` added to its
    environment); fail naming the cell that raised."""
    cells = [c for c in nb.cells if c.cell_type == "code"]
    script = "\n\n".join(CELL_MARK.format(i) + "\n" + c.source for i, c in enumerate(cells))
    path = workdir / "notebook_as_script.py"
    path.write_text(script + "\n", encoding="utf-8")
    env = {**os.environ, "MPLBACKEND": "Agg", **env_vars}
    res = subprocess.run([sys.executable, str(path)], cwd=workdir, env=env, capture_output=True, text=True,
                         timeout=600)
    if res.returncode != 0:
        line = next((int(m) for m in reversed(re.findall(rf'File "{re.escape(str(path))}", line (\d+)', res.stderr))),
                    None)
        cell = None
        if line is not None:
            marks = [i for i, text in enumerate(script.splitlines(), 1) if text.startswith("# ---- varsim test: cell")]
            cell = sum(1 for m in marks if m <= line) - 1
        pytest.fail(f"cell {cell} of the notebook raised:\n{res.stderr[-3000:]}", pytrace=False)
    return res


def _parameters_cell(nb):
    cells = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(cells) == 1 and cells[0].cell_type == "code", "exactly one code cell tagged 'parameters'"
    return cells[0]


def _solutions(nb) -> list[tuple[int, str]]:
    """(index of the Markdown cell, code) of every solution in a ``<details>`` block."""
    out = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            for block in SOLUTION.findall(cell.source):
                code = CODE.findall(block)
                assert len(code) == 1, f"cell {i}: a solution needs exactly one python block"
                out.append((i, code[0]))
    return out


def _with_solutions(nb):
    """The notebook with each solution's code as a code cell right after the Markdown cell that holds it."""
    import nbformat

    for i, code in reversed(_solutions(nb)):
        nb.cells.insert(i + 1, nbformat.v4.new_code_cell(code))
    return nb


def _check_ran(res):
    assert res.returncode == 0


#: the notebooks with sliders (ipywidgets), which draw a static figure instead on the documentation site
WIDGETS = {n for n in ALL if "ipywidgets" in (NOTEBOOKS / n).read_text()}


#: seconds a notebook cell may take in the kernel (the slowest, training notebook 6's model, takes about 40)
CELL_TIMEOUT = 300
#: run in the kernel before the notebook: counts the figures each cell makes (every Matplotlib Figure created while
#: it runs, whatever made it), keyed by the cell's execution count
FIGURE_COUNTER = """
import matplotlib.figure as _varsim_mf
from IPython import get_ipython as _varsim_ip
_varsim_made, _varsim_now = {}, [0]
_varsim_init = _varsim_mf.Figure.__init__
def _varsim_counting_init(self, *args, **kwargs):
    _varsim_now[0] += 1
    _varsim_init(self, *args, **kwargs)
_varsim_mf.Figure.__init__ = _varsim_counting_init
_varsim_ip().events.register("pre_run_cell", lambda info: _varsim_now.__setitem__(0, 0))
_varsim_ip().events.register("post_run_cell", lambda result: _varsim_made.__setitem__(result.execution_count,
                                                                                     _varsim_now[0]))
"""
REPORT = "import json as _varsim_json; print('VARSIM-FIGURES ' + _varsim_json.dumps(_varsim_made))"


def _execute_in_kernel(nb, workdir: Path):
    """Run ``nb`` in a fresh Jupyter kernel (the inline backend, static-page mode) and return it with its outputs
    and, per code cell, ``(figures made, image/png outputs)``; a raising cell fails the test naming it."""
    import nbclient
    import nbformat

    cells = [c for c in nb.cells if c.cell_type == "code"]
    run = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(FIGURE_COUNTER), *nb.cells,
                                          nbformat.v4.new_code_cell(REPORT)], metadata=nb.metadata)
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}  # the kernel's own default: inline
    env["VARSIM_STATIC_PAGE"] = "1"
    client = nbclient.NotebookClient(run, timeout=CELL_TIMEOUT, kernel_name="python3",
                                     resources={"metadata": {"path": str(workdir)}})
    try:
        client.execute(env=env)
    except nbclient.exceptions.CellExecutionError as exc:
        failed = next((i for i, c in enumerate(cells) if any(o.get("output_type") == "error" for o in c.outputs)),
                      None)
        pytest.fail(f"cell {failed} of the notebook raised in the kernel:\n{str(exc)[-3000:]}", pytrace=False)
    report = "".join(o.get("text", "") for o in run.cells[-1].outputs)
    made = json.loads(report.split("VARSIM-FIGURES ", 1)[1])
    shown = []
    for cell in cells:
        images = sum("image/png" in o.get("data", {}) for o in cell.outputs)
        shown.append((made.get(str(cell.execution_count), 0), images))
    return shown


@pytest.mark.parametrize("name", ALL)
def test_notebook_runs_in_a_kernel_and_shows_every_figure(name, tmp_path):
    """In a real Jupyter kernel, every cell runs with each exercise's solution inserted after it; the notebooks
    assert their own numbers (Monte Carlo within 5 SE + 1% of the exact value at the chosen parameters, phase labels,
    the trained model failing at long N) and each solution asserts its answer, so a wrong result fails here, not just
    a crash. Each cell shows as many ``image/png`` outputs as it made figures, and the cells that make figures are
    those :func:`varsim.notebooks.drawing_cells` (what docs/check_site.py asks images of) names. Seen failing with
    the import-time ``matplotlib.use("Agg")`` of varsim/figures/_style.py: notebook 4 showed 0 of its 6 figures and
    notebook 5 0 of 6."""
    nb = _with_solutions(_notebook(name))
    shown = _execute_in_kernel(nb, tmp_path)
    sources = [c.source for c in nb.cells if c.cell_type == "code"]
    lost = [f"cell {i}: made {made} figures, showed {images}" for i, (made, images) in enumerate(shown)
            if made != images]
    assert not lost, f"{name}: figures not shown in the kernel: {lost}"
    drawing = drawing_cells(sources)
    assert [made > 0 for made, _ in shown] == drawing, (
        f"{name}: cells making figures {[i for i, (m, _) in enumerate(shown) if m]}, "
        f"cells drawing_cells names {[i for i, d in enumerate(drawing) if d]}")
    if name in WIDGETS:  # the static page's run: the static fallback drawn, no widget made
        text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
        widgets = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
                   if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
        assert "static page: the sliders need a live notebook" in text and not widgets, name


def _alternatives():
    for name in ALL:
        for k, values in enumerate(ALTERNATIVES.get(name, [])):
            slow = k > 0 or name in SLOW_ALTERNATIVES
            yield pytest.param(name, values, id=f"{name[:2]}-{k}", marks=[pytest.mark.slow] if slow else [])


@pytest.mark.parametrize("name, values", list(_alternatives()))
def test_notebook_runs_with_other_parameters(name, values, tmp_path):
    """A student changes the parameters cell: other sensible values (including the ones that broke the first
    versions: beta = (0.5, 3.0) in notebook 1, BETA = 2 and MARGIN = 5 in notebook 5) run without an error, and every
    check in the notebook follows them.

    These runs drive the sliders' code (ipywidgets' ``interact`` calls it once); the static page's run, which the
    docs build makes (VARSIM_STATIC_PAGE=1: a static page cannot drive sliders), is the kernel's
    (:func:`test_notebook_runs_in_a_kernel_and_shows_every_figure`)."""
    nb = _notebook(name)
    cell = _parameters_cell(nb)
    for key, value in values.items():
        assert re.search(rf"^{key} = ", cell.source, re.M), f"{name}: no parameter {key}"
        cell.source += f"\n{key} = {value}"
    _check_ran(_execute(nb, tmp_path))


def test_every_notebook_is_a_lesson():
    """Goals and prerequisites first, takeaways last, one parameters cell, "predict, then run" prompts, 2-4
    exercises each with a solution whose code asserts its answer; every parameter of the cell is exercised by
    :data:`ALTERNATIVES`."""
    for name in ALL:
        nb = _notebook(name)
        md = [c.source for c in nb.cells if c.cell_type == "markdown"]
        assert "**Goals.**" in md[0] and "**Prerequisites.**" in md[0], name
        assert md[-1].startswith("## Takeaways"), name
        assert sum("**Predict, then run.**" in s for s in md) >= 2, name
        exercises = re.findall(r"\*\*Exercise (\d+\.\d+)", "\n".join(md))
        solutions = _solutions(nb)
        assert 2 <= len(exercises) <= 4 and len(solutions) == len(exercises), name
        assert all("assert " in code for _, code in solutions), name
        cell = _parameters_cell(nb)
        names = set(re.findall(r"^([A-Z][A-Z0-9_]*) = ", cell.source, re.M))
        assert names, name
        covered = {k for values in ALTERNATIVES[name] for k in values}
        assert names <= covered, f"{name}: parameters never varied by the tests: {sorted(names - covered)}"


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


def test_every_notebook_is_in_the_docs_nav():
    """The site's Tutorials section lists every notebook (notebook 5 was once missing from it)."""
    nav = (Path(__file__).resolve().parents[1] / "mkdocs.yml").read_text()
    for name in ALL:
        assert f"- notebooks/{name}" in nav, name


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


def test_a_failing_cell_fails_the_run_and_is_named(tmp_path):
    """The script runner fails on a raising cell and says which (a runner that swallowed errors would pass every
    notebook)."""
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1\nprint(x)"),
                                         nbformat.v4.new_markdown_cell("text"),
                                         nbformat.v4.new_code_cell("y = 2\nassert y == 3, 'planted'")])
    with pytest.raises(pytest.fail.Exception) as info:
        _execute(nb, tmp_path)
    assert "cell 1 of the notebook raised" in str(info.value) and "planted" in str(info.value)


def test_the_kernel_runner_fails_on_a_raising_cell_and_counts_figures(tmp_path):
    """The kernel runner names a raising cell, and counts per cell the figures made against the images shown: a
    figure made under the Agg backend (what an import-time ``matplotlib.use("Agg")`` did) is made and not shown."""
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("import matplotlib.pyplot as plt\nfig, ax = plt.subplots()\nax.plot([1, 2])"),
        nbformat.v4.new_markdown_cell("text"),
        nbformat.v4.new_code_cell("x = 1"),
        nbformat.v4.new_code_cell("import matplotlib\nmatplotlib.use('Agg')\nplt.figure()\nplt.plot([1, 3])")])
    assert _execute_in_kernel(nb, tmp_path) == [(1, 1), (0, 0), (1, 0)]
    assert drawing_cells([c.source for c in nb.cells if c.cell_type == "code"]) == [True, False, True]
    nb.cells.append(nbformat.v4.new_code_cell("assert 1 == 2, 'planted'"))
    with pytest.raises(pytest.fail.Exception) as info:
        _execute_in_kernel(nb, tmp_path)
    assert "cell 3 of the notebook raised" in str(info.value) and "planted" in str(info.value)
