"""The documentation build's hook (docs/mkdocs_hooks.py): notebook execution has a time limit."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _hooks():
    spec = importlib.util.spec_from_file_location("varsim_mkdocs_hooks", ROOT / "docs" / "mkdocs_hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_executed_notebooks_have_a_cell_timeout(monkeypatch, tmp_path):
    """Catches a docs build whose notebook cells may wait forever (nbclient's default timeout is None): a hung
    kernel then stalls CI until it is killed, with no name of the cell."""
    pytest.importorskip("mkdocs")
    nbconvert2 = pytest.importorskip("mkdocs_jupyter.nbconvert2")
    from nbconvert.preprocessors import ExecutePreprocessor

    monkeypatch.setenv("HOME", str(tmp_path))  # no user config in the way
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(tmp_path / "jupyter"))
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", str(tmp_path / "elsewhere"))

    def timeout():
        app = nbconvert2.get_nbconvert_app(execute=True, kernel_name="python3", allow_errors=False)
        return ExecutePreprocessor(config=app.config).timeout

    assert timeout() is None  # the library default the hook must change
    config = object()
    assert _hooks().on_config(config) is config
    assert timeout() == 600
