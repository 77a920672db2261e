"""Tasks, key encodings and architectures are registries that the model, the budget, training and the probes ask.

A task registered in a test (counting) trains, gradchecks, is budgeted and probed with no change to those modules; a
key encoding registered in a test (one-hot) gradchecks and equals the learned key table; the budget reads the cost of
the config's architecture. Catches a consumer that still branches on a task's or an encoding's name.
"""

from __future__ import annotations

import dataclasses
import types

import numpy as np
import pytest
from nn_checks import batch_for, check_model_grads

from varsim.nn import set_cost
from varsim.nn.architectures import ARCHITECTURES, build_model, get_architecture
from varsim.nn.model import ModelConfig, Transformer
from varsim.tasks import (
    KEY_ENCODINGS,
    TASK_REGISTRY,
    KeyEncoding,
    Task,
    chance_level,
    get_key_encoding,
    get_task,
    make_batch,
    register_key_encoding,
    register_task,
)
from varsim.tasks._task import Field
from varsim.train import TrainConfig, train
from varsim.train.budget import check_training_cost, training_cost


class Counting(Task):
    """Items are symbols from ``n_classes``; the query is a symbol; the target is how often it occurs (capped)."""

    name = "counting"
    fields = (Field("symbol", "id", "item", "n_classes"), Field("probe", "id", "example", "n_classes"))
    vocab = {"n_classes": 10}
    output_vocab = "n_classes"
    default_train_range = (2, 16)

    def draw(self, rng, sizes, mask, vocab):
        b, n = mask.shape
        c = vocab["n_classes"]
        symbol = rng.integers(0, c, size=(b, n))
        probe = rng.integers(0, c, size=b)
        target = np.minimum(((symbol == probe[:, None]) & mask).sum(axis=1), c - 1)
        return {"symbol": symbol, "probe": probe, "mask": mask, "target": target}

    def correct_item(self, batch):
        return np.argmax((batch["symbol"] == batch["probe"][:, None]) & batch["mask"], axis=1)

    def n_features(self, vocab, key_encoding):
        return vocab["n_classes"] + 1

    def write_features(self, arrays, vocab, key_encoding, items, query):
        np.put_along_axis(items, arrays["symbol"][..., None], 1.0, axis=-1)
        np.put_along_axis(query, arrays["probe"][..., None], 1.0, axis=-1)
        query[..., -1] = 1.0


@pytest.fixture
def counting():
    task = register_task(Counting())
    yield task
    del TASK_REGISTRY[task.name]


def _write_onehot(keys, out):
    out[...] = 0.0
    np.put_along_axis(out, keys[..., None], 1.0, axis=-1)


@pytest.fixture
def onehot_keys():
    enc = register_key_encoding(KeyEncoding("onehot_test", "one-hot key features", lambda v: v, _write_onehot))
    yield enc
    del KEY_ENCODINGS[enc.name]


def test_registries_refuse_unknown_and_duplicate_names(counting):
    with pytest.raises(ValueError, match="task"):
        get_task("sorting")
    with pytest.raises(ValueError, match="already registered"):
        register_task(Counting())
    with pytest.raises(ValueError, match="key_encoding"):
        get_key_encoding("onehot")
    with pytest.raises(ValueError, match="already registered"):
        register_key_encoding(get_key_encoding("binary"))
    with pytest.raises(ValueError, match="architecture"):
        ModelConfig(task="argmax", architecture="mamba")
    with pytest.raises(ValueError, match="architecture"):
        get_architecture("mamba")

    class Clash(Counting):
        name = "clash"
        vocab = {"n_classes": 12}

    with pytest.raises(ValueError, match="n_classes"):
        register_task(Clash())  # one vocabulary name, one default


