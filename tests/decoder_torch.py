"""A PyTorch twin of varsim's causal decoder (varsim.nn.decoder), written with torch ops on the same parameters, for
tests/test_decoder_torch.py and benchmarks/bench_decoder_step.py. torch is imported here only (never by varsim).

Both models start from the same inputs: the decoder's own features, key ids and padding (``Decoder._inputs``), so
the twin checks the network, and the input layout is tested on its own (tests/test_nn_decoder.py). Supported: every
positional encoding, pre/post-norm, tied or untied head, relu/gelu, attention-output norm ``none``/``layernorm``,
and the weight maps ``softmax``, ``ssmax``, ``logn``, ``sigmoid`` (the twin refuses the others).
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from varsim.nn.decoder import causal_mask
from varsim.nn.positions import alibi_bias, position_ids, rope_tables
from varsim.nn.set_params import theta_name
from varsim.variants import get_variant

TWIN_MAPS = ("softmax", "ssmax", "logn", "sigmoid")


def torch_inputs(model, batch):
    """The decoder's inputs as torch tensors: (features, key ids or None, padding starts (numpy) or None)."""
    feats, key_tok, start = model._inputs(batch, training=True)
    return torch.from_numpy(feats), None if key_tok is None else torch.from_numpy(key_tok), start


def torch_decoder(model):
    """-> (forward(feats, key_tok, start) -> logits, {name: leaf tensor}) on copies of ``model``'s parameters."""
    c = model.config
    if c.attention not in TWIN_MAPS or c.attention_output != "none" or c.norm not in ("none", "layernorm"):
        raise ValueError(f"the torch twin has no {c.attention!r}/{c.attention_output!r}/{c.norm!r}")
    p = {k: torch.tensor(v, requires_grad=True) for k, v in model.params.items()}
    d, h = c.d_model, c.n_heads
    dh = d // h
    enc = model.positions
    act = F.relu if c.activation == "relu" else (lambda x: F.gelu(x, approximate="tanh"))
    ln = lambda x, pre: F.layer_norm(x, (d,), p[f"{pre}.gamma"], p[f"{pre}.beta"], eps=1e-5)  # noqa: E731

    def rot(x, cos, sin):
        x1, x2 = x[..., :dh // 2], x[..., dh // 2:]
        return x * cos + torch.cat([-x2, x1], dim=-1) * sin

    def weights(z, mask, i):
        """The map on logits ``z`` before masking (a masked -inf times a learned scale would give NaN gradients)."""
        n = mask.sum(dim=-1, keepdim=True).to(z.dtype)  # visible keys per row
        if c.attention == "softmax":
            return torch.softmax(z.masked_fill(~mask, -math.inf), dim=-1)
        if c.attention == "ssmax":
            f = p[theta_name(c, i)].view(1, h, 1, 1) * torch.log(n)
            return torch.softmax((z * f).masked_fill(~mask, -math.inf), dim=-1)
        if c.attention == "logn":
            f = torch.from_numpy(np.asarray(get_variant("logn").beta_factor_fn(n.numpy(), **c.attention_params)))
            return torch.softmax((z * f.to(z.dtype)).masked_fill(~mask, -math.inf), dim=-1)
        return torch.sigmoid(z - torch.log(n)) * mask

    def forward(feats, key_tok, start):
        b, t, _ = feats.shape
        x = feats @ p["embed.w"] + p["embed.b"]
        if key_tok is not None:
            sel = key_tok >= 0
            add = torch.zeros_like(x)
            add[sel] = p["embed.key_table"][key_tok[sel]]
            x = x + add
        if c.task_spec.learned_query:
            x = torch.cat([x[:, :-1], p["query"].expand(b, 1, d)], dim=1)
        pos = position_ids(start, t)
        if enc.table:
            x = x + p["pos.table"][torch.from_numpy(pos)]
        rope = None
        if enc.rotary:
            rope = [torch.from_numpy(a) for a in rope_tables(pos, dh, model.dtype)]
        for i in range(c.n_blocks):
            pre = f"block{i}"
            last = i == c.n_blocks - 1
            r0 = t - 1 if last else 0
            hin = ln(x, f"{pre}.ln1") if c.pre_ln else x
            qkv = hin @ p[f"{pre}.attn.w_qkv"] + p[f"{pre}.attn.b_qkv"]
            q, k, v = qkv.view(b, t, 3, h, dh).permute(2, 0, 3, 1, 4)
            if rope is not None:
                q, k = rot(q, *rope), rot(k, *rope)
            z = q[:, :, r0:] @ k.transpose(-1, -2) / math.sqrt(dh)
            if enc.bias:
                z = z + torch.from_numpy(alibi_bias(h, r0, t, t, model.dtype))
            mask = torch.from_numpy(causal_mask(start, r0, t, t))
            heads = (weights(z, mask, i) @ v).transpose(1, 2).reshape(b, t - r0, d)
            a = heads @ p[f"{pre}.attn.w_o"] + p[f"{pre}.attn.b_o"]
            if c.norm == "layernorm":
                a = ln(a, f"{pre}.attn_norm")
            r = x[:, r0:] + a
            if not c.pre_ln:
                r = ln(r, f"{pre}.ln1")
            h2 = ln(r, f"{pre}.ln2") if c.pre_ln else r
            y = r + act(h2 @ p[f"{pre}.mlp.0.w"] + p[f"{pre}.mlp.0.b"]) @ p[f"{pre}.mlp.1.w"] + p[f"{pre}.mlp.1.b"]
            x = y if c.pre_ln else ln(y, f"{pre}.ln2")
        zq = x[:, 0]
        if c.pre_ln:
            zq = ln(zq, "final_ln")
        if c.tie_head:
            o = c.task_spec.output_feature_offset(c.vocab, c.key_encoding)
            return zq @ p["embed.w"][o:o + c.n_outputs].T
        return zq @ p["head.w"]

    return forward, p
