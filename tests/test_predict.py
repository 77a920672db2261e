"""The long-N accuracy predictor (varsim.train.predict) and ``varsim predict``."""

from __future__ import annotations

import numpy as np
import pytest

from varsim.train.predict import (
    Simulation,
    TrainingLengthStats,
    fit_readout,
    item_logits,
    readout_probability,
    simulate,
)


def _stats(items, queries, correct, item_set, *, task="argmax", priority=None, tau=0.3, sigma=0.5, lapse=0.0,
           chance=0.1, n0=16):
    return TrainingLengthStats(task=task, n0=n0, chance=chance, best_head=0, items=items, queries=queries,
                               correct=correct, item_set=item_set, priority=priority, key=None, query_key=None,
                               tau=tau, sigma=sigma, lapse=lapse, accuracy_n0=1.0, readout={})


def _synthetic_argmax(rng, n_sets=2048, n0=16, beta=4.0, noise=0.5):
    """One-dimensional items: priority p ~ U(0, 1), logit beta p + noise e (e ~ N(0, 1) per item, so ranking errors
    happen); the query is 1, so an item's logit is its single coordinate."""
    p = rng.random(n_sets * n0)
    e = rng.standard_normal(n_sets * n0)
    items = (beta * p + noise * e)[:, None]
    item_set = np.repeat(np.arange(n_sets), n0)
    correct = np.argmax(p.reshape(n_sets, n0), axis=1) + np.arange(n_sets) * n0
    return _stats(items, np.ones((n_sets, 1)), correct, item_set, priority=p)


def _direct_accuracy(rng, n, m, beta=4.0, noise=0.5, tau=0.3, sigma=0.5, chance=0.1):
    """The same generative model drawn afresh (no pool): per example, the exact expected correctness."""
    p = rng.random((m, n))
    z = beta * p + noise * rng.standard_normal((m, n))
    c = np.argmax(p, axis=1)
    w = np.exp(z - z.max(axis=1, keepdims=True))
    w /= w.sum(axis=1, keepdims=True)
    rows = np.arange(m)
    wc = w[rows, c]
    s2 = (w * w).sum(axis=1) - wc * wc
    top = np.argmax(z, axis=1) == c
    return np.where(top, readout_probability(wc, s2, tau, sigma), chance)


@pytest.mark.parametrize("n", [16, 256, 1024])
def test_simulation_recovers_the_exact_accuracy_of_a_synthetic_model(n):
    """A synthetic model whose items, logits and readout are known exactly: the simulation from a pool measured at
    n0 = 16 matches the accuracy of the generative model drawn afresh at N (5 SE). Catches a composition law that
    takes the correct item by logit instead of by priority (no ranking errors), a readout that ignores S2, and a
    pool drawn with the wrong set or correct column."""
    stats = _synthetic_argmax(np.random.default_rng(1))
    sim = simulate(stats, [n], n_sim=2000, seed=2)
    pred = sim.table(1.0)["softmax"]["accuracy"][0]
    ref = _direct_accuracy(np.random.default_rng(3), n, 4000)
    se = np.sqrt(ref.var() / ref.size + ref.var() / 2000)
    assert abs(pred - ref.mean()) <= 5 * se + 0.01 * ref.mean()


@pytest.mark.parametrize("n", [64, 1024])
def test_gaussian_simulation_matches_the_exact_sum_of_squared_weights(n):
    """With Gaussian logits of one SD beta for every item, the simulated E[sum w^2] (w_c^2 + S2) equals THEORY's
    exact value (varsim.theory.expected_ipr) within 5 SE. Catches S2 summed over the wrong items or squared wrongly."""
    from varsim.theory import expected_ipr

    rng = np.random.default_rng(4)
    beta, n_sets, n0 = 1.5, 4096, 16
    x = rng.standard_normal(n_sets * n0)
    correct = np.arange(n_sets) * n0
    rest = np.ones(x.size, bool)
    rest[correct] = False
    x[correct] = (x[correct] - x[correct].mean()) / x[correct].std()
    x[rest] = (x[rest] - x[rest].mean()) / x[rest].std()
    stats = _stats(x[:, None], np.full((n_sets, 1), beta), correct, np.repeat(np.arange(n_sets), n0))
    sim = simulate(stats, [n], n_sim=4000, gaussian=True, seed=5)
    ipr = sim.w_c["softmax"][0] ** 2 + sim.s2["softmax"][0]
    ref = expected_ipr(n, beta)
    assert abs(ipr.mean() - ref) <= 5 * ipr.std() / np.sqrt(ipr.size) + 0.01 * ref


