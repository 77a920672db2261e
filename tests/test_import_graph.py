"""varsim's import graph: no circle among its modules and no import from a higher floor.

The graph is read from the source with ``ast`` (nothing is imported), counting every import, also those inside
functions: a lazy import still makes one module depend on another, so a circle of lazy imports is a circle too.
"""

import ast
import graphlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "varsim"

#: varsim's parts from the bottom up; a part imports only from its own floor's part itself and from lower floors
FLOORS = [
    {"varsim"},
    {"varsim._common"},
    {"varsim.variants", "varsim.tasks", "varsim.jobs", "varsim.pretrained", "varsim.style"},
    {"varsim.theory", "varsim.nn"},
    {"varsim.sim", "varsim.train"},
    {"varsim.experiments", "varsim.testing"},
    {"varsim.figures"},
    {"varsim.plotting"},
    {"varsim.notebooks"},
    {"varsim.cli"},
    {"varsim.__main__"},
]
#: pairs of parts that must not depend on each other even where the floors would allow it
NEVER = {("varsim.sim", "varsim.nn"), ("varsim.train", "varsim.sim")}
#: inside varsim.experiments: the grid, running it, the kinds (their summaries and tables, then the kinds), the entry
#: points, the facade
EXPERIMENTS_FLOORS = [
    {"grid_kind", "stats"},
    {"variant_axis"},
    {"settings"},
    {"records", "report", "selection", "rerun_verdict"},
    {"worker"},
    {"runner", "recheck", "committed"},
    {"reproduction_summary", "remedies_summary", "remedies_table"},
    {"remedies", "decoder_grid"},
    {"aggregation", "presets", "prediction"},
    {"reproduce", "prediction_credit", "prediction_blind"},
    {"kernel_check"},
    {"kernel_signs"},
    {""},
]


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph(root: Path) -> dict[str, set[str]]:
    """``{module: {varsim modules it imports}}`` for every module under ``root`` (a package directory)."""
    paths = {module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    graph = {}
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                names = [f"{base}.{a.name}" if f"{base}.{a.name}" in paths else base for a in node.names]
            else:
                continue
            for target in names:
                while target and target not in paths:  # a name inside a module: the module
                    target = target.rpartition(".")[0]
                if target and target != name:
                    targets.add(target)
        graph[name] = targets
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as exc:
        return list(exc.args[1])
    return None


def part(module: str) -> str:
    return ".".join(module.split(".")[:2])


def floor_violations(graph: dict[str, set[str]], floors: list[set[str]], key) -> list[str]:
    """``"a -> b"`` for every import of ``b`` by ``a`` where ``key(b)`` stands on a higher floor than ``key(a)``, or
    on the same floor as another part."""
    level = {p: i for i, f in enumerate(floors) for p in f}
    bad = []
    for a, targets in graph.items():
        for b in sorted(targets):
            ka, kb = key(a), key(b)
            if ka is None or kb is None or ka == kb:
                continue
            if ka not in level or kb not in level:
                bad.append(f"{a} -> {b} (no floor for {ka if ka not in level else kb})")
            elif level[kb] >= level[ka]:
                bad.append(f"{a} -> {b}")
    return bad


def test_no_import_cycle():
    """Catches a circle among varsim's modules (e.g. two summaries importing each other's helpers)."""
    assert find_cycle(import_graph(ROOT)) is None


def test_no_upward_import():
    """Every import goes down the floors of :data:`FLOORS` (and none crosses :data:`NEVER`)."""
    graph = import_graph(ROOT)
    assert floor_violations(graph, FLOORS, part) == []
    assert [f"{a} -> {b}" for a, bs in graph.items() for b in bs if (part(a), part(b)) in NEVER] == []


def test_experiments_floors():
    """Inside varsim.experiments the shared grid never imports a job (the reproduction's or the remedies' summary,
    the remedies grid) or an entry point."""
    prefix = "varsim.experiments"

    def key(m):
        return m[len(prefix):].lstrip(".") if m == prefix or m.startswith(prefix + ".") else None

    assert floor_violations(import_graph(ROOT), EXPERIMENTS_FLOORS, key) == []


@pytest.mark.parametrize("lazy", [False, True])
def test_checks_fail_on_a_planted_cycle_and_upward_import(tmp_path, lazy):
    """The checks above can fail: a package whose two modules import each other (at module level or inside a
    function) has a cycle, and the lower one's import is upward."""
    pkg = tmp_path / "varsim"
    (pkg / "low").mkdir(parents=True)
    (pkg / "high").mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "low" / "__init__.py").write_text("")
    (pkg / "high" / "__init__.py").write_text("")
    up = "from varsim.high.b import g\n"
    (pkg / "low" / "a.py").write_text(f"def f():\n    {up}" if lazy else up)
    (pkg / "high" / "b.py").write_text("from ..low.a import f\n\ndef g():\n    return f\n")
    graph = import_graph(pkg)
    assert graph["varsim.high.b"] == {"varsim.low.a"} and graph["varsim.low.a"] == {"varsim.high.b"}
    assert set(find_cycle(graph)) == {"varsim.low.a", "varsim.high.b"}
    assert floor_violations(graph, [{"varsim"}, {"varsim.low"}, {"varsim.high"}], part) == [
        "varsim.low.a -> varsim.high.b"]


