"""Install instructions that work today: while the README says the distribution is not on PyPI, no page of the
repository or the documentation site (nor the site's footer, which the docs hooks write) claims that it is, and no
instruction installs it from PyPI (``pip install varsim-attention``). Once: every page footer said "varsim-attention
on PyPI" and the lecturer's guide told teachers to ``pip install varsim-attention ipywidgets``, which fails."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: the README's denial
DENIAL = re.compile(r"`?varsim-attention`?,? is not on PyPI")
#: an instruction installing the distribution by name from an index (not ``-e .``, a path or a git URL)
INSTALL = re.compile(r"pip install\s+(?:-{1,2}[\w-]+\s+)*['\"]?varsim(?:-attention)?(?:\[[^\]]*\])?['\"]?"
                     r"(?![\w@/.-]|\s*@)")
#: a sentence saying the distribution is on PyPI (a negation within it, "not on PyPI", is no claim)
ON_PYPI = re.compile(r"varsim(?:-attention)?\b[^.\n]{0,40}?\bon PyPI\b|pypi\.org/project/varsim", re.I)


def claims(text: str) -> list[str]:
    """The places of ``text`` that claim a PyPI publication of varsim: an install by name, or "... on PyPI"."""
    found = [m.group(0) for m in INSTALL.finditer(text)]
    for m in ON_PYPI.finditer(text):
        sentence = re.split(r"[.\n]", text[m.start():m.end() + 60])[0]  # the rest of its sentence too
        if not re.search(r"\bnot\b|\bunrelated\b|\banother\b", sentence):
            found.append(m.group(0))
    return found


def _pages() -> list[Path]:
    """Every text a user reads: the README, DEVELOPING, the docs (pages, results, specs), the site's configuration and
    its hooks (they write the footer of every page), the notebooks, the command's help texts."""
    files = [ROOT / "README.md", ROOT / "DEVELOPING.md", ROOT / "CHANGELOG.md", ROOT / "mkdocs.yml",
             ROOT / "docs" / "mkdocs_hooks.py"]
    files += sorted((ROOT / "docs").rglob("*.md")) + sorted((ROOT / "varsim" / "notebooks").glob("*.py"))
    files += sorted((ROOT / "varsim" / "cli").glob("*.py"))
    return files


def test_the_claim_detector_catches_what_was_there_and_passes_what_is_true():
    """The detector is seen failing on the two texts the issue found and passing on true statements."""
    assert claims("varsim 0.1.0 (varsim-attention on PyPI), built from commit abc") == ["varsim-attention on PyPI"]
    assert claims("pip install varsim-attention ipywidgets   # sliders") == ["pip install varsim-attention"]
    assert claims("pip install -U 'varsim-attention[test]'") != []
    assert claims("The distribution, `varsim-attention`, is not on PyPI yet.") == []
    assert claims("pip install -e . jupyterlab ipywidgets") == []
    assert claims(".venv/bin/pip install -e '.[test]'") == []
    assert claims("pip install 'varsim-attention @ git+https://example.org/varsim.git'") == []
    assert claims('the distribution name: "varsim" on PyPI is an unrelated project') == []


def test_no_page_claims_a_pypi_publication_the_readme_denies():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    if not DENIAL.search(readme):
        pytest.skip("the README no longer denies a PyPI publication")
    found = {str(p.relative_to(ROOT)): claims(p.read_text(encoding="utf-8")) for p in _pages()}
    assert {k: v for k, v in found.items() if v} == {}


@pytest.mark.skipif(not (ROOT / "build" / "site" / "index.html").is_file(), reason="the site is not built")
def test_no_page_of_the_built_site_claims_a_pypi_publication():
    """The built pages as a reader gets them (their footers included), when CI has built the site."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    if not DENIAL.search(readme):
        pytest.skip("the README no longer denies a PyPI publication")
    found = {}
    for page in sorted((ROOT / "build" / "site").rglob("*.html")):
        text = re.sub(r"<[^>]+>", " ", page.read_text(encoding="utf-8", errors="replace"))
        if hits := claims(text):
            found[str(page.relative_to(ROOT))] = hits
    assert found == {}
