"""A grid kind owns its settings checks (varsim.experiments.grid_kind.KIND_CHECKS): every settings object asks the
registry, so a new kind's checks run on the grids it claims, through the library and the command line alike, with
no edit of the settings class; the remedies kind's checks are the variant axis's."""

from __future__ import annotations

import pytest

from varsim.cli import main
from varsim.experiments import grid_kind
from varsim.experiments.aggregation import GRID_KINDS
from varsim.experiments.settings import ReproductionSettings
from varsim.experiments.variant_axis import CHECKS


@pytest.fixture
def new_kind():
    """A temporary kind whose one check refuses grids of 3 seeds (its claim), recording every call."""
    calls = []

    def check(settings, set_):
        calls.append(settings.seeds)
        raise ValueError(f"seeds: the test kind refuses {settings.seeds} seeds")

    grid_kind.KIND_CHECKS.add(grid_kind.KindChecks("kind_checks_test", (check,), claims=lambda s: s.seeds == 3))
    try:
        yield calls
    finally:
        del grid_kind.KIND_CHECKS["kind_checks_test"]


def test_a_new_kinds_checks_are_asked_by_every_settings(new_kind, tmp_path, capsys):
    """Seen failing with the settings calling the variant axis's checks directly (the registered kind never asked)."""
    assert ReproductionSettings.quick(seeds=2).seeds == 2 and new_kind == []  # not its grid: not called
    with pytest.raises(ValueError, match="seeds: the test kind refuses 3 seeds"):
        ReproductionSettings.quick(seeds=3)
    assert new_kind == [3]
    assert main(["reproduce", str(tmp_path / "out"), "--quick", "--seeds", "3"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "seeds: the test kind refuses 3 seeds" in err[0], err
    assert not (tmp_path / "out" / "runs").exists()


def test_each_kind_names_its_checks():
    assert GRID_KINDS["remedies"].settings_checks == CHECKS
    assert GRID_KINDS["reproduction"].settings_checks == () and GRID_KINDS["decoder"].settings_checks == ()
    assert set(grid_kind.KIND_CHECKS) <= set(GRID_KINDS)
