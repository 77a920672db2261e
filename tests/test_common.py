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


def test_limit_blas_threads_is_process_wide_and_survives_blas_threads_blocks():
    """The process-wide limit of the reproduction's jobs and the ref-counted blocks of training share one
    mechanism: a limit set while a block runs leaves the block's count alone and is what the block restores."""
    from varsim._common import blas

    controls = blas._blas_controls()
    if not controls:
        pytest.skip("no controllable BLAS in this process")
    get = lambda: [g() for g, _, _ in controls]  # noqa: E731
    before = get()
    try:
        assert blas.limit_blas_threads(1) == [label for _, _, label in controls]
        assert get() == [1] * len(controls)
        with blas.blas_threads(2) as n:
            assert n == 2 and get() == [2] * len(controls)
            blas.limit_blas_threads(1)
            assert get() == [2] * len(controls)
        assert get() == [1] * len(controls)
    finally:
        for (_, set_, _), k in zip(controls, before):
            set_(k)


def test_single_threaded_worker_sets_thread_variables(monkeypatch):
    from varsim._common import blas

    for var in blas.THREAD_VARS:
        # setenv (not delenv) so that monkeypatch restores the variables the hook writes: a leaked
        # NUMBA_NUM_THREADS=1 would pin every later Numba kernel in this test session to one thread
        monkeypatch.setenv(var, "7")
    blas.single_threaded_worker()
    assert all(os.environ[var] == "1" for var in blas.THREAD_VARS)


def test_check_fields_names_unknown_and_missing_keys():
    import dataclasses

    @dataclasses.dataclass
    class Cfg:
        task: str
        size: int = 1

    assert validate.check_fields("cfg", {"task": "x"}, Cfg, required=("task",)) == {"task": "x"}
    with pytest.raises(ValueError, match=r"unknown cfg field\(s\) \['sise'\]"):
        validate.check_fields("cfg", {"task": "x", "sise": 2}, Cfg)
    with pytest.raises(ValueError, match="cfg needs a 'task' field"):
        validate.check_fields("cfg", {"size": 2}, Cfg, required=("task",))
    with pytest.raises(ValueError, match="cfg must be a dict"):
        validate.check_fields("cfg", [1], Cfg)
