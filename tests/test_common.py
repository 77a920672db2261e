import json
import math
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


def test_resolve_seed_is_the_one_normaliser():
    """seed and rng=int/SeedSequence give the same root; a Generator gives SeedSequence(128 bits drawn from it), an
    int (so ``seed=`` the recorded entropy reruns it), and advances it by exactly those draws; None or the default
    seed is "not given"; an explicit seed with rng and wrong types are refused naming the argument. Catches a second
    dialect (e.g. 63 bits from the Generator) and an explicit seed=0 silently overridden by rng."""
    assert seeding.resolve_seed(7).entropy == seeding.resolve_seed(rng=7).entropy == 7
    assert seeding.resolve_seed(rng=np.random.SeedSequence(7)).entropy == 7
    assert seeding.resolve_seed().entropy == 0
    g, h = np.random.default_rng(5), np.random.default_rng(5)
    root = seeding.resolve_seed(rng=g)
    assert root.entropy == int.from_bytes(h.bytes(16), "little") and root.entropy >= 2**96
    assert g.integers(0, 2**62) == h.integers(0, 2**62)  # advanced alike
    assert seeding.resolve_seed(None, np.random.default_rng(5)).entropy == root.entropy
    assert seeding.resolve_seed(root.entropy).generate_state(4).tolist() == root.generate_state(4).tolist()
    for seed in (0, 3, np.random.SeedSequence(1)):
        with pytest.raises(ValueError, match="seed or rng"):
            seeding.resolve_seed(seed, 1)
    for bad in (-1, "x", 1.5, True):
        with pytest.raises(ValueError, match="rng"):
            seeding.resolve_seed(rng=bad)
    with pytest.raises(ValueError, match="rng="):
        seeding.root_sequence(np.random.default_rng(0))


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


def test_blas_threads_seen_by_threadpoolctl():
    """threadpoolctl's own report of the BLAS libraries shows the count inside the block and the old one after;
    catches controls bound to a library NumPy does not use, or a block that sets nothing."""
    from threadpoolctl import threadpool_info

    from varsim._common import blas

    if not blas._blas_controls():
        pytest.skip("no controllable BLAS in this process")
    counts = lambda: [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]  # noqa: E731
    before = counts()
    with blas.blas_threads(3):
        assert counts() == [3] * len(before)
    assert counts() == before


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


def test_read_json_names_the_file_for_every_failure(tmp_path):
    """Every bad file is one ValueError naming the file and what is wrong; catches a bare JSONDecodeError,
    UnicodeDecodeError or FileNotFoundError escaping, or a message without the path."""
    from varsim._common.jsonio import JSONFileError, read_json

    good = tmp_path / "good.json"
    good.write_text('{"a": [1, 2]}')
    assert read_json(good) == {"a": [1, 2]}
    cases = {
        "missing.json": (None, "does not exist"),
        "empty.json": (b"", "empty"),
        "torn.json": (b'{"a": [1, ', "not valid JSON"),
        "latin1.json": ('{"a": "\xe9"}'.encode("latin-1"), "not UTF-8"),
        "list.json": (b"[1, 2]", "does not hold an object"),
    }
    for name, (content, words) in cases.items():
        path = tmp_path / name
        if content is not None:
            path.write_bytes(content)
        with pytest.raises(JSONFileError, match=words) as info:
            read_json(path, what="record")
        assert str(path) in str(info.value) and str(info.value).startswith("record ")
        assert "\n" not in str(info.value) and info.value.missing == (content is None)
    assert read_json(tmp_path / "list.json", expect=None) == [1, 2]
    with pytest.raises(JSONFileError, match="directory"):
        read_json(tmp_path)


def test_jsonable_gives_plain_json():
    """NumPy values become plain numbers and lists, NaN/inf become null; catches NaN written into JSON."""
    from varsim._common.jsonio import jsonable

    data = jsonable({"a": np.arange(3), 1: (np.float32(0.5), math.nan, np.inf), "b": np.bool_(True)})
    assert data == {"a": [0, 1, 2], "1": [0.5, None, None], "b": True}
    json.dumps(data, allow_nan=False)


