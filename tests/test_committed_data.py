"""Committed data is what the current code makes from its recorded inputs.

Each committed probe of a real model records the digest of the text it read; the current built-in text must have the
same digest (the text is built from Python's bundled documentation, so only on the Python version the data records).
Catches data left stale after the text (or its builder) changed.

The committed probes of trained decoders name the decoder grid run they probed (``model.grid_run``) and the
checkpoint's digest; with the grid at hand (``VARSIM_DECODER_GRID=DIR``, the ``varsim reproduce DIR --preset decoder``
output) the probe is run again on that checkpoint and must give the committed numbers.

The committed reproduction records its settings and its runs; the summary next to them must be what the current
aggregation makes of those runs, for the settings the README documents.
"""

from __future__ import annotations

import json
import platform
from pathlib import Path

import pytest

from varsim.pretrained.text import builtin_text, text_digest

pytestmark = pytest.mark.kernel_sensitive  # .ci/run runs these again under another BLAS kernel

PROBE_DATA = Path(__file__).resolve().parents[1] / "varsim" / "figures" / "data" / "probe"


PRETRAINED_PROBES = [p for p in sorted(PROBE_DATA.glob("*.json")) if "task" not in json.loads(p.read_text())["text"]]


@pytest.mark.parametrize("path", PRETRAINED_PROBES, ids=lambda p: p.stem)
def test_probe_data_read_the_current_text(path):
    data = json.loads(path.read_text())
    recorded_python = data["provenance"]["versions"]["python"]
    if recorded_python.rsplit(".", 1)[0] != platform.python_version().rsplit(".", 1)[0]:
        pytest.skip(f"the built-in text depends on the Python version: data made on {recorded_python}")
    text = data["text"]
    assert text["sha256"] == text_digest(builtin_text(text["source"])), (
        f"{path.name} was made from another text than the current built-in {text['source']!r}")


# ---------------------------------------------------------------------------------------------------------------
# The committed probes of trained decoders (varsim/figures/data/probe/decoder_*.json, docs/probe/README.md)

#: file -> positional encoding of the decoder grid's run it probed (argmax, no norm, softmax, 2 blocks, seed 0)
DECODER_PROBES = {"decoder_nope.json": "none", "decoder_rope.json": "rope", "decoder_alibi.json": "alibi"}


def _decoder_run_id(positions: str) -> str:
    return f"argmax-decoder_{positions}-none-softmax-d2-s0"


@pytest.mark.parametrize("name", sorted(DECODER_PROBES))
def test_committed_decoder_probe_names_its_grid_run(name):
    """Each committed decoder probe is a complete probe result of the grid's final checkpoint (step 2000 of
    GRID/checkpoints/RUN_ID) of the run its file name says, at the documented settings (N = 16..1024 x2, both
    blocks, 40 windows, seed 0, 400 resamples), made at a clean commit. Catches a file of another run or
    encoding, a partial grid of lengths or layers, and data without a traceable source."""
    from varsim.figures.probe import COMMITTED_FILES, read_probe

    assert name in COMMITTED_FILES
    data = read_probe(PROBE_DATA / name)
    pos, rid = DECODER_PROBES[name], _decoder_run_id(DECODER_PROBES[name])
    assert data["lengths"] == [16, 32, 64, 128, 256, 512, 1024] and data["layers"] == [0, 1]
    assert data["n_keys"] == [n + 1 for n in data["lengths"]]  # argmax: one token per item, then the query
    st = data["settings"]
    assert (st["model"], st["windows"], st["seed"], st["bootstrap"]) == (f"checkpoints/{rid}", 40, 0, 400)
    model = data["model"]
    assert (model["format"], model["file"], model["step"]) == ("varsim-checkpoint", "ckpt-00002000.npz", 2000)
    cfg = model["spec"]["config"]
    assert (cfg["architecture"], cfg.get("positions", "none"), cfg["norm"], cfg["task"]) == ("decoder", pos, "none",
                                                                                             "argmax")
    assert (cfg["d_model"], cfg["n_heads"], cfg["n_blocks"], "attention" not in cfg) == (64, 4, 2, True)
    grid = model["grid_run"]
    assert grid["run_id"] == rid and grid["record"] == f"runs/{rid}.json"
    assert {k: grid["spec"][k] for k in ("task", "architecture", "norm", "attention", "depth", "seed_index")} == {
        "task": "argmax", "architecture": f"decoder_{pos}", "norm": "none", "attention": "softmax", "depth": 2,
        "seed_index": 0}
    assert data["text"]["task"] == "argmax" and data["provenance"]["git_dirty"] is False


