"""Grid kinds (varsim.experiments.grid_kind, the registry varsim.experiments.aggregation.GRID_KINDS): each committed
grid is of its kind and re-renders its table; a refining kind owns the grids both claim; a kind registered from
outside the package is summarized and rendered by ``aggregate`` with no shared function edited; every kind has a
figure source of its name."""

import json
from pathlib import Path

import pytest

from varsim.experiments import aggregation
from varsim.experiments.aggregation import GRID_KINDS, aggregate, grid_kind, kind_of
from varsim.experiments.grid_kind import GridKind, kind_for

DATA = Path(__file__).resolve().parents[1] / "varsim" / "figures" / "data"


@pytest.mark.parametrize("grid, kind", [("reproduction", "reproduction"), ("remedies", "remedies"),
                                        ("decoder", "decoder"), ("decoder_constant", "decoder")])
def test_committed_grids_are_of_their_kind_and_render_their_tables(grid, kind):
    """The committed settings.json and summary.json name the kind their grid was made by, and the kind's table of the
    summary is the committed table.md byte for byte. Catches a kind claimed by the wrong grid (a decoder summary
    titled as the remedies grid's) or a table renderer that changed the report."""
    stored = json.loads((DATA / grid / "settings.json").read_text())
    summary = json.loads((DATA / grid / "summary.json").read_text())
    assert kind_of(stored.get("settings", stored)).name == kind
    assert kind_of(summary["settings"]).name == kind
    assert summary["format"] == grid_kind(kind).summary_format
    assert (DATA / grid / "table.md").read_text() == grid_kind(kind).render(summary)


def _kind(name, claims, refines=None):
    return GridKind(name=name, title=name, claims=claims, summarize=lambda outdir, res, confidence: {},
                    summary_format=name, table=lambda summary, title: title, refines=refines)


def test_a_refining_kind_owns_the_grids_both_claim_and_ambiguity_is_refused():
    """Of two kinds that claim a grid, the one that refines the other owns it; two unrelated claimants, or none, are
    a ValueError. Catches a lookup that returns the first claimant (the remedies kind for a decoder grid)."""
    base, narrow, other = _kind("base", lambda st: True), _kind("narrow", lambda st: st.get("x") == 1, "base"), \
        _kind("other", lambda st: st.get("y") == 1)
    kinds = {k.name: k for k in (base, narrow, other)}
    assert kind_for({"x": 1}, kinds) is narrow
    assert kind_for({"x": 0}, kinds) is base
    with pytest.raises(ValueError, match="several grid kinds"):
        kind_for({"y": 1}, kinds)
    with pytest.raises(ValueError, match="no grid kind"):
        kind_for({}, {"other": other})
    with pytest.raises(ValueError, match="unknown grid kind 'nope'"):
        grid_kind("nope")


def test_a_kind_registered_from_outside_is_what_aggregate_uses(tmp_path, monkeypatch):
    """A new kind is a GridKind and one registry entry: registered into (a copy of) GRID_KINDS, refining the paper
    grid for the grids it claims, it makes the directory's summary.json and table.md. Catches an aggregation that
    decides the summary by a flag of the settings instead of asking the kinds."""
    from varsim._common.registry import register
    from varsim.experiments.records import write_settings
    from varsim.experiments.settings import ReproductionSettings

    kinds = dict(GRID_KINDS)
    register(kinds, GridKind(
        name="counted", title="counted runs", claims=lambda st: st["root_seed"] == 7, refines="reproduction",
        summarize=lambda outdir, res, confidence: {"format": "counted/1", "missing": len(res["missing"])},
        summary_format="counted/1", table=lambda summary, title: f"# {title}: {summary['missing']} missing\n"),
        what="grid kind", kind=GridKind)
    monkeypatch.setattr(aggregation, "GRID_KINDS", kinds)
    settings = ReproductionSettings.quick(root_seed=7, tasks=("argmax",), norms=("none",))
    write_settings(tmp_path, settings)
    assert aggregate(tmp_path) == {"format": "counted/1", "missing": 2}
    assert (tmp_path / "table.md").read_text() == "# counted runs: 2 missing\n"
    assert kind_of(ReproductionSettings.quick(tasks=("argmax",), norms=("none",))).name == "reproduction"


def test_every_kind_has_a_figure_source_of_its_name():
    """Each grid kind's figures read their data through the source registered under the kind's name."""
    from varsim.figures import SOURCES

    assert set(GRID_KINDS) <= set(SOURCES)


def test_a_source_refuses_a_summary_of_another_kind():
    """The remedies figures given the decoder grid's summary (the same format) refuse it with a ValueError naming
    their option, as the decoder figures refuse a remedies summary. Catches a source that checks only the format."""
    from varsim.figures.decoder import COMMITTED_DIR as DECODER_DIR
    from varsim.figures.remedies import RemediesSource

    with pytest.raises(ValueError, match="remedies_results: .* is not a remedies summary"):
        RemediesSource(DECODER_DIR).load()
