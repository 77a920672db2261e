"""The documentation build's hooks (docs/mkdocs_hooks.py) and its griffe extension (docs/griffe_varsim.py)."""

import importlib.util
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load(name, module_name):
    spec = importlib.util.spec_from_file_location(module_name, ROOT / "docs" / name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _hooks():
    pytest.importorskip("mkdocs")
    hooks = _load("mkdocs_hooks.py", "varsim_mkdocs_hooks")
    hooks.count_every_warning = lambda: None  # the test process keeps its own warning and logging setup
    return hooks


def _config(**kw):
    return SimpleNamespace(site_name="varsim", copyright=None, repo_url=None, repo_name=None, **kw)


def test_executed_notebooks_have_a_cell_timeout(monkeypatch, tmp_path):
    """Catches a docs build whose notebook cells may wait forever (nbclient's default timeout is None): a hung
    kernel then stalls CI until it is killed, with no name of the cell."""
    pytest.importorskip("mkdocs")
    nbconvert2 = pytest.importorskip("mkdocs_jupyter.nbconvert2")
    from nbconvert.preprocessors import ExecutePreprocessor

    monkeypatch.setenv("HOME", str(tmp_path))  # no user config in the way
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(tmp_path / "jupyter"))
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", str(tmp_path / "elsewhere"))

    def timeout():
        app = nbconvert2.get_nbconvert_app(execute=True, kernel_name="python3", allow_errors=False)
        return ExecutePreprocessor(config=app.config).timeout

    assert timeout() is None  # the library default the hook must change
    config = _config()
    assert _hooks().on_config(config) is config
    assert timeout() == 600


def test_header_and_footer_name_the_version_and_commit(monkeypatch):
    """Catches a site that does not say which version and commit it documents, or drops a known repository link."""
    from varsim import __version__

    hooks = _hooks()
    monkeypatch.delenv("VARSIM_REPO_URL", raising=False)
    config = hooks.on_config(_config())
    assert config.site_name == f"varsim {__version__}"
    commit = hooks._git("rev-parse", "--short=10", "HEAD")
    assert commit and commit in config.copyright
    monkeypatch.setenv("VARSIM_REPO_URL", "https://example.org/varsim/")
    assert hooks.on_config(_config()).repo_url == "https://example.org/varsim"


README = """# Title

intro

## Results: a section

text with a [table](data/table.md) and ![fig](docs/fig.png), [theory](docs/THEORY.md#x) and [web](https://a.b/c).

### Setup

```bash
# not a heading
```

## Next section

other text
"""


def test_include_takes_one_section_moves_its_headings_and_fixes_its_links(monkeypatch):
    """Catches an include that runs past its section, keeps the README's heading levels (a second H1 on the page),
    or leaves links that only work from the repository root."""
    hooks = _hooks()
    monkeypatch.setattr(hooks, "_included_pages", {"data/table.md": "results/tables.md",
                                                   "docs/THEORY.md": "reference/THEORY.md"})
    text = hooks.section(README, "## Results: a section", "README.md")
    assert "other text" not in text and "intro" not in text and "Results" not in text
    assert "### Setup" in text
    shifted = hooks.shift_headings(text, top=3)
    assert "\n### Setup" in "\n" + shifted and "# not a heading" in shifted  # code fences untouched
    links = hooks.rewrite_links(text, "README.md", "results/page.md", None, None)
    assert "[table](tables.md)" in links
    assert "![fig](../files/docs/fig.png)" in links
    assert "[theory](../reference/THEORY.md#x)" in links
    assert "[web](https://a.b/c)" in links
    site = hooks.rewrite_links("the [gallery](../site/gallery.md#remedies)", "docs/experiments/remedies.md",
                               "experiments/remedies.md", None, None)
    assert site == "the [gallery](../gallery.md#remedies)"  # a site page, not "in the repository"
    nb = hooks.rewrite_links("[6](../../varsim/notebooks/06_decoder_variance.py)", "docs/experiments/decoder.md",
                             "experiments/decoder.md", None, None)
    assert nb == "[6](../notebooks/06_decoder_variance.py)"
    other = hooks.rewrite_links("see [data](x/y.json)", "README.md", "p.md", None, None)
    assert other == "see data (`x/y.json` in the repository)"
    web = hooks.rewrite_links("see [data](x/y.json)", "README.md", "p.md", "https://h/r", "abc")
    assert web == "see [data](https://h/r/blob/abc/x/y.json)"
    with pytest.raises(Exception, match="no heading line"):
        hooks.section(README, "## Missing", "README.md")


