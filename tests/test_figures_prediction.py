"""The prediction figure (fig_prediction): it draws the committed analysis's own runs and numbers, and its source
refuses an analysis whose measured accuracies are not the committed remedies summary's."""

from __future__ import annotations

import json

import numpy as np
import pytest

from varsim.figures import fig_prediction as fig
from varsim.figures.prediction import METHODS, PredictionSource, read_analysis


@pytest.mark.parametrize("run", fig.PICKS)
def test_each_panel_is_the_chosen_run_of_its_cell_with_its_binomial_se(run):
    """One panel per held-out cell; each draws the run of the cell the pick names (median: the upper median of the
    predictor's errors at N = 1024), with that run's measured accuracies, their binomial SE at the summary's test-set
    size per N and every method's predictions, unchanged. Catches a panel of another run than its title names, the
    lower median or a mean of runs drawn as one run, and an SE from a fixed test-set size (512 beyond N = 1024)."""
    data = fig.compute(run=run)
    analysis = read_analysis()
    runs = {r["run_id"]: r for r in analysis["per_run"]}
    li = data["lengths"].index(fig.PRIMARY_LENGTH)
    assert len(data["panels"]) == len(analysis["cells"])
    for p in data["panels"]:
        chosen = runs[p["run_id"]]
        assert (chosen["task"], chosen["encoding"], chosen["recipe"], chosen["seed"]) == (
            p["task"], p["encoding"], p["recipe"], p["seed"])
        cell = sorted((abs(r["predictions"]["predictor"][li] - r["measured"][li]), r["seed"]) for r in runs.values()
                      if (r["task"], r["encoding"], r["recipe"]) == (p["task"], p["encoding"], p["recipe"]))
        want = {"median": cell[len(cell) // 2], "worst": cell[-1], "best": cell[0]}[run]
        assert p["seed"] == want[1] and p["error"]["predictor"] == pytest.approx(want[0], abs=1e-15)
        assert p["measured"] == chosen["measured"]
        assert all(p["predictions"][m] == chosen["predictions"][m] for m in METHODS)
        acc, n = np.asarray(chosen["measured"]), np.asarray(data["examples"], dtype=float)
        np.testing.assert_allclose(p["se"], np.sqrt(acc * (1 - acc) / n), rtol=1e-12)
    assert data["examples"][li] == 512 and data["examples"][-1] == 256


def test_an_analysis_of_other_measurements_is_refused(tmp_path):
    """A copy of the committed analysis with one measured accuracy changed (a stale or hand-edited file) is refused
    naming the file and the run; the committed one loads."""
    analysis = read_analysis()
    analysis["per_run"][3]["measured"][5] += 0.001
    path = tmp_path / "analysis_test.json"
    path.write_text(json.dumps(analysis))
    with pytest.raises(ValueError, match=f"{analysis['per_run'][3]['run_id']} are not those of the remedies"):
        PredictionSource(path).load()
    assert PredictionSource().load()["analysis"]["per_run"]
    with pytest.raises(ValueError, match="run must be one of median, worst, best"):
        fig.compute(run="typical")


def test_every_line_of_a_panel_has_its_own_dash_pattern_or_is_solid():
    """The methods' lines and the chance line are told apart by their dashes, not only by a shade of grey: no two
    dashed lines of a panel share a pattern. Catches the chance line and the carry-forward line both dotted."""
    f = fig.draw(fig.compute())
    for ax in (a for a in f.axes if a.get_visible() and a.get_title()):
        patterns = []
        for line in ax.get_lines():
            offset, dashes = line._unscaled_dash_pattern
            if dashes:  # a solid line has none (the predictor, the test length's marker)
                patterns.append(tuple(dashes))
        assert len(patterns) >= 3 and len(set(patterns)) == len(patterns), (ax.get_title(), patterns)
    fig._style.plt.close(f)
