"""The remedies experiment (REMEDIES.md 4): which attention variant repairs length generalization, if any?

One design: the reproduction's grid with a variant axis (:class:`~varsim.experiments.settings.ReproductionSettings`
fields ``attentions``, ``inference_attentions``, ``depths``, ``lr_grid``), run by the same runner and executor
(``varsim reproduce OUTDIR --preset remedies [--quick]``).

Grid (:func:`remedies_settings`): both tasks x residual architecture x norm none x trained attention {softmax, ssmax,
logn (n0 = 16, the largest training length; unclamped, so the schedule acts during training, where N < 16 gives a
factor < 1), sigmoid, entmax15, softmax + ipr_norm} x depth {1, 2} x 6 seeds; train lengths vary within 1..16 as in
the reproduction. Residual only: the reproduction found the no-residual models learn
less reliably and the remedies question is about the attention map; halving the grid keeps it in the 90-minute budget
(``benchmarks/bench_remedies.py`` measures it).

Inference-only maps, applied to every softmax-trained run (same weights, same test, validation and probe sets: paired
by construction):

- ``adaptive_temperature`` (no parameter);
- ``topk1`` and ``topk4``: k = 1 is the hard selection a perfect retrieval needs (both tasks have one correct item);
  k = 4 keeps a few runners-up so a model whose correct logit is not always the largest is not cut off;
- ``critical`` with c = 1 and beta0 = sqrt(2 ln 16): the REM critical scaling ``c sqrt(2 ln N) / beta0`` normalized to
  1 at the training length N = 16, so the model is unchanged in distribution and sharpened like sqrt(ln N) beyond;
- ``control_logn``: the positive control (below).

Positive control (REMEDIES 4). Dictionary lookup has an exactly known structure: the correct item is the key equal to
the query, a margin m above the distractors' logits, independent of N. A softmax model's weight on it is
``1 / (1 + (N - 1) e^{-m})`` (decays to 0), while the oracle schedule ``softmax(ln N / ln 16 * z)`` (``logn`` with
n0 = 16 applied at inference, the identity for N <= 16) gives ``1 / (1 + (N - 1) N^{-m / ln 16})``, which does not
decay once the model has learned a margin m > ln 16 (weight > 1/2 at N = 16 against 15 distractors). So on dictionary
lookup, for the models that learned, ``control_logn`` must raise the weight on the correct item at long N, and the
accuracy with it: if the pipeline reports no gain there, it cannot detect one anywhere. In quick mode the tiny models
do not learn (400 steps), so the control's effect cannot be asserted there; the tests check the control is run and
paired, not its size.

Learning rate (:func:`select_lr`): the same grid ``lr_grid`` for every trained variant; per (task, architecture,
norm, attention, depth) each lr is trained on the first ``lr_select_seeds`` seeds and scored by its mean accuracy on
in-distribution validation sets (N in ``validation_lengths`` <= 16, their own seed stream, never a test set or a long
N). The best mean score wins (ties: the smaller lr); then all seeds run at that lr. The selection and its validation
numbers are stored in ``selection.json`` and the summary.
"""

from __future__ import annotations

import math

from varsim.experiments.settings import ReproductionSettings, _pow2

__all__ = ["TRAINED_ATTENTIONS", "INFERENCE_ATTENTIONS", "CONTROL", "LR_GRID", "remedies_settings", "PRESETS"]

#: trained variants: label -> ModelConfig overrides (logn's n0 is the largest training length, given explicitly)
TRAINED_ATTENTIONS = {
    "softmax": {},
    "ssmax": {"attention": "ssmax"},
    "logn": {"attention": "logn", "attention_params": {"n0": 16.0, "clamp": False}},
    "sigmoid": {"attention": "sigmoid"},
    "entmax15": {"attention": "entmax15"},
    "ipr_norm": {"attention_output": "ipr_norm"},
}
#: the positive control's label (an inference-only map on the softmax runs)
CONTROL = "control_logn"
INFERENCE_ATTENTIONS = {
    "adaptive_temperature": {"attention": "adaptive_temperature"},
    "topk1": {"attention": "topk", "params": {"k": 1}},
    "topk4": {"attention": "topk", "params": {"k": 4}},
    "critical": {"attention": "critical", "params": {"c": 1.0, "beta0": math.sqrt(2.0 * math.log(16.0))}},
    CONTROL: {"attention": "logn", "params": {"n0": 16.0}},
}
LR_GRID = (3e-4, 1e-3, 3e-3)


def remedies_settings(*, quick: bool = False, seeds: int | None = None, root_seed: int = 0,
                      **changes) -> ReproductionSettings:
    """The remedies grid (module docstring). Full: d_model 64, 3000 steps, N up to 1024 (a 2-block model's first
    block is full self-attention, O(N^2) per example, so N = 16384 is out of budget). Quick: the tiny models of
    the quick reproduction, 2 seeds, one lr selection seed, lengths up to 64 (a smoke test: the models do not
    learn)."""
    if quick:
        base = ReproductionSettings.quick().to_dict()
        base.update(seeds=2 if seeds is None else seeds, root_seed=root_seed, norms=["none"],
                    eval_lengths=_pow2(4, 6), probe_lengths=_pow2(4, 6), hist_lengths=(16,), eval_examples=64,
                    id_examples=64, probe_sets=16, lr_grid=(1e-3, 3e-3), lr_select_seeds=1,
                    validation_examples=64, attentions=TRAINED_ATTENTIONS, inference_attentions=INFERENCE_ATTENTIONS,
                    depths=(1, 2))
        base["train"] = {k: v for k, v in base["train"].items() if k != "lr"}
        base["train"]["steps"] = 200
        base["train"]["checkpoint_every"] = 100
    else:
        base = ReproductionSettings.full().to_dict()
        base.update(seeds=6 if seeds is None else seeds, root_seed=root_seed, architectures=["residual"],
                    norms=["none"], eval_lengths=_pow2(4, 10), probe_lengths=_pow2(4, 10), hist_lengths=(16, 256),
                    eval_examples=512, probe_sets=128, lr_grid=LR_GRID, lr_select_seeds=2,
                    attentions=TRAINED_ATTENTIONS, inference_attentions=INFERENCE_ATTENTIONS, depths=(1, 2))
        base["train"] = {k: v for k, v in base["train"].items() if k != "lr"}
        base["model"] = {k: v for k, v in base["model"].items() if k != "n_blocks"}  # depths set it
    base.update(changes)
    return ReproductionSettings.from_dict(base)


#: ``varsim reproduce --preset NAME``: name -> factory(quick, seeds, root_seed)
PRESETS = {"remedies": remedies_settings}
