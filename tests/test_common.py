import json
import os

import numpy as np
import pytest

from varsim._common import atomic, seeding, validate


def test_check_int_refuses_bad_values():
    assert validate.check_positive_int("n", 3) == 3
    assert validate.check_positive_int("n", 3.0) == 3
    for bad in (0, -1, 2.5, float("nan"), True, "3"):
        with pytest.raises(ValueError, match="n"):
            validate.check_positive_int("n", bad)


def test_check_real_names_parameter():
    assert validate.check_real("tau", 1.5) == 1.5
    for bad in (float("nan"), float("inf"), "x", None):
        with pytest.raises(ValueError, match="tau"):
            validate.check_real("tau", bad)


def test_check_choice():
    with pytest.raises(ValueError, match="sampler"):
        validate.check_choice("sampler", "fast", ["full", "logits"])


def test_child_streams_keyed_by_work():
    a = seeding.child_generator(7, 3).standard_normal(4)
    b = seeding.child_generator(7, 3).standard_normal(4)
    c = seeding.child_generator(7, 4).standard_normal(4)
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)
    with pytest.raises(ValueError, match="seed"):
        seeding.root_sequence(-1)


def test_atomic_write_keeps_old_file_on_failure(tmp_path):
    path = tmp_path / "r.json"
    atomic.atomic_write_json(path, {"a": 1})

    def boom(fh):
        fh.write(b"partial")
        raise RuntimeError("midway")

    with pytest.raises(RuntimeError):
        atomic.atomic_write_with(path, boom)
    assert json.loads(path.read_text()) == {"a": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


def test_check_writable(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        atomic.check_writable(tmp_path / "missing" / "x.json")
    if os.geteuid() != 0:  # root can write anywhere
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        with pytest.raises(ValueError, match="not writable"):
            atomic.check_writable(ro / "x.json")


def test_atomic_write_uses_normal_file_mode(tmp_path):
    path = tmp_path / "m.txt"
    atomic.atomic_write_text(path, "x")
    mask = os.umask(0o022)
    os.umask(mask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~mask
