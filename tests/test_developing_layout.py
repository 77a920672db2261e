"""DEVELOPING.md's layout table names every public module and every data folder of varsim, so a new module (or a
folder of committed data) is written into the map a new maintainer reads. A module is named by its file name
(``name.py``) or by a pattern in backticks that matches it (``_kernels*.py``, ``fig_*.py``, ``cli/<command>.py``);
private modules (``_name.py``) are their package's implementation and may go unnamed."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def unnamed(doc: str, package: Path) -> list[str]:
    """The public modules and data folders under ``package`` that ``doc`` does not name."""
    patterns = [re.sub(r"<[^>]+>", "*", t) for t in re.findall(r"`([^`\s]+)`", doc) if "*" in t or "<" in t]
    missing = []
    for path in sorted(package.rglob("*.py")):
        if path.name.startswith("_") or "__pycache__" in path.parts:
            continue
        rel = path.relative_to(package.parent).as_posix()
        named = re.search(r"(?<![\w.])" + re.escape(path.name) + r"\b", doc) or any(
            fnmatch.fnmatch(path.name, p) or fnmatch.fnmatch(rel, p) or fnmatch.fnmatch(rel, f"varsim/{p}")
            for p in patterns)
        if not named:
            missing.append(rel)
    for folder in sorted(p for p in package.rglob("*") if p.is_dir() and "__pycache__" not in p.parts):
        files = [f for f in folder.iterdir() if f.is_file()]
        if not files or any(f.suffix == ".py" for f in files):
            continue  # a package (its modules are checked above) or a folder of folders
        rel = folder.relative_to(package).as_posix()
        if not any(f"{rel[i:]}/" in doc for i in [0] + [m.end() for m in re.finditer("/", rel)]):
            missing.append(f"varsim/{rel}/")
    return missing


def test_the_layout_table_names_every_module_and_data_folder():
    assert unnamed((ROOT / "DEVELOPING.md").read_text(encoding="utf-8"), ROOT / "varsim") == []


def test_the_check_sees_a_module_or_folder_left_out(tmp_path):
    pkg = tmp_path / "varsim"
    (pkg / "sub" / "data" / "grid").mkdir(parents=True)
    (pkg / "sub" / "data" / "grid" / "summary.json").write_text("{}")
    for name in ("__init__.py", "sub/__init__.py", "sub/named.py", "sub/fig_a.py", "sub/_private.py",
                 "sub/forgotten.py"):
        (pkg / name).write_text("")
    doc = "| `varsim/sub/` | `named.py`, one per figure (`fig_*.py`) |"
    assert unnamed(doc, pkg) == ["varsim/sub/forgotten.py", "varsim/sub/data/grid/"]
    assert unnamed(doc + " data in `data/grid/`", pkg) == ["varsim/sub/forgotten.py"]
