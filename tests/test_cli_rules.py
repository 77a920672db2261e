"""Bad input by rule, not by list: every option of every command is found by walking the parsers, and each class of
option gets the absurd values of its class.

- Every number flag goes through the one options module (``varsim.cli._options``): no ``type=int`` or ``type=float``.
- Every integer flag states a range, and ``9...9`` (30 digits), ``1e308`` and ``-9...9`` give one line naming the
  flag, exit status 2 (catches the OverflowError/ctypes tracebacks of ``--batch-size 1e308``, ``--threads 99...9``).
- Every real flag refuses ``nan``; ``inf``, ``1e308`` and ``-1e308`` too unless it is declared unbounded on that
  side (``--max-hours inf``: no bound).
- Every output-file flag is the one ``output_file`` type: a directory, a symlink loop or a missing parent directory
  is one line naming the output, exit 2, before any work; the file is written by ``varsim._common.atomic`` (no module
  opens a file for writing itself).
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

import varsim
from varsim.cli import COMMANDS, build_parser, main
from varsim.cli._options import output_file

HUGE = "9" * 30


def _subparser(command: str) -> argparse.ArgumentParser:
    parser = build_parser(command)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[command]


def _options():
    """``(command, flag, action)`` for every option of every command."""
    for command in COMMANDS:
        for action in _subparser(command)._actions:
            if action.option_strings and not isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
                yield command, action.option_strings[-1], action


def _required(command: str) -> list[str]:
    """Placeholder values for the command's positional arguments and required options (never reached: the value
    under test fails first)."""
    out = []
    for action in _subparser(command)._actions:
        if not action.option_strings:
            out.append("placeholder")
        elif action.required:
            out += [action.option_strings[-1], "placeholder"]
    return out


def _kind(action) -> str | None:
    return getattr(action.type, "__name__", None) if action.type is not None else None


OPTIONS = list(_options())
INTEGERS = [(c, f, a) for c, f, a in OPTIONS if _kind(a) == "integer"]
REALS = [(c, f, a) for c, f, a in OPTIONS if _kind(a) == "real"]
OUTPUTS = [(c, f, a) for c, f, a in OPTIONS if a.type is output_file]


def _ids(cases):
    return [f"{c} {f}" for c, f, _ in cases]


def _refused(capsys, command, flag, value):
    argv = [command, *_required(command), f"{flag}={value}"]
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, err


def _assert_flag_error(code, err, flag):
    assert code == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert f"argument {flag}" in err or f"/{flag}" in err, err


def test_the_walk_finds_the_options():
    """The walk sees every command and the options the issue named (a walk that finds nothing passes anything)."""
    found = {(c, f) for c, f, _ in OPTIONS}
    for wanted in (("simulate", "--d-k"), ("train", "--batch"), ("train", "--train-max"),
                   ("evaluate", "--threads"),
                   ("sweep", "--workers"), ("theory", "--tau"), ("sweep", "--beta"), ("figures", "--seed")):
        assert wanted in found, wanted
    assert {c for c, _, _ in INTEGERS} >= {"simulate", "sweep", "theory", "train", "evaluate", "reproduce",
                                           "probe-model", "figures"}
    assert len(INTEGERS) > 40 and len(REALS) > 20 and len(OUTPUTS) >= 4


@pytest.mark.parametrize("command, flag, action", OPTIONS, ids=_ids(OPTIONS))
def test_no_number_flag_bypasses_the_options_module(command, flag, action):
    """A flag with ``type=int``/``float`` (or a lambda) has no range and no one-line message of its own."""
    assert action.type in (None, str, output_file) or _kind(action) in ("integer", "real"), (command, flag, action.type)


@pytest.mark.parametrize("command, flag, action", INTEGERS, ids=_ids(INTEGERS))
def test_every_integer_flag_has_a_range_and_refuses_absurd_values(capsys, command, flag, action):
    assert action.type.minimum is not None and action.type.maximum is not None, (command, flag)
    assert action.type.maximum < 1e300
    for value in (HUGE, "1e308", "-" + HUGE, "2.5", "nan"):
        _assert_flag_error(*_refused(capsys, command, flag, value), flag)


@pytest.mark.parametrize("command, flag, action", REALS, ids=_ids(REALS))
def test_every_real_flag_refuses_nan_and_states_its_bounds(capsys, command, flag, action):
    kind = action.type
    values = ["nan", "x"]
    if not kind.allow_inf:
        values += ["inf", "-inf"]
    if kind.maximum is not None or not kind.allow_inf:  # a bound with no bound (--max-hours) may take 1e308
        assert kind.maximum is not None and kind.maximum < 1e308, (command, flag)
        values.append("1e308")
    if kind.minimum is not None:
        values.append("-1e308")
    for value in values:
        _assert_flag_error(*_refused(capsys, command, flag, value), flag)


@pytest.mark.parametrize("command, flag, action", OUTPUTS, ids=_ids(OUTPUTS))
def test_every_output_flag_checks_its_path_before_any_work(tmp_path, capsys, command, flag, action):
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    for value in (tmp_path, tmp_path / "a", tmp_path / "missing" / "out.json", ""):
        code, err = _refused(capsys, command, flag, value)
        _assert_flag_error(code, err, flag)
        assert "output" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b"]


def test_every_command_with_an_output_file_uses_the_output_type():
    """An option named like an output file (``-o``, ``--output``, ``--out``) is an ``output_file``."""
    for command, flag, action in OPTIONS:
        if set(action.option_strings) & {"-o", "--output", "--out"}:
            assert action.type is output_file, (command, flag)


_WRITE = re.compile(r"""open\([^)]*["'][wx]b?\+?["']|\.write_text\(|\.write_bytes\("""
                    r"""|np\.save\((?!buf)|\.savefig\((?!buf)""")