def test_a_page_that_includes_a_whole_file_under_its_title_is_its_link_target():
    """The results pages include each docs/experiments file under its own title: links to those files from other
    included texts must go to those pages (not to "in the repository"); a README section is only a part, so links
    to README.md must not go to the page that includes one section of it."""
    hooks = _hooks()
    assert hooks.whole_file_include("docs/experiments/decoder.md", None)
    title = (ROOT / "docs/experiments/decoder.md").read_text().splitlines()[0]
    assert hooks.whole_file_include("docs/experiments/decoder.md", title)
    assert not hooks.whole_file_include("README.md", "## The answers so far")


def test_warnings_of_other_loggers_count_in_strict_mode():
    """Catches a build that passes --strict while griffe, nbconvert or Python's warnings module warned: mkdocs
    counts only its own loggers' warnings."""
    import logging

    pytest.importorskip("mkdocs", reason="the docs hooks import mkdocs (the [docs] extra)")
    hooks = _load("mkdocs_hooks.py", "varsim_mkdocs_hooks")
    seen = []
    handler = logging.Handler()
    handler.emit = seen.append
    logging.getLogger("mkdocs.hooks.varsim").addHandler(handler)
    try:
        forward = hooks._ForwardWarnings()
        for name in ("griffe", "py.warnings", "mkdocs.plugins.x"):
            forward.handle(logging.LogRecord(name, logging.WARNING, __file__, 1, "careful %s", ("here",), None))
        forward.handle(logging.LogRecord("griffe", logging.INFO, __file__, 1, "fine", (), None))
        forward.handle(logging.LogRecord("traitlets", logging.WARNING, __file__, 1, hooks.NBCONVERT_NO_ALT, (2,), None))
    finally:
        logging.getLogger("mkdocs.hooks.varsim").removeHandler(handler)
    assert [r.getMessage() for r in seen] == ["griffe: careful here", "py.warnings: careful here"]


def test_notebook_plots_get_a_description_naming_notebook_and_section():
    """Catches notebook plots left with nbconvert's "No description has been provided" (the warning it logs is
    not counted because this hook supplies the description)."""
    hooks = _hooks()
    placeholder = hooks.NBCONVERT_ALT_PLACEHOLDER
    html = f'<img {placeholder}><h2 id="s">Sample <b>it</b><a class="anchor-link">¶</a></h2><img src=a {placeholder}>'
    out = hooks.plot_alt_text(html, "1. Title")
    assert "No description" not in out
    assert 'alt="Plot drawn by the notebook (1. Title)"' in out
    assert 'alt="Plot drawn by the notebook (1. Title, section Sample it)"' in out


def test_notebook_exercises_become_blocks_with_their_solution_collapsed_inside():
    """Catches an exercise left as a plain paragraph, or its solution outside its block or open: each notebook's
    exercises, as nbconvert renders them, become admonitions holding the collapsed solution."""
    hooks = _hooks()
    html = ("<h2>Exercises</h2><p>Try each one.</p>"
            "<p><strong>Exercise 1.1 (items).</strong> Compute $N_{eff}$.</p>\n"
            "<details><summary>Solution 1.1</summary>\n<p>About N/e.</p><pre>x = 1</pre>\n</details>\n"
            "<p><strong>Exercise 1.2 (values).</strong> Predict.</p>\n<p>Takeaways</p>")
    out = hooks.notebook_exercises(html)
    assert out.count('class="admonition question varsim-exercise"') == 2
    assert '<p class="admonition-title">Exercise 1.1 (items)</p><p>Compute $N_{eff}$.</p><details class="success">' \
        in out
    assert "</details></div>" in out and "<p>Try each one.</p>" in out and "<p>Takeaways</p>" in out
    for path in sorted((ROOT / "varsim" / "notebooks").glob("[0-9]*.py")):  # every notebook writes them so
        text = path.read_text(encoding="utf-8")
        assert text.count("# **Exercise ") == text.count("# <details><summary>Solution") > 0, path.name


