"""The decoder's ranking path (Decoder.logits_and_weights) and the ranking decomposition of its evaluation: the last
position's weights over the items in item order, the logits of predict, padding and multi-token items handled."""

from __future__ import annotations

import numpy as np

from varsim.nn import ModelConfig, build_model
from varsim.tasks import make_batch
from varsim.train import evaluate

TINY = dict(architecture="decoder", d_model=8, n_heads=2, n_blocks=2, n_classes=4, key_vocab=32, value_vocab=5,
            d_hidden=6, dtype="float64")


def _model(task="argmax", **kw):
    return build_model(ModelConfig(task=task, **{**TINY, **kw}), seed=3)


def _one(batch, b):
    return {k: (np.asarray(v)[b:b + 1] if np.ndim(v) >= 1 else v) for k, v in batch.items()}


def test_weights_are_the_last_blocks_query_row_and_logits_those_of_predict():
    """Equal to analysis()'s last-block query-row weights over the items (a wrong block, or the first block's
    weights, would differ) and sum with the query's own weight to 1."""
    model = _model(positions="rope")
    batch = make_batch("argmax", 5, 7, np.random.default_rng(0), n_classes=4)
    logits, w = model.logits_and_weights(batch)
    ana = model.analysis(batch)
    np.testing.assert_allclose(w, ana["block1.attn_weights"], rtol=1e-12)
    assert not np.allclose(w, ana["block0.attn_weights"])
    np.testing.assert_array_equal(np.argmax(logits, axis=1), model.predict(batch))
    np.testing.assert_allclose(w.sum(axis=-1) + ana["block1.key_weights"][:, :, -1], 1.0, rtol=1e-12)


def test_padded_examples_have_their_weights_in_item_order():
    """A left-padded example's weights are those it has alone, item i at index i, 0 on padding (reading them in
    sequence order would put the padding first)."""
    model = _model(positions="alibi")
    batch = make_batch("argmax", 6, (2, 9), np.random.default_rng(1), n_classes=4)
    sizes = batch["mask"].sum(axis=1)
    assert len(set(sizes.tolist())) > 1
    _, w = model.logits_and_weights(batch)
    for b in range(6):
        n = int(sizes[b])
        alone = {k: (v[:, :n] if np.ndim(v) == 2 else v) for k, v in _one(batch, b).items()}
        _, w1 = model.logits_and_weights(alone)
        np.testing.assert_allclose(w[b, :, :n], w1[0], rtol=1e-9, atol=1e-12)
        assert np.all(w[b, :, n:] == 0.0)


def test_multi_token_items_sum_their_tokens():
    """recall (two tokens per item): item i's weight is the sum of its key and value tokens' weights."""
    model = _model("recall", positions="none")
    batch = make_batch("recall", 4, 6, np.random.default_rng(2), key_vocab=32, value_vocab=5)
    _, w = model.logits_and_weights(batch)
    tok = model.analysis(batch)["block1.attn_weights"]  # (B, H, 2N) in sequence order
    np.testing.assert_allclose(w, tok[:, :, 0::2] + tok[:, :, 1::2], rtol=1e-12)


def test_evaluate_decomposes_a_decoder():
    """evaluate() gives the decoder a ranking decomposition whose counts add up to its accuracy and whose
    ranking-correct fraction is the best head's, recomputed here from logits_and_weights."""
    model = _model(positions="rope")
    out = evaluate(model, [8, 16], 40, 16, seed=5, progress=False)
    rk = out["ranking"]
    assert rk is not None and len(rk["best_head"]) == 2
    for i in range(2):
        assert rk["correct_given_ranking_correct"][i] + rk["correct_given_ranking_wrong"][i] == out["correct"][i]
        assert rk["n_ranking_correct"][i] + rk["n_ranking_wrong"][i] == 40
    from varsim.train.evaluate import evaluation_batch

    ws, items = [], []
    for j in range(3):
        batch = evaluation_batch(model.config, 16, j, min(16, 40 - 16 * j), np.random.SeedSequence(5))
        ws.append(model.logits_and_weights(batch)[1])
        items.append(np.argmax(batch["priority"], axis=1))
    w, item = np.concatenate(ws), np.concatenate(items)
    h = rk["best_head"][1]
    assert rk["ranking_correct"][1] == np.mean(np.argmax(w[:, h], axis=1) == item)
    np.testing.assert_allclose(rk["weight_correct"][1], w[np.arange(40), h, item].mean(), rtol=1e-12)
