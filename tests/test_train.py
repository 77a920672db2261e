"""Training: it learns both tasks, logs metrics, stops on non-finite losses; evaluation and its intervals; config."""

import json
import math

import numpy as np
import pytest

from varsim.nn.model import ModelConfig, Transformer
from varsim.train import DEFAULT_LENGTHS, TrainConfig, evaluate, load_checkpoint, read_metrics, train, wilson_interval
from varsim.train.checkpoint import list_checkpoints
from varsim.train.loop import training_batch

# Tiny, fast recipes (about 1-2 s each on one core) that reach >= 97% at the training lengths on every seed tried.
ARGMAX_RECIPE = dict(task="argmax", model={"d_model": 32, "n_heads": 1}, lr=1e-2, steps=600, batch_size=64)
DICT_RECIPE = dict(task="dictionary", model={"d_model": 32, "n_heads": 1, "key_vocab": 256}, lr=1e-2, steps=800,
                   batch_size=64)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """Both tasks trained once for the module: {task: (run dir, summary)}."""
    out = {}
    for recipe in (ARGMAX_RECIPE, DICT_RECIPE):
        d = tmp_path_factory.mktemp(recipe["task"])
        cfg = TrainConfig(**recipe, checkpoint_every=10_000, log_every=100)
        out[recipe["task"]] = (d, train(cfg, d))
    return out


@pytest.mark.parametrize("task", ["argmax", "dictionary"])
def test_tiny_model_learns_the_task_at_training_lengths(trained, task):
    """>= 95% at N = 2, 8, 16 (inside the training range) on held-out examples.

    Catches a wrong gradient anywhere in the chain (sign, missing term, wrong axis), an optimizer that does not
    descend, an ignored mask (padding changes the answer at mixed sizes), or a target/model feature mismatch.
    """
    d, summary = trained[task]
    assert summary["status"] == "completed" and summary["steps_done"] == summary["steps"]
    ev = evaluate(d, lengths=[2, 8, 16], n_examples=512, batch_size=256, seed=1)
    assert min(ev["accuracy"]) >= 0.95, ev["accuracy"]
    # the training loss fell from chance level: log(10) for argmax, log(16) for dictionary
    recs = [r for r in read_metrics(d / "metrics.jsonl") if "loss" in r]
    assert recs[0]["loss"] > recs[-1]["loss"] and recs[-1]["loss"] < 0.3


def test_metrics_log_records_and_summary(trained):
    d, summary = trained["argmax"]
    recs = read_metrics(d / "metrics.jsonl")
    assert [r["step"] for r in recs] == list(range(100, 601, 100))
    for r in recs:
        assert set(r) >= {"step", "loss", "accuracy", "lr", "grad_norm", "steps_per_s", "elapsed_s"}
        assert 0.0 <= r["accuracy"] <= 1.0 and r["grad_norm"] > 0 and r["steps_per_s"] > 0
    assert summary["final_loss"] == recs[-1]["loss"] and summary["train_accuracy"] == recs[-1]["accuracy"]
    assert json.loads((d / "summary.json").read_text())["status"] == "completed"
    assert [s for s, _ in list_checkpoints(d)] == [600]
    # resuming a finished run does nothing and reports the same summary
    again = train(TrainConfig(**ARGMAX_RECIPE, checkpoint_every=10_000, log_every=100), d, resume=True)
    assert again["steps_done"] == 600 and again["final_loss"] == summary["final_loss"]