def test_files_are_written_only_by_the_atomic_writer():
    """``open(..., "w")``, ``Path.write_text`` and friends outside ``varsim._common.atomic`` write in place: a
    crash truncates the file and a device given as the output is replaced. (The metrics log appends: ``"a"``.)"""
    root = Path(varsim.__file__).parent
    offenders = []
    for path in sorted(root.rglob("*.py")):
        if path == root / "_common" / "atomic.py":
            continue
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if _WRITE.search(line):
                offenders.append(f"{path.relative_to(root)}:{i}: {line.strip()}")
    assert not offenders, offenders


def _int_fields(cls):
    import dataclasses

    return [f.name for f in dataclasses.fields(cls)
            if isinstance(f.default, int) and not isinstance(f.default, bool)]


def test_every_integer_field_of_a_config_file_refuses_absurd_values(tmp_path, capsys):
    """A config file is input too: each integer field of TrainConfig and of its model set to 1e308 (or 10^30) is one
    line naming the file and the field, exit 2, nothing created (it was an OverflowError traceback for batch_size,
    train_max, d_model, d_hidden)."""
    import json

    from varsim.nn.config import ModelConfig
    from varsim.train import TrainConfig

    cases = [({f: v}, f) for f in _int_fields(TrainConfig) for v in (1e308, 10**30)]
    cases += [({"model": {f: v}}, f) for f in [*_int_fields(ModelConfig), "d_hidden"] for v in (1e308, 10**30)]
    assert len(cases) > 20
    cfg = tmp_path / "cfg.json"
    for fields, name in cases:
        cfg.write_text(json.dumps({"task": "argmax", **fields}))
        try:
            code = main(["train", "--config", str(cfg), "--outdir", str(tmp_path / "run")])
        except SystemExit as exc:
            code = exc.code
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, (fields, err)
        assert "cfg.json" in err and name in err, (fields, err)
        assert not (tmp_path / "run").exists()
