"""The causal decoder through varsim.train: checkpoints, bitwise resumption, paired data, evaluation far beyond the
training lengths within the budget, and (slow) a tiny decoder learning each task in distribution."""

from __future__ import annotations

import numpy as np
import pytest

from varsim._common.intervals import wilson_interval
from varsim.nn import Decoder
from varsim.train import TrainConfig, evaluate, load_checkpoint, train
from varsim.train.budget import check_evaluation_cost, check_training_cost, training_cost

TINY = dict(architecture="decoder", d_model=16, n_heads=2, n_blocks=2, pre_ln=True, key_vocab=512)


def _config(task="recall", steps=6, **kw):
    model = {**TINY, "positions": "rope", **kw.pop("model", {})}
    return TrainConfig(task=task, model=model, steps=steps, lr=3e-3, batch_size=8, train_max=4,
                       checkpoint_every=3, log_every=3, **kw)


def test_train_checkpoint_resume_and_evaluate_64x(tmp_path):
    cfg = _config()
    full = train(cfg, tmp_path / "full", progress=False)
    assert full["status"] == "completed"
    model, saved, _ = load_checkpoint(tmp_path / "full")
    assert isinstance(model, Decoder) and saved == cfg
    # interrupted after 3 updates, resumed: bitwise the same parameters
    train(cfg.replace(steps=3), tmp_path / "part", progress=False)
    part = load_checkpoint(tmp_path / "part")[0]
    train(cfg, tmp_path / "part2", progress=False)
    resumed = load_checkpoint(tmp_path / "part2")[0]
    for k in model.params:
        np.testing.assert_array_equal(resumed.params[k], model.params[k])
    assert any(not np.array_equal(part.params[k], model.params[k]) for k in model.params)
    ev = evaluate(tmp_path / "full", lengths=(4, 256), n_examples=16, batch_size=8, progress=False)
    assert ev["lengths"] == [4, 256] and len(ev["accuracy"]) == 2  # 64x the longest training set


def test_budget_counts_the_decoder_tokens():
    """Recall has two tokens per item: its training cost grows like (2N + 1)^2 in the attention, beyond the
    argmax decoder's (N + 1)^2 at the same N."""
    rec = training_cost(_config("recall").replace(train_max=64))
    arg = training_cost(_config("argmax").replace(train_max=64))
    assert rec.step_bytes > 2 * arg.step_bytes
    with pytest.raises(ValueError, match="memory"):  # training keeps T x T weights
        check_training_cost(_config("argmax").replace(train_max=20000, batch_size=64))
    check_evaluation_cost(_config().model, (20000,), 4, 4)  # evaluation never forms them
    with pytest.raises(ValueError, match="lengths=10000000"):
        check_evaluation_cost(_config().model, (10**7,), 1, 1)


def test_same_data_seed_gives_paired_batches(tmp_path):
    """Two decoders that differ only in their positions see identical training batches (paired comparisons)."""
    from varsim.train import training_batch

    a, b = _config(), _config(model={"positions": "alibi"})
    for step in (0, 5):
        ba, bb = training_batch(a, step), training_batch(b, step)
        for k in ba:
            np.testing.assert_array_equal(ba[k], bb[k])


LEARN = {  # task: (model options, training options), tuned to learn in well under a minute on one core
    "argmax": (dict(d_model=32, n_heads=4, positions="none"), dict(steps=400, lr=5e-3, train_max=16)),
    "dictionary": (dict(d_model=32, n_heads=4, positions="none", key_vocab=4096),
                   dict(steps=400, lr=5e-3, train_max=16)),
    "recall": (dict(d_model=64, n_heads=4, positions="rope", key_vocab=64), dict(steps=800, lr=3e-3, train_max=8)),
}


@pytest.mark.slow
@pytest.mark.parametrize("task", list(LEARN))
def test_tiny_decoder_learns_in_distribution(task, tmp_path):
    model, opts = LEARN[task]
    cfg = TrainConfig(task=task, model={**TINY, **model}, batch_size=64, checkpoint_every=10**6, log_every=100,
                      **opts)
    assert train(cfg, tmp_path, progress=False)["status"] == "completed"
    n = opts["train_max"]
    ev = evaluate(tmp_path, lengths=(n,), n_examples=512, progress=False)
    low, _ = wilson_interval(ev["correct"][0], 512)
    assert low > 0.9, ev["accuracy"]


def test_cli_trains_a_decoder_and_refuses_positions_on_the_set_model(tmp_path, capsys):
    from varsim.cli import main

    argv = ["train", "--task", "recall", "--architecture", "decoder", "--positions", "alibi", "--tie-head",
            "--d-model", "8", "--heads", "2", "--blocks", "2", "--steps", "2", "--train-max", "3", "--key-vocab", "16",
            "--outdir", str(tmp_path / "run"), "--no-progress"]
    assert main(argv) == 0
    model = load_checkpoint(tmp_path / "run")[0]
    assert isinstance(model, Decoder) and model.config.positions == "alibi" and model.config.tie_head
    capsys.readouterr()
    assert main(["train", "--task", "argmax", "--positions", "rope", "--steps", "2",
                 "--outdir", str(tmp_path / "bad"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no token order" in err[0], err


def test_length_shift_probe_runs_on_the_decoder():
    """The set model's probe (varsim.train.probes) reads the decoder's analysis unchanged: the query row's weights
    over the items, and an attention output whose spread falls with N for a fresh model (near-uniform attention:
    slope about -1/2 in the first block)."""
    from varsim.train.probes import probe_length_shift

    model = Decoder(_config("argmax").model, seed=0)
    r = probe_length_shift(model, "argmax", lengths=(8, 32, 128), n_sets=64, seed=0, hist_lengths=(),
                           task_kwargs=model.config.vocab)
    slope = r["slopes"]["pre_median"]
    assert abs(slope["slope"] + 0.5) < 5 * slope["se"] + 0.1, slope
