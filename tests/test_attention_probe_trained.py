"""The real-model probe on trained varsim models (varsim.train.attention_probe): the set model and the causal decoder
give the statistics and the JSON layout of ``varsim probe-model`` on a pretrained model, one command runs it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from varsim.cli import main
from varsim.figures.probe import model_label, panel_name, probe_command, read_probe
from varsim.nn.architectures import build_model
from varsim.nn.config import ModelConfig
from varsim.train.attention_probe import collect_trained, n_keys, probe_trained

COMMITTED = Path(__file__).resolve().parents[1] / "varsim" / "figures" / "data" / "probe" / "smollm2.json"
KINDS = {
    "set": dict(task="argmax", architecture="set_transformer", n_blocks=2, d_model=16, n_heads=2, pre_ln=True),
    "decoder": dict(task="recall", architecture="decoder", n_blocks=2, d_model=16, n_heads=2, pre_ln=True,
                    positions="rope", key_vocab=64),
}


def _model(kind: str, seed: int = 0):
    return build_model(ModelConfig(**KINDS[kind]), seed=seed)


def _uniform(model):
    """Zero the query and key projections: every head's weights are uniform over the keys the query sees."""
    d = model.config.d_model
    for i in range(model.config.n_blocks):
        model.params[f"block{i}.attn.w_qkv"][:, :2 * d] = 0.0
        model.params[f"block{i}.attn.b_qkv"][:2 * d] = 0.0
    return model


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_uniform_attention_sees_exactly_the_query_keys(kind):
    """Uniform weights: sum w^2 = 1/n_keys (set model: the N items; decoder: N k + 1 tokens with the query) and the
    head output equals the mean of the values over those keys, in every layer."""
    model = _uniform(_model(kind))
    lengths = [4, 9]
    arrays = collect_trained(model, lengths, windows=6, layers=[0, 1], seed=3)
    for n in lengths:
        a = arrays[n]
        nk = n_keys(model.config, n)
        assert nk == (n * 2 + 1 if kind == "decoder" else n)
        np.testing.assert_allclose(a["y2"], 1.0 / nk, rtol=1e-5)
        np.testing.assert_allclose(a["w_max"], 1.0 / nk, rtol=1e-5)
        np.testing.assert_allclose(a["o"], a["vbar"], rtol=1e-4, atol=1e-5)
        assert np.all(a["s2"] > 0)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_result_has_the_pretrained_layout_and_the_figures_read_it(kind, tmp_path):
    out = tmp_path / f"{kind}.json"
    res = probe_trained(_model(kind), lengths=[4, 8, 16], windows=8, bootstrap=20, seed=0, out=out)
    ref = json.loads(COMMITTED.read_text())
    assert set(ref) - {"n_keys"} <= set(res)
    assert set(res["per_length"]) == set(ref["per_length"])
    assert {k: set(v) for k, v in res["slopes"].items()} == {k: set(v) for k, v in ref["slopes"].items()}
    assert set(res["layer_summary"][0]) == set(ref["layer_summary"][0])
    assert res["layers"] == [0, 1] and res["n_head"] == 2 and res["d_head"] == 8
    assert np.shape(res["per_length"]["std"]) == (3, 2, 2)
    assert np.shape(res["slopes"]["y2"]["lo"]) == (2, 2)
    assert res["n_keys"] == ([9, 17, 33] if kind == "decoder" else [4, 8, 16])
    assert res["model"]["spec"]["causal"] is (kind == "decoder")
    data = read_probe(out)
    full, short = (("trained decoder (recall, RoPE, softmax attention)", "recall decoder, RoPE") if kind == "decoder"
                   else ("trained set model (argmax, softmax attention)", "argmax set model"))
    assert (model_label(data), panel_name(data)) == (full, short)
    data["model"]["step"] = 300  # what a probe of a checkpoint records
    assert (model_label(data), panel_name(data)) == (full[:-1] + ", 300 steps)", short + ", 300 steps")
    assert "--text" not in probe_command(data)


def test_same_seed_same_numbers_and_bad_layers():
    a = probe_trained(_model("set"), lengths=[4, 8], windows=5, bootstrap=10, seed=1)
    b = probe_trained(_model("set"), lengths=[4, 8], windows=5, bootstrap=10, seed=1)
    assert a["slopes"] == b["slopes"] and a["per_length"] == b["per_length"]
    with pytest.raises(ValueError, match="layers"):
        probe_trained(_model("set"), lengths=[4, 8], windows=5, layers=[2], seed=1)
    with pytest.raises(ValueError, match="lengths"):
        probe_trained(_model("set"), lengths=[4], windows=5, seed=1)


