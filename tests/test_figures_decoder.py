"""The decoder figure (fig_decoder_accuracy): skipped with one line while a build has no decoder results, a one-line
error when named without them, and drawn from a decoder results directory (the quick grid's summary)."""

from __future__ import annotations

import json

import pytest

import varsim.figures as figures
from varsim.cli import main

NAME = "fig_decoder_accuracy"


def test_without_results_it_is_skipped_with_one_line(tmp_path, capsys, monkeypatch):
    """`varsim figures` (all figures) skips it with one line naming --decoder-results and draws the others, exit 0;
    naming it with --only is a one-line error naming the option, exit 2."""
    import varsim.figures.decoder as fd

    monkeypatch.setattr(fd, "COMMITTED_DIR", tmp_path / "no-committed-summary")
    monkeypatch.setattr(figures, "FIGURES", {k: figures.FIGURES[k] for k in ("fig_decay_exponent", NAME)})
    rc = main(["figures", "--quick", "--outdir", str(tmp_path), "--no-progress"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert rc == 0 and len(lines) == 1 and "skipping fig_decoder_accuracy" in lines[0]
    assert "--decoder-results" in lines[0]
    assert (tmp_path / "fig_decay_exponent.png").exists() and not (tmp_path / f"{NAME}.png").exists()
    rc = main(["figures", "--quick", "--only", NAME, "--outdir", str(tmp_path), "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "decoder_results" in err


def test_a_missing_results_directory_is_a_one_line_error(tmp_path, capsys):
    rc = main(["figures", "--only", NAME, "--decoder-results", str(tmp_path / "nope"), "--no-progress",
               "--outdir", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "decoder_results" in err and "--preset decoder" in err