def test_notebook_pages_link_their_files_which_the_build_writes(tmp_path):
    """Catches a notebook page without a download link, or a link to a file the build does not write."""
    hooks = _hooks()
    out = hooks.notebook_download('<h1 id="t">1. Title</h1><p>Goals</p>', "01_x")
    assert out.startswith('<h1 id="t">1. Title</h1><p class="varsim-notebook-download">')
    assert 'href="01_x.ipynb"' in out and 'href="01_x.py"' in out
    hooks.on_post_build(SimpleNamespace(site_dir=str(tmp_path)))
    import json

    for path in sorted((ROOT / "varsim" / "notebooks").glob("[0-9]*.py")):
        notebook = json.loads((tmp_path / "notebooks" / path.stem / f"{path.stem}.ipynb").read_text())
        assert notebook["cells"] and notebook["nbformat"] == 4


def test_included_readme_sections_exist():
    """Catches a results page whose README section was renamed: the build would fail, this says which."""
    hooks = _hooks()
    for page in (ROOT / "docs" / "site").rglob("*.md"):
        for match in hooks.INCLUDE.finditer(page.read_text(encoding="utf-8")):
            text = (ROOT / match["path"].strip()).read_text(encoding="utf-8")
            if match["heading"]:
                assert hooks.section(text, match["heading"].strip(), match["path"]).strip(), page


def test_gallery_has_every_figure_with_a_caption():
    """Catches a figure added to the registry but not to the gallery, or a caption read as Markdown links."""
    from varsim.figures import FIGURES

    hooks = _hooks()
    text = hooks.gallery_markdown()
    no_data = hooks.without_data()
    for name in FIGURES:
        assert (f"(gallery/{name}.png)" in text) != (name in no_data)
        if name not in no_data:  # the image links to its full size
            assert f"[![{name}](gallery/{name}.png){{ loading=lazy }}](gallery/{name}.png)" in text
        title, rest = hooks.figure_caption(name)
        assert title and rest
    assert hooks.plain_text("E[sum w^2](N, beta)") == r"$E[\sum w^2](N, \beta)$"


def test_captions_typeset_their_plain_text_formulas():
    """A docstring's plain-text formula becomes inline math (the site's KaTeX renders it); code, identifiers with
    long subscripts and Markdown characters in prose stay as written."""
    hooks = _hooks()
    assert hooks.plain_text("the output variance sigma_v^2 E[sum w^2] vanishes like e^{beta^2}/N.") == (
        r"the output variance $\sigma_v^2\,E[\sum w^2]$ vanishes like $e^{\beta^2}/N$.")
    assert hooks.plain_text("keep ``var_iid = E[s^2]`` and var_offset, *not* [a link]") == (
        r"keep ``var_iid = E[s^2]`` and var\_offset, \*not\* \[a link\]")
    assert hooks.plain_text("keeps ``sigma_v^2 E[sum w^2]`` from vanishing") == (
        r"keeps $\sigma_v^2\,E[\sum w^2]$ from vanishing")
    captions = "".join(hooks.figure_caption(name)[1] for name in ("fig_variance_vs_n", "fig_variants_ipr"))
    assert r"$\sigma_v^2\,E[\sum w^2](N, \beta)$" in captions


def _griffe_package(tmp_path, source):
    griffe = pytest.importorskip("griffe")
    ext = _load("griffe_varsim.py", "varsim_griffe_ext")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text(source)
    return griffe.load("pkg", search_paths=[tmp_path], docstring_parser="numpy",
                       extensions=griffe.load_extensions(ext.VarsimDocstrings))


