"""The CLI's shared options (varsim.cli._options): the integer and real option types with a range, the variant
flags generated once from the registry, and the table renderer; and `varsim train --attention` for every trainable
variant."""

import argparse
import json

import pytest
from cli_checks import run_cli

from varsim.cli import main
from varsim.cli._options import (
    add_variant_flags,
    format_columns,
    given_variant_params,
    int_option,
    real_option,
    variant_kwargs,
    variant_option,
)
from varsim.train import TrainConfig, read_checkpoint
from varsim.train.checkpoint import latest_checkpoint
from varsim.variants import INFERENCE_ONLY_MAPS, TRAINABLE_MAPS, VARIANTS


def _parser(**kinds):
    from varsim.cli import _Parser

    p = _Parser(prog="varsim test")
    for flag, kind in kinds.items():
        p.add_argument(f"--{flag}", type=kind)
    return p


def _exit(capsys, parser, argv):
    with pytest.raises(SystemExit) as exc:
        parser.parse_args(argv)
    return exc.value.code, capsys.readouterr().err


@pytest.mark.parametrize("text, flag, kind, wanted", [
    ("2.5", "steps", int_option(), "an integer,"),
    ("x", "steps", int_option(), "an integer,"),
    ("nan", "steps", int_option(), "an integer,"),
    ("inf", "steps", int_option(), "an integer,"),
    ("1e400", "steps", int_option(), "an integer,"),
    ("0", "d-k", int_option(minimum=1), "an integer >= 1,"),
    ("-1", "d-k", int_option(minimum=1), "an integer >= 1,"),
    ("65", "heads", int_option(minimum=1, maximum=64), "an integer between 1 and 64,"),
    ("nan", "tau", real_option(), "a finite real number,"),
    ("inf", "tau", real_option(), "a finite real number,"),
    ("-0.5", "tau", real_option(minimum=0.0), "a finite real number >= 0,"),
    ("x", "tau", real_option(minimum=0.0), "a finite real number >= 0,"),
])
def test_bad_option_is_one_line_exit_2_naming_the_flag(capsys, text, flag, kind, wanted):
    """Exit status 2, one line, the flag named, the range stated. Catches a traceback from int('2.5') or
    int(float('inf')), a range that is not checked, and a message that does not say which flag is wrong."""
    code, err = _exit(capsys, _parser(**{flag: kind}), [f"--{flag}", text])
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert err == f"varsim test: error: argument --{flag}: must be {wanted} got {text!r}\n"


def test_int_option_states_its_range_and_accepts_its_forms():
    p = _parser(n=int_option(minimum=1, maximum=64))
    assert p.parse_args(["--n", "64"]).n == 64 and p.parse_args(["--n", "1"]).n == 1
    assert _parser(n=int_option()).parse_args(["--n", "1e3"]).n == 1000
    assert _parser(n=int_option()).parse_args(["--n", "1_000"]).n == 1000
    big = "123456789012345678901234567890"
    assert _parser(n=int_option()).parse_args(["--n", big]).n == int(big)  # exact, not through a float
    with pytest.raises(argparse.ArgumentTypeError, match="between 1 and 64"):
        int_option(minimum=1, maximum=64)("0")
    with pytest.raises(argparse.ArgumentTypeError, match=">= 0"):
        int_option(minimum=0)("-1")
    with pytest.raises(ValueError, match="minimum"):
        int_option(minimum=2, maximum=1)
    assert _parser(x=real_option(allow_inf=True)).parse_args(["--x", "inf"]).x == float("inf")


def test_commands_route_integer_flags_through_the_shared_parser(capsys):
    """simulate, sweep, train and evaluate give the same one-line message for a non-integer count."""
    for argv, flag in ((["simulate", "--sequences", "2.5"], "--sequences"),
                       (["sweep", "--sequences", "2.5"], "--sequences"),
                       (["train", "--outdir", "x", "--steps", "2.5"], "--steps"),
                       (["evaluate", "x", "--examples", "2.5"], "--examples"),
                       (["evaluate", "x", "--threads", "-1"], "--threads")):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        err = capsys.readouterr().err
        assert exc.value.code == 2 and err.count("\n") == 1, err
        assert f"argument {flag}: must be an integer" in err, err


