"""The whole causal decoder against an identical PyTorch model (tests/decoder_torch.py): same logits and the same
gradient of the cross-entropy for every parameter, float64. Skips without torch (an optional CPU wheel)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch (CPU) is not installed: optional reference")

from decoder_torch import torch_decoder, torch_inputs  # noqa: E402
from registry_checks import tasks_read_by  # noqa: E402

from varsim.nn import Decoder, ModelConfig  # noqa: E402
from varsim.nn.positions import POSITIONS  # noqa: E402
from varsim.tasks import make_batch  # noqa: E402

BASE = dict(architecture="decoder", d_model=8, n_heads=2, n_blocks=2, n_classes=4, key_vocab=32, value_vocab=5,
            d_hidden=12, dtype="float64", max_positions=32)


def _compare(task, **kw):
    c = ModelConfig(task=task, **{**BASE, **kw})
    m = Decoder(c, seed=3)
    batch = make_batch(task, 5, (2, 7), np.random.default_rng(1), **c.vocab)
    loss, _, grads = m.loss_and_grads(batch)
    forward, tp = torch_decoder(m)
    logits_t = forward(*torch_inputs(m, batch))
    np.testing.assert_allclose(logits_t.detach().numpy(), m.forward(batch)[0], rtol=1e-10, atol=1e-12)
    loss_t = torch.nn.functional.cross_entropy(logits_t, torch.from_numpy(batch["target"]))
    loss_t.backward()
    assert abs(loss_t.item() - loss) < 1e-12
    for k, g in grads.items():
        assert tp[k].grad is not None, k
        np.testing.assert_allclose(g, tp[k].grad.numpy(), rtol=1e-8, atol=1e-12, err_msg=k)


@pytest.mark.parametrize("positions", list(POSITIONS))
@pytest.mark.parametrize("pre_ln", [True, False])
@pytest.mark.parametrize("task", tasks_read_by("decoder"))
def test_decoder_matches_torch(task, positions, pre_ln):
    _compare(task, positions=positions, pre_ln=pre_ln)


@pytest.mark.parametrize("kw", [
    dict(attention="ssmax", positions="rope", pre_ln=True),
    dict(attention="logn", positions="alibi"),
    dict(attention="sigmoid", positions="learned", pre_ln=True),
    dict(norm="layernorm", positions="rope", tie_head=True),
    dict(tie_head=True, key_encoding="embedding", task="recall", activation="gelu", n_blocks=3),
])
def test_decoder_matches_torch_options(kw):
    kw = dict(kw)
    _compare(kw.pop("task", "dictionary"), **kw)
