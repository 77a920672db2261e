"""The local executors of varsim.jobs.executor (the Dask path is tested in test_reproduce_dask.py)."""

import os
import sys

import numpy as np
import pytest

from varsim._common.seeding import child_generator
from varsim.jobs import executor


def _draw(job):
    """A job whose result depends only on its argument (the contract run_jobs relies on)."""
    seed, k = job
    return float(child_generator(seed, k).normal())


def _env(_job):
    return os.environ.get("OPENBLAS_NUM_THREADS")


def _fail_on_two(job):
    if job == 2:
        raise RuntimeError("job 2 failed")
    return job * 10


def test_results_in_job_order_and_identical_across_executors():
    """Catches results stored in completion order, or randomness keyed by worker rather than by job."""
    jobs = [(11, k) for k in range(6)]
    serial = executor.run_jobs(_draw, jobs, workers=1)
    seen = []
    pooled = executor.run_jobs(_draw, jobs, workers=2, on_result=lambda i, r: seen.append(i))
    assert serial == pooled == [_draw(j) for j in jobs]
    assert sorted(seen) == list(range(6))


def test_pool_workers_are_single_threaded():
    assert executor.run_jobs(_env, [0, 1], workers=2) == ["1", "1"]


def test_failures_propagate_or_are_collected():
    with pytest.raises(RuntimeError, match="job 2"):
        executor.run_jobs(_fail_on_two, [0, 1, 2, 3], workers=1)
    out = executor.run_jobs(_fail_on_two, [0, 1, 2, 3], workers=1, return_exceptions=True)
    assert out[:2] == [0, 10] and out[3] == 30
    assert isinstance(out[2], executor.JobFailure) and "job 2" in str(out[2].error)


def test_argument_validation():
    with pytest.raises(ValueError, match="workers"):
        executor.run_jobs(_draw, [(1, 1)], workers=0)
    with pytest.raises(ValueError, match="workers"):
        executor.run_jobs(_draw, [(1, 1)], workers=2, scheduler="tcp://127.0.0.1:1")
    with pytest.raises(ValueError, match="scheduler"):
        executor.run_jobs(_draw, [(1, 1)], scheduler="")
    assert executor.run_jobs(_draw, []) == []
    assert executor.default_workers() >= 1
    assert np.isfinite(executor.run_jobs(_draw, [(1, 1)])[0])


def _die_once(job):
    """Kills its worker process the first time it runs (a marker file records that it did)."""
    marker, value = job
    if value == 1 and not os.path.exists(marker):
        open(marker, "w").close()
        os._exit(1)  # like an out-of-memory kill: no exception, the process is gone
    return value * 2


def test_dead_worker_is_retried_on_a_fresh_pool(tmp_path):
    """A worker killed mid-job breaks the pool; the lost jobs rerun and every result arrives exactly once."""
    marker = str(tmp_path / "died")
    seen = []
    out = executor.run_jobs(_die_once, [(marker, v) for v in range(4)], workers=2,
                            on_result=lambda i, r: seen.append(i))
    assert out == [0, 2, 4, 6]
    assert sorted(seen) == [0, 1, 2, 3]
    assert os.path.exists(marker)
    # Without restarts the loss is reported, not hidden.
    os.remove(marker)
    out = executor.run_jobs(_die_once, [(marker, v) for v in range(4)], workers=2, pool_restarts=0,
                            return_exceptions=True)
    assert any(isinstance(r, executor.JobFailure) for r in out)


def test_package_and_worker_hook_import_light():
    """The worker start-up hook must run before NumPy loads (BLAS pools are sized at load time)."""
    import subprocess

    code = ("import sys, varsim.experiments, varsim.jobs, varsim._common.blas as w; w.single_threaded_worker(); "
            "assert 'numpy' not in sys.modules and 'distributed' not in sys.modules, sorted(sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True)
