"""The remedies grid's recipe and key-encoding factors, its controls and its pre-registered primary endpoint, on a
slice of the quick grid run end to end."""

import json

import numpy as np
import pytest
from repro_checks import module_grid

from varsim.experiments.remedies import RECIPES, remedies_settings
from varsim.experiments.remedies_summary import ALPHA
from varsim.experiments.settings import cells, job_specs
from varsim.experiments.stats import holm

SLICE = remedies_settings(
    quick=True, tasks=["dictionary"],
    attentions={"softmax": {}, "softmax_replicate": {"replicate": True}, "ssmax": {"attention": "ssmax"}},
    inference_attentions={"topk1": {"attention": "topk", "params": {"k": 1}}, "oracle": {"attention": "oracle"},
                          "permuted_softmax": {"attention": "permuted_softmax"}},
    train={"steps": 60, "batch_size": 16, "train_max": 16, "checkpoint_every": 60, "keep_checkpoints": 1,
           "optimizer": "adamw", "weight_decay": 0.01, "clip_norm": 1.0},
    recipes={"cosine_lr3e3": RECIPES["cosine_lr3e3"], "constant_lr1e3": RECIPES["constant_lr1e3"]},
    eval_lengths=[16, 32], eval_long={"lengths": [64], "examples": 16}, probe_lengths=[16, 32], probe_sets=8,
    eval_examples=32, id_examples=32)


def test_recipes_and_encodings_reach_the_runs_configs():
    """Each cell's TrainConfig takes its recipe's schedule and lr and its key encoding; the run ids name both; argmax
    (no keys) has no encoding factor. Catches a recipe that does not reach the optimizer or an encoding left at the
    default."""
    specs = job_specs(SLICE)
    assert len(cells(SLICE)) == 2 * 2 * 3 and len(specs) == 2 * 2 * 3 * SLICE.seeds
    for s in specs:
        recipe, enc = s["recipe"], s["key_encoding"]
        assert f"-{recipe}-{enc}-s" in s["run_id"]
        cfg = s["train_config"]
        assert cfg["schedule"] == RECIPES[recipe]["schedule"] and cfg["lr"] == RECIPES[recipe]["lr"]
        assert cfg["model"]["key_encoding"] == enc
    full = remedies_settings()
    argmax_cells = [c for c in cells(full) if c.task == "argmax"]
    assert argmax_cells and all(c.encoding is None for c in argmax_cells)
    assert len(job_specs(full)) == (4 + 4 * 2) * len(full.attentions) * full.seeds


def test_the_replicate_is_softmax_from_other_streams_on_the_same_test_sets():
    """softmax_replicate trains plain softmax from another init and data stream, and is tested on the same sets as
    softmax. Catches a replicate that reuses softmax's seeds (its difference would be exactly 0: no null at all) or
    that gets other test sets (the pairing would be lost)."""
    by_id = {s["run_id"]: s for s in job_specs(SLICE)}
    for rid, s in by_id.items():
        if s["attention"] != "softmax_replicate":
            continue
        base = by_id[rid.replace("-softmax_replicate-", "-softmax-")]
        a, b = s["train_config"], base["train_config"]
        assert a["model"] == b["model"] and a["seed"] != b["seed"] and a["data_seed"] != b["data_seed"]
        assert s["eval"] == base["eval"] and s["in_distribution"] == base["in_distribution"]
        assert s["probe"] == base["probe"]


@pytest.fixture(scope="module")
def slice_summary(tmp_path_factory):
    out, _ = module_grid(tmp_path_factory, "recipes", settings=SLICE)
    return out, json.loads((out / "summary.json").read_text())


def test_primary_endpoint_is_its_own_holm_family(slice_summary):
    """One primary row per remedy x group at the pre-registered length, Holm-adjusted over exactly those rows; the
    controls are not in it; the secondary family leaves the primary comparisons and the controls out. Catches a
    family that includes every N (the old 280-comparison family) or the controls."""
    _, summary = slice_summary
    rows = summary["primary"]
    groups = {(r["recipe"], r["encoding"]) for r in rows}
    assert len(groups) == 4 and len(rows) == 4 * 2
    assert {r["variant"] for r in rows} == {"ssmax", "topk1"} and {r["length"] for r in rows} == {32}
    raw = np.array([r["p_ttest"] for r in rows], dtype=float)
    np.testing.assert_allclose([r["p_holm"] for r in rows], holm(raw), equal_nan=True)
    assert all(r["significant"] == (r["p_holm"] <= ALPHA) for r in rows)
    assert summary["primary_endpoint"]["n_comparisons"] == 8
    j = summary["lengths"].index(32)
    for p in summary["paired"]:
        if p["role"] == "remedy":
            assert p["p_holm_secondary"][j] is None  # in the primary family, not here
            assert all(x is not None for k, x in enumerate(p["p_holm_secondary"])
                       if k != j and p["p_ttest"][k] is not None)  # a NaN p-value (no spread) is left out
        elif p["role"].endswith("_control"):
            assert all(x is None for x in p["p_holm_secondary"])


def test_controls_are_judged_and_the_negative_one_is_exact(slice_summary):
    """Every group has the three controls; permuted_softmax decides exactly as softmax on every example count (its
    difference is 0, p = 1, it behaves); the oracle is judged positive only when significant. Catches a negative
    control evaluated on other examples or other weights."""
    out, summary = slice_summary
    ctl = summary["controls"]
    assert len(ctl) == 4 * 3
    for r in ctl:
        if r["variant"] == "permuted_softmax":
            assert r["mean_diff"] == 0.0 and r["p_ttest"] == 1.0 and r["behaves"]
        if r["variant"] == "oracle":
            assert r["behaves"] == (r["p_ttest"] < ALPHA and r["mean_diff"] > 0)
    for path in (out / "runs").glob("*-softmax-*.json"):
        rec = json.loads(path.read_text())
        perm = rec["inference"]["permuted_softmax"]
        assert perm["eval"]["correct"] == rec["eval"]["correct"]
        assert perm["eval_long"]["correct"] == rec["eval_long"]["correct"]


def test_long_lengths_and_the_decomposition_add_up(slice_summary):
    """The long test sets are recorded with their own example count; per seed and N, ranking errors plus dispersion
    errors are the error rate. Catches a decomposition that drops the long lengths or counts an example twice."""
    out, summary = slice_summary
    assert summary["lengths"] == [16, 32, 64] and summary["examples"] == [32, 32, 16]
    for g in summary["groups"]:
        acc = np.array(g["accuracy"]["per_seed"])
        rk = g["ranking"]
        err = np.array(rk["ranking_error"]["per_seed"]) + np.array(rk["dispersion_error"]["per_seed"])
        np.testing.assert_allclose(err, 1.0 - acc, atol=1e-12)
    rec = json.loads(next((out / "runs").glob("*-ssmax-*.json")).read_text())
    assert rec["eval_long"]["examples"] == 16 and rec["eval_long"]["lengths"] == [64]
    table = (out / "table.md").read_text()
    assert "## Primary endpoint (pre-registered)" in table and "## Controls at N = 32" in table
