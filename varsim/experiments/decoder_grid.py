"""The decoder experiment (issue 20): does the set model's picture (vanishing variance, and the remedies that sharpen
attention) hold in a causal decoder with positions, trained short and tested long?

One design on the same machinery as the reproduction and the remedies grid
(:class:`~varsim.experiments.settings.ReproductionSettings`, run by the same runner and executor, summarized by the
same remedies summary): ``varsim reproduce OUTDIR --preset decoder [--quick]``.

Grid (:func:`decoder_settings`): task argmax retrieval as a sequence (the N items' tokens in order, then the query
token; the label of the item with the largest priority) x positions {NoPE, RoPE, ALiBi} (the grid's architectures
``decoder_none``, ``decoder_rope``, ``decoder_alibi``) x normalization after attention {none, layernorm} x trained
attention (:data:`TRAINED_ATTENTIONS`: softmax, its replicate, SSMax, log-N) x 6 paired seeds: 144 runs.

Why argmax: it is the task of the paper's Figure 1 and the one where the set model's picture is clearest (one item
decides the answer, every other item is noise whose weight is the dispersion the theory is about), and its answer
does not depend on the order of the items, so positions can only change the mechanism, never the target.
Dictionary lookup needs a key code the decoder would first have to match; recall needs two hops through the order.

Model (fixed): a 2-block pre-norm causal decoder (:mod:`varsim.nn.decoder`), d_model 64, 4 heads, MLP width 128,
float32; the last block computes the query row only. Two blocks so that the first block's rows are causal (each item
sees only the items before it) and the query row of the second reads them, as in a language model.

Recipe (fixed and stated, no selection): AdamW (betas 0.9, 0.999, eps 1e-8, weight decay 0.01 on matrices), peak
lr 1e-3, 5% linear warmup then cosine decay to 0, gradient clipping at global norm 1, batch 64, 2000 steps, set
sizes uniform on 1..16 (the remedies grid found the schedule decisive for the set model: cosine is the recipe under
which its variants were compared at their best).

log-N: ``softmax(ln n / ln n0 z)`` with ``n`` the number of keys a row sees and ``n0 = 17``, the keys the query row
sees in the longest training sequence (16 items and itself), not clamped (as in the remedies grid).

Evaluation: accuracy at N = 16, 32, ..., 1024 (64x the longest training set) on 512 test examples per N, shared by
every run of a seed index (paired); in-distribution accuracy at N = 16 on 2048 examples ("learned" at >= 0.9); the
probes of :mod:`varsim.train.probes` on the first block's query row (output spread, E[sum w^2], weight on the
correct item) at N = 16..1024 with 128 sets; the ranking/dispersion decomposition (:mod:`varsim.train.ranking`) from
the last block's query row (the last position's weights over the items, :meth:`varsim.nn.decoder.Decoder.
logits_and_weights`), recorded per run as ``ranking``.

Controls: negative, ``softmax_replicate`` (plain softmax trained from another initialization and data stream: a
true null with the trained variants' seed-to-seed noise). No positive control: the set model's ``oracle`` points the
query token at the correct item, which the decoder's evaluation cannot do, so none is claimed.

Pre-registered primary endpoint (:data:`PRIMARY_ENDPOINT`, in ``settings.json`` before any run): per position x
norm, the paired accuracy difference of SSMax and log-N against softmax at N = 1024, mean over the 6 seeds with a
Student-t 95% interval, paired t-test, Holm step-down over that family (2 variants x 3 positions x 2 norms = 12
tests). The negative control is judged by its own unadjusted test. Everything else is secondary.

Cost, measured (``python benchmarks/bench_remedies.py DIR`` on the finished grids, 2-core machine, shared with other
work): the cosine grid 68.0 min wall, 4,668 CPU s; the constant-rate grid 41.2 min wall, 4,765 CPU s (about 33 CPU s
per run: training two thirds, evaluation a quarter, the probes a tenth). Per-run CPU time of one run per attention:
``nice -n 19 python benchmarks/bench_decoder_grid.py [RUN_ID_PART ...]``.
"""

from __future__ import annotations

from varsim.experiments.grid_kind import GridKind
from varsim.experiments.remedies_summary import REMEDIES_SUMMARY_FORMAT, summarize_remedies
from varsim.experiments.remedies_table import render_variant_table
from varsim.experiments.settings import GRID_ARCHITECTURES, REPLICATE_KEY, ReproductionSettings, pow2_range
from varsim.experiments.variant_axis import has_variant_axis

__all__ = ["TRAINED_ATTENTIONS", "POSITIONS", "NORMS", "VARIANTS", "NEGATIVE_CONTROLS", "PRIMARY",
           "PRIMARY_ENDPOINT", "SCHEDULES", "decoder_settings", "decoder_constant_settings", "DECODER_KIND",
           "is_decoder_grid"]

