"""Every function in varsim/ stays readable: at most 80 lines (its docstring aside) and cyclomatic complexity at most
30 (radon's grade D or better), the limits DEVELOPING.md sets. Read from the source (nothing is imported)."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "varsim"
MAX_LINES = 80
MAX_COMPLEXITY = 30
FILES = sorted(ROOT.rglob("*.py"))


def function_lengths(source: str) -> dict[str, int]:
    """``{qualified name: lines}`` of every function and method in ``source``, its docstring's lines left out."""
    out = {}

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            name = f"{prefix}{getattr(child, 'name', '')}"
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = child.end_lineno - child.lineno + 1
                if ast.get_docstring(child, clean=False) is not None:
                    lines -= child.body[0].end_lineno - child.body[0].lineno + 1
                out[name] = lines
            visit(child, f"{name}." if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                  else prefix)

    visit(ast.parse(source), "")
    return out


def test_function_lengths_counts_code_not_docstrings():
    """The counter itself: a 3-line body under a 4-line docstring is 4 lines (with its ``def``); methods and nested
    functions count on their own."""
    src = 'def f(x):\n    """a\n\n    b\n    """\n    y = x\n    return y\n\n\nclass C:\n    def m(self):\n' \
          '        def inner():\n            return 1\n        return inner()\n'
    assert function_lengths(src) == {"f": 3, "C.m": 4, "C.m.inner": 2}


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(ROOT)) for p in FILES])
def test_functions_are_short_and_simple(path):
    from radon.complexity import cc_visit

    source = path.read_text(encoding="utf-8")
    long = {name: n for name, n in function_lengths(source).items() if n > MAX_LINES}
    assert long == {}, f"{path.name}: functions over {MAX_LINES} lines (docstring aside): {long}"
    blocks, todo = [], cc_visit(source)  # functions and methods, flat; a nested function is in its parent's closures
    while todo:
        block = todo.pop()
        blocks.append(block)
        todo += getattr(block, "closures", [])
    complex_ = {b.fullname: b.complexity for b in blocks if b.complexity > MAX_COMPLEXITY}
    assert complex_ == {}, f"{path.name}: cyclomatic complexity over {MAX_COMPLEXITY}: {complex_}"