def test_evaluate_output_shape_intervals_and_pairing(trained):
    """Wilson intervals bracket the accuracy inside [0, 1]; the same seed gives the same examples (paired), for a
    checkpoint path and for the loaded model alike; n_examples not a multiple of batch_size is honoured."""
    d, _ = trained["argmax"]
    model, cfg, state = load_checkpoint(d)
    ev = evaluate(d, lengths=[4, 64, 512], n_examples=100, batch_size=32, seed=3)
    assert ev["lengths"] == [4, 64, 512] and ev["n_examples"] == 100 and ev["step"] == 600
    for key in ("accuracy", "ci_low", "ci_high", "correct", "time_s"):
        assert len(ev[key]) == 3
    for a, lo, hi, k in zip(ev["accuracy"], ev["ci_low"], ev["ci_high"], ev["correct"]):
        assert 0.0 <= lo <= a <= hi <= 1.0 and a == k / 100
    assert ev["config"] == cfg.to_dict() and "versions" in ev["provenance"]
    ev2 = evaluate(model, lengths=[4, 64, 512], n_examples=100, batch_size=32, seed=3)
    assert ev2["correct"] == ev["correct"]
    ev3 = evaluate(model, lengths=[4, 64, 512], n_examples=100, batch_size=32, seed=3, workers=2)
    assert ev3["correct"] == ev["correct"] and ev3["ranking"] == ev["ranking"]  # threads change no bit
    assert ev["accuracy"][0] > ev["accuracy"][2]  # accuracy falls with the set size (the paper's phenomenon)
    json.dumps(ev)  # JSON-serializable as is
    assert DEFAULT_LENGTHS == tuple(2**k for k in range(4, 15))


def test_evaluate_bad_input(trained):
    d, _ = trained["dictionary"]
    with pytest.raises(ValueError, match="lengths"):
        evaluate(d, lengths=[16, 0])
    with pytest.raises(ValueError, match="key_vocab"):
        evaluate(d, lengths=[512])  # the recipe's key vocabulary is 256
    with pytest.raises(ValueError, match="n_examples"):
        evaluate(d, lengths=[4], n_examples=0)
    with pytest.raises(ValueError, match="batch_size"):
        evaluate(d, lengths=[4], batch_size=-1)
    with pytest.raises(ValueError, match="workers"):
        evaluate(d, lengths=[4], workers=0)
    with pytest.raises(ValueError, match="checkpoint_or_model"):
        evaluate(42)
    with pytest.raises(ValueError, match="does not exist"):
        evaluate(d / "nope.npz")


@pytest.mark.parametrize("k,n", [(0, 10), (3, 10), (8, 10), (10, 10), (512, 1024), (1, 2)])
def test_wilson_interval_inverts_the_score_test(k, n):
    """Each finite end p0 satisfies |k/n - p0| = z sqrt(p0 (1 - p0) / n): the definition of the Wilson interval,
    checked independently of the closed form (a Wald interval k/n +- z sqrt(p(1-p)/n) fails it)."""
    z = 1.959963984540054
    lo, hi = wilson_interval(k, n)
    assert 0 <= lo <= k / n <= hi <= 1
    for p0 in (lo, hi):
        if 0 < p0 < 1:
            assert abs(k / n - p0) == pytest.approx(z * math.sqrt(p0 * (1 - p0) / n), rel=1e-9)
    with pytest.raises(ValueError, match="trials"):
        wilson_interval(0, 0)  # no interval from no data (the one implementation refuses zero trials)
    with pytest.raises(ValueError, match="successes"):
        wilson_interval(11, 10)


def test_wilson_interval_has_one_home():
    """varsim.train and varsim.experiments.stats export the same function (one implementation, one meaning);
    catches a second copy with its own arguments (e.g. ``z=`` instead of ``confidence=``) creeping back."""
    from varsim._common import intervals
    from varsim.experiments import stats

    assert wilson_interval is intervals.wilson_interval is stats.wilson_interval


def test_non_finite_loss_stops_and_keeps_the_last_good_checkpoint(tmp_path):
    """A huge constant learning rate blows the float32 logits up within a few updates; the run must stop with a
    message before applying the bad update, log the event, and leave only finite checkpoints on disk."""
    cfg = TrainConfig(task="argmax", model={"d_model": 16, "n_heads": 1}, lr=1e12, warmup=0, schedule="constant",
                      clip_norm=None, steps=50, batch_size=16, checkpoint_every=1, log_every=1, keep_checkpoints=50)
    summary = train(cfg, tmp_path)
    assert summary["status"] == "non_finite" and summary["steps_done"] < 50
    assert "non-finite" in summary["message"] and "last good checkpoint" in summary["message"]
    steps = [s for s, _ in list_checkpoints(tmp_path)]
    assert steps and max(steps) == summary["steps_done"]
    assert summary["checkpoint"].endswith(f"ckpt-{summary['steps_done']:08d}.npz")
    model, _, state = load_checkpoint(tmp_path)
    assert all(np.isfinite(p).all() for p in model.params.values())
    events = [r for r in read_metrics(tmp_path / "metrics.jsonl") if "event" in r]
    assert len(events) == 1 and events[0]["step"] == summary["steps_done"] + 1