def test_readout_fit_recovers_planted_parameters():
    """Data drawn from P(hit) = (1 - lapse) Phi((w - tau) / (sigma sqrt(S2))): the fit returns the planted values.
    Catches a likelihood that drops the square root of S2 or the lapse."""
    rng = np.random.default_rng(6)
    n = 40000
    w = rng.uniform(0.05, 1.0, n)
    s2 = (1 - w) ** 2 / rng.integers(4, 16, n)
    tau, sigma, lapse = 0.35, 0.6, 0.02
    hit = rng.random(n) < readout_probability(w, s2, tau, sigma, lapse)
    t, s, lam = fit_readout(w, s2, hit)
    assert abs(t - tau) < 0.02 and abs(s / sigma - 1) < 0.1 and abs(lam - lapse) < 0.006


def test_readout_probability_is_a_step_when_the_rest_has_no_weight():
    p = readout_probability([0.9, 0.1, 0.5], [0.0, 0.0, 0.01], 0.3, 1.0, 0.1)
    assert p[0] == pytest.approx(0.9) and p[1] == 0.0 and 0 < p[2] < 0.9


def test_simulation_table_counts_ranking_and_dispersion():
    sim = Simulation(lengths=[16], maps={"softmax": ("softmax", {})}, w_c={"softmax": np.array([[0.9, 0.1, 0.5]])},
                     s2={"softmax": np.zeros((1, 3))}, top_ok={"softmax": np.array([[True, True, False]])},
                     tau=0.3, sigma=1.0, lapse=0.0, chance=0.25)
    t = sim.table(1.0)["softmax"]
    assert t["ranking_correct"][0] == pytest.approx(2 / 3)
    assert t["dispersion_error"][0] == pytest.approx(1 / 3)
    assert t["accuracy"][0] == pytest.approx((1 + 0.25) / 3)
    assert sim.table(0.2)["softmax"]["accuracy"][0] == pytest.approx((2 + 0.25) / 3)
    any_ = sim.table(1.0, readout="any")["softmax"]
    assert any_["accuracy"][0] == pytest.approx((1 + 0.25 + 1) / 3)
    assert any_["dispersion_error"][0] == pytest.approx(2 / 3 - (1 + 0.25) / 3)
    with pytest.raises(ValueError, match="readout must be"):
        sim.table(1.0, readout="all")


