"""The remedies experiment (REMEDIES.md 4): which attention variant repairs length generalization, under which
training recipe, and why?

One design: the reproduction's grid with a variant axis (:class:`~varsim.experiments.settings.ReproductionSettings`
fields ``attentions``, ``inference_attentions``, ``depths``, ``recipes``, ``key_encodings``, ``eval_long``), run by the
same runner and executor (``varsim reproduce OUTDIR --preset remedies [--quick]``).

Grid (:func:`remedies_settings`): task {argmax, dictionary} x recipe (:data:`RECIPES`) x key encoding (dictionary
only: {binary code, learned key table}) x trained attention (:data:`TRAINED_ATTENTIONS`) x 6 paired seeds; one
block, residual, no normalization after attention; trained on N in 1..16 (dictionary 2..16), 3000 steps, batch 64.

Recipes, every cell reported (no learning-rate selection): schedule {5% linear warmup then cosine decay to 0,
5% linear warmup then constant} x peak lr {1e-3, 3e-3}. Fixed and stated: AdamW (betas 0.9, 0.999, eps 1e-8,
weight decay 0.01 on matrices), gradient clipping at global norm 1.

Inference-only maps on every softmax-trained run (same weights, same test sets: paired by construction):
``topk1`` (hard selection), ``logn_temperature`` (softmax(ln N / ln 16 z): log-N scaling applied at inference, the
identity for N <= 16), ``adaptive_temperature``, ``critical`` (c = 1, beta0 = sqrt(2 ln 16): the REM critical scaling
normalized to 1 at N = 16).

Controls, which must behave by construction:

- positive, ``oracle``: the query token attends only to the correct item (weight 1). The ceiling of any
  attention-side remedy; a gain wherever the model's value path is right, so the assay can detect a gain.
- negative, inference arm, ``permuted_softmax``: softmax with its normalizer summed in another key order; equal to
  softmax up to rounding, so its paired difference must be ~0 and never significant.
- negative, trained arm, ``softmax_replicate``: plain softmax trained again from another initialization and data
  stream (:data:`~varsim.experiments.settings.REPLICATE_KEY`). Softmax in distribution, so its paired difference
  against softmax is a true null with the trained variants' seed-to-seed noise: it measures their false-positive
  rate.

Pre-registered primary endpoint (:data:`PRIMARY_ENDPOINT`, fixed before the grid was run): per task x recipe
(x key encoding), the paired accuracy difference of each remedy (:data:`REMEDIES`) against softmax at N = 1024, mean
over the 6 seeds with a Student-t 95% interval, paired t-test, Holm step-down over that family only. The controls
are judged by their own unadjusted tests. Everything else (other N up to 16384, weights, slopes, the
ranking/dispersion decomposition) is secondary and labelled so.
"""

from __future__ import annotations

import math

from varsim.experiments.grid_kind import GridKind
from varsim.experiments.remedies_summary import REMEDIES_SUMMARY_FORMAT, summarize_remedies
from varsim.experiments.remedies_table import render_variant_table
from varsim.experiments.settings import REPLICATE_KEY, ReproductionSettings, pow2_range
from varsim.experiments.variant_axis import has_variant_axis

__all__ = ["TRAINED_ATTENTIONS", "INFERENCE_ATTENTIONS", "RECIPES", "KEY_ENCODINGS", "REMEDIES",
           "POSITIVE_CONTROLS", "NEGATIVE_CONTROLS", "PRIMARY", "PRIMARY_ENDPOINT", "remedies_settings",
           "REMEDIES_KIND"]

#: trained variants: label -> ModelConfig overrides (logn's n0 is the largest training length, given explicitly)
TRAINED_ATTENTIONS = {
    "softmax": {},
    "softmax_replicate": {REPLICATE_KEY: True},
    "ssmax": {"attention": "ssmax"},
    "logn": {"attention": "logn", "attention_params": {"n0": 16.0, "clamp": False}},
    "entmax15": {"attention": "entmax15"},
}
#: inference-only maps and controls applied to the softmax runs: label -> {"attention", "params"}
INFERENCE_ATTENTIONS = {
    "topk1": {"attention": "topk", "params": {"k": 1}},
    "logn_temperature": {"attention": "logn", "params": {"n0": 16.0}},
    "adaptive_temperature": {"attention": "adaptive_temperature"},
    "critical": {"attention": "critical", "params": {"c": 1.0, "beta0": math.sqrt(2.0 * math.log(16.0))}},
    "oracle": {"attention": "oracle"},
    "permuted_softmax": {"attention": "permuted_softmax"},
}
#: the training recipes (TrainConfig overrides); the rest of the optimizer is fixed in the settings' ``train``
RECIPES = {
    "cosine_lr1e3": {"schedule": "cosine", "lr": 1e-3},
    "cosine_lr3e3": {"schedule": "cosine", "lr": 3e-3},
    "constant_lr1e3": {"schedule": "constant", "lr": 1e-3},
    "constant_lr3e3": {"schedule": "constant", "lr": 3e-3},
}
#: the dictionary's key encodings (varsim.tasks.keys): a 14-bit +-1 code, or a learned table of 16384 keys
KEY_ENCODINGS = ("binary", "embedding")
#: the remedies: the primary endpoint's family
REMEDIES = ("ssmax", "logn", "entmax15", "topk1", "logn_temperature", "adaptive_temperature", "critical")
POSITIVE_CONTROLS = ("oracle",)
NEGATIVE_CONTROLS = ("permuted_softmax", "softmax_replicate")
#: fixed before the grid ran (the settings' ``primary``, written to settings.json before any run); the summary
#: (varsim.experiments.remedies_summary) computes it, the docs quote it
PRIMARY = {"length": 1024, "variants": REMEDIES, "positive_controls": POSITIVE_CONTROLS,
           "negative_controls": NEGATIVE_CONTROLS}
