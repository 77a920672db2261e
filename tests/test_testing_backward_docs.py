"""The page docs/site/testing-backward.md: its Python examples run verbatim (the torch one when torch is installed),
its snippets exist, and what it says about the battery and the replays matches the code."""

import re
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[1] / "docs" / "site" / "testing-backward.md"
TEXT = PAGE.read_text()
BLOCKS = re.findall(r"```python\n(.*?)```", TEXT, flags=re.S)


def test_the_page_has_its_examples_and_is_in_the_nav():
    assert len(BLOCKS) == 4
    assert "testing-backward.md" in (PAGE.parents[2] / "mkdocs.yml").read_text()


def test_the_numpy_examples_run_verbatim(capsys):
    namespace = {}
    for block in BLOCKS:
        if "import torch" in block:
            continue
        exec(compile(block, str(PAGE), "exec"), namespace)  # noqa: S102 - the page's own examples
    out = capsys.readouterr().out
    assert "matches the float64 reference" in out and "skipped masked_row" in out
    assert "dk[" in out or "dv[" in out


def test_the_torch_example_runs_verbatim():
    pytest.importorskip("torch")
    (block,) = [b for b in BLOCKS if "import torch" in b]
    exec(compile(block, str(PAGE), "exec"), {})  # noqa: S102


def test_the_snippets_exist_and_the_battery_table_names_every_case():
    from varsim.testing import GRADIENT_CASES

    for name in re.findall(r'--8<-- "(.*?)"', TEXT):
        assert (PAGE.parent / name).is_file(), name
    for case in GRADIENT_CASES:
        assert f"`{case.name}`" in TEXT, case.name


def test_every_replayed_report_is_in_the_table():
    replays = (PAGE.parents[2] / "tests" / "test_replayed_bugs.py").read_text()
    cited = set(re.findall(r"def test_([a-z_]+?_\d+)_", replays))
    assert len(cited) >= 13, cited
    for name in cited:
        project, number = name.rsplit("_", 1)
        assert f"#{number}" in TEXT, name


@pytest.mark.slow
def test_the_committed_power_table_is_what_the_code_makes_now():
    """The page's power table (docs/site/examples/testing_backward_power.md, written by the benchmark) is what the
    current catalogue and check give at 20 seeds: a change of either that forgets to rerun the benchmark fails."""
    import sys

    sys.path.insert(0, str(PAGE.parents[2] / "benchmarks"))
    from bench_testing_backward import power_section

    committed = (PAGE.parent / "examples" / "testing_backward_power.md").read_text().split("\n\n")[0]
    assert power_section(20) == committed
