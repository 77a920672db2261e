"""The variant axis of a grid (REMEDIES.md 4): the settings fields of the remedies and decoder grids and their
validation, one check per concern, run in :data:`CHECKS` order after the shared fields: the remedies kind's checks
(:data:`varsim.experiments.grid_kind.KIND_CHECKS` ``["remedies"]``; the decoder kind refines it). The fields are on
every settings object, so the checks run on every grid; a paper grid's defaults pass them.

``attentions`` (trained attention variants, each a label -> ModelConfig overrides), ``inference_attentions`` (weight
maps applied at evaluation to the softmax-trained runs), ``depths`` (``n_blocks``), an ``lr_grid`` selected on
in-distribution validation sets (``lr_select_seeds``, ``validation_lengths``, ``validation_examples``), ``recipes``
(TrainConfig overrides, each a cell), ``key_encodings``, ``eval_long`` (longer test lengths) and the pre-registered
``primary`` endpoint. A field at its default is left out of the settings' ``to_dict`` and of the specs, so a paper
grid's ``settings.json`` and run records carry none of them.
"""

from __future__ import annotations

from varsim._common.validate import check_choice, check_int, check_int_grid, check_real
from varsim.experiments.grid_kind import KIND_CHECKS, KindChecks

__all__ = ["REMEDY_FIELDS", "BASELINE_ATTENTION", "PRIMARY_KEYS", "RECIPE_KEYS", "REPLICATE_KEY", "MODEL_KEYS",
           "CHECKS", "check_variant_axis", "has_variant_axis"]

#: the fields and their defaults (a field at its default is not written to settings or specs)
REMEDY_FIELDS = {"attentions": {}, "inference_attentions": {}, "depths": (), "lr_grid": (), "lr_select_seeds": 2,
                 "validation_lengths": (4, 8, 16), "validation_examples": 512, "recipes": {}, "key_encodings": (),
                 "eval_long": {}, "primary": {}}
#: the label of the trained baseline attention in ``attentions`` (the inference-only maps are applied to its runs)
BASELINE_ATTENTION = "softmax"
#: the keys of a pre-registered primary endpoint (``primary``)
PRIMARY_KEYS = ("length", "variants", "positive_controls", "negative_controls")
#: the TrainConfig fields a recipe may set
RECIPE_KEYS = ("optimizer", "lr", "schedule", "warmup", "min_lr_ratio", "weight_decay", "clip_norm")
#: an ``attentions`` entry's key (besides the model keys) that makes it a replicate of softmax: the same map trained
#: from another initialization and data stream (the trained arm's negative control)
REPLICATE_KEY = "replicate"
#: the ModelConfig fields an ``attentions`` entry sets
MODEL_KEYS = ("attention", "attention_params", "attention_output", "attention_output_params")


def has_variant_axis(settings: dict) -> bool:
    """Whether a settings dict (``settings.json``, a summary's ``settings``) sets any field of the axis."""
    return any(k in settings and settings[k] != (list(v) if isinstance(v, tuple) else v)
               for k, v in REMEDY_FIELDS.items())


def _unique(field: str, values: tuple) -> tuple:
    if len(set(values)) != len(values):
        raise ValueError(f"{field} has duplicates: {list(values)}")
    return values


