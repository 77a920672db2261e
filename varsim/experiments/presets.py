"""The grids ``varsim reproduce --preset NAME`` runs besides the paper reproduction: name -> settings factory."""

from __future__ import annotations

from varsim.experiments.decoder_grid import decoder_constant_settings, decoder_settings
from varsim.experiments.remedies import remedies_settings

__all__ = ["PRESETS"]

#: ``varsim reproduce --preset NAME``: name -> factory(quick, seeds, root_seed, **changes) -> ReproductionSettings
PRESETS = {"remedies": remedies_settings, "decoder": decoder_settings, "decoder_constant": decoder_constant_settings}
