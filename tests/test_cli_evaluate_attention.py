"""`varsim evaluate RUN --attention NAME ...` and `evaluate(..., attention=, attention_params=)`: another weight map
applied to trained weights, recorded in the output; bad names and parameters give one line and exit 2."""

import json
import math

import pytest
from cli_checks import run_cli

from varsim.cli import main
from varsim.nn.model import ModelConfig, Transformer
from varsim.train import evaluate

TINY = ["--d-model", "16", "--heads", "2", "--steps", "30", "--batch", "16", "--checkpoint-every", "30",
        "--log-every", "10", "--lr", "3e-3"]
EVAL = ["--examples", "96", "--batch-size", "32", "--seed", "3", "--json"]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """One tiny softmax argmax run (1 block), trained once for the module."""
    out_dir = tmp_path_factory.mktemp("evalatt") / "run"
    assert main(["train", "--task", "argmax", "--train-min", "2", "--train-max", "16", "--seed", "1",
                 "--outdir", str(out_dir), *TINY]) == 0
    return out_dir


def _evaluate(capsys, run_dir, *extra):
    code, out, err = run_cli(capsys, ["evaluate", str(run_dir), *EVAL, *extra])
    assert code == 0, err
    return json.loads(out)


def test_softmax_limits_equal_softmax_and_topk1_differs(run_dir, capsys):
    """topk with k >= N and critical with beta0 = c sqrt(2 ln N) are softmax at that N: identical correct counts on
    the same examples (catches an override that re-initialises the weights, a test set that changes with the map, or
    a critical factor with ln instead of sqrt(2 ln N)); topk with k = 1 changes the predictions (catches an override
    that is ignored and evaluates the trained map)."""
    base = _evaluate(capsys, run_dir, "--lengths", "8", "64")
    assert base["attention"] == {"name": "softmax", "params": {}} == base["trained_attention"]

    full = _evaluate(capsys, run_dir, "--lengths", "8", "64", "--attention", "topk", "--topk", "64")
    assert full["attention"] == {"name": "topk", "params": {"k": 64}}
    assert full["trained_attention"] == {"name": "softmax", "params": {}}
    assert full["correct"] == base["correct"]

    # factor c sqrt(2 ln N) / beta0 = 1 at N = 64 only
    beta0 = 2.0 * math.sqrt(2.0 * math.log(64))
    crit = _evaluate(capsys, run_dir, "--lengths", "64", "--attention", "critical", "--critical-c", "2",
                     "--critical-beta0", repr(beta0))
    assert crit["attention"] == {"name": "critical", "params": {"c": 2.0, "beta0": beta0}}
    assert crit["correct"] == base["correct"][1:]

    top1 = _evaluate(capsys, run_dir, "--lengths", "8", "64", "--attention", "topk", "--topk", "1")
    assert top1["attention"]["params"] == {"k": 1}
    assert top1["correct"] != base["correct"]


def test_table_names_the_attention_and_file_records_it(run_dir, tmp_path, capsys):
    """The table's header names the map used and the trained one; -o writes the same record (catches an output that
    drops the override)."""
    code, out, err = run_cli(capsys, ["evaluate", str(run_dir), "--lengths", "8", "--examples", "16",
                                   "--attention", "topk", "--topk", "2"])
    assert code == 0, err
    assert "attention topk(k=2) (trained with softmax)" in out
    target = tmp_path / "eval.json"
    code, out, err = run_cli(capsys, ["evaluate", str(run_dir), "--lengths", "8", "--examples", "16", "--attention",
                                   "adaptive_temperature", "-o", str(target)])
    assert code == 0, err
    assert "attention adaptive_temperature (trained with softmax)" in out
    assert json.loads(target.read_text())["attention"] == {"name": "adaptive_temperature", "params": {}}


@pytest.mark.parametrize(
    "flags,words",
    [
        (["--attention", "softmaxx"], ["unknown attention", "softmaxx"]),
        (["--attention", "topk", "--topk", "0"], ["topk", "'k'", "integer between 1 and"]),
        (["--attention", "topk", "--topk", "1.5"], ["topk", "'k'", "integer"]),
        (["--attention", "critical", "--critical-beta0", "0"], ["critical", "beta0"]),
        (["--attention", "topk", "--ssmax-s", "0.5"], ["--ssmax-s", "--attention ssmax", "not --attention topk"]),
        (["--topk", "3"], ["--topk", "no --attention"]),
    ],
)
def test_bad_attention_flags_one_line_exit_2(run_dir, capsys, flags, words):
    """Unknown map, bad parameter value, a parameter of another variant, a parameter without --attention: one line,
    exit 2, before any evaluation (catches silently ignored flags)."""
    code, out, err = run_cli(capsys, ["evaluate", str(run_dir), "--lengths", "8", "--examples", "8", *flags])
    assert code == 2
    assert err.count("\n") == 1 and out == ""
    for w in words:
        assert w in err


def test_library_override_rules():
    """A trained map on a model trained with another non-softmax map is refused, the model's own learned ssmax scale
    cannot be overridden, parameters need a name; inference-only maps apply to any model (catches an override that
    silently evaluates mismatched weights)."""
    ssmax_model = Transformer(ModelConfig(task="argmax", d_model=8, n_heads=2, attention="ssmax"), seed=0)
    kw = dict(lengths=[4], n_examples=4, batch_size=4)
    with pytest.raises(ValueError, match="trained with 'ssmax'"):
        evaluate(ssmax_model, attention="sigmoid", **kw)
    with pytest.raises(ValueError, match="learned per head"):
        evaluate(ssmax_model, attention="ssmax", attention_params={"s": 0.9}, **kw)
    with pytest.raises(ValueError, match="without attention"):
        evaluate(ssmax_model, attention_params={"k": 2}, **kw)
    with pytest.raises(ValueError, match="no parameter"):
        evaluate(ssmax_model, attention="topk", attention_params={"s": 2}, **kw)
    res = evaluate(ssmax_model, attention="topk", attention_params={"k": 2}, **kw)
    assert res["attention"] == {"name": "topk", "params": {"k": 2}}
    assert res["trained_attention"]["name"] == "ssmax"
    own = evaluate(ssmax_model, attention="ssmax", **kw)
    assert own["correct"] == evaluate(ssmax_model, **kw)["correct"]


def test_oracle_control_from_the_command_line(run_dir, capsys):
    """``--attention oracle`` (a control, not a weight map) puts all weight on the correct item: its accuracy does not
    fall with N (catches a CLI that refuses the control or silently evaluates the trained softmax, whose accuracy
    falls from N = 8 to 512 on this model), and a variant parameter beside it is refused."""
    base = _evaluate(capsys, run_dir, "--lengths", "8", "512")
    oracle = _evaluate(capsys, run_dir, "--lengths", "8", "512", "--attention", "oracle")
    assert oracle["attention"]["name"] == "oracle"
    assert oracle["correct"][1] > base["correct"][1]
    assert abs(oracle["accuracy"][1] - oracle["accuracy"][0]) < 0.1
    code, _, err = run_cli(capsys, ["evaluate", str(run_dir), *EVAL, "--attention", "oracle", "--topk", "3"])
    assert code == 2 and err.count("\n") == 1 and "--topk" in err
