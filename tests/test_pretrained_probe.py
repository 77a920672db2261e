"""The vanishing-variance probe: decomposition estimators against known truths, windows, resumability, bad input, CLI.

The statistics (varsim.pretrained.probe.summarize) are checked on synthetic window arrays whose law is known; the
end-to-end probe runs on the tiny GGUF / BERT models written by tests/test_pretrained_tiny.py.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

pytest.importorskip("gguf", reason="the [models] extra is not installed")
pytest.importorskip("safetensors", reason="the [models] extra is not installed")
pytest.importorskip("tokenizers", reason="the [models] extra is not installed")

from test_pretrained_tiny import (  # noqa: E402
    BERT_WORDS,
    bert_params,
    llama_params,
    write_tiny_bert,
    write_tiny_gguf,
)

from varsim.cli import main  # noqa: E402
from varsim.pretrained import probe as probe_mod  # noqa: E402
from varsim.pretrained.probe import probe_model, summarize  # noqa: E402
from varsim.pretrained.text import builtin_text, draw_windows  # noqa: E402


# ---------------------------------------------------------------- synthetic window arrays
def _synthetic(n: int, W: int, rng, *, tau: float = 0.0, sigma: float = 1.0, beta: float = 1.0, L=1, H=2, dh=16):
    """Windows of N i.i.d. N(0, sigma^2) values plus a shared per-window offset N(0, tau^2), softmax weights of
    Gaussian logits (std beta) independent of the values: Var(o_c) = tau^2 + sigma^2 E[Y2] (THEORY 2.4)."""
    o = np.empty((W, L, H, dh))
    y2 = np.empty((W, L, H))
    vbar = np.empty((W, L, H, dh))
    s2 = np.empty((W, L, H, dh))
    for j in range(W):
        for l in range(L):
            for h in range(H):
                v = sigma * rng.standard_normal((n, dh)) + tau * rng.standard_normal(dh)
                g = beta * rng.standard_normal(n)
                w = np.exp(g - g.max())
                w /= w.sum()
                o[j, l, h] = w @ v
                y2[j, l, h] = np.sum(w * w)
                vbar[j, l, h], s2[j, l, h] = v.mean(0), v.var(0)
    z = np.zeros((W, L, H))
    return {"o": o, "y2": y2, "vbar": vbar, "s2": s2, "w_first": z, "w_max": z, "attn_out": o[:, :, 0, :]}


@pytest.mark.parametrize("tau", [0.0, 0.5])
def test_decomposition_recovers_iid_and_offset_parts(tau):
    """With i.i.d. values the i.i.d. part explains the whole variance; with a shared offset the offset part is tau^2.
    Compared with the estimators' own SE (dh * H * L components per window are independent).
    Catches: the pooled variance using one mean for all components (adds Var_c of the means), sigma^2 taken as the
    variance of the window means, the offset part without its -E[s2]/N correction, ddof errors at small W."""
    rng = np.random.default_rng(11)
    n, W = 32, 400
    a = _synthetic(n, W, rng, tau=tau)
    st = summarize({n: a, 2 * n: _synthetic(2 * n, W, rng, tau=tau)}, [n, 2 * n], seed=0, bootstrap=0)
    pl = st["per_length"]
    total, iid, off = pl["var_total"][0, 0], pl["var_iid"][0, 0], pl["var_offset"][0, 0]
    ey2 = a["y2"].mean()
    expect_total = tau**2 + ey2
    # SE of a pooled variance over 16 components x 2 heads of W windows (Gaussian: var of s^2 = 2 var^2/(W-1))
    se_total = expect_total * math.sqrt(2 / (W - 1) / 16)
    assert np.all(np.abs(total - expect_total) <= 5 * se_total + 0.01 * expect_total)
    np.testing.assert_allclose(iid, ey2 * (1 - 1 / n), rtol=0.05)  # s2 is the ddof=0 within-window variance
    se_off = (tau**2 + 1 / n) * math.sqrt(2 / (W - 1) / 16) + 0.005
    assert np.all(np.abs(off - tau**2) <= 5 * se_off)
    np.testing.assert_allclose(pl["var_rest"], pl["var_total"] - pl["var_iid"] - pl["var_offset"], atol=1e-12)


def test_slopes_for_uniform_attention_and_bootstrap_interval():
    """Uniform weights (beta = 0) over i.i.d. values: E[Y2] = 1/N exactly (slope -1) and the std slope is -1/2
    inside its bootstrap interval, which is narrow and reproducible from the seed.
    Catches: slope of the variance reported as slope of the std, bootstrap resampling keyed by something other
    than the seed (irreproducible), intervals that do not contain the estimate."""
    rng = np.random.default_rng(3)
    lengths = [16, 64, 256]
    arrays = {n: _synthetic(n, 150, rng, beta=0.0) for n in lengths}
    s1 = summarize(arrays, lengths, seed=5, bootstrap=60)["slopes"]
    s2 = summarize(arrays, lengths, seed=5, bootstrap=60)["slopes"]
    np.testing.assert_allclose(s1["y2"]["value"], -1.0, atol=1e-9)
    v, lo, hi = s1["std"]["value"], s1["std"]["lo"], s1["std"]["hi"]
    assert np.all(lo <= v) and np.all(v <= hi) and np.all(hi - lo < 0.2)
    assert np.all(np.abs(v + 0.5) <= 5 * (hi - lo) / 3.92 + 0.01)
    np.testing.assert_array_equal(s1["std"]["lo"], s2["std"]["lo"])


# ---------------------------------------------------------------- windows and text
def test_windows_disjoint_reproducible_and_short_text_error():
    """Catches: overlapping windows, windows that depend on anything but (seed, N), silently reusing windows."""
    a = draw_windows(10_000, 100, 50, seed=1, key=100)
    assert np.array_equal(a, draw_windows(10_000, 100, 50, seed=1, key=100))
    assert not np.array_equal(a, draw_windows(10_000, 100, 50, seed=2, key=100))
    s = np.sort(a)
    assert np.all(np.diff(s) >= 100) and s[0] >= 0 and s[-1] + 100 <= 10_000
    with pytest.raises(ValueError, match="windows: the text has 1000 tokens, room for only 10"):
        draw_windows(1000, 100, 11, seed=1, key=100)


def test_builtin_text_is_prose():
    """The built-in source is real English prose of useful size, without code blocks."""
    text = builtin_text("python-docs")
    assert len(text.split()) > 20_000
    assert ">>>" not in text
    assert "statement" in text and " the " in text
    with pytest.raises(ValueError, match="unknown text source"):
        builtin_text("gutenberg")


# ---------------------------------------------------------------- end to end on the tiny models
def _words(n_words: int, seed: int = 0) -> str:
    rng = np.random.default_rng(seed)
    return " ".join(rng.choice(BERT_WORDS[:-4] + ["then", "thin", "an", "12"], n_words))


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("probe_models")
    write_tiny_gguf(d / "tiny.gguf", llama_params(0))
    write_tiny_bert(d / "bert", bert_params())
    return d / "tiny.gguf", d / "bert"


def test_probe_end_to_end_and_resume(models, tmp_path, monkeypatch):
    """A run interrupted after the first length resumes from OUT.partial.npz and gives the same result as an
    uninterrupted run; the JSON carries provenance and the text digest. Catches: a resume that recomputes, one that
    mixes windows of different settings, a partial file left behind."""
    gg, _ = models
    text = _words(3000)
    kw = dict(text=text, lengths=[8, 16, 32], windows=6, layers=[0, 2], seed=3, bootstrap=20)
    ref = probe_model(gg, **kw)
    out = tmp_path / "r.json"
    calls = {"n": 0}
    real = probe_mod._collect_window

    def flaky(*a, **k):
        calls["n"] += 1
        if calls["n"] > 8:  # first length (6 windows) done, interrupted inside the second
            raise KeyboardInterrupt
        return real(*a, **k)

    monkeypatch.setattr(probe_mod, "_collect_window", flaky)
    with pytest.raises(KeyboardInterrupt):
        probe_model(gg, out=out, **kw)
    assert (tmp_path / "r.json.partial.npz").is_file() and not out.exists()
    monkeypatch.setattr(probe_mod, "_collect_window", real)
    res = probe_model(gg, out=out, **kw)
    assert res["timing"]["resumed_lengths"] == [8]
    assert not (tmp_path / "r.json.partial.npz").exists()
    assert res["per_length"] == ref["per_length"] and res["slopes"] == ref["slopes"]
    data = json.loads(out.read_text())
    assert data["kind"] == "varsim.probe_model" and "versions" in data["provenance"]
    assert data["settings"]["query_position"] == -1 and data["text"]["tokens"] > 3000
    assert np.array(data["per_length"]["std"]).shape == (3, 2, 4)  # (lengths, layers, heads)
    assert len(data["layer_summary"]) == 2


def test_probe_rng_spec7(models):
    """SPEC 7: ``rng=`` an int or SeedSequence gives the result of ``seed=`` with that value bit for bit (windows and
    bootstrap intervals), a Generator a reproducible run; ``seed`` with ``rng`` is a ValueError. Catches an ignored
    ``rng`` (default seed used), ``rng`` mapped to other streams than ``seed``, a silent choice when both are given."""
    gg, _ = models
    kw = dict(text=_words(2000, 2), lengths=[8, 16], windows=3, layers=[0], bootstrap=5)
    keys = ("per_length", "slopes", "settings")
    ref = probe_model(gg, seed=4, **kw)
    for rng in (4, np.random.SeedSequence(4)):
        res = probe_model(gg, rng=rng, **kw)
        assert all(res[k] == ref[k] for k in keys)
    assert probe_model(gg, seed=0, **kw)["per_length"] != ref["per_length"]
    a, b = (probe_model(gg, rng=np.random.default_rng(9), **kw) for _ in range(2))
    assert all(a[k] == b[k] for k in keys) and isinstance(a["settings"]["seed"], int)
    with pytest.raises(ValueError, match="not both"):
        probe_model(gg, seed=1, rng=1, **kw)


def test_probe_encoder_fixed_position(models):
    """Encoders use a fixed query position (default 0 = [CLS]); N counts [CLS] and [SEP]."""
    _, bert = models
    res = probe_model(bert, text=_words(2000, 1), lengths=[8, 16], windows=4, layers=[1], bootstrap=0)
    assert res["settings"]["query_position"] == 0
    assert np.array(res["per_length"]["y2"]).shape == (2, 1, 3)
    assert "lo" not in res["slopes"]["std"]  # no bootstrap asked


def test_probe_bad_input(models):
    """One ValueError naming the parameter for each: N beyond the context, text too short, unknown layer."""
    gg, bert = models
    text = _words(500)
    with pytest.raises(ValueError, match="lengths: N = 128 exceeds the model's context length 64"):
        probe_model(gg, text=text, lengths=[16, 128], windows=3)
    with pytest.raises(ValueError, match="windows: the text has"):
        probe_model(gg, text=text, lengths=[16, 64], windows=30)
    with pytest.raises(ValueError, match="layers"):
        probe_model(gg, text=text, lengths=[8, 16], windows=3, layers=[5])
    with pytest.raises(ValueError, match="lengths: need at least two"):
        probe_model(gg, text=text, lengths=[16], windows=3)
    with pytest.raises(ValueError, match="bos: only for causal"):
        probe_model(bert, text=text, lengths=[8, 16], windows=3, bos=True)


def test_cli_probe_model(models, tmp_path, capsys):
    """The CLI writes the JSON and prints the per-layer table; bad input is one line and exit status 2."""
    gg, _ = models
    txt = tmp_path / "t.txt"
    txt.write_text(_words(2000), encoding="utf-8")
    out = tmp_path / "o.json"
    rc = main(["probe-model", "--model", str(gg), "--text", str(txt), "--lengths", "8:32:x2", "--windows", "4",
               "--layers", "0-1", "--bootstrap", "10", "-o", str(out), "--no-progress"])
    assert rc == 0 and json.loads(out.read_text())["lengths"] == [8, 16, 32]
    assert "median slope" in capsys.readouterr().out
    rc = main(["probe-model", "--model", str(gg), "--text", str(txt), "--lengths", "16", "100", "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and "exceeds the model's context length" in err and len(err.strip().splitlines()) == 1
    rc = main(["probe-model", "--model", str(txt), "--no-progress"])
    assert rc == 2 and "neither a GGUF file nor a safetensors" in capsys.readouterr().err


@pytest.mark.parametrize("fraction, word", [(0.9, "is truncated: tensor"), (0.2, "is truncated: tensor"),
                                            (0.05, "truncated or corrupt")])
def test_cli_truncated_gguf_says_truncated(models, tmp_path, capsys, fraction, word):
    """A GGUF cut short (an interrupted download) is reported as truncated, naming the model file, not as numpy's
    "cannot reshape array of size 399424 into shape (576,960)"."""
    gg, _ = models
    data = gg.read_bytes()
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(data[: int(len(data) * fraction)])
    rc = main(["probe-model", "--model", str(cut), "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and word in err and "cut.gguf" in err, err
    assert "reshape" not in err


def test_cli_missing_text_file_is_named_as_missing(models, tmp_path, capsys):
    gg, _ = models
    rc = main(["probe-model", "--model", str(gg), "--text", str(tmp_path / "nope.txt"), "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "nope.txt" in err and "does not exist" in err, err
    assert "UTF-8" not in err
    (tmp_path / "latin1.txt").write_bytes("caf\xe9 ".encode("latin-1") * 10)
    rc = main(["probe-model", "--model", str(gg), "--text", str(tmp_path / "latin1.txt"), "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and "latin1.txt" in err and "not UTF-8" in err, err


def test_progress_covers_the_bootstrap(models, capsys, monkeypatch):
    """The progress display counts the bootstrap resamples too, so it does not show the run as done while the
    bootstrap (about 100 s for a real model) still runs."""
    import io

    gg, _ = models
    stream = io.StringIO()
    import varsim._common.progress as progress_mod

    real_init = progress_mod.Progress.__init__

    def init(self, *a, **k):
        real_init(self, *a, **k)
        self.stream = stream

    monkeypatch.setattr(progress_mod.Progress, "__init__", init)
    probe_model(gg, text=_words(2000), lengths=[8, 16], windows=4, layers=[0], bootstrap=50, progress=True)
    shown = stream.getvalue()
    assert "bootstrap 50/50" in shown and "windows 8/8" in shown, shown