@pytest.mark.parametrize("name", sorted(DECODER_PROBES))
def test_committed_decoder_probe_is_what_the_grid_checkpoint_gives(name):
    """With the decoder grid at hand (VARSIM_DECODER_GRID), the probe of the named run's checkpoint (same digest)
    gives the committed numbers exactly. Catches data edited by hand or made from another checkpoint or code."""
    import os

    from varsim.experiments.records import grid_run
    from varsim.train.attention_probe import probe_trained
    from varsim.train.checkpoint import read_checkpoint, resolve_checkpoint

    grid = os.environ.get("VARSIM_DECODER_GRID")
    if not grid:
        pytest.skip("set VARSIM_DECODER_GRID to the `varsim reproduce DIR --preset decoder` output to recheck")
    committed = json.loads((PROBE_DATA / name).read_text())
    st = committed["settings"]
    fresh = probe_trained(Path(grid) / st["model"], lengths=st["lengths"], windows=st["windows"],
                          layers=st["layers"], seed=st["seed"], bootstrap=st["bootstrap"])
    assert fresh["model"]["sha256"] == committed["model"]["sha256"]
    ckpt = resolve_checkpoint(Path(grid) / st["model"])
    run = grid_run(ckpt, read_checkpoint(ckpt)[0]["config"])  # what `varsim probe-model` records as model.grid_run
    assert run["record_sha256"] == committed["model"]["grid_run"]["record_sha256"]
    for key in ("per_length", "slopes", "layer_summary", "n_keys"):
        assert fresh[key] == committed[key], key


def test_probe_figures_draw_the_committed_decoders_beside_smollm2():
    """The default probe figures read the committed decoder files, next to SmolLM2's: fig_probe_layers puts each
    decoder's two layers after SmolLM2's with the files' slopes. Catches committed files the figures do not use."""
    from varsim.figures import fig_probe_layers, fig_probe_std
    from varsim.figures.probe import ProbeSource

    source = ProbeSource()
    data = fig_probe_layers.compute(source=source)
    names = [r["name"] for r in data["rows"]]
    assert names[:4] == ["SmolLM2", "NoPE decoder", "RoPE decoder", "ALiBi decoder"]
    for row, name in zip(data["rows"][1:4], ("decoder_nope.json", "decoder_rope.json", "decoder_alibi.json")):
        raw = json.loads((PROBE_DATA / name).read_text())
        assert [e["y2"]["value"] for e in row["layers"]] == raw["slopes"]["y2"]["value"]
        assert [e["std"]["median"] for e in row["layers"]] == pytest.approx(  # the summary keeps 4 decimals
            [r["median_slope_std"] for r in raw["layer_summary"]], abs=5e-5)
        assert f"varsim/figures/data/probe/{name}" in data["footer"]
    std = fig_probe_std.compute(source=source)
    assert [r["name"] for r in std["rows"]][1:4] == [f"argmax decoder, {p}, 2000 steps" for p in ("NoPE", "RoPE",
                                                                                                  "ALiBi")]


# ---------------------------------------------------------------------------------------------------------------
# The committed reproduction (varsim/figures/data/reproduction, written by `python -m varsim.figures.reproduction`)

REPRODUCTION_DATA = Path(__file__).resolve().parents[1] / "varsim" / "figures" / "data" / "reproduction"
# The compact run records keep 6 significant digits (varsim.figures.reproduction._SIG) of the full records the
# summary was made from; accuracies are restored exactly from their integer counts, so what is left is the rounding
# of the training accuracies and probe slopes: 5e-7 at most in the committed data (measured).
SUMMARY_ABS_TOL = 2e-6


def _committed_reproduction():
    from varsim.figures.reproduction import load_compact

    return load_compact(REPRODUCTION_DATA)


