"""Where the decoder figures (``fig_decoder_*``) get their numbers: the summary of a ``varsim reproduce DIR --preset
decoder`` directory (the same summary as the remedies grid's, :mod:`varsim.experiments.remedies_summary`), or the
summary of the last full decoder run shipped with the package (:data:`COMMITTED_DIR`, written by ``python -m
varsim.figures.decoder RESULTS_DIR``). A build without either skips the decoder figures with one line, as the
remedies figures are skipped (:class:`varsim.figures.remedies.RemediesSource`, whose loading and checks this
source shares)."""

from __future__ import annotations

from pathlib import Path

from .remedies import RemediesSource, write_committed

__all__ = ["DecoderSource", "COMMITTED_DIR", "write_committed_decoder"]

#: The summary of the last full decoder run, shipped with the package (empty until that run is committed).
COMMITTED_DIR = Path(__file__).resolve().parent / "data" / "decoder"


class DecoderSource(RemediesSource):
    """The decoder numbers of one ``varsim figures`` call: the results directory ``decoder_results``, else the
    committed summary (:data:`COMMITTED_DIR`) when this build has one, else none (the figures are skipped)."""

    def __init__(self, results=None, *, quick: bool = False, committed=None):
        if results is not None and not str(results).strip():
            raise ValueError("decoder_results must not be empty")
        if results is not None and not Path(results).is_dir():
            raise ValueError(f"decoder_results {str(results)!r} is not a directory (run `varsim reproduce DIR "
                             "--preset decoder` into it first)")
        super().__init__(results, quick=quick, committed=COMMITTED_DIR if committed is None else committed)

    @classmethod
    def from_options(cls, options: dict) -> DecoderSource:
        return cls(options.get("decoder_results"), quick=options["quick"])

    def prepare(self, names, *, explicit, replot, outdir):
        skipped, why = super().prepare(names, explicit=explicit, replot=replot, outdir=outdir)
        if skipped:
            why = (f"no decoder {'stored data' if replot else 'results'} (draw them with --decoder-results DIR, a "
                   "`varsim reproduce DIR --preset decoder` directory)")
        return skipped, why

    def load(self) -> dict:
        if self._data is not None:
            return self._data
        if not self.available:
            raise ValueError("decoder_results: no decoder results in this build; draw these figures from a "
                             "`varsim reproduce DIR --preset decoder` directory with --decoder-results DIR")
        try:
            data = super().load()
        except ValueError as exc:
            raise ValueError(str(exc).replace("remedies_results", "decoder_results")
                             .replace("--preset remedies", "--preset decoder")) from None
        origin = data["origin"].replace("remedies", "decoder")
        data["footer"] = (data["footer"].replace(data["origin"], origin, 1)
                          .replace("varsim/figures/data/remedies", "varsim/figures/data/decoder", 1))
        data["origin"] = origin
        return data


def write_committed_decoder(results, dest=None, *, allow_incomplete: bool = False):
    """:func:`varsim.figures.remedies.write_committed` for a decoder results directory (default ``dest``:
    :data:`COMMITTED_DIR`), its errors naming the decoder preset."""
    try:
        return write_committed(results, COMMITTED_DIR if dest is None else dest, allow_incomplete=allow_incomplete)
    except ValueError as exc:
        raise ValueError(str(exc).replace("--preset remedies", "--preset decoder")) from None


def main(argv=None) -> int:
    """``python -m varsim.figures.decoder RESULTS_DIR [DEST]``: commit a finished decoder run's summary."""
    from ._commit import commit_main

    return commit_main(argv, prog="python -m varsim.figures.decoder", description=main.__doc__,
                       results_help="a finished `varsim reproduce DIR --preset decoder` directory",
                       default_dest=COMMITTED_DIR, write=write_committed_decoder,
                       flags=[("--allow-incomplete", "also a summary with missing runs")])


if __name__ == "__main__":
    raise SystemExit(main())
