"""The grids ``varsim reproduce --preset NAME`` runs besides the paper reproduction: name -> settings factory, and
the one way to build a preset's settings with the caller's options (:func:`preset_settings`), which refuses an
option that contradicts the preset."""

from __future__ import annotations

from varsim._common.validate import check_choice
from varsim.experiments.decoder_grid import decoder_constant_settings, decoder_settings
from varsim.experiments.remedies import remedies_settings
from varsim.experiments.settings import GRID_ARCHITECTURES, ReproductionSettings

__all__ = ["PRESETS", "preset_settings", "grid_model"]

#: ``varsim reproduce --preset NAME``: name -> factory(*, quick, seeds, root_seed, **changes) -> ReproductionSettings
PRESETS = {"remedies": remedies_settings, "decoder": decoder_settings, "decoder_constant": decoder_constant_settings}

#: the options of :func:`preset_settings` that change the preset's grid (and so can contradict it)
GRID_OPTIONS = ("tasks", "architectures", "norms", "seeds")


def grid_model(label: str) -> str:
    """The model (a name of :data:`varsim.nn.architectures.ARCHITECTURES`) that the grid architecture ``label`` (a
    key of :data:`~varsim.experiments.settings.GRID_ARCHITECTURES`) builds."""
    from varsim.nn.config import DEFAULT_ARCHITECTURE

    return GRID_ARCHITECTURES[label].get("architecture", DEFAULT_ARCHITECTURE)


def preset_settings(name: str, *, quick: bool = False, **changes) -> ReproductionSettings:
    """The settings of preset ``name`` with ``changes`` (``seeds``, ``root_seed``, ``tasks``, ``architectures``,
    ``norms``), or a ValueError naming the preset and the option that contradicts it, before any work:

    - an architecture whose model (:func:`grid_model`) is not a model the preset's own grid trains (the decoder
      grid trains the causal decoder, the remedies grid the set transformer, whose controls the decoder lacks);
    - any other value the preset's grid cannot run (its settings refuse it: a task the model cannot read).
    """
    factory = PRESETS[check_choice("preset", name, PRESETS)]
    archs = changes.get("architectures")
    if archs is not None and not isinstance(archs, str):
        own = factory(quick=quick).architectures
        models = {grid_model(a) for a in own}
        mine = [a for a in GRID_ARCHITECTURES if grid_model(a) in models]
        for a in archs:
            if a in GRID_ARCHITECTURES and grid_model(a) not in models:
                raise ValueError(f"architectures {a!r} builds the {grid_model(a)} model, which contradicts preset "
                                 f"{name!r}: its grid trains the {' and '.join(sorted(models))} model (architectures "
                                 f"{', '.join(mine)})")
    try:
        return factory(quick=quick, **changes)
    except ValueError as exc:
        given = [k for k in GRID_OPTIONS if changes.get(k) is not None]
        if not given:
            raise
        options = ", ".join(f"{k} {' '.join(map(str, v)) if isinstance(v, (list, tuple)) else v}"
                            for k, v in ((k, changes[k]) for k in given))
        raise ValueError(f"preset {name!r} with {options}: {exc}") from None