PRIMARY_ENDPOINT = {
    **PRIMARY,
    "statistic": "paired accuracy difference against softmax (same seed index: same test sets; same weights for "
                 "the inference-only maps), mean over seeds with a two-sided Student-t 95% interval",
    "test": "paired t-test",
    "family": "every remedy x task x recipe x key encoding (dictionary) at N = 1024",
    "correction": "Holm step-down over the family (family-wise error rate 0.05)",
    "controls": "judged by their own unadjusted paired t-tests: the positive control must be significantly "
                "positive, the negative controls never significant (p >= 0.05)",
}


def remedies_settings(*, quick: bool = False, seeds: int | None = None, root_seed: int = 0,
                      **changes) -> ReproductionSettings:
    """The remedies grid (module docstring). Full: d_model 64, 4 heads, 1 block, 3000 steps; test sets of 512
    examples at N = 16..1024 and 256 at N = 2048..16384. Quick: the tiny models of the quick reproduction, 2 seeds,
    lengths up to 64 (a smoke test: the models do not learn)."""
    fixed_train = {"optimizer": "adamw", "weight_decay": 0.01, "clip_norm": 1.0}
    if quick:
        base = ReproductionSettings.quick().to_dict()
        base.update(seeds=2 if seeds is None else seeds, root_seed=root_seed, norms=["none"],
                    eval_lengths=pow2_range(4, 5), eval_long={"lengths": [64], "examples": 32},
                    probe_lengths=pow2_range(4, 6),
                    hist_lengths=(16,), eval_examples=64, id_examples=64, probe_sets=16,
                    attentions=TRAINED_ATTENTIONS, inference_attentions=INFERENCE_ATTENTIONS, depths=(1,),
                    recipes={"cosine_lr3e3": RECIPES["cosine_lr3e3"], "constant_lr3e3": RECIPES["constant_lr3e3"]},
                    key_encodings=KEY_ENCODINGS, primary={**PRIMARY, "length": 32})
        base["train"] = {**{k: v for k, v in base["train"].items() if k != "lr"}, **fixed_train,
                         "steps": 200, "checkpoint_every": 100}
    else:
        base = ReproductionSettings.full().to_dict()
        base.update(seeds=6 if seeds is None else seeds, root_seed=root_seed, architectures=["residual"],
                    norms=["none"], eval_lengths=pow2_range(4, 10),
                    eval_long={"lengths": pow2_range(11, 14), "examples": 256},
                    probe_lengths=pow2_range(4, 10), hist_lengths=(16, 256), eval_examples=512, probe_sets=128,
                    attentions=TRAINED_ATTENTIONS, inference_attentions=INFERENCE_ATTENTIONS, depths=(1,),
                    recipes=RECIPES, key_encodings=KEY_ENCODINGS, primary=PRIMARY)
        base["train"] = {**{k: v for k, v in base["train"].items() if k != "lr"}, **fixed_train}
        base["model"] = {k: v for k, v in base["model"].items() if k != "n_blocks"}  # depths set it
    base.update(changes)
    if "primary" not in changes:  # a slice of the grid keeps the endpoint's variants it has
        labels = set(base["attentions"]) | set(base["inference_attentions"])
        base["primary"] = {k: v if k == "length" else [x for x in v if x in labels]
                           for k, v in base["primary"].items()}
        if base["primary"]["length"] not in base["eval_lengths"]:
            base["primary"]["length"] = max(base["eval_lengths"])
    return ReproductionSettings.from_dict(base)


#: the grid kind of every grid with the variant axis (:mod:`varsim.experiments.variant_axis`): the variants' paired
#: differences against softmax (:mod:`varsim.experiments.remedies_summary`) and their table
REMEDIES_KIND = GridKind(
    name="remedies", claims=has_variant_axis, summarize=summarize_remedies, summary_format=REMEDIES_SUMMARY_FORMAT,
    table=render_variant_table, figure_source="remedies",
    title="varsim remedies: which attention variant repairs length generalization, under which recipe?")
