"""Sweeps over (attention variant, parameters, beta, N): seeding by cell, theory per cell, the results file
(atomic, resumable), validation, local vs Dask equality, and the ``varsim sweep`` command."""

from __future__ import annotations

import json

import numpy as np
import pytest
from cli_checks import BAD_VARIANT_FLAGS, refused

from varsim.cli import main
from varsim.sim.sweep import SWEEP_FORMAT, SweepGrid, cell_key, cell_spawn_key, run_sweep, sweep_cells

TINY = dict(betas=[1.0, 2.0], n_grid=[16, 256], n_sequences=256)


def _strip(cells):
    """Cell records without their timing (the only field allowed to differ between runs)."""
    return [{k: v for k, v in c.items() if k != "elapsed_s"} for c in cells]


def test_cells_are_the_product_of_the_axes_with_defaults_filled_in():
    grid = SweepGrid(variants={"ssmax": {"s": [0.25, 0.5]}, "topk": {}, "logn": {"n0": 8}}, **TINY)
    cells = sweep_cells(grid)
    assert len(cells) == (2 + 1 + 1) * 2 * 2
    assert {c["params"]["s"] for c in cells if c["attention"] == "ssmax"} == {0.25, 0.5}
    assert all(c["params"] == {"k": 8} for c in cells if c["attention"] == "topk")
    assert all(c["params"] == {"n0": 8.0, "clamp": True} for c in cells if c["attention"] == "logn")
    keys = [cell_key(c) for c in cells]
    assert len(set(keys)) == len(keys) and len({cell_spawn_key(c) for c in cells}) == len(cells)


def test_sweep_matches_exact_theory_within_5_se():
    """Every cell with exact theory (softmax, ssmax, logn, critical, sigmoid with mu_v != 0, topk with k >= N) is within
    5 SE + 1% of it, in E[sum w^2] and in Var(o_j); topk with k < N lies inside its bound.

    Catches a sweep that passes beta as |q| (beta * sqrt(d_k) logits: every z-score explodes), drops the variant's
    parameters (ssmax at s = 1/ln 16 instead of 0.5), forgets the mu_v^2 Var(sum w) term of sigmoid, or compares a
    cell with another cell's theory (e.g. the first beta's)."""
    grid = SweepGrid(variants={"softmax": {}, "ssmax": {"s": 0.5}, "logn": {}, "critical": {"beta0": 2.0},
                               "sigmoid": {}, "topk": {"k": [4, 64]}},
                     betas=[1.0, 2.0], n_grid=[16, 1024], n_sequences=4000, value_mean=0.7)
    res = run_sweep(grid, seed=3, workers=1)
    assert len(res["cells"]) == 7 * 2 * 2 and res["resumed"] == 0
    for c in res["cells"]:
        if c["attention"] == "topk" and c["params"]["k"] < c["n"]:
            assert c["theory"] == "bound" and c["exact_ipr"] is None and c["z_ipr"] is None
            assert 1 / c["params"]["k"] <= c["ipr"] <= 1.0
            continue
        assert c["theory"] == "exact", c
        for est, se, ref in (("ipr", "ipr_se", "exact_ipr"), ("var", "var_se", "exact_var")):
            assert abs(c[est] - c[ref]) <= 5 * c[se] + 0.01 * c[ref], (c["key"], est, c[est], c[ref], c[se])
        if c["attention"] == "sigmoid":  # the mean term is present and not negligible here
            assert c["exact_var"] > c["exact_ipr"] * 1.05 and c["wsum_var"] is not None


def test_other_variants_are_monte_carlo_only():
    grid = SweepGrid(variants={"entmax15": {}, "sparsemax": {}, "adaptive_temperature": {}}, betas=[1.0],
                     n_grid=[64], n_sequences=64)
    res = run_sweep(grid, seed=0, workers=1)
    for c in res["cells"]:
        assert c["theory"] is None and c["exact_ipr"] is None and c["z_ipr"] is None
        assert 1 / 64 <= c["ipr"] <= 1.0 and c["ipr_se"] > 0