def test_chance_is_the_inverse_of_the_output_vocabulary():
    from varsim.figures.remedies import chance_of

    assert chance_level("argmax") == 1 / 10 and chance_level("dictionary") == 1 / 16
    assert chance_level("argmax", {"n_classes": 4, "value_vocab": 8}) == 1 / 4
    assert chance_level("dictionary", ModelConfig(task="dictionary", value_vocab=8)) == 1 / 8
    assert chance_of({"model": {"value_vocab": 32}}, "dictionary") == 1 / 32


def test_a_registered_task_trains_gradchecks_is_budgeted_and_probed(counting, tmp_path):
    """Nothing outside the task's own class is written for it."""
    from varsim.train.probes import probe_length_shift

    b = make_batch("counting", 64, (1, 8), np.random.default_rng(0), n_classes=5)
    want = [min(int(np.sum(s[m] == p)), 4) for s, m, p in zip(b["symbol"], b["mask"], b["probe"])]
    np.testing.assert_array_equal(b["target"], want)

    cfg = ModelConfig(task="counting", d_model=8, n_heads=2, d_hidden=12, n_blocks=2, dtype="float64", n_classes=5)
    assert cfg.n_outputs == 5 and cfg.n_features == 6 and "query" not in Transformer(cfg).params
    check_model_grads(cfg)

    tcfg = TrainConfig(task="counting", model={"d_model": 8, "n_heads": 2, "d_hidden": 12, "n_classes": 5},
                       steps=6, batch_size=8, log_every=3, checkpoint_every=6)
    assert tcfg.train_range == (2, 16)  # the task's smallest training set size
    assert check_training_cost(tcfg).flops > 0
    rec = train(tcfg, tmp_path / "run", progress=False)
    assert rec["status"] == "completed" and rec["steps_done"] == 6

    model = Transformer(tcfg.model, seed=0)
    out = probe_length_shift(model, "counting", lengths=[2, 4], n_sets=4, seed=0, hist_lengths=(),
                      task_kwargs=tcfg.task_kwargs())
    assert len(out["attn_correct"]["max_head"]) == 2


def test_a_registered_key_encoding_plugs_in_and_the_learned_table_is_a_one_hot_block(onehot_keys):
    """The learned key table (``embedding``) is a one-hot block of the item MLP's input: a model whose one-hot key
    features carry the table's rows as weights computes the same logits. Catches a table added to the wrong rows or
    left out of the query token."""
    base = dict(task="dictionary", d_model=8, n_heads=2, d_hidden=12, key_vocab=13, value_vocab=4, dtype="float64",
                n_blocks=2)
    check_model_grads(ModelConfig(**base, key_encoding="onehot_test"))
    table = Transformer(ModelConfig(**base, key_encoding="embedding"), seed=2)
    onehot = Transformer(ModelConfig(**base, key_encoding="onehot_test"), seed=2)
    assert onehot.params["embed.0.w"].shape == (13 + 4 + 1, 12) and "embed.key_table" not in onehot.params
    for k, v in table.params.items():
        if k == "embed.0.w":
            onehot.params[k][...] = np.vstack([table.params["embed.key_table"], v])
        elif k != "embed.key_table":
            onehot.params[k][...] = v
    batch = batch_for(table.config, 5, (2, 7), seed=3)
    np.testing.assert_allclose(onehot.forward(batch)[0], table.forward(batch)[0], rtol=1e-12, atol=1e-12)