def _records_with_exact_accuracies(runs: list[dict]) -> dict:
    """The compact run records by run id, their accuracies recomputed from the counts (the full records' own
    ``correct / examples``); each committed accuracy must be that ratio to the compact records' 6 digits."""
    out = {}
    for rec in json.loads(json.dumps(runs)):
        ev, ind = rec["eval"], rec["in_distribution"]
        exact = [k / ev["examples"] for k in ev["correct"]]
        assert ev["accuracy"] == [float(f"{a:.6g}") for a in exact], f"{rec['run_id']}: accuracy != correct / examples"
        assert ind["accuracy"] == float(f"{ind['correct'] / ind['examples']:.6g}"), f"{rec['run_id']}: in-distribution"
        ev["accuracy"], ind["accuracy"] = exact, ind["correct"] / ind["examples"]
        out[rec["run_id"]] = rec
    return out


def _differences(committed, fresh, path="summary") -> list[str]:
    """Every place where two JSON trees differ: keys, lengths, strings, integers and booleans exactly, floats to
    SUMMARY_ABS_TOL."""
    if isinstance(committed, dict) and isinstance(fresh, dict):
        if set(committed) != set(fresh):
            return [f"{path}: keys {sorted(set(committed) ^ set(fresh))} in one summary only"]
        return [d for k in committed for d in _differences(committed[k], fresh[k], f"{path}.{k}")]
    if isinstance(committed, list) and isinstance(fresh, list):
        if len(committed) != len(fresh):
            return [f"{path}: {len(committed)} entries committed, {len(fresh)} computed"]
        return [d for i, (a, b) in enumerate(zip(committed, fresh)) for d in _differences(a, b, f"{path}[{i}]")]
    if isinstance(committed, float) and isinstance(fresh, float) and type(committed) is type(fresh):
        if abs(committed - fresh) <= SUMMARY_ABS_TOL:
            return []
    elif type(committed) is type(fresh) and committed == fresh:
        return []
    return [f"{path}: committed {committed!r}, computed {fresh!r}"]


def test_committed_reproduction_settings_are_the_documented_preset():
    """settings.json (as `varsim reproduce` stored it), the runs file's header and the summary all hold
    ``ReproductionSettings.full()``, the preset the README's numbers are documented for, and the runs are exactly its
    grid. Catches data committed from a quick run, from other seeds or steps, or left behind after the preset
    changed."""
    from varsim.experiments.settings import ReproductionSettings

    full = ReproductionSettings.full().to_dict()
    stored = json.loads((REPRODUCTION_DATA / "settings.json").read_text())
    data = _committed_reproduction()
    assert stored["settings"] == full
    assert data["settings"] == full
    assert data["summary"]["settings"] == full
    grid = [f"{t}-{a}-{n}-s{s}" for t in full["tasks"] for a in full["architectures"] for n in full["norms"]
            for s in range(full["seeds"])]
    assert [r["run_id"] for r in data["runs"]] == grid


def test_committed_reproduction_summary_is_what_the_code_makes_of_the_runs():
    """The current aggregation (summarize_reproduction, as `varsim reproduce --aggregate-only` runs it) of the
    committed run records gives the committed summary.json: every number (accuracy intervals, pooled intervals,
    paired differences and both p-values, probe slopes, learned counts), apart from the run's provenance; and
    table.md is that summary's table. Catches a summary left stale after the aggregation or the records changed, and
    an edited number in either file."""
    from varsim.experiments.aggregation import kind_of
    from varsim.experiments.reproduction_summary import summarize_reproduction
    from varsim.experiments.settings import ReproductionSettings

    data = _committed_reproduction()
    runs = _records_with_exact_accuracies(data["runs"])
    fresh = summarize_reproduction(REPRODUCTION_DATA, {"settings": ReproductionSettings.from_dict(data["settings"]),
                                                       "runs": runs, "missing": [], "corrupt": []})
    committed = dict(data["summary"])
    del committed["provenance"], fresh["provenance"]
    differences = _differences(committed, fresh)
    assert not differences, f"{len(differences)} differences, e.g. " + "; ".join(differences[:5])
    assert (REPRODUCTION_DATA / "table.md").read_text() == kind_of(data["settings"]).render(data["summary"])
