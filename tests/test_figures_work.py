"""Figures estimate their work before it starts (issue: `varsim figures --param n_max=1048576` with 1e5 sequences and
no target ran about an hour without a word): each self-computing figure's ``work`` is the sum of what the simulator
itself estimates for the runs ``compute`` makes, and a total above ``max_work`` is refused up front."""

from __future__ import annotations

import pytest
from cli_checks import assert_terminated, terminate_when

import varsim.sim._config as sim_config
from varsim.cli import main
from varsim.figures import FIGURES, data_source, load, make
from varsim.sim import DEFAULT_FIGURE_MAX_WORK

SMALL = {"fig_variance_vs_n": {"n_max": 256, "sequences": 64},
         "fig_decay_exponent": {"n_max": 1024, "sequences": 64, "betas": [2.0]},
         "fig_random_query": {"n_max": 256, "sequences": 64}}


@pytest.mark.parametrize("name", sorted(SMALL))
def test_work_is_the_sum_of_the_simulators_own_estimates(name, monkeypatch):
    """Catches a ``work`` that forgets a run (the full sampler's, a beta) or sizes it differently from ``compute``."""
    seen = []
    real = sim_config.estimate_cost

    def recording(*args, **kwargs):
        out = real(*args, **kwargs)
        seen.append(out[0])
        return out

    monkeypatch.setattr(sim_config, "estimate_cost", recording)
    module = load(name)
    module.compute(quick=True, seed=0, target_rse=None, **SMALL[name])
    simulated = list(seen)
    assert simulated and module.work(True, target_rse=None, **SMALL[name]) == pytest.approx(sum(simulated), rel=1e-12)


def test_the_default_figures_fit_the_budget():
    total = sum(load(n).work(False) for n in FIGURES if data_source(n) is None and hasattr(load(n), "work"))
    assert 0 < total < 0.2 * DEFAULT_FIGURE_MAX_WORK


def test_a_run_of_about_an_hour_is_refused_before_it_starts(tmp_path, capsys):
    args = ["figures", "--only", "fig_variance_vs_n", "--param", "n_max=1048576", "--param", "sequences=100000",
            "--param", "target_rse=none", "--outdir", str(tmp_path), "--no-progress"]
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "max_work" in err[0] and "fig_variance_vs_n" in err[0] and "--max-work" in err[0], err
    assert not list(tmp_path.iterdir())
    with pytest.raises(ValueError, match="max_work"):
        make(["fig_decay_exponent"], outdir=tmp_path, max_work=1e6, progress=False)


def test_sigterm_during_parallel_figures_shuts_the_pool_down_cleanly(tmp_path):
    """SIGTERM while `varsim figures --jobs 2` computes: exit 143 with one line, the workers ended with the pool,
    and no "leaked semaphore" warning from Python's resource tracker (which a parent killed outright leaves)."""
    import time

    def pool_started(proc):
        first = proc.stdout.readline()  # the early line: printed before the pool starts
        assert first.startswith("making 3 figures"), first
        time.sleep(4.0)  # the workers have started and hold their jobs
        assert proc.poll() is None, "the figures finished before the signal; the test would prove nothing"

    argv = ["figures", "--quick", "--jobs", "2", "--outdir", str(tmp_path),
            "--only", "fig_decay_exponent", "fig_random_query", "fig_variance_vs_n"]
    code, _, err = terminate_when(argv, pool_started)
    assert_terminated(code, err, "figures")