def test_the_budget_reads_the_architecture_cost_and_the_model_refuses_by_it(monkeypatch):
    """The training budget's FLOPs come from the config's architecture entry; the model's memory refusal uses the
    same attention_bytes the budget adds up."""
    tcfg = TrainConfig(task="argmax", model={"d_model": 16, "n_heads": 2}, steps=100)
    base = training_cost(tcfg)
    heavy = types.SimpleNamespace(**{k: getattr(set_cost, k) for k in set_cost.__all__})
    heavy.forward_flops = lambda config, t: 1e9 * set_cost.forward_flops(config, t)
    arch = get_architecture("set_transformer")
    monkeypatch.setitem(ARCHITECTURES, "heavy", dataclasses.replace(arch, name="heavy", cost=heavy))
    heavy_cfg = tcfg.replace(model=dataclasses.replace(tcfg.model, architecture="heavy"))
    assert heavy_cfg.model.to_dict()["architecture"] == "heavy" and "architecture" not in tcfg.model.to_dict()
    assert training_cost(heavy_cfg).flops == pytest.approx(1e9 * base.flops)
    with pytest.raises(ValueError, match="is too large: the run would take"):
        check_training_cost(heavy_cfg)
    assert isinstance(build_model(heavy_cfg.model), Transformer)

    cfg = ModelConfig(task="argmax", d_model=8, n_heads=2, n_blocks=3, attention="ssmax")
    need = set_cost.attention_bytes(cfg, 4, 30)
    assert need == set_cost.attention_bytes(cfg, 4, 30) > set_cost.attention_bytes(cfg, 4, 29)
    model = Transformer(cfg, memory_budget=need)
    model.forward(batch_for(cfg, 4, 30))
    with pytest.raises(ValueError, match="N=31 is too long"):
        model.forward(batch_for(cfg, 4, 31))


def test_the_reproduction_grid_takes_a_registered_task_and_keeps_the_paper_tasks_by_default(counting):
    from varsim.experiments.settings import ReproductionSettings, job_specs

    assert ReproductionSettings.quick().tasks == ("argmax", "dictionary")
    specs = job_specs(ReproductionSettings.quick(seeds=1, tasks=("counting",), norms=("none",)))
    assert [s["run_id"] for s in specs] == ["counting-residual-none-s0"]
    assert specs[0]["train_config"]["model"]["task"] == "counting"


def _argmax_batch():
    b = make_batch("argmax", 3, (2, 5), np.random.default_rng(0), n_classes=4)
    b["priority"][~b["mask"]] = np.nan  # padding may hold anything
    b["label"][~b["mask"]] = 99
    return b


@pytest.mark.parametrize("change,match", [
    (lambda b: b.pop("label"), r"argmax batch is missing \['label'\]"),
    (lambda b: b.update(mask=b["mask"].astype(int)), r"batch\['mask'\] must be a bool"),
    (lambda b: b["mask"].__setitem__(1, False), "at least one real item"),
    (lambda b: b.update(priority=b["priority"].astype(np.float32)[:, :2]), r"batch\['priority'\] must be a float"),
    (lambda b: b["priority"].__setitem__((0, 0), np.inf), r"batch\['priority'\] has non-finite values"),
    (lambda b: b.update(label=b["label"].astype(float)), r"batch\['label'\] must be an integer"),
    (lambda b: b["label"].__setitem__((0, 0), 4), r"batch\['label'\] has ids outside \[0, 4\)"),
])
def test_a_batch_is_checked_against_the_task_schema(change, match):
    task = get_task("argmax")
    good = task.check_batch(_argmax_batch(), {"n_classes": 4})
    assert np.isfinite(good["priority"]).all() and good["label"].max() < 4  # padding read as 0
    bad = _argmax_batch()
    change(bad)
    with pytest.raises(ValueError, match=match):
        task.check_batch(bad, {"n_classes": 4})


def test_register_key_encoding_keeps_its_old_keyword_with_a_deprecation_warning():
    """0.1.0's ``register_key_encoding(encoding=...)`` registers with a DeprecationWarning (the registry rewrite
    renamed the parameter: a TypeError before the shim); anything else than one encoding is a TypeError."""
    enc = KeyEncoding("onehot_kw_test", "one-hot key features", lambda v: v, _write_onehot)
    try:
        with pytest.warns(DeprecationWarning, match="positionally"):
            assert register_key_encoding(encoding=enc) is enc
        assert get_key_encoding("onehot_kw_test") is enc
    finally:
        KEY_ENCODINGS.pop("onehot_kw_test", None)
    with pytest.raises(TypeError):
        register_key_encoding(enc, encoding=enc)
    with pytest.raises(TypeError):
        register_key_encoding(encodings=enc)
