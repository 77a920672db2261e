"""The README's Python example runs as printed and prints what it computes.

Catches an example that no longer runs after an API change (a renamed function, a removed argument), and one that
computes something without showing it (a bare call whose result is thrown away)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def _using_it_example() -> str:
    text = README.read_text(encoding="utf-8")
    section = text.split("## Using it", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_example_runs_and_prints_every_result(capsys):
    code = _using_it_example()
    for node in ast.parse(code).body:  # every statement is an import, an assignment or a print
        if isinstance(node, ast.Expr):
            assert isinstance(node.value, ast.Call) and getattr(node.value.func, "id", "") == "print", \
                ast.unparse(node)
    exec(compile(code, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert out.count("\n") > 10 and "1048576" in out