def test_sphinx_roles_become_cross_references(tmp_path):
    """Catches raw roles (`:func:`) on the API pages and references that point at the wrong object."""
    pkg = _griffe_package(tmp_path, '''"""See :func:`helper`, :class:`~pkg.Thing`, :mod:`numpy` and :data:`LIMIT`."""
LIMIT = 3
def helper():
    """Uses :meth:`Thing.run` and :func:`title <pkg.helper>`."""
class Thing:
    def run(self):
        """Runs."""
''')
    doc = pkg.docstring.value
    assert ":func:" not in doc and ":class:" not in doc and ":mod:" not in doc and ":data:" not in doc
    assert '<autoref identifier="pkg.helper" optional><code>helper</code></autoref>' in doc
    assert '<autoref identifier="pkg.Thing" optional><code>Thing</code></autoref>' in doc
    assert '<autoref identifier="numpy" optional><code>numpy</code></autoref>' in doc
    assert '<autoref identifier="pkg.LIMIT" optional><code>LIMIT</code></autoref>' in doc
    helper = pkg["helper"].docstring.value
    assert 'identifier="pkg.Thing.run" optional><code>Thing.run</code>' in helper
    assert 'identifier="pkg.helper" optional><code>title</code>' in helper


def test_short_parameter_entries_render_as_description_and_own_default(tmp_path):
    """Catches the garbled Parameters table: prose in the Type column, and a parameter documented together with
    another shown with the other's default (value_scale shown as 0.0 when it is 1.0)."""
    pkg = _griffe_package(tmp_path, '''
def f(n, *, value_mean=0.0, value_scale: float = 1.0, tau: float = 2.0):
    """Doc.

    Parameters
    ----------
    n : int
        Lengths.
    value_mean, value_scale : values are ``mean + scale * eps``.
    tau : temperature (>= 0) multiplying the logits.
    """
''')
    (section,) = [s for s in pkg["f"].docstring.parsed if s.kind.value == "parameters"]
    got = {p.name: p for p in section.value}
    assert str(got["n"].annotation) == "int" and got["n"].value is None
    assert got["value_mean"].value == "0.0" and got["value_scale"].value == "1.0"
    assert str(got["value_scale"].annotation) == "float"
    assert got["tau"].description.startswith("temperature (>= 0)") and str(got["tau"].annotation) == "float"
    assert got["tau"].value == "2.0"


def test_varsim_docstrings_keep_no_raw_role_after_the_extension():
    """Catches a role form the extension does not translate (the API pages would show it raw)."""
    griffe = pytest.importorskip("griffe")
    ext = _load("griffe_varsim.py", "varsim_griffe_ext")
    pkg = griffe.load("varsim", docstring_parser="numpy", extensions=griffe.load_extensions(ext.VarsimDocstrings))
    left = [(obj.path, m.group(0)) for obj in ext.members(pkg) if obj.docstring
            for m in re.finditer(r":[a-z]+:`", obj.docstring.value)]
    assert not left, left[:5]
    simulate = pkg["sim._driver.simulate"]
    (section,) = [s for s in simulate.docstring.parsed if s.kind.value == "parameters"]
    got = {p.name: p for p in section.value}
    assert got["value_scale"].value == "1.0" and got["value_mean"].value == "0.0"
    assert "keep_samples" in got and "keep_samples" not in got["progress"].description