def test_cell_numbers_do_not_depend_on_the_rest_of_the_grid():
    """A cell gives the same record alone and inside a larger grid, and different seeds give different numbers.

    Catches streams keyed by the cell's position in the grid or by the worker instead of by the cell itself."""
    big = run_sweep(SweepGrid(variants={"softmax": {}, "ssmax": {"s": [0.5, 1.0]}}, **TINY), seed=5, workers=1)
    small = run_sweep(SweepGrid(variants={"ssmax": {"s": 1.0}}, betas=[2.0], n_grid=[256], n_sequences=256),
                      seed=5, workers=1)
    (cell,) = _strip(small["cells"])
    assert cell in _strip(big["cells"])
    other = run_sweep(SweepGrid(variants={"ssmax": {"s": 1.0}}, betas=[2.0], n_grid=[256], n_sequences=256),
                      seed=6, workers=1)
    assert other["cells"][0]["ipr"] != cell["ipr"]


def test_results_file_is_resumable_and_keeps_old_cells(tmp_path):
    """A rerun redoes nothing; an extended grid runs only the new cells and the old ones keep their numbers.

    Catches a resume that recomputes (or reseeds) finished cells, or drops cells outside the new grid."""
    out = tmp_path / "sweep.json"
    first = run_sweep(SweepGrid(variants={"softmax": {}}, **TINY), output=out, seed=1, workers=1)
    data = json.loads(out.read_text())
    assert data["format"] == SWEEP_FORMAT and data["provenance"]["versions"]["numpy"]
    assert data["cells"] == first["cells"] and len(data["cells"]) == 4
    again = run_sweep(SweepGrid(variants={"softmax": {}}, **TINY), output=out, seed=1, workers=1)
    assert again["resumed"] == 4 and again["cells"] == first["cells"]
    more = run_sweep(SweepGrid(variants={"sigmoid": {}}, **TINY), output=out, seed=1, workers=1)
    assert more["resumed"] == 0 and len(more["cells"]) == 4
    data = json.loads(out.read_text())
    assert len(data["cells"]) == 8 and first["cells"][0] in data["cells"]


def test_resume_refuses_other_settings_seed_or_a_foreign_file(tmp_path):
    out = tmp_path / "sweep.json"
    run_sweep(SweepGrid(variants={"softmax": {}}, betas=[1.0], n_grid=[16], n_sequences=64), output=out, seed=1,
              workers=1)
    with pytest.raises(ValueError, match="other settings"):
        run_sweep(SweepGrid(variants={"softmax": {}}, betas=[1.0], n_grid=[16], n_sequences=128), output=out,
                  seed=1, workers=1)
    with pytest.raises(ValueError, match="seed"):
        run_sweep(SweepGrid(variants={"softmax": {}}, betas=[1.0], n_grid=[16], n_sequences=64), output=out,
                  seed=2, workers=1)
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="not a JSON sweep file"):
        run_sweep(SweepGrid(variants={"softmax": {}}, betas=[1.0], n_grid=[16], n_sequences=64), output=bad)
    bad.write_text('{"rows": []}')
    with pytest.raises(ValueError, match="not a varsim-sweep/1 file"):
        run_sweep(SweepGrid(variants={"softmax": {}}, betas=[1.0], n_grid=[16], n_sequences=64), output=bad)
    assert bad.read_text() == '{"rows": []}'  # left intact


@pytest.mark.parametrize("kwargs, match", [
    (dict(variants={"softmaks": {}}), "unknown attention 'softmaks'"),
    (dict(variants={"ssmax": {"t": 1}}), "has no parameter.*t"),
    (dict(variants={"ssmax": {"s": [0.5, -1]}}), "ssmax parameter 's'"),
    (dict(variants={"topk": {"k": 2.5}}), "topk parameter 'k'"),
    (dict(variants={"ssmax": {"s": []}}), "must not be empty"),
    (dict(variants={}), "variants"),
    (dict(betas=[float("nan")]), "beta"),
    (dict(n_grid=[0]), "n"),
    (dict(sampler="fast"), "sampler"),
    (dict(estimator="mean"), "estimator"),
    (dict(target_rse=0.0), "target_rse"),
    (dict(target_rse=float("nan")), "target_rse"),
    (dict(target_rse=float("inf")), "target_rse"),
    (dict(max_cell_logits=0), "max_cell_logits"),
    (dict(max_cell_logits=2.5), "max_cell_logits"),
])
def test_bad_grid_raises_one_line(kwargs, match):
    args = dict(variants={"softmax": {}}, betas=[1.0], n_grid=[16], n_sequences=64)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match) as info:
        SweepGrid(**args)
    assert "\n" not in str(info.value)