#: the longest training set and the keys its query row sees (16 items and the query token itself)
TRAIN_MAX = 16
LOGN_N0 = float(TRAIN_MAX + 1)
#: trained attention: label -> ModelConfig overrides
TRAINED_ATTENTIONS = {
    "softmax": {},
    "softmax_replicate": {REPLICATE_KEY: True},
    "ssmax": {"attention": "ssmax"},
    "logn": {"attention": "logn", "attention_params": {"n0": LOGN_N0, "clamp": False}},
}
#: the grid's architectures: the causal decoder with each positional encoding
POSITIONS = ("decoder_none", "decoder_rope", "decoder_alibi")
NORMS = ("none", "layernorm")
VARIANTS = ("ssmax", "logn")
NEGATIVE_CONTROLS = ("softmax_replicate",)
PRIMARY = {"length": 1024, "variants": VARIANTS, "positive_controls": (), "negative_controls": NEGATIVE_CONTROLS}
PRIMARY_ENDPOINT = {
    **PRIMARY,
    "statistic": "paired accuracy difference against softmax (same seed index: same test sets), mean over seeds "
                 "with a two-sided Student-t 95% interval",
    "test": "paired t-test",
    "family": "ssmax and logn x position (none, rope, alibi) x norm (none, layernorm) at N = 1024",
    "correction": "Holm step-down over the family (family-wise error rate 0.05)",
    "controls": "the negative control (softmax_replicate) judged by its own unadjusted paired t-test: never "
                "significant (p >= 0.05); no positive control (the oracle needs the set model)",
}

#: the learning-rate schedule of each arm: ``decoder`` (the pre-registered grid) and ``decoder_constant`` (the recipe
#: check; the same grid with the peak lr held after warmup)
SCHEDULES = {"decoder": "cosine", "decoder_constant": "constant"}

_MODEL = {"d_model": 64, "n_heads": 4, "d_hidden": 128, "pre_ln": True}
DEPTH = 2
_TRAIN = {"optimizer": "adamw", "lr": 1e-3, "weight_decay": 0.01, "clip_norm": 1.0, "schedule": "cosine",
          "steps": 2000, "batch_size": 64, "train_max": TRAIN_MAX, "checkpoint_every": 1000,
          "keep_checkpoints": 1}


def decoder_settings(*, quick: bool = False, seeds: int | None = None, root_seed: int = 0, schedule: str = "cosine",
                     **changes) -> ReproductionSettings:
    """The decoder grid (module docstring) with the learning-rate ``schedule`` (``cosine``: the pre-registered grid;
    ``constant``: :func:`decoder_constant_settings`). Quick: d_model 16, 2 heads, 60 steps, 2 seeds, N up to 64, a
    smoke test of the whole pipeline (the models do not learn)."""
    train = {**_TRAIN, "schedule": schedule}
    base = ReproductionSettings().to_dict()
    base.update(tasks=["argmax"], architectures=list(POSITIONS), norms=list(NORMS), attentions=TRAINED_ATTENTIONS,
                depths=(DEPTH,), root_seed=root_seed)
    if quick:
        base.update(seeds=2 if seeds is None else seeds, model={**_MODEL, "d_model": 16, "n_heads": 2, "d_hidden": 32},
                    train={**train, "steps": 60, "batch_size": 16, "checkpoint_every": 30, "log_every": 30},
                    eval_lengths=pow2_range(4, 6), eval_examples=32, id_examples=32, eval_batch_size=32,
                    probe_lengths=pow2_range(4, 6), probe_sets=16, hist_lengths=(16,),
                    primary={**PRIMARY, "length": 64})
    else:
        base.update(seeds=6 if seeds is None else seeds, model=dict(_MODEL), train=train,
                    eval_lengths=pow2_range(4, 10), eval_examples=512, id_examples=2048, eval_batch_size=64,
                    probe_lengths=pow2_range(4, 10), probe_sets=128, hist_lengths=(16, 256, 1024), primary=PRIMARY)
    base.update(changes)
    return ReproductionSettings.from_dict(base)


def decoder_constant_settings(**kwargs) -> ReproductionSettings:
    """The recipe check of the decoder grid (``--preset decoder_constant``): the same grid, seeds, test sets and
    pre-registered endpoint, trained with a constant learning rate after warmup instead of cosine decay. The remedies
    grid found the schedule decisive for the set model's argmax (the remedies' gains at N = 1024 nearly vanish under
    a constant rate, where ranking errors dominate), so the decoder's answer is checked under the same change. Its
    endpoint (the same 12 comparisons, Holm over them, a family of its own) was fixed before any of its runs."""
    return decoder_settings(schedule=SCHEDULES["decoder_constant"], **kwargs)


def is_decoder_grid(settings: dict) -> bool:
    """Whether the grid of ``settings`` (a settings dict, as in ``settings.json`` and a summary) has the variant axis
    and trains causal decoders only: every architecture of :data:`~varsim.experiments.settings.GRID_ARCHITECTURES` it
    names is the decoder, and it names one."""
    archs = settings.get("architectures") or ()
    return has_variant_axis(settings) and bool(archs) and all(
        GRID_ARCHITECTURES.get(a, {}).get("architecture") == "decoder" for a in archs)


#: the variant grids of causal decoders: the remedies grid's summary and table under their own title
DECODER_KIND = GridKind(
    name="decoder", claims=is_decoder_grid, refines="remedies", summarize=summarize_remedies,
    summary_format=REMEDIES_SUMMARY_FORMAT, table=render_variant_table, figure_source="decoder",
    title="varsim decoder: does the set model's picture hold in a causal decoder with positions?")