def test_non_finite_parameter_is_never_checkpointed(tmp_path, monkeypatch):
    """A NaN injected into a parameter (here after update 3, via a wrapped optimizer step) must stop the run at
    the next checkpoint or loss, whichever comes first, without writing that checkpoint."""
    from varsim.nn import optim

    real_step = optim.Adam.step

    def poisoned(self, grads):
        info = real_step(self, grads)
        if self.t == 3:
            next(iter(self.params.values()))[...] = np.nan
        return info

    monkeypatch.setattr(optim.Adam, "step", poisoned)
    cfg = TrainConfig(task="argmax", model={"d_model": 16, "n_heads": 1}, steps=10, batch_size=8,
                      checkpoint_every=2, log_every=1)
    summary = train(cfg, tmp_path)
    assert summary["status"] == "non_finite" and summary["steps_done"] == 3
    assert [s for s, _ in list_checkpoints(tmp_path)] == [2]


def test_training_batches_depend_on_data_seed_and_step_only():
    """Runs that differ only in model options see the same batches (paired comparisons); data_seed defaults to
    seed; step k and step k + 1 differ."""
    a = TrainConfig(task="dictionary", model={"norm": "layernorm"}, seed=5)
    b = TrainConfig(task="dictionary", model={"norm": "none", "residual": False}, seed=5)
    c = TrainConfig(task="dictionary", seed=6, data_seed=5)
    for k in (0, 17):
        ba, bb, bc = training_batch(a, k), training_batch(b, k), training_batch(c, k)
        for key in ba:
            np.testing.assert_array_equal(ba[key], bb[key])
            np.testing.assert_array_equal(ba[key], bc[key])
    assert not np.array_equal(training_batch(a, 0)["key"], training_batch(a, 1)["key"])


def test_config_round_trip_defaults_and_file(tmp_path):
    cfg = TrainConfig(task="dictionary", model=ModelConfig(task="dictionary", norm="standardize"), lr=3e-3)
    assert TrainConfig.from_dict(cfg.to_dict()) == cfg
    assert cfg.train_range == (2, 16) and TrainConfig(task="argmax").train_range == (1, 16)
    assert cfg.effective_data_seed == 0 and cfg.effective_warmup == 100
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"task": "argmax", "model": {"norm": "layernorm_per_head"}, "steps": 10}))
    loaded = TrainConfig.from_file(path)
    assert loaded.model.norm == "layernorm_per_head" and loaded.model.task == "argmax" and loaded.steps == 10
    diffs = cfg.differences(cfg.replace(lr=1e-3, checkpoint_every=7))
    assert list(diffs) == ["lr"]


@pytest.mark.parametrize(
    "kwargs,name",
    [
        ({"task": "sorting"}, "task"),
        ({"optimizer": "sgd"}, "optimizer"),
        ({"lr": float("nan")}, "lr"),
        ({"lr": float("inf")}, "lr"),
        ({"lr": 0}, "lr"),
        ({"steps": 0}, "steps"),
        ({"batch_size": 0}, "batch_size"),
        ({"train_max": 0}, "train_max"),
        ({"train_min": 5, "train_max": 3}, "train_min"),
        ({"task": "dictionary", "train_max": 1}, "train_max"),
        ({"task": "dictionary", "train_max": 100, "model": {"key_vocab": 64}}, "key_vocab"),
        ({"model": {"norm": "batchnorm"}}, "norm"),
        ({"model": {"task": "dictionary"}}, "model.task"),
        ({"model": {"d_model": 0}}, "d_model"),
        ({"model": {"widht": 3}}, "widht"),
        ({"model": 3}, "model"),
        ({"schedule": "linear"}, "schedule"),
        ({"warmup": 5000}, "warmup"),
        ({"clip_norm": -1.0}, "clip_norm"),
        ({"seed": -1}, "seed"),
        ({"checkpoint_every": 0}, "checkpoint_every"),
    ],
)
def test_bad_config_names_the_parameter(kwargs, name):
    args = {"task": "argmax", **kwargs}
    with pytest.raises(ValueError, match=name):
        TrainConfig(**args)


