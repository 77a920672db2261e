"""The decoder grid (``varsim reproduce --preset decoder``): the preset, its specs and run ids, the pre-registered
endpoint in the settings, validation, and the quick grid end to end on one seed."""

from __future__ import annotations

import json

import pytest

from varsim.experiments.decoder_grid import PRIMARY, decoder_constant_settings, decoder_settings
from varsim.experiments.presets import PRESETS
from varsim.experiments.settings import GRID_ARCHITECTURES, ReproductionSettings, cells, job_specs


def test_preset_is_registered_and_the_cli_offers_it():
    from varsim.cli.reproduce import PRESET_NAMES

    assert PRESETS["decoder"] is decoder_settings
    assert PRESET_NAMES == list(PRESETS)


def test_full_grid_specs_and_run_ids():
    """3 positions x 2 norms x 4 trained attentions x 6 seeds of a 2-block decoder on argmax, evaluated up to 64x
    the longest training set; the primary endpoint (N = 1024, ssmax and logn, the replicate as negative control) is in
    the settings as written to settings.json; seed index s shares its test sets across every cell (paired)."""
    st = decoder_settings()
    specs = job_specs(st)
    assert len(specs) == 3 * 2 * 4 * 6 == len({s["run_id"] for s in specs})
    assert specs[0]["run_id"] == "argmax-decoder_none-none-softmax-d2-s0"
    assert {s["architecture"] for s in specs} == {"decoder_none", "decoder_rope", "decoder_alibi"}
    for s in specs:
        model = s["train_config"]["model"]
        assert model["architecture"] == "decoder" and model["n_blocks"] == 2
        assert model.get("positions", "none") == s["architecture"].split("_", 1)[1]
        assert s["train_config"]["train_max"] == 16 and max(s["eval"]["lengths"]) == 1024
    logn = next(s for s in specs if s["attention"] == "logn")["train_config"]["model"]
    assert logn["attention_params"] == {"n0": 17.0, "clamp": False}
    d = st.to_dict()
    assert d["primary"] == json.loads(json.dumps(PRIMARY)) and d["primary"]["length"] in d["eval_lengths"]
    assert ReproductionSettings.from_dict(d) == st
    by_seed = {}
    for s in specs:
        by_seed.setdefault(s["seed_index"], set()).add(s["eval"]["seed"])
    assert all(len(v) == 1 for v in by_seed.values()) and len({next(iter(v)) for v in by_seed.values()}) == 6
    rep = [s for s in specs if s["attention"] == "softmax_replicate"]
    soft = {s["run_id"].replace("softmax", "X"): s for s in specs if s["attention"] == "softmax"}
    for s in rep:
        twin = soft[s["run_id"].replace("softmax_replicate", "X")]
        assert s["train_config"]["seed"] != twin["train_config"]["seed"]
        assert s["eval"]["seed"] == twin["eval"]["seed"]


def test_constant_arm_changes_the_schedule_only():
    """The recipe check (``--preset decoder_constant``) is the decoder grid with a constant learning rate: the same
    run ids, seeds, test sets and pre-registered endpoint; every run's TrainConfig differs in ``schedule`` only (a
    factory that also changed the lr, or left the schedule at cosine, fails)."""
    assert PRESETS["decoder_constant"] is decoder_constant_settings
    cos, const = job_specs(decoder_settings()), job_specs(decoder_constant_settings())
    assert [s["run_id"] for s in cos] == [s["run_id"] for s in const]
    for a, b in zip(cos, const):
        ta, tb = dict(a["train_config"]), dict(b["train_config"])
        assert (ta.pop("schedule"), tb.pop("schedule")) == ("cosine", "constant")
        assert ta == tb and a["eval"] == b["eval"]
    assert decoder_constant_settings().to_dict()["primary"] == decoder_settings().to_dict()["primary"]
    quick = decoder_constant_settings(quick=True).to_dict()
    assert quick["train"]["schedule"] == "constant" and quick["train"]["steps"] == 60


def test_paper_grid_keeps_its_architectures():
    """Adding the decoder to GRID_ARCHITECTURES leaves the paper grid's default architectures (and so its specs and
    committed records) as they were."""
    assert {"decoder_none", "decoder_rope", "decoder_alibi"} <= set(GRID_ARCHITECTURES)
    assert ReproductionSettings().architectures == ("residual", "no_residual")
    assert ReproductionSettings.full().to_dict()["architectures"] == ["residual", "no_residual"]


def test_decoder_settings_are_validated():
    """The grid sets the positions (an override is refused), the endpoint names variants and a length of the grid,
    the architectures are the grid's: one-line ValueErrors naming the field."""
    with pytest.raises(ValueError, match="positions"):
        decoder_settings(quick=True, model={"d_model": 16, "n_heads": 2, "positions": "rope"})
    with pytest.raises(ValueError, match="primary.variants"):
        decoder_settings(quick=True, primary={**PRIMARY, "length": 64, "variants": ("entmax15",)})
    with pytest.raises(ValueError, match="primary.length"):
        decoder_settings(quick=True, primary=PRIMARY)  # the full endpoint's N = 1024 is not a quick eval length
    with pytest.raises(ValueError, match="architectures"):
        decoder_settings(quick=True, architectures=["decoder_nope"])


def test_quick_grid_runs_end_to_end(tmp_path):
    """One seed of the quick grid: every cell runs and records its accuracy, probes of the first block and the
    ranking decomposition of the last; resuming redoes nothing; a run recomputed from its record is bitwise equal."""
    from varsim.experiments.runner import run_grid

    st = decoder_settings(quick=True, seeds=1)
    out = tmp_path / "dq"
    kw = dict(summarize=lambda _: {"learned": None}, scheduler=None, workers=1, checkpoints=True, progress=False,
              on_run=None)
    report = run_grid(out, st, **kw)
    n = len(cells(st))
    assert n == 24 and report["failed"] == [] and len(report["completed"]) == n
    for path in (out / "runs").glob("*.json"):
        rec = json.loads(path.read_text())
        assert rec["train"]["status"] == "completed"
        assert rec["eval"]["lengths"] == [16, 32, 64] and rec["probes"]["block"] == 0
        assert len(rec["ranking"]["ranking_correct"]) == 3
    assert json.loads((out / "settings.json").read_text())["settings"]["primary"]["length"] == 64
    again = run_grid(out, st, **kw)
    assert again["completed"] == [] and len(again["skipped"]) == n
    from varsim.experiments.recheck import recheck_runs

    (res,) = recheck_runs(out, ["argmax-decoder_rope-layernorm-ssmax-d2-s0"])
    assert res["verdict"] == "bitwise-equal", res