def test_loglog_fit_ordinary_matches_linregress_and_recovers_power_laws():
    """Catches a fit in linear rather than log space, log10 intercepts mixed with natural logs, or an SE that is
    not the residual one."""
    from scipy import stats

    from varsim._common.fits import loglog_fit

    n = 2.0 ** np.arange(4, 13)
    fit = loglog_fit(n, 3.0 * n**-0.5)
    assert fit["slope"] == pytest.approx(-0.5, abs=1e-12)
    assert fit["intercept"] == pytest.approx(math.log(3.0), abs=1e-12)
    assert fit["se"] == pytest.approx(0.0, abs=1e-10) and fit["n"] == n.size
    y = n**-0.7 * np.exp(np.random.default_rng(0).normal(0, 0.1, n.size))
    ref = stats.linregress(np.log(n), np.log(y))
    fit = loglog_fit(n, y)
    assert fit["slope"] == pytest.approx(ref.slope, rel=1e-12) and fit["se"] == pytest.approx(ref.stderr, rel=1e-12)
    assert math.isnan(loglog_fit([1, 2], [1, 3])["se"])  # two points: no residual to estimate the SE from
    for x, y_ in (([1, 2], [1, -1]), ([1, 2], [1, math.nan]), ([2, 2], [1, 3]), ([1], [1])):
        with pytest.raises(ValueError):
            loglog_fit(x, y_)


def test_loglog_fit_weighted_matches_numpy_polyfit():
    """With standard errors: the weighted least-squares slope and its known-variance SE equal
    ``numpy.polyfit(w=1/sigma, cov="unscaled")``; catches weights 1/sigma instead of 1/sigma^2 in the normal
    equations, or sigma of y used where the delta-method sigma of log y (y_se / y) belongs."""
    from varsim._common.fits import loglog_fit

    rng = np.random.default_rng(2)
    n = 2.0 ** np.arange(3, 12)
    y = n**-0.9 * np.exp(rng.normal(0, 0.05, n.size))
    y_se = y * rng.uniform(0.01, 0.2, n.size)
    coef, cov = np.polyfit(np.log(n), np.log(y), 1, w=y / y_se, cov="unscaled")
    fit = loglog_fit(n, y, y_se)
    assert fit["slope"] == pytest.approx(coef[0], rel=1e-10)
    assert fit["intercept"] == pytest.approx(coef[1], rel=1e-10)
    assert fit["se"] == pytest.approx(math.sqrt(cov[0, 0]), rel=1e-10)
    # an exact point (SE 0): ordinary least squares, with the other points' errors propagated
    y_se[0] = 0.0
    ols = loglog_fit(n, y)
    mixed = loglog_fit(n, y, y_se)
    assert mixed["slope"] == pytest.approx(ols["slope"], rel=1e-12)
    lx = np.log(n)
    a = (lx - lx.mean()) / np.sum((lx - lx.mean()) ** 2)
    assert mixed["se"] == pytest.approx(math.sqrt(np.sum((a * y_se / y) ** 2)), rel=1e-12)


def test_provenance_names_the_cpu_and_the_blas_kernel():
    """A record says what bitwise reproducibility depends on: without the BLAS kernel a recheck on another machine
    cannot tell a tolerance-level difference from a bug. Run in a fresh interpreter, so it catches a
    threadpool_info call made before NumPy loads (which sees no BLAS at all)."""
    import subprocess
    import sys

    code = "import json; from varsim._common.provenance import provenance; print(json.dumps(provenance()['compute']))"
    compute = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                        check=True).stdout)
    assert compute["cpu"] and compute["machine"]
    assert compute["blas"], "no BLAS library recorded"
    assert all(b["library"] and b["kernel"] for b in compute["blas"])