def test_bad_config_sources(tmp_path):
    with pytest.raises(ValueError, match="unknown config field"):
        TrainConfig.from_dict({"task": "argmax", "stpes": 3})
    with pytest.raises(ValueError, match="does not exist"):
        TrainConfig.from_file(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ValueError, match="bad.json.* not valid JSON"):
        TrainConfig.from_file(tmp_path / "bad.json")
    with pytest.raises(ValueError, match="config"):
        train(3.5, tmp_path / "run")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="outdir"):
        train(TrainConfig(task="argmax", steps=1), tmp_path / "file")


def test_model_built_by_train_matches_the_config_seed(tmp_path):
    """The run's initial parameters are Transformer(config.model, seed=config.seed): a checkpoint at step 0 is not
    written, so check via a 1-step run with a zero learning-rate effect (warmup of 1 and lr tiny)."""
    cfg = TrainConfig(task="argmax", model={"d_model": 8, "n_heads": 2}, lr=1e-30, steps=1, batch_size=2, seed=9)
    train(cfg, tmp_path)
    model, _, _ = load_checkpoint(tmp_path)
    ref = Transformer(cfg.model, seed=9)
    for k in ref.params:
        np.testing.assert_allclose(model.params[k], ref.params[k], rtol=0, atol=1e-20)


def test_progress_line_shows_loss_accuracy_and_speed(tmp_path, capsys):
    cfg = TrainConfig(task="argmax", model={"d_model": 8, "n_heads": 2}, steps=6, batch_size=4, log_every=3)
    train(cfg, tmp_path / "a", progress=True)
    err = capsys.readouterr().err
    assert "train argmax 6/6" in err and "loss" in err and "acc" in err and "steps/s" in err
    train(cfg, tmp_path / "b", progress=False)
    assert capsys.readouterr().err == ""


def test_blas_threads_pins_nests_and_restores(monkeypatch):
    """Training pins BLAS to one thread; overlapping uses share the first setting and the previous count returns
    only when the last one leaves (a restore in the middle would change a concurrent run's rounding)."""
    from varsim._common import blas as _blas

    controls = _blas._blas_controls()
    if not controls:
        pytest.skip("no controllable OpenBLAS in this process")
    get = lambda: [g() for g, _, _ in controls]  # noqa: E731
    before = get()
    with _blas.blas_threads(1) as outer:
        with _blas.blas_threads(3) as inner:
            assert outer == inner == 1 and get() == [1] * len(controls)
        assert get() == [1] * len(controls)
    assert get() == before
    monkeypatch.setattr(_blas, "_libs", [])
    with _blas.blas_threads(1) as none:
        assert none is None


# ----------------------------------------------------------------------------------------------------------------------
# Sizes beyond the machine or the time bound are refused up front (varsim.train.budget)

_MEASURED = [
    dict(task="argmax", batch_size=16),
    dict(task="dictionary", model={"key_vocab": 64}, batch_size=16, train_max=32),
    dict(task="argmax", model={"n_blocks": 2, "d_model": 32, "n_heads": 2}, batch_size=16, train_max=48),
    dict(task="dictionary", model={"n_blocks": 3, "d_model": 16, "n_heads": 2, "key_encoding": "embedding",
                                   "key_vocab": 512}, batch_size=8, train_max=40),
]


def _peak_bytes(fn):
    import tracemalloc

    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("model", [
    dict(task="argmax"),
    dict(task="argmax", attention="ssmax", n_blocks=2, pre_ln=True, norm="layernorm"),
    dict(task="dictionary", key_encoding="embedding", key_vocab=64, item_mlp_depth=3, predictor_depth=2),
    dict(task="dictionary", key_encoding="binary", key_vocab=64, n_blocks=3, d_model=16, n_heads=2),
])
def test_parameter_shapes_match_the_built_model_and_feed_the_cost_estimate(model):
    """varsim.nn.model.parameter_shapes(config) lists the built model's parameters (names, order, shapes) without
    building it, and the training cost counts exactly those parameters. Catches the cost estimate reaching into a
    half-made Transformer (which broke for weight maps with a learned parameter, ssmax) or a shape table that drifts
    from the model's."""
    from varsim.nn import set_cost
    from varsim.nn.model import parameter_shapes
    from varsim.train import budget

    config = ModelConfig(**model)
    built = Transformer(config, seed=0).params
    shapes = parameter_shapes(config)
    assert list(shapes) == list(built)
    assert shapes == {k: v.shape for k, v in built.items()}
    assert set_cost.state(config, copies=1)[1] == sum(v.size for v in built.values())
    train_config = TrainConfig(task=config.task, model={k: v for k, v in model.items() if k != "task"})
    assert budget.training_cost(train_config).state_bytes > 6 * sum(v.nbytes for v in built.values())
    with pytest.raises(ValueError, match="config"):
        parameter_shapes(model)