def private_imports(root: Path, exempt=("varsim.nn",)) -> list[str]:
    """``"a: b._name"`` for every private name (one underscore, not a module) that a public module ``a`` outside
    ``exempt`` imports from another module ``b``: a helper two modules share is public where it lives. A private
    module (``_kernels_draws`` reading ``_kernels_rng``'s jitted parts) is part of its package's implementation."""
    paths = {module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    bad = []
    for name, path in paths.items():
        if any(name == e or name.startswith(e + ".") for e in exempt) or path.stem.startswith("_") and \
                path.name != "__init__.py":
            continue
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if not isinstance(node, ast.ImportFrom):
                continue
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            if not (base == "varsim" or base.startswith("varsim.")) or base == name:
                continue
            for alias in node.names:
                private = alias.name.startswith("_") and not alias.name.startswith("__")
                if private and f"{base}.{alias.name}" not in paths:
                    bad.append(f"{name}: {base}.{alias.name}")
    return bad


def registry_subscripts(root: Path) -> list[str]:
    """``"path:line NAME[...]"`` for every entry read by subscript from a registry (a module-level ``NAME =
    Registry(...)``) outside ``varsim/_common``: ``NAME.find(name)`` is the one lookup (an unknown name is the
    registry's one-line error, never a KeyError)."""
    trees = {p: ast.parse(p.read_text(encoding="utf-8"), str(p)) for p in sorted(root.rglob("*.py"))}
    registries = {t.id for tree in trees.values() for node in tree.body if isinstance(node, ast.Assign)
                  and isinstance(node.value, ast.Call) and getattr(node.value.func, "id", None) == "Registry"
                  for t in node.targets if isinstance(t, ast.Name)}
    bad = []
    for path, tree in trees.items():
        if "_common" in path.relative_to(root).parts:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and \
                    getattr(node.value, "id", None) in registries:
                bad.append(f"{path.relative_to(root.parent)}:{node.lineno} {node.value.id}[...]")
    return bad


def test_no_private_name_crosses_modules_outside_nn():
    assert private_imports(ROOT) == []


def test_registries_are_read_through_find():
    assert registry_subscripts(ROOT) == []


def test_private_and_registry_checks_fail_on_planted_uses(tmp_path):
    pkg = tmp_path / "varsim"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "_impl.py").write_text("def _helper():\n    pass\n")
    (pkg / "sub" / "reg.py").write_text("from varsim._common.registry import Registry\nTHINGS = Registry('thing')\n")
    (pkg / "sub" / "user.py").write_text("from ._impl import _helper\nfrom . import _impl\n"
                                         "from .reg import THINGS\nx = THINGS['a']\nTHINGS.find('a')\n")
    assert private_imports(pkg) == ["varsim.sub.user: varsim.sub._impl._helper"]
    assert registry_subscripts(pkg) == ["varsim/sub/user.py:4 THINGS[...]"]