def test_types_returns_rows_literal_blocks_and_constant_defaults_render_as_a_reader_expects(tmp_path):
    """Catches issue 33's api/testing defects at their source: a role or RST literal in a Type column (shown as
    ``<autoref ...>`` markup), a Returns description written flush left (split into rows whose type is prose), an
    RST ``::`` literal block (shown as "pass::" and an indented paragraph) and a default naming a constant
    (``seed=SEED_DEFAULT`` where the reader needs 0), in a signature, a dataclass field and the table."""
    griffe = pytest.importorskip("griffe")
    ext = _load("griffe_varsim.py", "varsim_griffe_ext")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text('''
import dataclasses
class _Sentinel(int):
    pass
SEED_DEFAULT = _Sentinel(0)
LAWS = ("gaussian", "uniform")
HUGE = ("a" * 1, "long", "tuple", "of", "many", "names", "that", "runs", "past", "the", "limit", "of", "a", "cell")
class Adapted:
    """An adapted function."""
@dataclasses.dataclass
class Config:
    """A config."""
    laws: tuple = LAWS
def f(fn, seed=SEED_DEFAULT, laws=LAWS, names=HUGE, *, tolerance="calibrated") -> Adapted:
    """Run it. Use it as::

        f(g)  # indented code

    Parameters
    ----------
    fn : callable or :class:`~pkg.Adapted`
        The function.
    seed : int
        The seed.
    laws, names : tuple
        Laws.
    tolerance : ``"calibrated"`` or ``"worst_case"``
        The model.

    Returns
    -------
    :class:`Adapted`. Nothing is asserted. Cases that need a keyword are
    skipped and listed.
    """
def g():
    """Returns
    -------
    (low, high)
        Floats.

    Unlike the Wald interval ``p +- z`` it does not collapse to a point, which
    matters near 100%.
    """
''')
    extensions = griffe.load_extensions("dataclasses", ext.VarsimDocstrings)
    pkg = griffe.load("pkg", search_paths=[tmp_path], docstring_parser="numpy", extensions=extensions)
    f = pkg["f"]
    defaults = {p.name: p.default for p in f.parameters}
    assert defaults["seed"] == "0" and defaults["laws"] == "('gaussian', 'uniform')"
    assert str(defaults["names"]) == "HUGE"  # too long for a table cell: the name stays
    assert {p.name: p.default for p in pkg["Config"].parameters}["laws"] == "('gaussian', 'uniform')"
    sections = {s.kind.value: s for s in f.docstring.parsed}
    params = {p.name: p for p in sections["parameters"].value}
    assert str(params["fn"].annotation) == "callable or Adapted" and "<autoref" not in str(params["fn"].annotation)
    assert params["seed"].value == "0"
    assert "``" not in str(params["tolerance"].annotation) + params["tolerance"].description
    (returned,) = sections["returns"].value
    assert str(returned.annotation) == "Adapted"
    assert returned.description.endswith("Cases that need a keyword are skipped and listed.")
    assert "::" not in f.docstring.value and "Use it as:\n\n```python\nf(g)  # indented code\n```" in f.docstring.value
    (low_high,) = [s for s in pkg["g"].docstring.parsed if s.kind.value == "returns"][0].value
    assert low_high.description == ("Floats.\n\nUnlike the Wald interval ``p +- z`` it does not collapse to a point, "
                                    "which matters near 100%.")


def test_see_also_becomes_links_and_comment_constants_get_a_docstring(tmp_path):
    """Catches a See Also section shown as one run-on line of names, and a constant documented by a ``#:`` comment
    shown with an empty entry (and no line in the API index)."""
    pkg = _griffe_package(tmp_path, '''
#: Largest length accepted.
N_MAX = 100
UNDOCUMENTED = 3
def g():
    """G."""
def f():
    """F.

    See Also
    --------
    g : the other one,
        continued here.
    N_MAX
    """
''')
    assert pkg["N_MAX"].docstring.value == "Largest length accepted."
    assert pkg["UNDOCUMENTED"].docstring is None
    (see_also,) = [s for s in pkg["f"].docstring.parsed if s.kind.value == "admonition"]
    assert see_also.value.description.splitlines() == [
        '- <autoref identifier="pkg.g" optional><code>g</code></autoref>: the other one, continued here.',
        '- <autoref identifier="pkg.N_MAX" optional><code>N_MAX</code></autoref>']