def test_size_guards_come_from_the_simulator_and_the_total(tmp_path):
    """A cell the simulator refuses (too few sequences for the SEs, too much work) is refused before any job runs,
    and so is a sweep whose cells each fit but whose total work exceeds max_work."""
    out = tmp_path / "s.json"
    with pytest.raises(ValueError, match="n_sequences"):
        run_sweep(SweepGrid(variants={"softmax": {}}, betas=[1.0], n_grid=[16], n_sequences=8), output=out)
    with pytest.raises(ValueError, match="max_work"):
        run_sweep(SweepGrid(variants={"softmax": {}}, betas=[1.0], n_grid=[10**12], n_sequences=4000), output=out)
    grid = SweepGrid(variants={"softmax": {}}, betas=[1.0, 2.0], n_grid=[1000, 2000], n_sequences=1000,
                     max_work=5e6)  # each cell <= 2e6, total 6e6
    with pytest.raises(ValueError, match="sweep's estimated work"):
        run_sweep(grid, output=out)
    assert not out.exists()
    with pytest.raises(ValueError, match="workers"):
        run_sweep(SweepGrid(variants={"softmax": {}}, betas=[1.0], n_grid=[16], n_sequences=64), workers=0)


def test_full_sampler_option_runs_and_agrees_with_theory():
    """sampler='full' draws keys and values (d_k = d_v = 8 here) and still agrees with the exact value."""
    grid = SweepGrid(variants={"ssmax": {"s": 0.5}}, betas=[1.0], n_grid=[64], n_sequences=2000, sampler="full",
                     estimator="sample", d_k=8, d_v=8)
    (c,) = run_sweep(grid, seed=0, workers=1)["cells"]
    assert abs(c["var"] - c["exact_var"]) <= 5 * c["var_se"] + 0.01 * c["exact_var"]


def test_local_pool_and_dask_local_cluster_give_bitwise_equal_records(tmp_path):
    """The same sweep on two local worker processes and on a Dask LocalCluster gives equal records, number for number.

    Catches randomness keyed by worker or thread, records filed under the wrong cell, and thread-count-dependent
    rounding (each job runs one Numba thread)."""
    distributed = pytest.importorskip("distributed")
    grid = SweepGrid(variants={"ssmax": {"s": [0.5, 1.0]}, "topk": {"k": 4}}, betas=[1.0], n_grid=[16, 64],
                     n_sequences=64)
    local = run_sweep(grid, output=tmp_path / "local.json", seed=9, workers=2)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, protocol="tcp",
                                  host="127.0.0.1", dashboard_address=None) as cluster:
        remote = run_sweep(grid, output=tmp_path / "dask.json", seed=9, scheduler=cluster.scheduler_address)
    assert len(local["cells"]) == 6
    assert _strip(local["cells"]) == _strip(remote["cells"])
    a = json.loads((tmp_path / "local.json").read_text())["cells"]
    b = json.loads((tmp_path / "dask.json").read_text())["cells"]
    assert _strip(a) == _strip(b) == _strip(local["cells"])


# ----------------------------------------------------------------------------------------------------------------------
# varsim sweep


def test_cli_sweep_prints_table_with_exact_and_z_and_writes_json(tmp_path, capsys):
    out = tmp_path / "sweep.json"
    code = main(["sweep", "--attention", "ssmax", "softmax", "--ssmax-s", "0.25", "1", "--beta", "1", "2",
                 "--n", "16:256:x16", "--sequences", "256", "--workers", "1", "-o", str(out)])
    text = capsys.readouterr().out
    assert code == 0
    lines = text.splitlines()
    header = next(line for line in lines if "E[sum w^2]" in line)
    assert "exact" in header and "z" in header.split()
    assert sum(line.lstrip().startswith("ssmax") for line in lines) == 2 * 2 * 2
    assert sum(line.lstrip().startswith("softmax") for line in lines) == 2 * 2
    data = json.loads(out.read_text())
    assert len(data["cells"]) == 12
    for c in data["cells"]:  # the table prints each cell's z-score
        assert f"{c['z_ipr']:+.1f}" in text
    # a rerun resumes from the file
    assert main(["sweep", "--attention", "ssmax", "softmax", "--ssmax-s", "0.25", "1", "--beta", "1", "2",
                 "--n", "16:256:x16", "--sequences", "256", "--workers", "1", "-o", str(out)]) == 0
    assert "12 of 12 cells from" in capsys.readouterr().out


