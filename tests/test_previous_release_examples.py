"""The user scripts of the previous release's documentation run on the current code, with only DeprecationWarnings.

``tests/data/previous_release_examples/`` holds every ``python`` block of README.md and docs/site/**/*.md as they
were at the previous release (the commit is in ``manifest.json``; the project has no release tags: 0.1.0 is taken
as commit 3af7578, see CHANGELOG.md), verbatim, a snippet include (``--8<-- "examples/test_my_attention.py"``)
replaced by the file the page showed; ``extract.py`` there made them. A block that uses a name it never defines
(``my_attention(...)``) or defines a placeholder for the reader's code (a function whose body is ``...``) is a
fragment, not a user script. Each script runs here in a fresh interpreter, a reader's test file with pytest, with
the sizes made smaller (:data:`SMALLER`, sizes only) and every warning but a DeprecationWarning an error: a public
API that changed without keeping the old call (``ax = plotting.phase_diagram(...)`` used as an Axes) fails here.
Blocks needing an extra that is not installed (torch, jax) are skipped."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HERE = ROOT / "tests" / "data" / "previous_release_examples"
#: shrink the sizes only (regex -> replacement): the code is otherwise the release's
SMALLER = ((r"n_max=2\*\*\d+", "n_max=2**8"), (r"\bsequences=\d+", "sequences=64"),
           (r"n_sequences=\d+", "n_sequences=64"), (r"\[16, 64, 256, 1024(, 4096)?\]", "[16, 64]"),
           (r"\[16, 256, 4096\]", "[16, 256]"), (r"\[2\*\*20\]", "[2**12]"),
           (r"np\.linspace\(0, 14, 141\)", "np.linspace(0, 14, 15)"),
           (r"np\.linspace\(0\.1, 4, 79\)", "np.linspace(0.1, 4, 9)"))
#: the modules a block imports that are optional extras (not in [test]): skipped when absent
EXTRAS = ("torch", "jax")
#: behaviour changed by design, each with the CHANGELOG.md sentence that announces it: file -> (regex, replacement,
#: needle in CHANGELOG.md). The rewrite states what still holds: the standard battery grew, so a wrong kernel fails
#: in every case 0.1.0 named and possibly more (an exact set of failing names no longer holds)
CHANGED_BY_DESIGN = {
    "usertest_testing-torch_6.py": (r"if not r\.passed\} == \{", "if not r.passed} >= {",
                                    "assert the names it expects are among the failures"),
}


def smaller(code: str, name: str = "") -> str:
    for old, new in SMALLER:
        code = re.sub(old, new, code)
    if name in CHANGED_BY_DESIGN:
        old, new, _ = CHANGED_BY_DESIGN[name]
        code, count = re.subn(old, new, code)
        assert count, f"{name}: the documented change {old!r} no longer applies"
    return code


def run_script(path: Path, env: dict, *, pytest_file: bool = False, strict: bool = True) -> subprocess.CompletedProcess:
    """Run the block ``path`` (its sizes made smaller) in a fresh interpreter in an empty directory: as a script, or
    with pytest for a reader's test file (``pytest_file``); ``strict``: every warning except a DeprecationWarning is
    an error."""
    flags = ["-W", "error", "-W", "always::DeprecationWarning"] if strict else []
    with tempfile.TemporaryDirectory() as work:
        script = Path(work) / path.name
        script.write_text(smaller(path.read_text(encoding="utf-8"), path.name), encoding="utf-8")
        command = [sys.executable, *flags, str(script)]
        if pytest_file:
            command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *flags, str(script)]
        return subprocess.run(command, cwd=work, capture_output=True, text=True, env={**env, "MPLBACKEND": "Agg"},
                              timeout=600)


def test_every_change_by_design_is_announced_in_the_changelog():
    """A script rewritten in :data:`CHANGED_BY_DESIGN` has its sentence in CHANGELOG.md (no silent break)."""
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    for name, (_, _, needle) in CHANGED_BY_DESIGN.items():
        assert (HERE / name).is_file(), name
        assert needle in changelog, f"{name}: CHANGELOG.md does not announce {needle!r}"


def _manifest() -> dict:
    return json.loads((HERE / "manifest.json").read_text(encoding="utf-8"))


def _path(example: dict) -> Path:
    """The block's file: its copy here, or (a file the docs still show unchanged) the docs' own file."""
    return ROOT / example["file"] if "/" in example["file"] else HERE / example["file"]


def _scripts():
    return [e for e in _manifest()["examples"] if e["kind"] in ("script", "pytest")]


def test_the_examples_are_the_release_blocks_and_most_are_scripts():
    """Every file of the manifest is there; the README's, the theory-plots page's and the testing page's user
    scripts are among them (an extraction that lost them would test nothing)."""
    examples = _manifest()["examples"]
    assert all(_path(e).is_file() for e in examples)
    pages = {e["page"] for e in _scripts()}
    assert {"README.md", "docs/site/theory-plots.md", "docs/site/testing.md"} <= pages and len(_scripts()) >= 8


@pytest.mark.parametrize("example", _scripts(), ids=lambda e: e["file"])
def test_a_script_of_the_previous_release_runs_with_only_deprecation_warnings(example):
    code = _path(example).read_text(encoding="utf-8")
    assert hashlib.sha256(code.encode()).hexdigest() == example["sha256"], (
        f"{example['file']} is no longer the previous release's block: run "
        "tests/data/previous_release_examples/extract.py to keep the release's version in that folder")
    for extra in EXTRAS:
        if re.search(rf"^\s*(import|from) {extra}\b", code, re.M) and importlib.util.find_spec(extra) is None:
            pytest.skip(f"needs {extra}, not installed")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    res = run_script(_path(example), env, pytest_file=example["kind"] == "pytest")
    if example["kind"] == "pytest" and res.returncode == 5 and " skipped" in res.stdout:
        pytest.skip(f"the reader's test file skipped itself: {res.stdout.strip()[-200:]}")  # importorskip("torch")
    assert res.returncode == 0, f"{example['page']} block {example['block']}:\n{res.stderr[-3000:]}"
    others = [ln for ln in res.stderr.splitlines() if re.search(r"\b\w+Warning\b", ln)
              and "DeprecationWarning" not in ln]
    assert not others, others
