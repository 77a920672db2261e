"""The second-kernel arm from the repository alone: its signed per-seed accuracies at N = 1024 recovered from the
committed summary (varsim.experiments.kernel_signs), every arm statistic recomputed from them, and the five sentences
judged under the symmetric rules beside the registered one (varsim.experiments.kernel_check.symmetric_verdicts)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest

from varsim._common.jsonio import jsonable
from varsim.experiments.kernel_check import COMMITTED_DIR, render_symmetric, symmetric_verdicts

ARM = json.loads((COMMITTED_DIR / "summary.json").read_text())
ROOT = Path(__file__).resolve().parents[1]


def _signed():
    from varsim.experiments.kernel_signs import SIGNED_FILE

    return json.loads(SIGNED_FILE.read_text())


def test_committed_signed_table_is_current():
    """The committed table is what the code recovers from the committed summary (a forgotten regeneration fails),
    names the summary's hash and the commit that made it, and every cell was recovered uniquely."""
    import hashlib

    from varsim.experiments.kernel_signs import recover_signs

    stored = _signed()
    assert json.loads(json.dumps(jsonable(recover_signs(ARM)))) == {
        k: v for k, v in stored.items() if k not in ("inputs", "provenance")}
    assert stored["inputs"]["summary.json"] == hashlib.sha256((COMMITTED_DIR / "summary.json").read_bytes()).hexdigest()
    assert len(stored["provenance"]["git_commit"]) == 40 and stored["provenance"]["git_dirty"] is False
    assert stored["recovered"] == stored["n_cells"] == 6


def _recompute(cell: dict) -> dict:
    from varsim.experiments.stats import clip_interval, paired_difference

    soft = cell["accuracy"]["softmax"]
    out = {}
    for variant, acc in cell["accuracy"].items():
        if variant != "softmax":
            d = clip_interval(paired_difference(acc, soft), -1.0, 1.0)
            if acc == soft:
                d["p_ttest"] = 1.0
            out[variant] = d
    return out


def _cell_of(row: dict, cells: list) -> dict:
    keys = ("slice", "task", "architecture", "norm", "depth", "recipe", "encoding")
    (cell,) = [c for c in cells if all(c[k] == row[k] for k in keys)]
    return cell


def test_every_arm_statistic_recomputes_from_the_signed_table():
    """Each of the 46 comparisons' arm mean, interval and p-value, and the Holm adjustment over the arm's remedy
    comparisons, recompute from the signed accuracies; each accuracy differs from the committed one by the count the
    summary records for its run."""
    from varsim.experiments.stats import holm

    cells = _signed()["cells"]
    remedy_p, remedy_holm = [], []
    for row in ARM["comparisons"]:
        got = _recompute(_cell_of(row, cells))[row["variant"]]
        for k in ("mean_diff", "ci_low", "ci_high", "p_ttest"):
            assert got[k] == pytest.approx(row["arm"][k], rel=1e-9, abs=1e-12), (row["variant"], k)
        if row["role"] == "remedy":
            remedy_p.append(got["p_ttest"])
            remedy_holm.append(row["arm"]["p_holm_arm"])
    np.testing.assert_allclose(holm(remedy_p), remedy_holm, rtol=1e-9)
    rows = {(r["run_id"], r["variant"]): r for r in ARM["per_run"]["rows"]}
    for cell in cells:
        for variant, acc in cell["accuracy"].items():
            for a, c, rid in zip(acc, cell["committed"][variant], cell["run_ids"][variant]):
                assert round(abs(a - c) * 512) == rows[(rid, variant)]["examples"][6]  # N = 1024


def test_one_flipped_sign_breaks_a_statistic():
    """Planted: one run's difference from its committed accuracy given the other sign. Its comparison's mean no
    longer recomputes, so the test above can fail."""
    cells = copy.deepcopy(_signed()["cells"])
    cell = cells[0]
    acc, com = cell["accuracy"]["ssmax"], cell["committed"]["ssmax"]
    i = next(i for i in range(6) if acc[i] != com[i])
    acc[i] = 2 * com[i] - acc[i]
    (row,) = [r for r in ARM["comparisons"] if r["variant"] == "ssmax" and _cell_of(r, cells) is cell]
    assert _recompute(cell)["ssmax"]["mean_diff"] != pytest.approx(row["arm"]["mean_diff"], abs=1e-9)


def test_symmetric_rules():
    """Registered: the committed verdicts (4 of 5). Holm for both: the constant-lr sentence fails on critical
    scaling's unadjusted-only gain; unadjusted for both: it fails on two nulls that are significant unadjusted. Either
    way 3 of 5. 40 of the 46 arm gains agree in sign with the committed ones."""
    sym = symmetric_verdicts(ARM)
    held = {r: sum(c["rules"][r] for c in sym["conclusions"]) for r in sym["rules"]}
    assert held == {"registered": 4, "holm_both": 3, "unadjusted_both": 3}
    assert [c["rules"]["registered"] for c in sym["conclusions"]] == [c["holds"] for c in ARM["conclusions"]]
    (flat,) = [c for c in sym["conclusions"] if "constant lr 1e-3" in c["conclusion"]]
    assert flat["failed"] == {"registered": [], "holm_both": ["critical"],
                              "unadjusted_both": ["logn_temperature", "adaptive_temperature"]}
    assert (sym["agree_in_sign"], sym["agree_within_interval"], sym["n"]) == (40, 46, 46)


def test_symmetric_rules_can_pass_the_constant_cell():
    """Planted: critical scaling's arm p-value small enough to survive Holm. The Holm rule then holds the constant-lr
    sentence; a rule that ignored the adjusted p-value would not change."""
    arm = copy.deepcopy(ARM)
    for r in arm["comparisons"]:
        if r["recipe"] == "constant_lr1e3" and r["variant"] == "critical":
            r["arm"]["p_holm_arm"] = 0.001
    (flat,) = [c for c in symmetric_verdicts(arm)["conclusions"] if "constant lr 1e-3" in c["conclusion"]]
    assert flat["rules"]["holm_both"]


def test_reproducibility_page_quotes_the_symmetric_table():
    page = (ROOT / "docs" / "experiments" / "reproducibility.md").read_text()
    assert render_symmetric(symmetric_verdicts(ARM)) in page


def test_the_statistical_verdict_on_the_arms_own_reruns():
    """Each SkylakeX rerun of the arm, judged as `varsim recheck` would judge it (its spread left out of its own
    bound): the counts the reproducibility page quotes. Catches a bound that includes the run itself (0 beyond) and
    a conclusion check that ignores the rerun (0 changed)."""
    from varsim.experiments.kernel_signs import judge_arm_reruns

    res = judge_arm_reruns(ARM, _signed())
    assert (res["runs"], res["holds"], res["beyond_spread"], res["conclusion_changed"]) == (168, 160, 3, 5)
    page = " ".join((ROOT / "docs" / "experiments" / "reproducibility.md").read_text().split())
    assert f"{res['holds']} of {res['runs']} hold. {res['beyond_spread']} lie beyond the spread" in page
    assert f"{res['conclusion_changed']} change a verdict" in page
