"""The built-site check (docs/check_site.py): it catches what a reader would see wrong, and the built site passes it.

The checks on the built site run when ``build/site`` exists (CI builds it before the tests); the headless-Chromium
check also needs Debian's ``chromium`` and is marked slow (CI runs it through ``docs/check_site.py --browser``).
"""

import importlib.util
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "build" / "site"

pytest.importorskip("bs4")


def _check_site():
    spec = importlib.util.spec_from_file_location("varsim_check_site", ROOT / "docs" / "check_site.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _page(body: str, head: str = "") -> str:
    return f"<html><head>{head}</head><body><article>{body}</article></body></html>"


GOOD = _page('<p>The variance <span class="arithmatex"><span class="katex">x</span></span> falls; '
             "it costs $5 and $6.</p><pre>:func:`in code is fine`</pre>"
             '<div data-mime-type="application/vnd.jupyter.stderr"><pre>progress: 3/5</pre></div>',
             '<script src="../assets/katex/katex.min.js"></script>')


def _table(section: str, header: list[str], rows: list[list[str]]) -> str:
    """A docstring table as mkdocstrings renders it (docstring_section_style: table)."""
    head = "".join(f"<th>{h}</th>" for h in header)
    body = "".join('<tr class="doc-section-item">' + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return (f'<p><span class="doc-section-title">{section}:</span></p>'
            f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")


PARAMS = ["Name", "Type", "Description", "Default"]
RETURNS = ["Type", "Description"]
GOOD_API = _page(
    '<div class="doc-signature highlight"><pre><code>simulate(n, seed=0, dtype=np.float64, *, rng=None)</code></pre>'
    "</div><p>Returns the variance: call it as</p><pre><code>x = simulate(16)  # a::b, ``raw``</code></pre>"
    + _table("Parameters", PARAMS, [["<code>seed</code>", "<code>int</code>", "<p>The seed.</p>", "<code>0</code>"],
                                    ["<code>rng</code>", "<code>int, SeedSequence, Generator or None</code>",
                                     "<p>The stream; <code>x::y</code>.</p>", "<code>None</code>"]])
    + _table("Returns", RETURNS, [["<code>SimulationResult</code>", "<p>The estimates, <code>N_MAX</code>.</p>"]]))


def test_a_clean_page_passes(tmp_path):
    check = _check_site()
    assert check.page_problems(GOOD, "a/index.html", tmp_path, rendered=True) == []
    assert check.page_problems(GOOD_API, "api/a/index.html", tmp_path, rendered=False) == []


@pytest.mark.parametrize("html, rendered, expected", [
    (_page("<p>see :func:`simulate` for details</p>"), False, "raw Sphinx role"),
    (_page("<p>see :class:</p>"), False, "raw Sphinx role"),
    (_page("", '<script src=""> </script>'), False, "empty src"),
    (_page("", '<script src="https://cdn.example/mathjax.js"></script>'), False, "another host"),
    (_page("", '<link rel="stylesheet" href="https://fonts.example/css">'), False, "another host"),
    (_page('<img src="gone.png">'), False, "not in the site"),
    (_page('<img src="data:image/png;base64,AA==">'), False, "without a description"),
    (_page('<img src="data:image/png;base64,AA==" alt="No description has been provided for this image">'), False,
     "without a description"),
    (_page('<div data-mime-type="application/vnd.jupyter.stderr"><pre>x.py:3: RuntimeWarning: overflow</pre></div>'),
     False, "notebook cell warned"),
    (_page('<p><span class="arithmatex">\\(x^2\\)</span></p>'), True, "formula not typeset"),
    (_page("<p>so $\\beta = 1$ here</p>"), True, "math left as text"),
    (_page("<p>display \\[ x \\]</p>"), True, "math left as text"),
    (_page('<p><span class="katex-error" title="ParseError: bad">x</span></p>'), True, "KaTeX could not"),
    # docstring markup the API pages did not render (issue 33: api/testing showed each of these)
    (_page('<td><code>callable or &lt;autoref identifier="varsim.testing.arrays.Adapted" optional&gt;'
           "&lt;code&gt;Adapted&lt;/code&gt;&lt;/autoref&gt;</code></td>"), False, "cross-reference left as markup"),
    (_page("<p>compared at <code>``tau = 1``</code></p>"), False, "RST literal in double backquotes"),
    (_page("<p>compared at ``tau = 1`` here</p>"), False, "RST literal in double backquotes"),
    (_page("<p>Returns the report when all pass::</p><pre><code>check(f)</code></pre>"), False, "literal-block marker"),
    (_page("<p>Example:: </p>"), False, "literal-block marker"),
    # check_against_reference's Returns: one entry broken into rows whose "type" is the description's next line
    (_page(_table("Returns", RETURNS, [["<code>ReferenceReport. Nothing is asserted.</code>", ""]])), False,
     "has no description"),
    (_page(_table("Returns", RETURNS, [["<code>skipped and listed; when every case is skipped that</code>",
                                        "<p>x</p>"]])), False, "reads as prose"),
    (_page(_table("Returns", RETURNS, [["<code>a type that runs on for far more than eight words here</code>",
                                        "<p>x</p>"]])), False, "reads as prose"),
    (_page(_table("Parameters", PARAMS, [["<code>seed</code>", "<code>int</code>", "<p>The seed.</p>",
                                          "<code>SEED_DEFAULT</code>"]])), False, "constant's name, not its value"),
    (_page('<div class="doc-signature"><pre><code>Transformer(config, seed=SEED_DEFAULT, *, rng=None)</code></pre>'
           "</div>"), False, "signature shows a constant's name"),
    (_page('<div class="doc-signature"><pre><code>simulate(n, seed=_SEED_DEFAULT)</code></pre></div>'), False,
     "signature shows a constant's name"),
])
def test_each_defect_a_reader_would_see_is_reported(tmp_path, html, rendered, expected):
    problems = _check_site().page_problems(html, "a/index.html", tmp_path, rendered=rendered)
    assert any(expected in p for p in problems), problems


def _site(tmp_path, nav_links, pages):
    nav = "".join(f'<a href="{link}">x</a>' for link in nav_links)
    (tmp_path / "index.html").write_text(f'<html><body><nav class="md-nav md-nav--primary">{nav}</nav></body></html>')
    for page in pages:
        (tmp_path / page).mkdir(parents=True)
        (tmp_path / page / "index.html").write_text(_page("<p>text</p>"))
    return tmp_path


def test_pages_missing_from_the_navigation_and_dead_nav_links_are_reported(tmp_path):
    check = _check_site()
    site = _site(tmp_path, [".", "theory/", "api/sim/"], ["theory", "orphan"])
    problems = check.nav_problems(site)
    assert "orphan/index.html: not in the navigation" in problems
    assert "navigation links to api/sim/index.html, which the site does not have" in problems
    assert len(problems) == 2


def _api_site(tmp_path, documented, indexed):
    site = _site(tmp_path, [".", "api/", "api/sim/"], [])
    for page, ids in (("api/sim", documented), ("api", [])):
        (site / page).mkdir(parents=True, exist_ok=True)
        headings = "".join(f'<h2 id="{i}" class="doc doc-heading">{i}</h2>'
                           f'<h3 id="{i}.method" class="doc doc-heading">method</h3>' for i in ids)
        links = "".join(f'<a href="sim/#{i}">{i}</a>' for i in indexed) if page == "api" else ""
        (site / page / "index.html").write_text(_page(headings + links))
    return site


def test_an_api_index_that_misses_a_documented_object_is_reported(tmp_path):
    check = _check_site()
    site = _api_site(tmp_path, ["varsim.sim.simulate", "varsim.sim.measure_variance"], ["varsim.sim.simulate"])
    problems = check.api_index_problems(site)
    assert problems == ["api/index.html: no link to varsim.sim.measure_variance (documented in api/sim/index.html)"]
    (tmp_path / "ok").mkdir()
    complete = _api_site(tmp_path / "ok", ["varsim.sim.simulate"], ["varsim.sim.simulate"])
    assert check.api_index_problems(complete) == []


def test_notebook_pages_without_file_links_or_exercise_blocks_are_reported(tmp_path):
    """A notebook page passes with its download link (to a file in the site) and its exercises as blocks; it fails
    without the link, with a link to a missing file, and with an exercise or a solution left as plain text."""
    check = _check_site()
    (tmp_path / "nb").mkdir()
    (tmp_path / "nb" / "x.ipynb").write_text("{}")
    link = '<p class="varsim-notebook-download"><a href="x.ipynb">x.ipynb</a></p>'
    exercise = ('<div class="admonition question varsim-exercise"><p><strong>Exercise 1.1 (a).</strong></p>'
                "<details><summary>Solution 1.1</summary>y</details></div>")
    good = _page(f'<div class="jupyter-wrapper">{link}{exercise}</div>')
    assert check.page_problems(good, "nb/index.html", tmp_path, rendered=False) == []
    plain = _page('<div class="jupyter-wrapper"><p><strong>Exercise 1.1 (a).</strong></p>'
                  "<details><summary>Solution 1.1</summary>y</details></div>")
    problems = check.page_problems(plain, "nb/index.html", tmp_path, rendered=False)
    assert len(problems) == 3 and "no download link" in problems[0]
    assert "exercise not rendered" in problems[1] and "solution outside" in problems[2]
    missing = _page(f'<div class="jupyter-wrapper">{link.replace("x.ipynb", "y.ipynb")}{exercise}</div>')
    assert "y.ipynb is not in the site" in check.page_problems(missing, "nb/index.html", tmp_path, False)[0]


def _code_cell(source: str, image: bool) -> str:
    """A code cell as nbconvert's lab template renders it (its div nested in one of the same classes)."""
    out = ('<div class="jp-OutputArea jp-Cell-outputArea"><div class="jp-RenderedImage jp-OutputArea-output">'
           '<img alt="a figure" src="data:image/png;base64,AAAA"/></div></div>') if image else ""
    return (f'<div class="jp-Cell jp-CodeCell jp-Notebook-cell"><div class="jp-Cell jp-CodeCell jp-Notebook-cell">'
            f'<div class="jp-InputArea"><div class="highlight"><pre>{source}</pre></div></div>{out}</div></div>')


def test_notebook_cells_that_draw_without_an_image_are_reported(tmp_path):
    """A notebook page whose drawing cells each show an image passes; a drawing cell (a figure made at top level
    or by a function defined in an earlier cell) without one fails, named by its index; a cell that only defines
    the drawing function needs none. Catches the built pages of notebooks 4 and 5 with 0 of their figures."""
    check = _check_site()
    (tmp_path / "nb").mkdir()
    (tmp_path / "nb" / "x.ipynb").write_text("{}")
    link = '<p class="varsim-notebook-download"><a href="x.ipynb">x.ipynb</a></p>'
    cells = [("import matplotlib.pyplot as plt", False), ("fig, ax = plt.subplots()\nax.plot([1, 2])", True),
             ("def show(b):\n    plt.figure()\n    plt.plot([b])", False), ("for b in (1, 2):\n    show(b)", True)]
    good = _page(f'<div class="jupyter-wrapper">{link}' + "".join(_code_cell(c, i) for c, i in cells) + "</div>")
    assert check.page_problems(good, "nb/index.html", tmp_path, rendered=False) == []
    for lost in (1, 3):
        html = _page(f'<div class="jupyter-wrapper">{link}'
                     + "".join(_code_cell(c, i and k != lost) for k, (c, i) in enumerate(cells)) + "</div>")
        problems = check.page_problems(html, "nb/index.html", tmp_path, rendered=False)
        assert problems == [f"nb/index.html: code cell {lost} draws a figure but shows no image "
                            f"({cells[lost][0].splitlines()[0]!r})"]


def test_an_unbuilt_site_fails_the_check(tmp_path):
    problems, n = _check_site().check(tmp_path)
    assert n == 0 and "no built site" in problems[0]


@pytest.mark.skipif(not (SITE / "index.html").is_file(), reason="the site is not built (mkdocs build --strict)")
def test_the_built_site_passes_the_html_check():
    problems, n = _check_site().check(SITE)
    assert n >= 20 and problems == []


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("chromium") is None, reason="headless Chromium is not installed")
@pytest.mark.skipif(not (SITE / "index.html").is_file(), reason="the site is not built (mkdocs build --strict)")
def test_the_built_site_passes_the_browser_check():
    problems, n = _check_site().check(SITE, browser=True)
    assert n >= 20 and problems == []
