"""The vanishing-variance probe of :mod:`varsim.pretrained.probe`, run on a trained varsim model (set model or decoder).

The same statistics and the same JSON layout (``kind`` ``varsim.probe_model``) as ``varsim probe-model`` on a real
model, so that one figure can put a trained model's layers beside SmolLM2's. A "window" is one example of the
model's task with exactly N items (drawn from ``child_generator(seed, N)``), the query is the model's query token,
and for every layer ``l`` and head ``h`` the per-window fields are the query row's

* ``o``      the head's attention output before the output projection and any attention-output norm (``Dh``);
* ``y2``     ``sum_j w_j^2`` over the keys the query sees (set model: the N items; decoder: the ``N k + 1`` tokens up
  to and including the query, ``k`` the task's tokens per item);
* ``vbar``, ``s2``  mean and variance over those keys of the head's value vectors, per component;
* ``w_first``, ``w_max``  the weight on the first key and the largest weight; ``attn_out`` the attention output
  added to the residual stream (after W_o and the norm).

The number of keys enters the shared-offset term (``Var(vbar) - E[s2] / n_keys``); the JSON's ``lengths`` are the
set sizes N and ``n_keys`` the key counts. :func:`varsim.pretrained.probe.summarize` makes the statistics and the
bootstrap intervals, so both probes compute them with one code path.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from varsim._common import blas as _blas
from varsim._common.atomic import atomic_write_json, check_writable
from varsim._common.provenance import provenance
from varsim._common.seeding import SEED_DEFAULT, child_generator, resolve_seed, seed_entropy
from varsim._common.validate import check_int, check_int_grid
from varsim.tasks import check_set_size, make_batch

__all__ = ["probe_trained", "collect_trained", "n_keys", "DEFAULT_TRAINED_LENGTHS"]

DEFAULT_TRAINED_LENGTHS = (16, 32, 64, 128, 256, 512, 1024)


def n_keys(config, n: int) -> int:
    """Keys the query token sees at set size ``n``: the items (set model) or every token up to the query (decoder)."""
    return n * config.task_spec.item_tokens + 1 if _causal(config) else n


def _causal(config) -> bool:
    from varsim.nn.architectures import get_architecture

    return bool(get_architecture(config.architecture).sequence)


def _window_arrays(model, batch, layers) -> dict:
    """Per-window probe fields ``{field: (W, L, ...)}`` from one ``analysis`` pass."""
    c = model.config
    rec = model.analysis(batch)
    h, dh = c.n_heads, c.d_model // c.n_heads
    out = {k: [] for k in ("o", "y2", "vbar", "s2", "w_first", "w_max", "attn_out")}
    for l in layers:
        pre = f"block{l}"
        w = np.asarray(rec[f"{pre}.key_weights"], dtype=np.float64)  # (W, H, n_keys)
        split = lambda a: np.asarray(a, dtype=np.float64).reshape(a.shape[0], h, dh)  # noqa: E731
        out["o"].append(split(rec[f"{pre}.query_heads"]))
        out["y2"].append(np.sum(w * w, axis=-1))
        out["w_first"].append(w[..., 0])
        out["w_max"].append(w.max(axis=-1))
        out["vbar"].append(split(rec[f"{pre}.value_mean"]))
        out["s2"].append(split(rec[f"{pre}.value_var"]))
        out["attn_out"].append(np.asarray(rec[f"{pre}.attn_out"], dtype=np.float64))
    return {k: np.stack(v, axis=1) for k, v in out.items()}


def collect_trained(model, lengths, *, windows: int, layers, seed) -> dict:
    """``{N: {field: (windows, L, ...)}}``: the per-window arrays of :func:`summarize` for each set size N."""
    c = model.config
    out = {}
    for n in lengths:
        batch = make_batch(c.task, windows, int(n), child_generator(seed, int(n)), **c.vocab)
        out[int(n)] = _window_arrays(model, batch, layers)
    return out


def _resolve(model):
    """``(model, info)`` from a model object, a checkpoint file or a run directory (its latest checkpoint)."""
    if isinstance(model, (str, Path)):
        from varsim.pretrained.loading import file_digest
        from varsim.train.checkpoint import load_checkpoint

        m, _, state = load_checkpoint(model)
        path = Path(state["path"])
        return m, {"name": str(model), "format": "varsim-checkpoint", "file": path.name,
                   "sha256": file_digest(path), "step": state["step"]}
    if callable(getattr(model, "analysis", None)) and hasattr(model, "config"):
        return model, {"name": model.config.architecture, "format": "varsim-model", "file": None, "sha256": None}
    raise ValueError(f"model must be a run directory, a checkpoint file or a varsim model, got {type(model).__name__}")


def probe_trained(model, *, lengths=DEFAULT_TRAINED_LENGTHS, windows: int = 40, layers=None, seed=SEED_DEFAULT,
                  bootstrap: int = 400, out=None, blas_threads: int = 1, rng=None, model_info=None) -> dict:
    """Run the probe on a trained varsim model and return the result (the layout of
    :func:`varsim.pretrained.probe.probe_model`; also written to ``out`` as JSON when given).

    model       a run directory (its latest checkpoint), a checkpoint file, or a set model / decoder object
    lengths     set sizes N (at least two distinct; each allowed by the task)
    windows     examples per N (>= 3); layers: blocks to probe (default: all)
    seed, rng   the root seed (as in :func:`varsim.pretrained.probe.probe_model`); bootstrap: resamples (0: none)
    model_info  more fields for the result's ``model`` entry (``varsim probe-model`` adds ``grid_run``: the grid run a
                checkpoint came from, :func:`varsim.experiments.records.grid_run`)
    """
    from varsim.pretrained.probe import N_COMPONENTS, layer_summary, round_digits, summarize

    t_start = time.perf_counter()
    windows = check_int("windows", windows, minimum=3)
    bootstrap = check_int("bootstrap", bootstrap, minimum=0)
    blas_threads = check_int("blas_threads", blas_threads, minimum=1)
    seed = resolve_seed(seed, rng)
    if out is not None:
        out = check_writable(out, "out")
    m, info = _resolve(model)
    model_info = {**info, **(model_info or {})}
    c = m.config
    lengths = sorted({int(n) for n in check_int_grid("lengths", lengths, minimum=1)})
    if len(lengths) < 2:
        raise ValueError("lengths: need at least two distinct lengths for a slope")
    for n in lengths:
        check_set_size(c.task, n, name="lengths", **c.vocab)
    layers = tuple(range(c.n_blocks)) if layers is None else tuple(
        sorted({int(l) for l in check_int_grid("layers", layers, minimum=0)}))
    if layers[-1] >= c.n_blocks:
        raise ValueError(f"layers: {layers[-1]} outside 0..{c.n_blocks - 1} (the model has {c.n_blocks} blocks)")
    causal = _causal(c)
    keys = {n: n_keys(c, n) for n in lengths}
    with _blas.blas_threads(blas_threads):
        t0 = time.perf_counter()
        arrays = collect_trained(m, lengths, windows=windows, layers=layers, seed=seed)
        seconds_windows = time.perf_counter() - t0
    summ = summarize(arrays, lengths, seed=seed, bootstrap=bootstrap, n_keys=keys)
    dh = c.d_model // c.n_heads
    model_info["spec"] = {"arch": c.architecture, "causal": causal, "n_layer": c.n_blocks, "n_head": c.n_heads,
                          "n_kv_head": c.n_heads, "d_head": dh, "d_model": c.d_model, "config": c.to_dict()}
    result = {
        "kind": "varsim.probe_model",
        "format_version": 1,
        "settings": {"model": model_info["name"], "lengths": lengths, "windows": windows, "layers": list(layers),
                     "query_position": -1 if causal else 0, "bos": False, "seed": seed_entropy(seed),
                     "bootstrap": bootstrap},
        "model": model_info,
        "text": {"source": f"task:{c.task}", "sha256": None, "chars": None, "tokens": None,
                 "task": c.task, "vocab": dict(c.vocab), "item_tokens": c.task_spec.item_tokens},
        "lengths": lengths,
        "n_keys": [keys[n] for n in lengths],
        "layers": list(layers),
        "n_head": c.n_heads,
        "n_kv_head": c.n_heads,
        "d_head": dh,
        "components": list(range(min(N_COMPONENTS, dh))),
        "per_length": {k: round_digits(v) for k, v in summ["per_length"].items()},
        "slopes": {k: {kk: round_digits(vv, 5) for kk, vv in v.items()} for k, v in summ["slopes"].items()},
        "layer_summary": layer_summary(summ, layers),
        "timing": {"seconds_total": round(time.perf_counter() - t_start, 2),
                   "seconds_windows": round(seconds_windows, 2), "resumed_lengths": [],
                   "blas_threads": blas_threads},
        "provenance": provenance(),
    }
    if out is not None:
        atomic_write_json(out, result, indent=1)
    return result

