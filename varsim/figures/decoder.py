"""Where the decoder figures (``fig_decoder_*``) get their numbers: the summaries of ``varsim reproduce DIR --preset
decoder`` (and ``--preset decoder_constant``) directories (the same summary as the remedies grid's,
:mod:`varsim.experiments.remedies_summary`), or the summaries of the last full decoder runs shipped with the package
(:data:`COMMITTED_DIRS`, written by ``python -m varsim.figures.decoder RESULTS_DIR``). A build without either skips
the decoder figures with one line, as the remedies figures are skipped (the loading and checks of
:class:`varsim.figures.remedies.GridSummarySource`, for the grid kind ``decoder``).

The experiment has arms, one per training recipe (:data:`varsim.experiments.decoder_grid.SCHEDULES`): the
pre-registered grid (cosine decay) and the recipe check (a constant learning rate). The accuracy figure draws the
first arm; the primary-endpoint figure draws every arm side by side."""

from __future__ import annotations

from pathlib import Path

from varsim.experiments.decoder_grid import SCHEDULES

from .remedies import GridSummarySource, grid_summary, recipe_label, write_committed
from .source_spec import SourceOption

__all__ = ["DecoderSource", "COMMITTED_DIR", "COMMITTED_DIRS", "write_committed_decoder", "position_label"]

DATA_DIR = Path(__file__).resolve().parent / "data"
#: The summaries of the last full run of each arm, shipped with the package: preset name -> directory (a directory
#: without ``summary.json`` is an arm not yet committed)
COMMITTED_DIRS = {preset: DATA_DIR / preset for preset in SCHEDULES}
#: The first arm (the pre-registered grid, cosine decay): what the accuracy figure draws by default.
COMMITTED_DIR = COMMITTED_DIRS["decoder"]
#: the positional encodings in words
POSITION_WORDS = {"none": "NoPE", "rope": "RoPE", "alibi": "ALiBi", "learned": "learned positions"}


def position_label(architecture: str) -> str:
    """A decoder architecture of the grid (``decoder_rope``) in words (``RoPE``)."""
    pos = architecture.removeprefix("decoder_")
    return POSITION_WORDS.get(pos, pos)


class DecoderSource(GridSummarySource):
    """The decoder numbers of one ``varsim figures`` call: the results directories ``decoder_results`` (one path or
    several, one per arm, the first drawn by the accuracy figure), else the committed summaries
    (:data:`COMMITTED_DIRS`) when this build has the first arm's, else none (the figures are skipped).
    ``committed`` replaces the first committed arm and drops the others (tests)."""

    KIND = PRESET = SOURCE = "decoder"
    OPTION = "decoder_results"
    OPTIONS = (SourceOption(OPTION, "draw the decoder figures (fig_decoder_*) from these `varsim reproduce DIR "
                                    "--preset decoder` (or decoder_constant) directories, one per training recipe, "
                                    "instead of the committed summaries of the last full decoder runs; the accuracy "
                                    "figure draws the first", nargs="+"),)
    GALLERY = "Causal decoder"

    def __init__(self, results=None, *, quick: bool = False, committed=None):
        dirs = None if results is None else [results] if isinstance(results, (str, Path)) else list(results)
        if dirs is not None and not dirs:
            raise ValueError("decoder_results must name at least one directory")
        super().__init__(None if dirs is None else dirs[0], quick=quick,
                         committed=COMMITTED_DIR if committed is None else committed)
        self._more = [self.checked_dir(d) for d in (dirs or [])[1:]]
        self._more_committed = [d for k, d in COMMITTED_DIRS.items() if k != "decoder"] if committed is None else []
        self._arms: list[dict] | None = None

    def committed_label(self) -> str:
        return f"varsim/figures/data/{self.committed.name}"  # one directory per arm

    def load(self) -> dict:
        if self._data is None:
            data = super().load()
            train = data["settings"].get("train", {})
            data["recipe"] = {"schedule": train.get("schedule"), "lr": train.get("lr")}
            data["recipe_label"] = recipe_label(data["recipe"])
        return self._data

    def arms(self) -> list[dict]:
        """Every arm's loaded data (:meth:`load`, with ``recipe`` and ``recipe_label``): the first, then the other
        results directories given, or, drawing from the committed summaries, the other committed arms this build
        has. ValueError naming ``decoder_results`` when two arms have the same recipe or different primary
        lengths (they would not be one experiment)."""
        if self._arms is None:
            others = ([DecoderSource(d, quick=self.quick) for d in self._more] if self.results is not None else
                      [DecoderSource(None, quick=self.quick, committed=d) for d in self._more_committed
                       if (d / "summary.json").is_file()])
            arms = [self.load(), *(o.load() for o in others)]
            labels = [a["recipe_label"] for a in arms]
            if len(set(labels)) < len(labels):
                raise ValueError(f"decoder_results: two arms with the same recipe ({', '.join(labels)})")
            lengths = {(a["summary"].get("primary_endpoint") or {}).get("length") for a in arms}
            if len(lengths) > 1:
                raise ValueError(f"decoder_results: the arms' primary endpoints are at different N "
                                 f"({', '.join(map(str, sorted(lengths, key=str)))})")
            self._arms = arms
        return self._arms


def write_committed_decoder(results, dest=None, *, allow_incomplete: bool = False):
    """:func:`varsim.figures.remedies.write_committed` for a decoder results directory, its errors naming the decoder
    preset. Default ``dest``: its arm's directory in :data:`COMMITTED_DIRS`, found from the learning-rate schedule in
    its settings (ValueError for a schedule no arm has: give ``dest``). A grid that is not a decoder grid (a remedies
    run, say) is refused, so it cannot overwrite a decoder arm."""
    settings = grid_summary(results, "decoder")["settings"]
    if dest is None:
        schedule = settings.get("train", {}).get("schedule")
        arm = {v: k for k, v in SCHEDULES.items()}.get(schedule)
        if arm is None:
            raise ValueError(f"results: no committed decoder arm has the schedule {schedule!r} (arms: "
                             f"{', '.join(f'{k} = {v}' for k, v in SCHEDULES.items())}); give DEST")
        dest = COMMITTED_DIRS[arm]
    return write_committed(results, dest, allow_incomplete=allow_incomplete, preset="decoder")


def main(argv=None) -> int:
    """``python -m varsim.figures.decoder RESULTS_DIR [DEST]``: commit a finished decoder run's summary."""
    from ._commit import commit_main

    return commit_main(argv, prog="python -m varsim.figures.decoder", description=main.__doc__,
                       results_help="a finished `varsim reproduce DIR --preset decoder` directory",
                       default_dest=None, write=write_committed_decoder,
                       dest_help="default: the arm's directory under varsim/figures/data (decoder, decoder_constant)",
                       flags=[("--allow-incomplete", "also a summary with missing runs")])


if __name__ == "__main__":
    raise SystemExit(main())
