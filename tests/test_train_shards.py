"""Deterministic data-parallel training: a batch cut into ``shards`` fixed by the config, the same bits for any number
of threads, ``shards=1`` the unsplit pass; each check shown failing on a planted thread-dependent defect."""

from __future__ import annotations

import hashlib
import json
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import varsim.nn.base as base_mod
from varsim.nn import shards as S
from varsim.nn.architectures import build_model
from varsim.train import TrainConfig, train, training_batch
from varsim.train.checkpoint import latest_checkpoint, read_checkpoint

MODEL = {"d_model": 32, "n_heads": 4, "n_blocks": 2}


def _config(shards: int, **kw) -> TrainConfig:
    return TrainConfig(task="argmax", steps=4, batch_size=24, train_max=12, lr=3e-3, seed=1, data_seed=2,
                       checkpoint_every=4, log_every=1, model=MODEL, shards=shards, **kw)


def _run(tmp_path, name: str, shards: int, threads: int, **kw) -> tuple[str, list]:
    """Train; the SHA-256 of the final parameters and the logged losses."""
    out = tmp_path / name
    train(_config(shards, **kw), out, progress=False, threads=threads)
    _, arrays = read_checkpoint(latest_checkpoint(out))
    digest = hashlib.sha256(b"".join(arrays[k].tobytes() for k in sorted(arrays) if k.startswith("param")))
    losses = [json.loads(line)["loss"] for line in (out / "metrics.jsonl").read_text().splitlines()]
    return digest.hexdigest(), losses


def test_shard_ranges():
    """``numpy.array_split`` sizes (the first B mod S shards one larger), consecutive, covering the batch; more
    shards than examples, or none, refused naming ``shards``."""
    assert S.shard_ranges(7, 3) == [(0, 3), (3, 5), (5, 7)]
    assert S.shard_ranges(4, 1) == [(0, 4)]
    with pytest.raises(ValueError, match="shards"):
        S.shard_ranges(3, 4)
    with pytest.raises(ValueError, match="shards"):
        S.shard_ranges(3, 0)
    with pytest.raises(ValueError, match="shards"):
        _config(25)


@pytest.mark.parametrize("shards", [2, 3, 7])
def test_sharded_pass_equals_unsplit_pass(shards):
    """float64 model, B = 7 (uneven shards for 2 and 3): loss, accuracy and every gradient equal the unsplit pass's
    to 1e-12 relative. Catches shard means averaged without their sizes (wrong for uneven shards), a shard's
    gradient left out of the sum, or the padding width changed per shard."""
    cfg = TrainConfig(task="argmax", batch_size=7, train_max=9, model={**MODEL, "dtype": "float64"})
    model = build_model(cfg.model, seed=3)
    batch = training_batch(cfg, 0)
    loss, acc, grads = model.loss_and_grads(batch)
    with ThreadPoolExecutor(2) as pool:
        loss_s, acc_s, grads_s = model.loss_and_grads(batch, shards=shards, pool=pool)
    assert loss_s == pytest.approx(loss, rel=1e-12) and acc_s == acc
    assert list(grads_s) == list(grads)
    for k in grads:
        np.testing.assert_allclose(grads_s[k], grads[k], rtol=1e-12, atol=1e-14 * np.abs(grads[k]).max())


def test_same_bits_for_any_thread_count(tmp_path):
    """shards = 2 and 4 trained on 1, 2 and 4 threads: identical parameters and logged losses, bit for bit; 2 and 4
    shards differ from each other and from one shard (the shard count is part of the numbers, so of the config)."""
    two = {(d, tuple(losses)) for d, losses in (_run(tmp_path, f"s2t{t}", 2, t) for t in (1, 2, 4))}
    four = {_run(tmp_path, f"s4t{t}", 4, t)[0] for t in (1, 2, 4)}
    one = _run(tmp_path, "s1", 1, 4)[0]
    assert len(two) == 1 and len(four) == 1
    assert len({next(iter(two))[0], next(iter(four)), one}) == 3


def _shards_from_threads(model, batch, shards, pool):
    """Planted: the batch cut by the thread count (the pool's size), not by the config."""
    return S.sharded_loss_and_grads(model, batch, pool._max_workers if pool else 1, pool)


def _sum_per_worker(model, batch, shards, pool):
    """Planted: each worker sums the shards it ran (round robin), then the workers' partial sums are added."""
    workers = pool._max_workers if pool else 1
    parts = S.shard_batch(batch, shards)
    b = sum(len(p["target"]) for p in parts)
    res = [S._shard_pass(model, p, len(p["target"]) / b, np.geterr()) for p in parts]
    partial = []
    for w in range(workers):
        mine = res[w::workers]
        g = {k: v.copy() for k, v in mine[0][2].items()}
        for r in mine[1:]:
            for k in g:
                g[k] += r[2][k]
        partial.append((sum(r[0] * len(p["target"]) / b for r, p in zip(mine, parts[w::workers])), g))
    grads = partial[0][1]
    for _, g in partial[1:]:
        for k in grads:
            grads[k] += g[k]
    return sum(p[0] for p in partial), sum(r[1] for r in res) / b, grads


@pytest.mark.parametrize("planted", [_shards_from_threads, _sum_per_worker])
def test_planted_thread_dependence_is_caught(tmp_path, monkeypatch, planted):
    """The check of ``test_same_bits_for_any_thread_count`` fails when the reduction depends on the threads: shards
    chosen by the thread count, or gradients summed per worker before across workers."""
    monkeypatch.setattr(base_mod, "sharded_loss_and_grads", planted)
    digests = {_run(tmp_path, f"t{t}", 4, t)[0] for t in (1, 2)}
    assert len(digests) == 2


def test_one_shard_is_the_unsplit_run(tmp_path):
    """``shards=1`` (the default) is the unsplit pass: the same bits as a run that never names shards, whatever the
    threads; its config.json holds no ``shards`` (configs recorded before shards existed read the same), while a
    run with shards records them in its config and checkpoint header, and resuming with another count is refused."""
    cfg = TrainConfig(task="argmax", steps=3, batch_size=8, train_max=8, checkpoint_every=3, model=MODEL)
    train(cfg, tmp_path / "a", progress=False)
    train(cfg.replace(shards=1), tmp_path / "b", progress=False, threads=4)
    arrays = [read_checkpoint(latest_checkpoint(tmp_path / d))[1] for d in "ab"]
    assert all(np.array_equal(arrays[0][k], arrays[1][k]) for k in arrays[0] if k.startswith("param"))
    assert "shards" not in json.loads((tmp_path / "a" / "config.json").read_text())["config"]
    train(cfg.replace(shards=2), tmp_path / "c", progress=False)
    assert json.loads((tmp_path / "c" / "config.json").read_text())["config"]["shards"] == 2
    assert read_checkpoint(latest_checkpoint(tmp_path / "c"))[0]["shards"] == 2
    with pytest.raises(ValueError, match="shards"):
        train(cfg.replace(shards=4, steps=6), tmp_path / "c", progress=False, resume=True)
