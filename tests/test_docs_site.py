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


def test_a_clean_page_passes(tmp_path):
    check = _check_site()
    assert check.page_problems(GOOD, "a/index.html", tmp_path, rendered=True) == []


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
