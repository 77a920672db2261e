"""varsim.jobs.resume: a results directory of one record per job, sorted, run and written as records arrive."""

import json

import pytest

from varsim._common.runlock import RunLocked
from varsim.jobs.resume import results_dir, run_and_record, sort_jobs


class Bad(ValueError):
    pass


def _load(path, spec):
    rec = json.loads(path.read_text())
    if rec.get("run_id") != spec["run_id"]:
        raise Bad("holds another run")
    return rec


def _job(arg):
    spec, workdir = arg
    if spec["run_id"] == "boom":
        raise RuntimeError("no luck")
    return {"run_id": spec["run_id"], "value": spec["x"] * 2, "workdir": workdir}


def test_sort_jobs_keeps_finished_moves_corrupt_aside_in_spec_order(tmp_path):
    """Catches a corrupt record kept (or deleted instead of moved aside) and a to-do list out of the specs' order."""
    specs = [{"run_id": r, "x": i} for i, r in enumerate(["a", "b", "c", "d"])]
    (tmp_path / "b.json").write_text(json.dumps({"run_id": "b"}))
    (tmp_path / "c.json").write_text(json.dumps({"run_id": "zzz"}))
    said = []
    finished, todo, corrupt = sort_jobs(specs, lambda rid: tmp_path / f"{rid}.json", _load, Bad, log=said.append)
    assert list(finished) == ["b"] and [s["run_id"] for s in todo] == ["a", "c", "d"]
    assert corrupt == [{"run_id": "c", "reason": "holds another run"}]
    assert (tmp_path / "c.json.corrupt").is_file() and not (tmp_path / "c.json").exists()
    assert len(said) == 1 and "redoing c" in said[0]


def test_run_and_record_writes_each_record_and_reports_failures(tmp_path):
    """Every finished job's record is on disk (after ``prepare`` amended it) before ``on_record`` sees it; a job that
    raises is returned as a failure and logged, and the others still finish."""
    todo = [{"run_id": "a", "x": 1}, {"run_id": "boom", "x": 2}, {"run_id": "c", "x": 3}]
    seen, said = [], []

    def prepare(spec, rec):
        rec["prepared"] = True

    def on_record(spec, rec):
        assert json.loads((tmp_path / f"{spec['run_id']}.json").read_text()) == rec
        seen.append(spec["run_id"])

    failed = run_and_record(_job, todo, lambda rid: tmp_path / f"{rid}.json", workdir_of=lambda s: f"w/{s['run_id']}",
                            scheduler=None, workers=1, on_record=on_record, log=said.append, prepare=prepare)
    assert failed == [{"run_id": "boom", "error": "RuntimeError: no luck"}]
    assert said == ["run boom failed: no luck"] and sorted(seen) == ["a", "c"]
    rec = json.loads((tmp_path / "c.json").read_text())
    assert rec == {"run_id": "c", "value": 6, "workdir": "w/c", "prepared": True}
    assert not (tmp_path / "boom.json").exists()


def test_results_dir_refuses_a_file_and_a_second_holder(tmp_path):
    """Catches an outdir that is a file accepted, and two processes writing one directory at once."""
    (tmp_path / "f").write_text("")
    with pytest.raises(ValueError, match="outdir .* is not a directory"):
        with results_dir(tmp_path / "f", tmp_path / "f" / "runs", "test"):
            pass
    with results_dir(tmp_path / "o", tmp_path / "o" / "runs", "test") as out:
        assert (out / "runs").is_dir()
        with pytest.raises(RunLocked):
            with results_dir(tmp_path / "o", tmp_path / "o" / "runs", "other"):
                pass