def test_api_index_lists_each_entry_of_the_rendered_pages_with_its_first_sentence(monkeypatch):
    """Catches an API index that drifts from the pages (it is built from their rendered entries), links relative
    to the wrong directory, or summarizes with the class-bases line or a sentence cut at "i.i.d."."""
    hooks = _hooks()
    page = ('<h2 id="varsim.sim.simulate" class="doc doc-heading"><span class="doc doc-object-name '
            'doc-function-name">simulate</span></h2><div class="doc doc-contents"><p>Monte Carlo statistics over '
            "i.i.d. keys. More detail.</p></div>"
            '<h3 id="varsim.sim.Result.var" class="doc doc-heading">var</h3>'
            '<div class="doc doc-contents"><p>A.</p></div>'
            '<h2 id="varsim.sim.Estimate" class="doc doc-heading"><span class="doc doc-object-name '
            'doc-class-name">Estimate</span></h2><div class="doc doc-contents"><p class="doc doc-class-bases">'
            "Bases: NamedTuple</p><p>A value and its SE.</p></div>")
    monkeypatch.setitem(hooks._api_pages, "api/sim.md", ("api/sim/", page))
    table = hooks.api_table("api/sim.md", "api/")
    assert '<a href="sim/#varsim.sim.simulate"><code>simulate</code></a></td><td>function</td>' in table
    assert "<td>Monte Carlo statistics over i.i.d. keys.</td>" in table
    assert "<td>class</td><td>A value and its SE.</td>" in table and "Bases" not in table
    assert "Result.var" not in table  # a method is listed under its class's entry, not in the index
    assert "<table>" in table and "<table " not in table  # the theme styles only tables without a class
    nav = [{"Home": "index.md"}, {"API reference": [{"Index": "api/index.md"}, {"varsim.sim": "api/sim.md"}]}]
    assert hooks.api_index_markdown(nav) == "## [varsim.sim](sim.md)\n\n<!-- varsim-api-table: api/sim.md -->\n"


def test_gallery_logs_one_line_per_figure_as_it_is_drawn(monkeypatch, tmp_path, capsys):
    """The build log gets a line per gallery figure with its seconds, each printed when that figure is done (not one
    line at the end): catches a gallery that is silent for the minutes it draws."""
    import varsim.figures as figures

    hooks = _hooks()
    monkeypatch.setattr(hooks, "GALLERY_DIR", tmp_path)
    monkeypatch.setenv("VARSIM_DOCS_FIGURES", "draw")
    seen = []

    def fake_make(names, *, outdir, progress, on_figure, jobs):
        for i, name in enumerate(names):
            on_figure(name, "simulated", 1.5 + i, [])
            seen.append(capsys.readouterr().err)  # what the log holds once this figure is done

    monkeypatch.setattr(figures, "make", fake_make)
    names = hooks.draw_gallery()
    assert len(seen) == len(names) > 1
    for i, (name, err) in enumerate(zip(names, seen)):
        assert f"INFO    -  varsim gallery: {name}: {1.5 + i:.1f} s (simulated)" in err.splitlines(), err


def test_a_constant_documented_by_a_table_shows_the_table_not_its_private_value(tmp_path):
    """``plotting.QUANTITIES`` showed as a raw dict of private functions with doubled backslashes. A constant whose
    docstring is a table and whose value names a private object shows no value; one without a table keeps its value;
    QUANTITIES' table lists exactly its names, in order, with no private name. Seen failing without
    ``hide_private_value`` (the raw value kept)."""
    griffe = pytest.importorskip("griffe")
    pkg = _griffe_package(tmp_path, '''
def _f(x):
    return x
TABLED = {"a": (_f, r"$\\\\beta$")}
"""Entries.

| name | formula |
|---|---|
| `a` | $\\\\beta$ |
"""
PLAIN = {"a": (_f, 1)}
"""Entries, no table."""
''')
    assert pkg["TABLED"].value is None and pkg["PLAIN"].value is not None
    from varsim import plotting

    ext = _load("griffe_varsim.py", "varsim_griffe_ext")
    varsim_pkg = griffe.load("varsim", docstring_parser="numpy",
                             extensions=griffe.load_extensions(ext.VarsimDocstrings))
    quantities = varsim_pkg["plotting.QUANTITIES"]
    assert quantities.value is None
    text = quantities.docstring.value
    rows = [line.split("|")[1].strip().strip("`") for line in text.splitlines() if line.startswith("| `")]
    assert rows == list(plotting.QUANTITIES)
    assert "_decay_exponent" not in text and "\\\\" not in text