@pytest.mark.parametrize("cfg", _MEASURED, ids=lambda c: f"{c['task']}-{c.get('model', {}).get('n_blocks', 1)}")
def test_training_memory_estimate_bounds_the_measured_peak(cfg):
    """training_cost().peak_bytes must lie above the peak NumPy memory tracemalloc sees while a model is built and
    two updates run, and within 6x of it. Catches an estimate that leaves out the activations or the T x T
    attention matrices of multi-block models (too low: a run it admits could still exhaust memory), or one so loose
    it would refuse runs that fit."""
    from varsim.nn.optim import make_optimizer
    from varsim.train.budget import training_cost

    config = TrainConfig(**cfg, steps=2)

    def run():
        model = Transformer(config.model, seed=0)
        opt = make_optimizer(config.optimizer, model.params, **config.optimizer_kwargs())
        for k in range(2):
            _, _, grads = model.loss_and_grads(training_batch(config, k))
            opt.step(grads)

    peak = _peak_bytes(run)
    est = training_cost(config).peak_bytes
    assert peak <= est <= 6 * peak, (peak, est)


@pytest.mark.parametrize("task,n_blocks,length", [("argmax", 1, 2048), ("dictionary", 1, 1024), ("argmax", 2, 150)])
def test_evaluation_memory_estimate_bounds_the_measured_peak(task, n_blocks, length):
    """evaluation_cost().peak_bytes bounds what one batch of evaluate() holds (batch arrays + chunked forward),
    within 6x. Catches an estimate that ignores the batch arrays (B x N floats) or the chunking of predict()."""
    from varsim._common.blas import blas_threads
    from varsim.train.budget import evaluation_cost
    from varsim.train.evaluate import evaluation_batch

    mcfg = ModelConfig(task=task, n_blocks=n_blocks, key_vocab=16384)
    model = Transformer(mcfg, seed=0)
    with blas_threads(1):
        peak = _peak_bytes(lambda: model.predict(evaluation_batch(mcfg, length, 0, 16, np.random.SeedSequence(0))))
    est = evaluation_cost(mcfg, [length], 16, 16).peak_bytes - evaluation_cost(mcfg, [1], 1, 1).state_bytes
    assert peak <= est <= 6 * peak, (peak, est)


@pytest.mark.parametrize(
    "kwargs,name,what",
    [
        ({"model": {"d_model": 2**20, "n_heads": 1}}, "d_model=1048576", "memory"),
        ({"model": {"d_hidden": 10**11}}, "d_hidden=100000000000", "memory"),
        ({"model": {"n_blocks": 10**6}}, "n_blocks=1000000", "memory"),
        ({"model": {"n_classes": 10**12}}, "n_classes=1000000000000", "memory"),
        ({"batch_size": 10**9}, "batch_size=1000000000", "memory"),
        ({"train_max": 10**11}, "train_max=100000000000", "memory"),
        ({"steps": 10**12}, "steps=1000000000000", "max_hours"),
    ],
)
def test_oversized_training_is_refused_before_anything_is_allocated(tmp_path, kwargs, name, what):
    """Each size alone makes the run impossible (memory) or endless (time): train() must refuse it at once with a
    message that names the parameter and the bound, and create no run directory. Without the check these end in a
    MemoryError traceback after allocating, or in a run of years."""
    cfg = TrainConfig(task="argmax", **kwargs)
    with pytest.raises(ValueError, match=name) as err:
        train(cfg, tmp_path / "r")
    assert what in str(err.value) and "\n" not in str(err.value)
    assert not (tmp_path / "r").exists()


