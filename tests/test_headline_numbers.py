"""Every headline number on the README and the experiment pages is quoted with its interval.

A *headline number* is a decimal written with two or three digits after the point, signed or not (an accuracy, a
gain, an MAE or a slope as these pages quote them: ``0.046``, ``+0.268``, ``−0.72``), that stands in

- a bullet of the README's "The answers so far", or
- a page's headline (``docs/experiments/*.md``): its first paragraph before the first ``## `` heading that opens in
  bold and is not the question (``**Question.**``), with the bullets of the list right after it.

It must be followed by its interval (``0.046 [0.033, 0.060]``) or be a bound of one; a number for which no interval
exists yet is allowed only in a sentence that says so (``no interval yet`` / ``no intervals yet``). Counts (``14 of
14``), lengths (``N = 1024``), learning rates (``1e-3``), p-values (``p >= 0.11``) and one-decimal parameters
(``kappa = 0.5``) are not headline numbers. The cases of ``test_the_rule`` show it catching a bare number and
passing a quoted interval."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "docs" / "experiments").glob("*.md"))
_NUMBER = re.compile(r"(?<![\w.\[/^-])[+\-\N{MINUS SIGN}]?\d\.\d{2,3}(?![\d\w])")
_INTERVAL = re.compile(r"\[[^\[\]]*?\d\.\d+[^\[\]]*?\]")
_P_VALUE = re.compile(r"\bp\s*(=|<|>|<=|>=|\N{LESS-THAN OR EQUAL TO}|\N{GREATER-THAN OR EQUAL TO})\s*$")
_SENTENCE = re.compile(r"(?<=[.;])\s+(?=[A-Z(*])")


def readme_headlines(text: str) -> list[str]:
    section = text.split("## The answers so far", 1)[1].split("\n## ", 1)[0]
    return [b for b in re.split(r"\n(?=- \*\*)", section) if b.startswith("- **")]


def page_headlines(text: str) -> list[str]:
    """The headline of a page: its first paragraph before the first ``## `` heading that opens in bold and is not a
    question (``**Question.**``), and the bullets of the list right after it, if one follows."""
    body = text.split("\n", 1)[1].split("\n## ", 1)[0]
    paras = [p.strip() for p in re.split(r"\n\s*\n", body) if p.strip()]
    for i, para in enumerate(paras):
        if para.startswith("**") and not para.startswith("**Question"):
            after = paras[i + 1] if i + 1 < len(paras) and paras[i + 1].startswith("- ") else ""
            return [para] + [b for b in re.split(r"\n(?=- )", after) if b]
    return []


def bare_numbers(block: str) -> list[str]:
    """The headline numbers of ``block`` quoted without an interval (module docstring)."""
    out = []
    for sentence in _SENTENCE.split(" ".join(block.split())):
        if re.search(r"no intervals? yet", sentence):
            continue
        masked = _INTERVAL.sub("[I]", sentence)
        out += [m.group(0) for m in _NUMBER.finditer(masked) if not re.match(r"\s*\[I\]", masked[m.end():])
                and not _P_VALUE.search(masked[:m.start()])]
    return out


@pytest.mark.parametrize("block, bare", [
    ("- **X** gains +0.268 at lr 1e-3 (14 of 14)", ["+0.268"]),
    ("- **X** gains +0.268 [+0.237, +0.298] at N = 1024, kappa = 0.5", []),
    ("- **X** MAE 0.046 [0.033, 0.060] against 0.160", ["0.160"]),
    ("- **X** slope \N{MINUS SIGN}0.72 (point estimate; no intervals yet). Next 0.05 to 0.10.", ["0.05", "0.10"]),
    ("- **X** within [\N{MINUS SIGN}0.013, +0.027]; 28% of the examples (p >= 0.11)", []),
])
def test_the_rule(block, bare):
    """Catches a bare gain, a bare baseline beside a quoted one and a range's bare ends; passes intervals, bounds,
    counts, percentages, lengths and parameters."""
    assert bare_numbers(block) == bare


def test_readme_headline_numbers_have_intervals():
    blocks = readme_headlines((ROOT / "README.md").read_text(encoding="utf-8"))
    assert len(blocks) >= 5
    assert {b.split("**")[1][:40]: bare_numbers(b) for b in blocks if bare_numbers(b)} == {}


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_page_headline_numbers_have_intervals(page):
    blocks = page_headlines(page.read_text(encoding="utf-8"))
    assert {b[:40]: bare_numbers(b) for b in blocks if bare_numbers(b)} == {}


def test_the_headlines_found():
    """The rule reads the headline it means: the remedies page's summary and its five bullets, the decoder's answer
    (not its question), the prediction page's bold summary."""
    def heads(name):
        return page_headlines((ROOT / "docs" / "experiments" / name).read_text(encoding="utf-8"))

    assert len(heads("remedies.md")) == 6 and heads("decoder.md")[0].startswith("**Answer")
    assert heads("prediction.md")[0].startswith("**On the 36 held-out")