@pytest.mark.parametrize("task", ["argmax", "dictionary"])
def test_item_logits_are_the_models_softmax_logits(task):
    """softmax(item_logits) equals the model's own weights, for both tasks. Catches a missing 1/sqrt(d_head)
    scale, the query taken from the wrong row, or logits of the wrong head."""
    from varsim.nn.architectures import build_model
    from varsim.nn.config import ModelConfig
    from varsim.tasks import make_batch

    cfg = ModelConfig(task=task, d_model=16, n_heads=4, dtype="float64")
    model = build_model(cfg, seed=3)
    for p in model.params.values():
        p *= 3.0  # sharper logits than at initialization, so a wrong scale shows
    batch = make_batch(task, 32, 16, np.random.default_rng(0), **cfg.vocab)
    z, u, items = item_logits(model, batch)
    _, w = model.logits_and_weights(batch)
    zs = np.exp(z - z.max(axis=-1, keepdims=True))
    np.testing.assert_allclose(zs / zs.sum(axis=-1, keepdims=True), w, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(np.einsum("bnd,bhd->bhn", items, u), z, rtol=1e-12, atol=1e-12)


def test_simulate_refuses_lengths_below_the_training_maximum():
    stats = _synthetic_argmax(np.random.default_rng(7), n_sets=64)
    with pytest.raises(ValueError, match="lengths must be >= the training maximum 16"):
        simulate(stats, [8, 64])


def test_composition_laws_are_a_registry_that_simulate_asks():
    """The composition laws are a registry (``COMPOSITIONS.find``): a law registered for a new task is the one
    ``simulate`` calls (here: the correct item always in column 0 of the pool's first items, so every set ranks it
    by its logit alone), the old name-keyed call still works, and a task without a law is refused naming
    ``checkpoint`` before any set is drawn. Seen failing with ``simulate`` choosing the argmax law by an
    if-chain on the task name (the registered law never called)."""
    from varsim._common.registry import Registry
    from varsim.train import predict as P

    assert isinstance(P.COMPOSITIONS, Registry) and set(P.COMPOSITIONS) == {"argmax", "dictionary"}
    stats = _synthetic_argmax(np.random.default_rng(7), n_sets=64)
    calls = []

    def law(st, bases, n, rng):
        calls.append(n)
        return P.COMPOSITIONS["argmax"](st, bases, n, rng)  # the dict-style call of the public name

    P.COMPOSITIONS.add(P.Composition("composition_test_task", law))
    try:
        stats.task = "composition_test_task"
        sim = simulate(stats, [16, 32], n_sim=8, seed=3)
        stats.task = "argmax"
        ref = simulate(stats, [16, 32], n_sim=8, seed=3)
    finally:
        del P.COMPOSITIONS["composition_test_task"]
    assert calls == [16, 32]
    assert sim.table(1.0)["softmax"] == ref.table(1.0)["softmax"]
    stats.task = "composition_test_task"
    with pytest.raises(ValueError, match="checkpoint: unknown composition law 'composition_test_task'; expected one "
                                         "of 'argmax', 'dictionary'"):
        simulate(stats, [16], n_sim=8)
    assert simulate(stats, [16], n_sim=8, gaussian=True).lengths == [16]  # the Gaussian ablation needs no law


@pytest.fixture(scope="module")
def untrained_checkpoints(tmp_path_factory):
    from varsim.train import TrainConfig, train

    root = tmp_path_factory.mktemp("predict")
    out = {}
    for name, blocks in (("one", 1), ("two", 2)):
        cfg = TrainConfig.from_dict({"task": "argmax", "steps": 2, "checkpoint_every": 2, "log_every": 1,
                                     "model": {"task": "argmax", "d_model": 16, "n_heads": 2, "n_blocks": blocks}})
        train(cfg, root / name, progress=False)
        out[name] = root / name
    return out


def test_measure_refuses_a_model_that_has_not_learned(untrained_checkpoints):
    from varsim.train import load_checkpoint
    from varsim.train.predict import measure

    model, config, _ = load_checkpoint(untrained_checkpoints["one"])
    with pytest.raises(ValueError, match="checkpoint: the model has not learned the task"):
        measure(model, config, n_sets=64)


@pytest.mark.parametrize("which, argv, message", [
    ("one", ["--lengths", "16", "64"], "has not learned the task at its training length"),
    ("two", ["--lengths", "16", "64"], "needs one block"),
    ("one", ["--lengths", "8"], "lengths must be >= the training maximum"),
])
def test_cli_refusals_are_one_line_exit_2(untrained_checkpoints, capsys, which, argv, message):
    from varsim.cli import main

    rc = main(["predict", str(untrained_checkpoints[which]), "--sets", "64", "--sims", "16", *argv])
    err = capsys.readouterr().err
    assert rc == 2 and message in err and err.count("\n") == 1


def _model(task, attention, params=None, output="none", seed=3):
    """A small one-block model of ``attention`` in float64, its parameters sharpened (and its query/key biases and
    learned per-head map parameter set apart per head), so that a wrong scale, head or length shows."""
    from varsim.nn.architectures import build_model
    from varsim.nn.config import ModelConfig
    from varsim.nn.set_params import theta_name

    cfg = ModelConfig(task=task, d_model=16, n_heads=4, dtype="float64", attention=attention,
                      attention_params=params or {}, attention_output=output)
    model = build_model(cfg, seed=seed)
    rng = np.random.default_rng(seed)
    for p in model.params.values():
        p *= 3.0
    model.params["block0.attn.b_qkv"][:] = rng.normal(0.0, 1.0, model.params["block0.attn.b_qkv"].shape)
    theta = theta_name(cfg, 0)
    if theta is not None:
        model.params[theta][:] = [0.2, 0.5, 0.9, 1.4]
    return model


@pytest.mark.parametrize("attention, params", [("softmax", {}), ("ssmax", {}), ("logn", {"n0": 16.0, "clamp": False}),
                                               ("entmax15", {})])
@pytest.mark.parametrize("task", ["argmax", "dictionary"])
def test_own_map_of_the_item_logits_is_the_models_weights_at_every_length(task, attention, params):
    """At the training maximum N = 16 and at N = 64, each head's map (own_map: the registered map, its parameters,
    the head's learned SSMax scale) applied to the item logits at that N equals the model's own weights. Catches a
    learned scale read from the wrong head or left at its initial value, and a map applied at the wrong length."""
    from varsim.tasks import make_batch
    from varsim.train.predict import own_map
    from varsim.variants import weights

    model = _model(task, attention, params)
    for n in (16, 64):
        batch = make_batch(task, 32, n, np.random.default_rng(n), **model.config.vocab)
        z, _, _ = item_logits(model, batch)
        _, w = model.logits_and_weights(batch)
        for h in range(z.shape[1]):
            name, p = own_map(model, h)
            np.testing.assert_allclose(weights(name, z[:, h], n, **p), w[:, h], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("attention, params", [("ssmax", {"s": 0.7}), ("logn", {"n0": 16.0, "clamp": False}),
                                               ("entmax15", {}), ("softmax", {})])
def test_simulation_applies_the_map_at_the_long_length(attention, params):
    """A pool of 4 sets of 16 one-dimensional items under the query 1, simulated at N = 64 = the whole pool: every
    simulated set is the pool (permuted), so the correct item's weight and S2 are the map of the pool's logits at
    N = 64, exactly. Catches the map applied at the training maximum n0 = 16 instead of N (SSMax, log-N)."""
    from varsim.variants import weights

    stats = _synthetic_argmax(np.random.default_rng(8), n_sets=4)
    sim = simulate(stats, [64], maps={attention: (attention, params)}, n_sim=8, seed=9)
    z = stats.items[:, 0]
    c = int(np.argmax(stats.priority))
    w = weights(attention, z, 64, **params)
    np.testing.assert_allclose(sim.w_c[attention][0], w[c], rtol=1e-12)
    np.testing.assert_allclose(sim.s2[attention][0], (w * w).sum() - w[c] ** 2, rtol=1e-9, atol=1e-15)


@pytest.mark.parametrize("attention", ["softmax", "ssmax", "entmax15"])
def test_scaled_scores_multiply_every_heads_logits(attention):
    """The readout intervention: the copy's weights are each head's own map of f times the item logits, its learned
    parameters kept; for a softmax model the same as the log-N map at n0' = 16^(1/f) (the pre-registered form).
    Catches a query bias left unscaled, and a copy that resets SSMax's learned scale."""
    from varsim.tasks import make_batch
    from varsim.train.predict import own_map, scaled_scores
    from varsim.variants import weights

    model = _model("argmax", attention)
    batch = make_batch("argmax", 32, 16, np.random.default_rng(0), **model.config.vocab)
    z, _, _ = item_logits(model, batch)
    f = 0.35
    _, w = scaled_scores(model, f).logits_and_weights(batch)
    for h in range(z.shape[1]):
        name, p = own_map(model, h)
        np.testing.assert_allclose(w[:, h], weights(name, f * z[:, h], **p), rtol=1e-9, atol=1e-12)
    if attention == "softmax":
        _, wl = model.with_attention("logn", {"n0": 16.0 ** (1.0 / f), "clamp": False}).logits_and_weights(batch)
        np.testing.assert_allclose(w, wl, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("attention, output, message", [
    ("sigmoid", "none", "not its map 'sigmoid' of per-item logits"),
    ("softmax", "ipr_norm", "output normalization 'ipr_norm'"),
])
def test_measure_refuses_a_map_the_account_does_not_cover(attention, output, message):
    """A map that is not invariant to the per-row key-bias term the item logits leave out (sigmoid), and an output
    normalization (the readout then does not read the weights): ValueError naming the checkpoint."""
    from varsim.train import TrainConfig
    from varsim.train.predict import measure

    model = _model("argmax", attention, output=output)
    config = TrainConfig.from_dict({"task": "argmax", "model": model.config.to_dict()})
    with pytest.raises(ValueError, match=f"checkpoint: .*{message}"):
        measure(model, config, n_sets=64, min_accuracy=0.0)


def test_figure_method_labels_follow_the_training_maximum_and_the_fit_lengths():
    """The figure's legend names the carry-over's training maximum and the logistic fit's lengths from the
    experiment's constants (not a hard-coded "N = 16"). Catches a label that ignores its arguments."""
    from varsim.experiments.prediction import LENGTHS, LOGISTIC_FIT_LENGTHS
    from varsim.figures.prediction import METHODS, method_labels

    other = method_labels(32, (32, 64, 128, 256))
    assert other["carry"] == "accuracy at N = 32 carried over"
    assert other["logistic"] == "logistic in ln N, fitted on N = 32, 64, 128, 256"
    assert METHODS == method_labels(LENGTHS[0], LOGISTIC_FIT_LENGTHS)