def test_cost_checks_name_the_parameter_that_drives_the_cost():
    """With a small memory bound or time bound, the parameter named is the one far above its default, and a run
    within the bounds passes. Catches naming a fixed parameter (always d_model) or checking the wrong bound."""
    from varsim.train.budget import check_evaluation_cost, check_training_cost

    base = TrainConfig(task="argmax", steps=100)
    assert check_training_cost(base).peak_bytes < 10**8
    with pytest.raises(ValueError, match="batch_size=4096.*memory"):
        check_training_cost(base.replace(batch_size=4096), memory_bytes=10**8)
    with pytest.raises(ValueError, match="train_max=4096.*memory"):
        check_training_cost(base.replace(train_max=4096), memory_bytes=10**8)
    with pytest.raises(ValueError, match="steps=1000000.*max_hours=0.01"):
        check_training_cost(base.replace(steps=10**6), max_hours=0.01)
    with pytest.raises(ValueError, match="max_hours must be > 0"):
        check_training_cost(base, max_hours=0)
    check_training_cost(base.replace(steps=10**12), max_hours=float("inf"))  # inf: no time bound
    mcfg = base.model
    with pytest.raises(ValueError, match="lengths=1000000000.*memory"):
        check_evaluation_cost(mcfg, [16, 10**9], 1024, 64)
    with pytest.raises(ValueError, match="n_examples=1000000000000.*max_hours"):
        check_evaluation_cost(mcfg, [16, 256], 10**12, 64)


def test_evaluation_cost_counts_the_chunks_held_at_once_and_the_cores(trained, monkeypatch):
    """Worker threads hold a chunk's activations each (one chunk per batch at small N: nothing more) and share the
    time among the cores they may use; evaluate() passes its workers, and as cores its workers times their BLAS
    threads, at most the machine's. Catches a time bound that ignores the parallelism (it would refuse runs that
    fit) and a memory bound that ignores the chunks in flight."""
    import importlib

    from varsim.train.budget import evaluation_cost

    evaluate_module = importlib.import_module("varsim.train.evaluate")  # the module, not the function it exports

    mcfg = ModelConfig(task="argmax")
    one, two = evaluation_cost(mcfg, [4096], 64, 64), evaluation_cost(mcfg, [4096], 64, 64, workers=2, cores=2)
    batch_only = evaluation_cost(mcfg, [4096], 64, 64, workers=0).step_bytes
    assert two.step_bytes - one.step_bytes == one.step_bytes - batch_only > 0
    assert two.seconds == pytest.approx(one.seconds / 2, rel=1e-12)
    assert evaluation_cost(mcfg, [16], 64, 64, workers=2).step_bytes == evaluation_cost(mcfg, [16], 64, 64).step_bytes
    seen = []

    def spy(*args, **kwargs):
        seen.append((kwargs["workers"], kwargs["cores"]))

    monkeypatch.setattr(evaluate_module, "check_evaluation_cost", spy)
    monkeypatch.setattr(evaluate_module, "default_workers", lambda: 8)
    d, _ = trained["argmax"]
    evaluate(d, lengths=[4], n_examples=4, workers=2)
    with pytest.warns(DeprecationWarning, match="blas_threads"):  # its threads go to the workers
        evaluate(d, lengths=[4], n_examples=4, workers=3, blas_threads=None)
    with pytest.warns(DeprecationWarning, match="blas_threads"):
        evaluate(d, lengths=[4], n_examples=4, workers=3, blas_threads=2)
    with pytest.warns(DeprecationWarning, match="blas_threads"):
        evaluate(d, lengths=[4], n_examples=4, workers=2, blas_threads=5)
    assert seen == [(2, 2), (8, 8), (3, 3), (5, 5)]


def test_evaluate_refuses_oversized_lengths_and_counts(trained):
    """`evaluate` checks its cost before drawing any example: N = 1e9 (TiB of batch arrays) and 1e12 examples
    (years) are refused naming lengths / n_examples."""
    d, _ = trained["argmax"]
    with pytest.raises(ValueError, match="lengths=1000000000"):
        evaluate(d, lengths=[16, 10**9])
    with pytest.raises(ValueError, match="n_examples=1000000000000"):
        evaluate(d, lengths=[16], n_examples=10**12)
    with pytest.raises(ValueError, match="lengths.*<= 9223372036854775807"):
        evaluate(d, lengths=[10**30])


