"""Helpers of the transformer's tests (tests/test_nn_*.py): central-difference gradients of a layer and of the whole
model, per-row masks, a batch for a model configuration."""

from __future__ import annotations

import numpy as np

from varsim.nn.architectures import build_model
from varsim.tasks import make_batch


def numeric_grads(fn, arrays, dout, h=1e-6):
    """Central-difference gradients of ``sum(fn(*arrays) * dout)`` with respect to each array (each entry is
    moved in place and restored)."""
    out = []
    for a in arrays:
        g = np.zeros_like(a)
        for i in range(a.size):
            old = a.flat[i]
            a.flat[i] = old + h
            lp = float(np.sum(fn(*arrays) * dout))
            a.flat[i] = old - h
            lm = float(np.sum(fn(*arrays) * dout))
            a.flat[i] = old
            g.flat[i] = (lp - lm) / (2 * h)
        out.append(g)
    return out


def row_masks(mask):
    """(B, T) key masks -> per-row (B, T, T) masks: row i may not see key (i + 1) mod T unless it is its only key."""
    t = mask.shape[1]
    km = np.repeat(mask[:, None, :], t, axis=1)
    for i in range(t):
        if km[:, i].sum(axis=1).min() > 1:
            km[:, i, (i + 1) % t] = False
    return km


def batch_for(cfg, b, n, seed=0):
    return make_batch(cfg.task, b, n, np.random.default_rng(seed), **cfg.vocab)


def check_model_grads(cfg, *, n=(2, 5), b=3, per_param=3, seed=0):
    """Central differences of sum(logits * dlogits) on ``per_param`` random entries of every parameter of the model
    of ``cfg.architecture``.

    The tolerance is relative to the scale of the gradient; entries whose true gradient is 0 (e.g. the key bias,
    which the softmax ignores) must come out ~0 analytically too."""
    m = build_model(cfg, seed=seed)
    batch = batch_for(cfg, b, n, seed)
    rng = np.random.default_rng(seed + 1)
    logits, cache = m.forward(batch)
    dl = rng.standard_normal(logits.shape)
    grads = m.backward(dl, cache)
    assert list(grads) == list(m.params)
    h = 1e-6
    for k, p in m.params.items():
        assert grads[k].shape == p.shape and grads[k].dtype == p.dtype, k
        for i in rng.choice(p.size, size=min(per_param, p.size), replace=False):
            old = p.flat[i]
            p.flat[i] = old + h
            lp = float(np.sum(m.forward(batch)[0] * dl))
            p.flat[i] = old - h
            lm = float(np.sum(m.forward(batch)[0] * dl))
            p.flat[i] = old
            num = (lp - lm) / (2 * h)
            assert abs(grads[k].flat[i] - num) <= 1e-5 * abs(num) + 1e-7, (k, i, grads[k].flat[i], num)
