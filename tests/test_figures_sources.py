"""varsim.figures.make gives each figure the data source its module declares (``SOURCE``), never one chosen by name."""

import sys
import types

import pytest

import varsim.figures as figures
from varsim.figures.probe import ProbeSource
from varsim.figures.remedies import RemediesSource
from varsim.figures.reproduction import ReproductionSource


def _fake_figure(monkeypatch, name: str, source, seen: list):
    def compute(quick=False, seed=0, *, progress=False, source=None):
        seen.append(source)
        return {"name": name, "x": [1.0, 2.0]}

    def draw(data):
        fig, ax = figures._style.plt.subplots(figsize=(2, 2))
        ax.plot(data["x"])
        return fig

    mod = types.ModuleType(f"varsim_test_{name}")
    mod.NAME, mod.compute, mod.draw = name, compute, draw
    if source is not None:
        mod.SOURCE = source
    monkeypatch.setitem(sys.modules, mod.__name__, mod)
    monkeypatch.setitem(figures.FIGURES, name, mod.__name__)


def test_every_registered_source_is_known():
    """Each figure's ``SOURCE`` is a key of SOURCES or absent; the stored-data figures declare theirs."""
    kinds = {name: figures.data_source(name) for name in figures.FIGURES}
    assert set(kinds.values()) == {None, *figures.SOURCES}
    assert kinds["fig_repro_accuracy"] == "reproduction" and kinds["fig_probe_std"] == "probe"
    assert kinds["fig_remedies_primary"] == "remedies" and kinds["fig_variance_vs_n"] is None


@pytest.mark.parametrize("kind, cls", [("probe", ProbeSource), ("remedies", RemediesSource),
                                       ("reproduction", ReproductionSource), (None, type(None))])
def test_make_passes_the_declared_source_whatever_the_name(monkeypatch, tmp_path, kind, cls):
    """A figure named like none of the others gets the source it declares (None: its own data). Catches a source
    chosen by name prefix (this name has none) or the reproduction source handed to every figure."""
    seen = []
    _fake_figure(monkeypatch, "fig_custom", kind, seen)
    src = [p for p in ProbeSource().paths if p.is_file()]
    remedies = tmp_path / "rem"
    remedies.mkdir()
    if kind == "probe" and not src:
        pytest.skip("this build ships no probe results")
    monkeypatch.setattr(RemediesSource, "prepare", lambda self, names, **kw: ([], ""))
    monkeypatch.setattr(ReproductionSource, "prepare", lambda self, names, **kw: ([], ""))
    written = figures.make(["fig_custom"], outdir=tmp_path / "out", progress=False, probe_results=src or None,
                           remedies_results=remedies)
    assert len(seen) == 1 and type(seen[0]) is cls
    assert sorted(p.suffix for p in written["fig_custom"]) == [".json", ".pdf", ".png"]


def test_unknown_source_is_refused_before_any_work(monkeypatch, tmp_path):
    seen = []
    _fake_figure(monkeypatch, "fig_custom", "nowhere", seen)
    with pytest.raises(ValueError, match="unknown data source 'nowhere'"):
        figures.make(["fig_custom"], outdir=tmp_path / "out", progress=False)
    assert seen == [] and not (tmp_path / "out").exists()