def test_cli_sweep_json_output(capsys):
    code = main(["sweep", "--attention", "topk", "--topk", "2", "8", "--beta", "1", "--n", "16",
                 "--sequences", "64", "--workers", "1", "--json"])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert [c["params"]["k"] for c in data["cells"]] == [2, 8]
    assert all(c["theory"] == "bound" for c in data["cells"])


def test_cli_sweep_passes_the_precision_target_and_the_logit_budget(capsys):
    """--max-cell-logits caps the long cell at L // N sequences and --target-rse stops each cell at that relative SE,
    each recorded in the settings."""
    base = ["sweep", "--attention", "softmax", "--beta", "1", "--n", "16", "4096", "--sequences", "128",
            "--workers", "1", "--json"]
    assert main(base + ["--max-cell-logits", str(2**17)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["settings"]["max_cell_logits"] == 2**17
    assert {c["n"]: c["sequences"] for c in data["cells"]} == {16: 128, 4096: 32}
    assert main(base + ["--target-rse", "0.05"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["settings"]["target_rse"] == 0.05
    assert all(c["sequences"] < 128 and c["var_se"] / c["var"] <= 0.05 for c in data["cells"])


@pytest.mark.parametrize("argv, match", [
    *BAD_VARIANT_FLAGS,
    (["--attention", "logn", "--logn-clamp", "maybe"], "invalid choice"),
    (["--beta", "nan"], "beta"),
    (["--n", "0"], "n"),
    (["--sequences", "8"], "n_sequences"),
    (["--n", "1e12"], "max_work"),
    (["--target-rse", "0"], "--target-rse"),
    (["--max-cell-logits", "0"], "--max-cell-logits"),
    (["-o", "/nonexistent-dir/x.json"], "output"),
    (["--workers", "2", "--scheduler", "tcp://127.0.0.1:1"], "workers"),
])
def test_cli_sweep_bad_input_is_one_line_exit_2(argv, match, capsys):
    base = ["sweep", "--n", "16", "--beta", "1", "--sequences", "64"]
    refused(capsys, base + ([] if "--workers" in argv else ["--workers", "1"]) + argv, match)


def test_sweep_cells_numbers_are_finite_floats():
    res = run_sweep(SweepGrid(variants={"softmax": {}}, betas=[0.0], n_grid=[16], n_sequences=64), workers=1)
    (c,) = res["cells"]
    assert np.isclose(c["ipr"], 1 / 16) and c["exact_ipr"] == pytest.approx(1 / 16)


def test_rng_spec7_matches_seed_bitwise_and_refuses_both():
    """SPEC 7: ``rng=`` an int or SeedSequence gives the cells of ``seed=`` with that value bit for bit; a Generator
    gives a reproducible run whose recorded entropy reruns it; ``seed`` and ``rng`` together, or a wrong type, is a
    ValueError. Catches an ``rng`` that is ignored (default seed 0 used), one mapped to different streams than
    ``seed``, and a silently preferred argument when both are given."""
    grid = SweepGrid(variants={"softmax": {}}, betas=[2.0], n_grid=[64], n_sequences=64)
    ref = _strip(run_sweep(grid, seed=7, workers=1)["cells"])
    assert _strip(run_sweep(grid, rng=7, workers=1)["cells"]) == ref
    assert _strip(run_sweep(grid, rng=np.random.SeedSequence(7), workers=1)["cells"]) == ref
    assert _strip(run_sweep(grid, workers=1)["cells"]) == _strip(run_sweep(grid, seed=0, workers=1)["cells"])
    assert ref != _strip(run_sweep(grid, seed=0, workers=1)["cells"])
    a = run_sweep(grid, rng=np.random.default_rng(1), workers=1)
    b = run_sweep(grid, rng=np.random.default_rng(1), workers=1)
    assert _strip(a["cells"]) == _strip(b["cells"]) and isinstance(a["seed"], int)
    again = run_sweep(grid, rng=np.random.SeedSequence(a["seed"]), workers=1)
    assert _strip(again["cells"]) == _strip(a["cells"])
    with pytest.raises(ValueError, match="not both"):
        run_sweep(grid, seed=0, rng=1, workers=1)
    with pytest.raises(ValueError, match="rng"):
        run_sweep(grid, rng="x", workers=1)


SMALL = dict(n_grid=[16, 64], n_sequences=64)


def test_a_cell_without_n_is_refused_up_front_naming_the_file(tmp_path, capsys, monkeypatch):
    """A results file whose cell lacks "n" (or another field of a cell record) is refused before any job, naming
    the file and the field; it used to be accepted, the sweep ran, and the table ended in KeyError: 'n'."""
    out = tmp_path / "s.json"
    run_sweep(SweepGrid(variants={"softmax": {}}, betas=[1.0], **SMALL), output=out, seed=1, workers=1)
    data = json.loads(out.read_text())
    del data["cells"][1]["n"]
    out.write_text(json.dumps(data))
    before = out.read_text()

    def no_jobs(*a, **k):
        raise AssertionError("a job ran before the results file was checked")

    import varsim.jobs.executor as executor

    monkeypatch.setattr(executor, "run_jobs", no_jobs)
    rc = main(["sweep", "--beta", "1", "2", "--n", "16", "64", "--sequences", "64", "--seed", "1", "--workers", "1",
               "-o", str(out)])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "s.json" in err and "cell 1" in err and "'n'" in err, err
    assert out.read_text() == before


def test_a_concurrent_sweep_on_the_same_file_loses_no_cell(tmp_path, monkeypatch):
    """While sweep A runs, sweep B (other betas, same settings and seed) finishes into the same file: A's saves
    merge B's cells under the file's lock instead of overwriting them. Deterministic stand-in for two processes
    racing (4 of 8 cells were lost in each of 3 trials)."""
    import varsim.jobs.executor as executor

    out, other = tmp_path / "s.json", tmp_path / "b.json"
    b = run_sweep(SweepGrid(variants={"softmax": {}}, betas=[2.0], **SMALL), output=other, seed=1, workers=1)
    real = executor.run_jobs

    def racing(fn, jobs, **kw):
        on_result = kw.pop("on_result")
        state = {"first": True}

        def hook(i, rec):
            if state["first"]:  # B's process writes its finished sweep between two of A's saves
                out.write_bytes(other.read_bytes())
                state["first"] = False
            on_result(i, rec)

        return real(fn, jobs, on_result=hook, **kw)

    monkeypatch.setattr(executor, "run_jobs", racing)
    a = run_sweep(SweepGrid(variants={"softmax": {}}, betas=[1.0], **SMALL), output=out, seed=1, workers=1)
    keys = {c["key"] for c in json.loads(out.read_text())["cells"]}
    assert keys == {c["key"] for c in a["cells"]} | {c["key"] for c in b["cells"]}
    assert len(keys) == 4


def test_two_sweep_processes_on_one_file_keep_every_cell(tmp_path):
    """Two `varsim sweep` processes started together on one results file, each with its own betas: both exit 0 and
    the file ends with every cell of both."""
    import subprocess
    import sys

    out = tmp_path / "s.json"
    base = [sys.executable, "-m", "varsim", "sweep", "--n", "16", "64", "256", "1024", "--sequences", "256",
            "--seed", "1", "--workers", "1", "--json", "-o", str(out)]
    procs = [subprocess.Popen([*base, "--beta", *betas], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True, cwd=tmp_path) for betas in (["0.5", "1"], ["2", "3"])]
    errs = [p.communicate(timeout=600)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errs
    cells = json.loads(out.read_text())["cells"]
    assert sorted({(c["beta"], c["n"]) for c in cells}) == sorted((b, n) for b in (0.5, 1.0, 2.0, 3.0)
                                                                 for n in (16, 64, 256, 1024))
    assert len(cells) == 16


def test_a_huge_beta_is_named_as_beta():
    """The sweep runs each beta as the simulator's tau; a beta beyond its bound is reported as beta (it spoke of
    tau)."""
    with pytest.raises(ValueError, match=r"^beta must be <= 1e\+30"):
        SweepGrid(variants={"softmax": {}}, betas=[1e308], n_grid=[16], n_sequences=64)


def test_cli_sweep_prints_the_variance_group_only_where_it_differs(capsys):
    """Var(o_j) = E[sum w^2] at value scale 1 for weights summing to 1: the table printed the same numbers twice.
    With a value mean, sigmoid's Var(o_j) has its extra term and both groups are shown."""
    base = ["sweep", "--beta", "1", "--n", "16", "--sequences", "256", "--workers", "1"]
    assert main([*base, "--attention", "softmax"]) == 0
    text = capsys.readouterr().out
    assert "Var(o_j) ± SE" not in text and "equals E[sum w^2] in every cell" in text
    assert main([*base, "--attention", "softmax", "sigmoid", "--value-mean", "1"]) == 0
    text = capsys.readouterr().out
    assert "Var(o_j) ± SE" in text and "equals E[sum w^2]" not in text


def test_target_rse_stops_cells_and_is_recorded(tmp_path):
    """With ``target_rse`` each cell stops at that relative SE (its record gives the sequences used), equal to
    ``simulate(target_rse=...)`` of the cell; the settings record the target, so a resume with another target is
    refused, while a fixed-count sweep's settings stay as before (old files resume)."""
    from varsim.sim import simulate

    grid = SweepGrid(variants={"softmax": {}}, betas=[1.0], n_grid=[16, 1024], n_sequences=4000, target_rse=0.02)
    out = tmp_path / "sweep.json"
    res = run_sweep(grid, output=out, seed=2, workers=1)
    assert res["settings"]["target_rse"] == 0.02
    for cell in res["cells"]:
        assert cell["sequences"] < 4000 and cell["var_se"] / cell["var"] <= 0.02
        assert abs(cell["z_ipr"]) <= 5
        one = simulate([cell["n"]], tau=1.0, sampler="logits", estimator="rao_blackwell", n_sequences=4000,
                       target_rse=0.02, threads=1, seed=np.random.SeedSequence(res["seed"],
                                                                               spawn_key=tuple(cell["spawn_key"])))
        assert one.var[0] == cell["var"] and one.sequences[0] == cell["sequences"]
    with pytest.raises(ValueError, match="other settings"):
        run_sweep(SweepGrid(variants={"softmax": {}}, betas=[1.0], n_grid=[16, 1024], n_sequences=4000,
                            target_rse=0.01), output=out, seed=2, workers=1)
    assert "target_rse" not in SweepGrid(variants={"softmax": {}}, **TINY).settings()


def test_max_cell_logits_caps_the_sequences_of_long_cells(tmp_path):
    """``max_cell_logits`` caps a cell of length N at ``max_cell_logits // N`` sequences (at least the 32 a standard
    error needs) and leaves shorter cells at ``n_sequences``; the settings record the budget, so a resume with
    another budget is refused."""
    grid = SweepGrid(variants={"softmax": {}}, betas=[1.0], n_grid=[16, 1024, 4096], n_sequences=128,
                     max_cell_logits=2**16)
    out = tmp_path / "sweep.json"
    res = run_sweep(grid, output=out, seed=2, workers=1)
    assert res["settings"]["max_cell_logits"] == 2**16
    assert {c["n"]: c["sequences"] for c in res["cells"]} == {16: 128, 1024: 64, 4096: 32}
    with pytest.raises(ValueError, match="other settings"):
        run_sweep(SweepGrid(variants={"softmax": {}}, betas=[1.0], n_grid=[16, 1024, 4096], n_sequences=128,
                            max_cell_logits=2**15), output=out, seed=2, workers=1)
    assert "max_cell_logits" not in SweepGrid(variants={"softmax": {}}, **TINY).settings()


def test_a_local_pool_compiles_each_attention_map_once_in_this_process(monkeypatch):
    """Before a local pool starts, the sweep runs each attention map's smallest-N cell in this process (its kernels
    compile once, here, and reach the workers through Numba's cache); the pool gets the other cells and the records
    are those of a sweep without a pool. Catches a pool whose every worker compiles the same kernels again."""
    import varsim.jobs.executor as executor

    grid = SweepGrid(variants={"ssmax": {"s": 0.5}, "topk": {"k": 4}}, betas=[1.0], n_grid=[64, 16], n_sequences=64)
    pooled = []

    def inline_pool(fn, jobs, *, scheduler=None, workers=None, on_result=None):
        pooled.extend(job["cell"] for job in jobs)
        return [on_result(i, fn(job)) for i, job in enumerate(jobs)]

    monkeypatch.setattr(executor, "run_jobs", inline_pool)
    out = run_sweep(grid, seed=3, workers=2)
    assert sorted((c["attention"], c["n"]) for c in pooled) == [("ssmax", 64), ("topk", 64)]
    assert _strip(out["cells"]) == _strip(run_sweep(grid, seed=3, workers=1)["cells"])