def _check_attentions(s, set_) -> None:
    """``attentions``: label -> model overrides or a replicate of softmax; the baseline softmax among them."""
    for field in ("attentions", "inference_attentions"):
        value = getattr(s, field)
        if not isinstance(value, dict) or not all(isinstance(k, str) and k for k in value):
            raise ValueError(f"{field} must be a dict label -> settings, got {value!r}")
        set_(field, {k: dict(v) if isinstance(v, dict) else v for k, v in value.items()})
    for label, ov in s.attentions.items():
        if not isinstance(ov, dict) or set(ov) - set(MODEL_KEYS) - {REPLICATE_KEY}:
            raise ValueError(f"attentions[{label!r}] must be a dict of {', '.join(MODEL_KEYS)}, got {ov!r}")
        if REPLICATE_KEY in ov and (ov[REPLICATE_KEY] is not True or set(ov) != {REPLICATE_KEY}):
            raise ValueError(f"attentions[{label!r}]: a replicate of softmax is {{{REPLICATE_KEY!r}: true}} alone, "
                             f"got {ov!r}")
        if "-" in label:
            raise ValueError(f"attentions label {label!r} must not contain '-' (it is part of run ids)")
    if s.attentions and BASELINE_ATTENTION not in s.attentions:
        raise ValueError(f"attentions must include the baseline {BASELINE_ATTENTION!r} (plain softmax)")
    if s.attentions.get(BASELINE_ATTENTION, {}) not in ({}, {"attention": "softmax"}):
        raise ValueError(f"attentions[{BASELINE_ATTENTION!r}] must be plain softmax ({{}})")


def _check_inference(s, set_) -> None:
    """``inference_attentions``: label -> a registered weight map or control with its parameters."""
    from varsim.variants import CONTROLS, get_variant

    if s.inference_attentions and not s.attentions:
        raise ValueError("inference_attentions need attentions (they are applied to the softmax-trained runs)")
    for label, ov in s.inference_attentions.items():
        if not isinstance(ov, dict) or set(ov) - {"attention", "params"} or "attention" not in ov:
            raise ValueError(f"inference_attentions[{label!r}] must be {{'attention': NAME, 'params': {{...}}}}, "
                             f"got {ov!r}")
        if label in s.attentions:
            raise ValueError(f"inference_attentions label {label!r} is also a trained attention label")
        if ov["attention"] in CONTROLS and CONTROLS.find(ov["attention"]).weight_map is None:
            if ov.get("params"):
                raise ValueError(f"inference_attentions[{label!r}]: the control {ov['attention']!r} takes no "
                                 "parameters")
        else:
            get_variant(ov["attention"]).check_params(ov.get("params") or {})  # ValueError naming the parameter


def _check_depths(s, set_) -> None:
    set_("depths", _unique("depths", tuple(check_int("depths", d, minimum=1) for d in s.depths)))


def _check_lr_axis(s, set_) -> None:
    """``lr_grid`` and its selection runs (seeds, validation lengths and examples)."""
    set_("lr_grid", _unique("lr_grid", tuple(check_real("lr_grid", v, minimum=0.0, strict_min=True)
                                             for v in s.lr_grid)))
    set_("lr_select_seeds", check_int("lr_select_seeds", s.lr_select_seeds, minimum=1))
    if s.lr_grid and s.lr_select_seeds > s.seeds:
        raise ValueError(f"lr_select_seeds ({s.lr_select_seeds}) must be <= seeds ({s.seeds})")
    set_("validation_lengths", tuple(int(v) for v in check_int_grid("validation_lengths", s.validation_lengths)))
    set_("validation_examples", check_int("validation_examples", s.validation_examples, minimum=1))
    if s.lr_grid and "lr" in s.train:
        raise ValueError("train may not set lr when lr_grid is given: the grid chooses it")


def _check_recipes(s, set_) -> None:
    """``recipes``: label -> TrainConfig overrides of :data:`RECIPE_KEYS`; exclusive with an ``lr_grid``."""
    if not isinstance(s.recipes, dict):
        raise ValueError(f"recipes must be a dict label -> TrainConfig overrides, got {s.recipes!r}")
    for label, ov in s.recipes.items():
        if not isinstance(label, str) or not label or "-" in label:
            raise ValueError(f"recipes label {label!r} must be a non-empty name without '-' (part of run ids)")
        if not isinstance(ov, dict) or set(ov) - set(RECIPE_KEYS):
            raise ValueError(f"recipes[{label!r}] must be a dict of {', '.join(RECIPE_KEYS)}, got {ov!r}")
    set_("recipes", {k: dict(v) for k, v in s.recipes.items()})
    if s.recipes and s.lr_grid:
        raise ValueError("recipes and lr_grid exclude each other: a recipe states its lr, nothing is selected")
    if s.recipes and set(RECIPE_KEYS) & set(s.train) & {k for v in s.recipes.values() for k in v}:
        raise ValueError("train may not set a field that a recipe sets")