def test_evaluate_multiplies_on_one_blas_thread_whatever_it_is_asked(trained, monkeypatch):
    """Every matrix product of evaluate() runs on one BLAS thread, whatever ``blas_threads`` says (deprecated: a
    multi-threaded OpenBLAS GEMM rounds the large products differently, so more threads changed the outputs'
    bits): the thread count in force is read with threadpoolctl inside each linear layer of the forward pass.
    Catches the old behaviour (``blas_threads=None`` left NumPy's pool, ``blas_threads=2`` set 2 threads)."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    from varsim._common import blas
    from varsim.nn import layers

    numpy_blas = {label.rsplit(":", 1)[0] for *_, label in blas._blas_controls()}  # NumPy's (loaded with it)
    if not numpy_blas:
        pytest.skip("NumPy's BLAS cannot be controlled here")

    def in_force():
        return {i["num_threads"] for i in threadpoolctl.threadpool_info() if i["filepath"] in numpy_blas}

    seen = []
    real = layers.linear_forward

    def spy(*args, **kwargs):
        seen.append(in_force())
        return real(*args, **kwargs)

    for module in ("varsim.nn.layers", "varsim.nn.attention", "varsim.nn.model", "varsim.nn.base"):
        monkeypatch.setattr(f"{module}.linear_forward", spy, raising=False)
    d, _ = trained["argmax"]
    with threadpoolctl.threadpool_limits(3, user_api="blas"):  # the pool as a user's process may have it
        evaluate(d, lengths=[4], n_examples=8)
        for n in (None, 2, 4):
            with pytest.warns(DeprecationWarning, match="blas_threads"):
                evaluate(d, lengths=[4], n_examples=8, blas_threads=n)
        after = in_force()
    assert seen and all(s == {1} for s in seen), seen
    assert after == {3}  # the caller's pool is given back


def test_evaluate_same_bits_for_any_blas_threads_and_workers():
    """The outputs of evaluate() (correct counts and every ranking statistic, floats included) are the same bits
    for ``blas_threads`` 1, 2, 4 and ``workers`` 1, 2, 4, on a model whose item MLP multiplies 64 x 1025 rows
    (products a multi-threaded OpenBLAS splits across threads). Before the fix, 2 BLAS threads gave other
    ``weight_correct`` bits on OpenBLAS 0.3.31's Haswell kernel (benchmarks/check_threads.py); on a BLAS whose
    threading never changes a bit this passes either way, the spy test above holds the mechanism everywhere."""
    import warnings

    model = Transformer(ModelConfig(task="argmax", d_model=64, n_heads=4), seed=3)
    results = []
    for blas, workers in ((1, 1), (2, 1), (4, 1), (1, 2), (1, 4), (2, 2)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            ev = evaluate(model, lengths=[1024], n_examples=64, batch_size=64, progress=False, blas_threads=blas,
                          workers=workers)
        results.append(json.dumps({"correct": ev["correct"], "ranking": ev["ranking"]}, sort_keys=True))
    assert len(set(results)) == 1, results


@pytest.mark.parametrize("content,match", [
    ("{torn", "run config .* not valid JSON"),
    ('{"provenance": {}}', "run config .* has no 'config' entry"),
    ('{"config": {"task": "argmax", "steps": 7}}', "config differs .* steps"),
])
def test_resume_checks_the_config_json_of_a_run_stopped_before_its_first_checkpoint(tmp_path, content, match):
    """A run directory with config.json but no checkpoint resumes only with the same config; a damaged config.json
    is refused naming the file, before any model is built or anything is written."""
    cfg = TrainConfig(task="argmax", model={"d_model": 8, "n_heads": 1}, steps=4, batch_size=4, log_every=2)
    (tmp_path / "config.json").write_text(content)
    with pytest.raises(ValueError, match=match):
        train(cfg, tmp_path, resume=True, progress=False)
    assert (tmp_path / "config.json").read_text() == content and not list_checkpoints(tmp_path)