def test_cli_probes_a_trained_run_directory(tmp_path, capsys):
    argv = ["train", "--task", "recall", "--architecture", "decoder", "--positions", "rope", "--d-model", "8",
            "--heads", "2", "--blocks", "2", "--steps", "2", "--train-max", "3", "--key-vocab", "16",
            "--outdir", str(tmp_path / "run"), "--no-progress"]
    assert main(argv) == 0
    capsys.readouterr()
    out = tmp_path / "probe.json"
    assert main(["probe-model", "--model", str(tmp_path / "run"), "--lengths", "4", "8", "16", "--windows", "5",
                 "--bootstrap", "10", "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "layer" in printed and "wrote" in printed
    res = json.loads(out.read_text())
    assert res["layers"] == [0, 1] and res["text"]["task"] == "recall" and res["model"]["format"] == "varsim-checkpoint"
    assert main(["probe-model", "--model", str(tmp_path / "run"), "--text", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--text" in err[0], err
    assert main(["probe-model", "--model", str(tmp_path / "run"), "--query-position", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--query-position" in err[0], err


def test_std_figure_draws_a_trained_decoder_beside_smollm2(tmp_path):
    from varsim.figures import fig_probe_std
    from varsim.figures.probe import ProbeSource

    out = tmp_path / "decoder.json"
    probe_trained(_model("decoder"), lengths=[4, 8, 16], windows=8, bootstrap=10, seed=0, out=out)
    data = fig_probe_std.compute(True, 0, source=ProbeSource([out, COMMITTED]))
    assert data["rows"][0]["model"] == "trained decoder (recall, RoPE, softmax attention)"  # the full label
    fig = fig_probe_std.draw(data)
    titles = [ax.get_title().replace("\n", " ") for ax in fig.axes if ax.get_visible() and ax.get_title()]
    # panel titles: what the model is, short (task and kind, positions; the checkpoint's steps when recorded)
    assert titles[:2] == ["recall decoder, RoPE, layer 0", "recall decoder, RoPE, layer 1"]
    assert any(t.startswith("SmolLM2-135M") for t in titles[2:])


def _grid_record(rid: str, config: dict) -> dict:
    """A minimal valid ``varsim reproduce`` run record of run ``rid`` trained with ``config``."""
    from varsim.experiments.records import RUN_FORMAT

    return {"format": RUN_FORMAT, "run_id": rid,
            "spec": {"run_id": rid, "architecture": "decoder_rope", "seed_index": 0, "train_config": config,
                     "eval": {"lengths": [4, 8]}},
            "train": {"status": "completed"}, "in_distribution": {"accuracy": 0.75},
            "eval": {"lengths": [4, 8], "correct": [3, 2], "accuracy": [0.75, 0.5], "ci_low": [0.3, 0.1],
                     "ci_high": [0.95, 0.9]},
            "probes": {}, "provenance": {"git_commit": "abc123"}}


def test_probe_of_a_grid_checkpoint_names_its_grid_run(tmp_path, capsys):
    """A checkpoint in a `varsim reproduce` grid (GRID/checkpoints/RUN_ID/, record GRID/runs/RUN_ID.json) is probed
    from its directory, and the result names the run (id, record, its digest, accuracies); a record of another
    training config is not claimed, and a grid root (no checkpoint, no model file) is a one-line error. Catches a
    probe file that cannot be traced to the grid run it came from, or that names a run it did not come from."""
    from varsim.pretrained.loading import file_digest
    from varsim.train.checkpoint import read_checkpoint, resolve_checkpoint

    rid = "recall-decoder_rope-none-softmax-d2-s0"
    grid = tmp_path / "grid"
    run_dir = grid / "checkpoints" / rid
    argv = ["train", "--task", "recall", "--architecture", "decoder", "--positions", "rope", "--d-model", "8",
            "--heads", "2", "--blocks", "2", "--steps", "2", "--train-max", "3", "--key-vocab", "16",
            "--outdir", str(run_dir), "--no-progress"]
    assert main(argv) == 0
    config = read_checkpoint(resolve_checkpoint(run_dir))[0]["config"]
    record = grid / "runs" / f"{rid}.json"
    record.parent.mkdir()
    record.write_text(json.dumps(_grid_record(rid, config)))
    capsys.readouterr()
    out = tmp_path / "probe.json"
    assert main(["probe-model", "--model", str(run_dir), "--lengths", "4", "8", "--windows", "4", "--bootstrap", "0",
                 "-o", str(out)]) == 0
    g = json.loads(out.read_text())["model"]["grid_run"]
    assert g["run_id"] == rid and g["record"] == f"runs/{rid}.json" and g["record_sha256"] == file_digest(record)
    assert g["spec"] == {"run_id": rid, "architecture": "decoder_rope", "seed_index": 0}
    assert g["git_commit"] == "abc123" and g["eval"]["accuracy"] == [0.75, 0.5]
    assert g["in_distribution_accuracy"] == 0.75

    record.write_text(json.dumps(_grid_record(rid, {**config, "seed": config["seed"] + 1})))
    assert main(["probe-model", "--model", str(run_dir), "--lengths", "4", "8", "--windows", "4", "--bootstrap", "0",
                 "-o", str(out)]) == 0
    assert "grid_run" not in json.loads(out.read_text())["model"]
    capsys.readouterr()
    assert main(["probe-model", "--model", str(grid), "--lengths", "4", "8"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(grid) in err[0], err
