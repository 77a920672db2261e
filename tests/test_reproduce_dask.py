"""The Dask path of the reproduction against a LocalCluster on loopback: same records as the local executor."""

import json
import sys

import pytest
from repro_checks import run_records

from varsim.experiments import ReproductionSettings, run_reproduction
from varsim.jobs import executor

# A slice of the quick grid: enough runs to be scheduled concurrently, cheap enough for the default suite.
SETTINGS = ReproductionSettings.quick(tasks=("argmax", "dictionary"), norms=("none", "layernorm"), seeds=2)


@pytest.mark.slow  # the same property on the remedies slice, resume included, runs by default (test_remedies.py)
def test_dask_local_cluster_matches_local_executor(tmp_path):
    """Records computed on a Dask LocalCluster equal, number for number, those of the local process pool.

    Catches randomness keyed by worker or thread, results filed under the wrong run, and BLAS-threading rounding
    differences between the threaded Dask worker and the single-threaded pool workers."""
    distributed = pytest.importorskip("distributed")
    local = run_reproduction(tmp_path / "local", settings=SETTINGS, workers=2, progress=False)
    # One in-process worker with two threads, reached over TCP on loopback like a real scheduler address.
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, protocol="tcp",
                                  host="127.0.0.1", dashboard_address=None) as cluster:
        assert cluster.scheduler_address.startswith("tcp://127.0.0.1:")
        remote = run_reproduction(tmp_path / "dask", settings=SETTINGS, scheduler=cluster.scheduler_address,
                                  progress=False)
        assert remote["failed"] == [] and len(remote["completed"]) == 8
        assert not (tmp_path / "dask" / "checkpoints").exists()  # off by default on Dask
        # Resuming through Dask skips the finished runs as the local path does.
        again = run_reproduction(tmp_path / "dask", settings=SETTINGS, scheduler=cluster.scheduler_address,
                                 progress=False)
        assert again["completed"] == [] and len(again["skipped"]) == 8
    assert local["failed"] == []
    a, b = run_records(tmp_path / "local"), run_records(tmp_path / "dask")
    assert sorted(a) == sorted(b) and len(a) == 8
    for name in a:
        assert a[name] == b[name], name
    sa = json.loads((tmp_path / "local" / "summary.json").read_text())
    sb = json.loads((tmp_path / "dask" / "summary.json").read_text())
    assert sa["groups"] == sb["groups"] and sa["paired"] == sb["paired"]


def test_missing_dask_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import fails as if not installed
    with pytest.raises(ValueError, match=r"dask\[distributed\]"):
        executor.run_jobs(abs, [1], scheduler="tcp://127.0.0.1:8786")


def test_unreachable_scheduler_is_a_clear_error():
    pytest.importorskip("distributed")
    import dask

    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        with pytest.raises(ValueError, match="cannot connect"):
            executor.run_jobs(abs, [1], scheduler="tcp://127.0.0.1:9")
