"""``varsim predict`` / :func:`varsim.train.predict.predict`: sizes refused before any work, naming what the user
gave (the CLI's flags ``--sets``, ``--sims``, ``--lengths``; the library's ``n_sets``, ``n_sim``, ``lengths``): more
memory than the machine's, an estimated time above ``--max-hours``, a length beyond the measured pool; and a
checkpoint whose attention output is normalized (``--norm``), which the account does not cover.

Catches (issue 45) ``--sims 1e9`` ending in an ArrayMemoryError traceback, ``--sims 3e7`` running for hours without
a word, ``--sets`` refusals naming ``batch_size`` or ``n_sets``, and a ``--norm layernorm`` checkpoint predicted.
"""

from __future__ import annotations

import numpy as np
import pytest
from cli_checks import run_cli

from varsim.train.budget import PREDICT_MAX_HOURS, prediction_cost


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """Two-step one-block runs (sizes are checked before the model is measured, so it need not have learned)."""
    from varsim.train import TrainConfig, train

    root = tmp_path_factory.mktemp("predict-budget")
    out = {}
    for norm in ("none", "layernorm"):
        cfg = TrainConfig.from_dict({"task": "argmax", "steps": 2, "checkpoint_every": 2, "log_every": 1,
                                     "model": {"task": "argmax", "d_model": 16, "n_heads": 2, "norm": norm}})
        train(cfg, root / norm, progress=False)
        out[norm] = root / norm
    return out


@pytest.mark.parametrize("argv, flag, what", [
    (["--sims", "1e9"], "--sims=1000000000", "of memory"),
    (["--sims", "3e7"], "--sims=30000000", "of memory"),
    (["--sets", "1e9"], "--sets=1000000000", "of memory"),
    (["--sims", "1e5", "--max-hours", "0.001"], "--sims=100000", "max_hours=0.001"),
    (["--lengths", "1e6"], "--lengths: N = 1000000", "raise --sets to at least 62500"),
    (["--sets", "16", "--lengths", "512"], "--lengths: N = 512", "raise --sets to at least 32"),
])
def test_cli_sizes_are_refused_naming_the_flag(checkpoints, capsys, argv, flag, what):
    code, _, err = run_cli(capsys, ["predict", str(checkpoints["none"]), *argv])
    assert code == 2 and err.count("\n") == 1 and flag in err and what in err, err
    assert "batch_size" not in err and "n_sets" not in err and "n_sim" not in err, err


def test_cli_sets_below_the_minimum_is_an_argument_error(checkpoints, capsys):
    code, _, err = run_cli(capsys, ["predict", str(checkpoints["none"]), "--sets", "5"])
    assert code == 2 and err.count("\n") == 1 and "argument --sets" in err and "16" in err, err


def test_library_names_its_own_parameters(checkpoints):
    from varsim.train.predict import predict

    with pytest.raises(ValueError, match=r"^n_sim=1000000000 is too large: .* of memory"):
        predict(checkpoints["none"], [16, 64], n_sets=64, n_sim=10**9)
    with pytest.raises(ValueError, match=r"^n_sim=100000 is too large: .*max_hours=1e-06"):
        predict(checkpoints["none"], [16, 64], n_sets=64, n_sim=10**5, max_hours=1e-6)
    with pytest.raises(ValueError, match=r"^lengths: N = 2048 needs more than the 1024 measured items"):
        predict(checkpoints["none"], [16, 2048], n_sets=64, n_sim=16)


def test_simulate_refuses_records_beyond_memory():
    from test_predict import _synthetic_argmax

    from varsim.train.predict import simulate

    stats = _synthetic_argmax(np.random.default_rng(0), n_sets=16)
    with pytest.raises(ValueError, match=r"^n_sim=1000000000000 is too large"):
        simulate(stats, [16, 32], n_sim=10**12)


def test_a_layernorm_checkpoint_is_refused_naming_the_norm(checkpoints, capsys):
    code, _, err = run_cli(capsys, ["predict", str(checkpoints["layernorm"]), "--lengths", "16", "64", "--sets", "64",
                                    "--sims", "16"])
    assert code == 2 and err.count("\n") == 1 and "checkpoint" in err and "norm='layernorm'" in err, err


def test_estimate_grows_with_every_size_and_defaults_fit_the_budget(checkpoints):
    """The time and memory estimates grow with n_sim, n_sets, N and the number of maps (a size left out of the
    formula would let its absurd value through), and the CLI's defaults lie far inside the bounds."""
    from varsim._common.validate import memory_limit_bytes
    from varsim.train.checkpoint import load_checkpoint

    _, config, _ = load_checkpoint(checkpoints["none"])
    base = dict(n0=16, lengths=[16, 1024], n_sets=2048, n_sim=1024, n_maps=6, passes=9)

    def cost(**change):
        kw = {**base, **change}
        return prediction_cost(config.model, kw["n0"], kw["lengths"], kw["n_sets"], kw["n_sim"], kw["n_maps"],
                               kw["passes"])

    ref = cost()
    for change in ({"n_sim": 4096}, {"n_sets": 8192}, {"lengths": [16, 16384]}, {"n_maps": 12}):
        bigger = cost(**change)
        assert bigger.seconds > ref.seconds, change
        assert bigger.peak_bytes > ref.peak_bytes or "n_maps" in change or "lengths" in change, change
    assert cost(n_sim=10**6).peak_bytes > 10 * ref.peak_bytes
    default = cost(lengths=[16 * 2**k for k in range(11)])
    assert default.seconds < 0.01 * 3600 * PREDICT_MAX_HOURS and default.peak_bytes < 0.1 * memory_limit_bytes()
