"""Numba's cache notices every module a kernel compiles in.

Catches the stale kernel: Numba stamps a cached kernel with its own file only, so an edit of the draw routines
(``_kernels_draws.py``) or the generator (``_kernels_rng.py``) that the kernels inline left every cached kernel
computing with the old code."""

from __future__ import annotations

from pathlib import Path

from varsim._common.numba_cache import package_imports, source_stamp

SIM = Path(__file__).resolve().parents[1] / "varsim" / "sim"


def test_a_kernel_depends_on_what_it_inlines():
    deps = {Path(p).name for p in package_imports(SIM / "_kernels_attn.py")}
    assert {"_kernels_attn.py", "_kernels_draws.py", "_kernels_rng.py", "_ziggurat.py", "_kernel_args.py"} <= deps
    assert "_driver.py" not in deps and "_config.py" not in deps


def test_editing_an_imported_module_changes_the_stamp(tmp_path):
    (tmp_path / "_kernels_a.py").write_text("from ._kernels_b import f\nfrom . import _consts\n")
    (tmp_path / "_kernels_b.py").write_text("def f():\n    return 1\n")
    (tmp_path / "_consts.py").write_text("N = 3\n")
    (tmp_path / "other.py").write_text("x = 1\n")
    before = source_stamp(tmp_path / "_kernels_a.py")
    (tmp_path / "other.py").write_text("x = 2\n")
    assert source_stamp(tmp_path / "_kernels_a.py") == before  # not imported: no recompilation
    (tmp_path / "_consts.py").write_text("N = 4\n")
    after_const = source_stamp(tmp_path / "_kernels_a.py")
    assert after_const != before
    (tmp_path / "_kernels_b.py").write_text("def f():\n    return 2\n")
    assert source_stamp(tmp_path / "_kernels_a.py") != after_const


def test_the_kernels_use_the_dependency_stamp():
    from varsim.nn import _kernels as nn_kernels
    from varsim.sim import _kernels_attn, _kernels_map

    for dispatcher in (_kernels_attn.full_chunk, _kernels_map.__dict__[next(
            k for k, v in vars(_kernels_map).items() if hasattr(v, "_cache") and k.endswith("chunk"))],
            nn_kernels.entmax15_rows):
        locator = dispatcher._cache._impl._locator
        assert type(locator).__name__.startswith("Varsim"), type(locator)
        assert locator.get_source_stamp() == source_stamp(dispatcher.py_func.__code__.co_filename)
