"""The trained remedies' analysis (amendment 2 of docs/experiments/prediction_preregistration.md):
``varsim.experiments.prediction.analyze_trained`` on synthetic prediction records, and the committed analysis."""

from __future__ import annotations

import json

import pytest

from varsim.experiments import prediction as P


def _fake_records(tmp_path, groups, *, seeds=(0, 1), offset=0.01, bad=None):
    """A prediction record per trained run of ``seeds``: at the frozen kappa (0.5) every prediction is the committed
    measurement plus ``offset`` (the Gaussian one plus 2 offset), at every other kappa plus 0.3; ``bad`` a run id
    whose identity check fails."""
    out = tmp_path / "predictions"
    out.mkdir()
    frozen = P.KAPPAS.index(0.5)
    specs = P.subset_specs(attentions=P.TRAINED_REMEDIES, seeds=seeds)
    for s in specs:
        v = s["attention"]
        meas = P._measured(groups, s, v)
        rank = P._measured(groups, s, v, "ranking_correct")
        disp = P._measured(groups, s, v, "dispersion_error")

        def tables(extra, meas=meas, rank=rank, disp=disp, v=v):
            return [{v: {"accuracy": [a + (extra if k == frozen else 0.3) for a in meas], "ranking_correct": rank,
                         "dispersion_error": disp}} for k in range(len(P.KAPPAS))]

        rec = {"run_id": s["run_id"], "identity": {"equal": s["run_id"] != bad}, "best_head": 0, "tau": 0.2,
               "sigma": 1.0, "lapse": 0.0, "map": {"attention": v, "params": {}},
               "measured": tables(offset), "gaussian": tables(2 * offset)}
        (out / f"{s['run_id']}.json").write_text(json.dumps(rec))
    return specs


@pytest.fixture(scope="module")
def summary():
    from varsim._common.jsonio import read_json

    path = P.Path(P.__file__).resolve().parents[1] / "figures" / "data" / "remedies" / "summary.json"
    return path, P._summary_groups(read_json(path))


SOFTMAX = P.Path(P.__file__).resolve().parents[1] / "figures" / "data" / "prediction" / "analysis_test.json"


def test_analyze_trained_uses_the_frozen_kappa_and_complete_seeds(tmp_path, summary):
    """Predictions off by exactly 0.01 at the frozen kappa 0.5 (and by 0.3 at every other): the per-variant MAE is
    0.01 and the Gaussian baseline's 0.02; a run whose identity check fails is excluded with its whole seed (of its
    variant only); the gain over softmax is read where the softmax run is in the committed analysis (not the
    development recipe). Catches a kappa refitted on these runs or taken at another index, a single cell dropped
    instead of its seed, and a gain paired with the wrong softmax run."""
    path, groups = summary
    bad = "argmax-residual-none-logn-d1-constant_lr1e3-s1"
    _fake_records(tmp_path, groups, bad=bad)
    res = P.analyze_trained(tmp_path, path, SOFTMAX)
    assert res["excluded"] == [bad] and res["kappa"] == {"measured": 0.5, "gaussian": 0.5}
    li = list(P.LENGTHS).index(P.PRIMARY_LENGTH)
    soft = {(x["task"], x["recipe"], x["encoding"], x["seed"]): x for x in json.loads(SOFTMAX.read_text())["per_run"]}
    for v in P.TRAINED_REMEDIES:
        d = res["variants"][v]
        assert d["seeds"] == ([0] if v == "logn" else [0, 1])
        assert len(d["per_run"]) == 8 * len(d["seeds"]) and len(d["cells"]) == 8
        assert d["primary"]["predictor"]["mean"] == pytest.approx(0.01, abs=1e-12)
        assert d["primary"]["gaussian"]["mean"] == pytest.approx(0.02, abs=1e-12)
        gains = [x for x in d["per_run"] if "gain_over_softmax" in x]
        assert len(gains) == 6 * len(d["seeds"]) and all(x["recipe"] != P.DEV_RECIPE for x in gains)
        for x in gains:
            sm = soft[(x["task"], x["recipe"], x["encoding"], x["seed"])]
            g = x["gain_over_softmax"]
            assert g["measured"] == pytest.approx(x["measured"][li] - sm["measured"][li], abs=1e-12)
            want = x["predictions"]["predictor"][li] - sm["predictions"]["predictor"][li]
            assert g["predicted"] == pytest.approx(want, abs=1e-12)
    assert res["pooled"]["seeds"] == [0] and res["pooled"]["runs"] == 24
    text = P.render_trained(res)
    assert "| ssmax | [0, 1] | 0.010" in text and f"excluded ['{bad}']" in text
    assert P.render_trained(json.loads(json.dumps(res))) == text  # the same from the written JSON (string keys)


def test_the_committed_trained_analysis_is_of_the_committed_measurements():
    """The committed analysis of the trained remedies: every run's measured accuracies are the committed remedies
    summary's per-seed values of its variant, its kappa is the committed softmax analysis's, and its Markdown is
    render_trained of its JSON. Catches a stale copy after the summary or the softmax analysis changes, and tables
    edited by hand."""
    from varsim._common.jsonio import read_json
    from varsim.figures.prediction import COMMITTED_DIR, COMMITTED_FILES

    assert {"analysis_trained.json", "analysis_trained.md"} <= set(COMMITTED_FILES)
    res = read_json(COMMITTED_DIR / "analysis_trained.json")
    summary = read_json(P.Path(P.__file__).resolve().parents[1] / "figures" / "data" / "remedies" / "summary.json")
    groups = P._summary_groups(summary)
    assert res["kappa"] == read_json(SOFTMAX)["kappa"]
    for v, d in res["variants"].items():
        assert d["per_run"]
        for x in d["per_run"]:
            g = groups[(x["task"], x["recipe"], x["encoding"], v)]
            assert x["measured"] == g["accuracy"]["per_seed"][g["seeds"].index(x["seed"])], x["run_id"]
    assert (COMMITTED_DIR / "analysis_trained.md").read_text() == P.render_trained(res)
