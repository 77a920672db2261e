"""Legal extremes by rule, not by list: every number flag of every command (found by walking the parsers, as in
``tests/test_cli_rules.py``) at each end of the range its type states (the smallest value above an open lower bound,
e.g. ``--target-rse 5e-324``; the largest, e.g. ``--sims 1e15``), added to a small, fast invocation of its command.
A legal value must either run to completion (exit 0), be refused before the work with one line (exit 2, e.g. a
cost bound) or end in one line (exit 1: a run stopped by a non-finite loss), within a few seconds: never a
traceback (an OverflowError from a target's arithmetic, an ArrayMemoryError from a size), and never work that runs
on without an estimate or a refusal.

Catches (issue 45) ``simulate``/``sweep --target-rse 5e-324`` ending in an OverflowError traceback and ``train
--item-mlp-depth 1e15`` in a MemoryError (a parameter table of 1e15 layers); seen failing on both. (``predict``'s
sizes are checked before its model is measured; ``tests/test_predict_budget.py`` holds the cases that fail on the
old predictor, whose untrained base here was refused before the sizes mattered.) A new flag is swept without
editing this file; a new command needs its fast invocation in ``BASES`` (``test_every_command_has_a_base`` says so).
"""

from __future__ import annotations

import math
import signal

import pytest
from cli_checks import run_cli
from test_cli_rules import INTEGERS, REALS

from varsim.cli import COMMANDS, main

LIMIT_S = 60  # per case: far above a refusal or one of these small runs on a loaded 2-core machine
TRAIN = ["--task", "argmax", "--d-model", "16", "--heads", "2", "--steps", "2", "--batch", "4", "--checkpoint-every",
         "2"]

#: command -> argv of a small, fast run, given the case's temporary directory and the shared inputs
BASES = {
    # enough sequences that a precision target looks more than once (256 sequences: 128 chunks, a first look at 32)
    "simulate": lambda tmp, i: ["simulate", "--n", "16", "64", "--sequences", "256", "--sampler", "logits"],
    "sweep": lambda tmp, i: ["sweep", "--n", "16", "--sequences", "256", "--sampler", "logits", "--workers", "1",
                             "--no-progress"],
    "theory": lambda tmp, i: ["theory", "--beta", "1", "--n", "16"],
    "figures": lambda tmp, i: ["figures", "--only", "fig_decoder_primary", "--outdir", str(tmp / "figs"),
                               "--no-progress"],
    "train": lambda tmp, i: ["train", *TRAIN, "--outdir", str(tmp / "run")],
    "evaluate": lambda tmp, i: ["evaluate", str(i["run"]), "--lengths", "4", "--examples", "8"],
    "predict": lambda tmp, i: ["predict", str(i["run"]), "--lengths", "16", "--sets", "64", "--sims", "16"],
    "reproduce": lambda tmp, i: ["reproduce", str(i["results"]), "--aggregate-only", "--allow-incomplete"],
    "probe-model": None,  # needs the [models] extra and a model file: its flags are checked by test_cli_rules
}
#: commands without number flags
NO_NUMBERS = {"recheck", "demo"}


def _extremes(action) -> list:
    """The values at each end of the flag's stated range that the type accepts."""
    t = action.type
    low, high = t.minimum, t.maximum
    out = []
    if low is not None:
        out.append(math.nextafter(float(low), math.inf) if getattr(t, "strict_min", False) else low)
    if high is not None:
        out.append(high)
    elif getattr(t, "allow_inf", False):
        out.append(math.inf)
    return out


CASES = [(c, f, v) for c, f, a in INTEGERS + REALS for v in _extremes(a) if BASES.get(c) is not None]


def test_every_command_has_a_base():
    assert set(COMMANDS) == set(BASES) | NO_NUMBERS
    assert {c for c, _, _ in INTEGERS + REALS} <= set(BASES)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """A two-step one-block run (evaluate, predict) and a results directory with settings (reproduce)."""
    from varsim.experiments.records import write_settings
    from varsim.experiments.settings import ReproductionSettings

    root = tmp_path_factory.mktemp("extremes")
    assert main(["train", *TRAIN, "--outdir", str(root / "run")]) == 0
    (root / "results").mkdir()
    write_settings(root / "results", ReproductionSettings.quick())
    return {"run": root / "run", "results": root / "results"}


class _TooLong(Exception):
    pass


def _alarm(signum, frame):
    raise _TooLong()


@pytest.mark.parametrize("command, flag, value", CASES, ids=[f"{c} {f}={v!r}" for c, f, v in CASES])
def test_a_legal_extreme_finishes_or_is_refused_in_one_line(inputs, tmp_path, capsys, command, flag, value):
    argv = [*BASES[command](tmp_path, inputs), f"{flag}={value!r}" if isinstance(value, float) else f"{flag}={value}"]
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(LIMIT_S)
    try:
        code, _, err = run_cli(capsys, argv)
    except _TooLong:
        pytest.fail(f"varsim {' '.join(argv)}: still running after {LIMIT_S} s, with no estimate or refusal")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert code in (0, 1, 2), (code, err)  # 1: a run that failed cleanly (``--lr 1e30``: a non-finite loss stops it)
    if code != 0:
        assert err.count("\n") == 1 and "Traceback" not in err, err
