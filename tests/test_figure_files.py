"""A figure's files are replaced together or not at all, and the errors of writing them name the user's path.

``varsim figures`` writes each figure's JSON (its data), PNG and PDF; a disk that fills between them once left new
data beside old pictures. Now the three are written to temporaries first and renamed only when all are on disk:
a failure leaves the old set as it was and no temporary behind. ``plotting.save`` names the path it was given
(never its hidden temporary file), and refuses a ``record`` that is not JSON, naming ``record``."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import numpy as np
import pytest

from varsim import plotting
from varsim._common import atomic
from varsim.figures import make

NAME = "fig_remedies_primary"  # draws the committed remedies summary: the quickest figure, no simulation


def _failing_write_on(monkeypatch, suffix: str):
    """Make the write of the file ending in ``suffix`` fail with 'no space left on device' (the others succeed)."""
    real = atomic._write_temp

    def write_temp(p, writer):
        if str(p).endswith(suffix):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(p))
        return real(p, writer)

    monkeypatch.setattr(atomic, "_write_temp", write_temp)


def test_atomic_write_files_is_all_or_nothing(tmp_path, monkeypatch):
    """Three files written as a set: all replaced on success; when the last one's write fails, the first two keep
    their old bytes and no temporary is left. Seen failing with the files written one after the other."""
    paths = [tmp_path / f"f.{ext}" for ext in ("json", "png", "pdf")]
    atomic.atomic_write_files({p: b"old" for p in paths})
    assert [p.read_bytes() for p in paths] == [b"old"] * 3
    _failing_write_on(monkeypatch, ".pdf")
    with pytest.raises(OSError, match="f.pdf") as info:
        atomic.atomic_write_files({p: b"new" for p in paths})
    assert info.value.errno == errno.ENOSPC
    assert [p.read_bytes() for p in paths] == [b"old"] * 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.json", "f.pdf", "f.png"]
    monkeypatch.undo()
    atomic.atomic_write_files({p: b"new" for p in paths})
    assert [p.read_bytes() for p in paths] == [b"new"] * 3


def test_a_figure_whose_picture_cannot_be_written_keeps_its_old_data_and_pictures(tmp_path, monkeypatch):
    """``make`` writes a figure's JSON, PNG and PDF as one set: when the PNG or the PDF cannot be written (a full
    disk), the JSON and pictures of the previous run stay, byte for byte, and nothing else is left in the
    directory. Seen failing with the JSON written before the pictures (new data beside old pictures)."""
    make([NAME], outdir=tmp_path)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert sorted(before) == [f"{NAME}.json", f"{NAME}.pdf", f"{NAME}.png"]
    data = json.loads(before[f"{NAME}.json"])
    stored = tmp_path / f"{NAME}.json"
    stored.write_text(json.dumps({**data, "footer": "an older run"}, indent=2) + "\n")  # the old set's data differ
    before[f"{NAME}.json"] = stored.read_bytes()
    for failing in (".png", ".pdf"):
        with monkeypatch.context() as patch:
            _failing_write_on(patch, failing)
            with pytest.raises(OSError, match=f"{NAME}{failing}"):
                make([NAME], outdir=tmp_path)
        assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before, failing


def test_plotting_save_names_the_users_path_not_a_temporary(tmp_path):
    """A path in a folder that does not exist: the error names that path (it named '.x.png.<random>.tmp')."""
    fig = plotting.phase_diagram(ln_n=np.linspace(0, 4, 5), betas=np.linspace(0.5, 2, 4), colorbar=False)
    target = tmp_path / "missing" / "x.png"
    with pytest.raises(OSError) as info:
        plotting.save(fig, target)
    assert info.value.filename == str(target) and ".tmp" not in str(info.value)
    assert not (tmp_path / "missing").exists()


def test_plotting_save_refuses_a_record_that_is_not_json_naming_it(tmp_path):
    """``record`` with a value JSON cannot hold is a ValueError naming ``record`` and the value's type, before any
    file is written (it was a TypeError from the json module naming neither)."""
    fig = plotting.phase_diagram(ln_n=np.linspace(0, 4, 5), betas=np.linspace(0.5, 2, 4), colorbar=False)
    target = tmp_path / "x.png"
    with pytest.raises(ValueError, match=r"^record: .*'when'.*datetime"):
        plotting.save(fig, target, record={"when": __import__("datetime").datetime(2026, 1, 1)})
    with pytest.raises(ValueError, match=r"^record: .*set"):
        plotting.save(fig, target, record={"ids": {1, 2}})
    assert not target.exists()
    assert plotting.read_provenance(plotting.save(fig, target, record={"n": np.int64(3)}))["record"] == {"n": 3}
    assert isinstance(Path(target), Path)