def _check_key_encodings(s, set_) -> None:
    from varsim.tasks import KEY_ENCODINGS

    if isinstance(s.key_encodings, str):
        raise ValueError(f"key_encodings must be a list of names, got {s.key_encodings!r}")
    set_("key_encodings", _unique("key_encodings", tuple(check_choice("key_encodings", e, KEY_ENCODINGS)
                                                         for e in s.key_encodings)))
    if s.key_encodings and "key_encoding" in s.model:
        raise ValueError("model may not set key_encoding when key_encodings is given")


def _check_eval_long(s, set_) -> None:
    """``eval_long``: ``{"lengths", "examples"}``, the lengths above every ``eval_lengths``."""
    if not s.eval_long:
        return
    if not isinstance(s.eval_long, dict) or set(s.eval_long) != {"lengths", "examples"}:
        raise ValueError(f"eval_long must be {{'lengths': [...], 'examples': n}}, got {s.eval_long!r}")
    lengths = tuple(int(v) for v in check_int_grid("eval_long.lengths", s.eval_long["lengths"]))
    if any(b <= a for a, b in zip(lengths, lengths[1:])) or lengths[0] <= s.eval_lengths[-1]:
        raise ValueError(f"eval_long.lengths must be strictly increasing and above every eval_lengths, got "
                         f"{list(lengths)}")
    set_("eval_long", {"lengths": lengths,
                       "examples": check_int("eval_long.examples", s.eval_long["examples"], minimum=1)})


def _check_primary(s, set_) -> None:
    """``primary``: the pre-registered endpoint's length (one of ``eval_lengths``) and its variant labels."""
    p = s.primary
    if not p:
        return
    if not isinstance(p, dict) or set(p) != set(PRIMARY_KEYS):
        raise ValueError(f"primary must be a dict of {', '.join(PRIMARY_KEYS)}, got {p!r}")
    if p["length"] not in s.eval_lengths:
        raise ValueError(f"primary.length {p['length']!r} must be one of eval_lengths {list(s.eval_lengths)}")
    labels = (set(s.attentions) | set(s.inference_attentions)) - {BASELINE_ATTENTION}
    for key in PRIMARY_KEYS[1:]:
        if isinstance(p[key], str) or not all(v in labels for v in p[key]):
            raise ValueError(f"primary.{key} must list variant labels of the grid ({', '.join(sorted(labels))}), "
                             f"got {p[key]!r}")
    set_("primary", {"length": int(p["length"]), **{k: tuple(p[k]) for k in PRIMARY_KEYS[1:]}})


def _check_model_overrides(s, set_) -> None:
    """The shared ``model`` overrides may not set what the axis sets."""
    if s.depths and "n_blocks" in s.model:
        raise ValueError("model may not set n_blocks when depths is given")
    fixed = set(MODEL_KEYS) & set(s.model)
    if fixed and s.attentions:
        raise ValueError(f"model overrides may not set {sorted(fixed)} when attentions is given")


#: the checks, in order (a later one may read a field an earlier one normalized)
CHECKS = (_check_attentions, _check_inference, _check_depths, _check_lr_axis, _check_recipes, _check_key_encodings,
          _check_eval_long, _check_primary, _check_model_overrides)


def check_variant_axis(settings, set_) -> None:
    """Validate and normalize the axis fields of ``settings`` (a ReproductionSettings being built; ``set_(field,
    value)`` stores a normalized value); ValueError naming the field."""
    for check in CHECKS:
        check(settings, set_)


#: the remedies kind owns these checks (ReproductionSettings asks the registry)
KIND_CHECKS.add(KindChecks("remedies", CHECKS))