def test_one_generator_gives_every_variant_parameter_a_flag():
    """Every parameter of every registered variant gets its flag; single and multi-valued flags read back the same
    way (bools as bools). Catches a parameter added to the registry without a flag."""
    single, multi = argparse.ArgumentParser(), argparse.ArgumentParser()
    add_variant_flags(single)
    from varsim.cli._options import add_variant_param_flags

    add_variant_param_flags(multi.add_argument_group("x"), multi=True)
    flags = {variant_option(name, p.name) for name, spec in VARIANTS.items() for p in spec.params}
    assert flags <= set(single._option_string_actions) and flags <= set(multi._option_string_actions)
    args = single.parse_args(["--attention", "logn", "--logn-n0", "8", "--no-logn-clamp"])
    assert variant_kwargs(args) == {"attention": "logn", "n0": 8.0, "clamp": False}
    args = multi.parse_args(["--logn-clamp", "true", "false", "--topk", "2", "4"])
    assert given_variant_params(args) == {"logn": {"clamp": [True, False]}, "topk": {"k": [2, 4]}}
    with pytest.raises(ValueError, match="--topk applies to --attention topk, not --attention logn"):
        variant_kwargs(single.parse_args(["--attention", "logn", "--topk", "3"]))
    with pytest.raises(ValueError, match="unknown attention 'nope'"):
        variant_kwargs(single.parse_args(["--attention", "nope"]))


def test_format_columns_aligns_and_drops_empty_columns():
    rows = [{"a": "x", "b": None, "c": "1.5"}, {"a": "long", "b": None, "c": None}]
    cols = [(h, (lambda r, h=h: r[h])) for h in ("a", "b", "c")]
    assert format_columns(cols, rows, left=1, drop_empty=True) == ["a       c", "x     1.5", "long    -"]
    assert format_columns(cols, rows) == ["   a  b    c", "   x  -  1.5", "long  -    -"]


# ----------------------------------------------------------------------------------------------------------------------
# varsim train --attention

TINY = ["--task", "argmax", "--d-model", "16", "--heads", "2", "--steps", "4", "--batch", "8",
        "--checkpoint-every", "4", "--log-every", "2"]
FLAGS = {"ssmax": (["--ssmax-s", "0.5"], {"s": 0.5}), "logn": (["--logn-n0", "8", "--no-logn-clamp"],
                                                                 {"n0": 8.0, "clamp": False})}


def _trained(out_dir):
    header, _ = read_checkpoint(latest_checkpoint(out_dir))
    return TrainConfig.from_dict(header["config"]).model


@pytest.mark.parametrize("name", TRAINABLE_MAPS)
def test_train_with_each_trainable_attention(tmp_path, capsys, name):
    """A tiny run completes with the map and its parameters in the checkpoint's config. Catches --attention being
    parsed but not reaching the model (the checkpoint would say softmax) and parameter flags dropped."""
    flags, params = FLAGS.get(name, ([], {}))
    code, out, err = run_cli(capsys, ["train", *TINY, "--attention", name, *flags, "--outdir", str(tmp_path / "r"),
                                   "--json"])
    assert code == 0, err
    assert json.loads(out)["status"] == "completed"
    model = _trained(tmp_path / "r")
    assert model.attention == name
    assert {k: model.attention_params[k] for k in params} == params


def test_train_attention_from_the_config_file_and_flags(tmp_path, capsys):
    """Flags without --attention tune the file's map; another --attention drops the file's parameters."""
    cfg = tmp_path / "cfg.json"
    cfg.write_text(json.dumps({"task": "argmax", "model": {"attention": "ssmax", "attention_params": {"s": 0.25}}}))
    code, _, err = run_cli(capsys, ["train", "--config", str(cfg), *TINY[2:], "--ssmax-s", "0.75",
                                 "--outdir", str(tmp_path / "a")])
    assert code == 0, err
    model = _trained(tmp_path / "a")
    assert model.attention == "ssmax" and model.attention_params["s"] == 0.75
    code, _, err = run_cli(capsys, ["train", "--config", str(cfg), *TINY[2:], "--attention", "sigmoid",
                                 "--outdir", str(tmp_path / "b")])
    assert code == 0, err
    model = _trained(tmp_path / "b")
    assert model.attention == "sigmoid" and model.attention_params == {}


@pytest.mark.parametrize("argv, word", [
    (["--attention", INFERENCE_ONLY_MAPS[0]], "inference-only"),
    (["--attention", "nope"], "nope"),
    (["--ssmax-s", "0.5"], "--ssmax-s"),
    (["--attention", "logn", "--ssmax-s", "0.5"], "--ssmax-s"),
    (["--attention", "ssmax", "--ssmax-s", "-1"], "--ssmax-s: ssmax parameter 's' must be a finite real number > 0"),
    (["--topk", "3"], "--topk"),  # inference-only maps have no training flags
])
def test_bad_train_attention_is_one_line_exit_2(tmp_path, capsys, argv, word):
    code, _, err = run_cli(capsys, ["train", *TINY, *argv, "--outdir", str(tmp_path / "r")])
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert word in err, err
    assert not (tmp_path / "r").exists()
