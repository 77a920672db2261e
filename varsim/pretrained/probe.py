"""Vanishing-variance probe of a pretrained model on real text, per layer and head.

For each length N (number of keys the query attends to) draw ``windows`` disjoint windows of real text, run the
model up to the deepest probed layer, and record for the query position (causal models: the last token; encoders:
a fixed position, default 0 = ``[CLS]``) and every probed layer ``l`` and head ``h``:

* ``o``      the head's attention output (before the output projection), ``d_head`` components;
* ``Y2``     ``sum_i w_i^2`` of the query's attention row;
* ``vbar``, ``s2``  mean and variance (over the N visible positions) of the head's value vectors, per component.

Across windows at fixed N (all per component c, then averaged over components; per-component means, as THEORY 2.4
warns) the law of total variance splits ``var_total = mean_c Var_j(o_jc)`` into

* ``var_iid    = mean_c E_j[s2_jc Y2_j]``: what the i.i.d. law ``sigma^2 E[sum w^2]`` predicts;
* ``var_offset = mean_c (Var_j(vbar_jc) - E_j[s2_jc] / N)``: a window-level shared value offset (THEORY 2.4 "shared
  offset": ``Var(o_c) = tau_m^2 + sigma^2 E[Y2]``, which does not vanish);
* ``var_rest   = var_total - var_iid - var_offset``: the remainder (key-value correlation, position structure).

Log-log slopes in N (least squares over the grid) of ``std = sqrt(var_total)``, of ``E[Y2]`` and of the
std-equivalent ``sqrt(var_iid)`` come with percentile bootstrap intervals: windows are resampled with replacement
independently at each N (streams ``child_generator(seed, 1_000_000 + b)``). For i.i.d. values, ``slope(std) =
slope(E[Y2]) / 2`` (uniform attention: -1/2).

Runs are resumable: with an output path, the per-window arrays of every finished N are saved to
``<out>.partial.npz`` (atomically) and reused when the same settings run again.
"""

from __future__ import annotations

import dataclasses
import io
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

from varsim._common import blas as _blas
from varsim._common.atomic import atomic_write_json, atomic_write_with, check_writable, is_special_file
from varsim._common.progress import Progress
from varsim._common.provenance import provenance
from varsim._common.seeding import SEED_DEFAULT, child_generator, resolve_seed, seed_entropy
from varsim._common.validate import check_int, check_int_grid

from .loading import SHIPPED, file_digest, load_model
from .text import builtin_text, draw_windows, load_text, text_digest

__all__ = ["probe_model", "summarize", "DEFAULT_LAYERS", "DEFAULT_WINDOWS", "N_COMPONENTS", "layer_summary",
           "round_digits"]

DEFAULT_LAYERS = (0, 1)  # for models not in SHIPPED (each shipped model has its own default)
DEFAULT_WINDOWS = 40
DEFAULT_BOOTSTRAP = 400
N_COMPONENTS = 4  # per-component stds stored for components 0..3 of every head (the "fixed components")
_FIELDS = ("o", "y2", "vbar", "s2", "w_first", "w_max", "attn_out")
_BOOT_KEY = 1_000_000


def round_digits(x, digits: int = 6):
    """Nested lists of floats rounded to ``digits`` significant digits (compact JSON); NaN -> None."""
    a = np.asarray(x, dtype=float)
    if a.ndim == 0:
        v = float(a)
        return None if not math.isfinite(v) else float(f"{v:.{digits}g}")
    return [round_digits(v, digits) for v in a]


def _collect_window(model, ids, layers, qpos, causal):
    """Per-window record arrays (one row of each field)."""
    res = model.run(ids, layers=layers, query_positions=[qpos])
    T = len(ids)
    q = qpos + T if qpos < 0 else qpos
    span = q + 1 if causal else T  # keys the query sees
    g = model.spec.group
    out = {k: [] for k in _FIELDS}
    for l in layers:
        r = res.records[l]
        w = r.weights[:, 0, :span].astype(np.float64)  # (H, span)
        out["o"].append(r.head_out[:, 0, :])
        out["y2"].append(np.sum(w * w, axis=1))
        out["w_first"].append(w[:, 0])
        out["w_max"].append(w.max(axis=1))
        v = r.values[:, :span, :].astype(np.float64)  # (KV, span, dh)
        vbar, s2 = v.mean(axis=1), v.var(axis=1)
        out["vbar"].append(np.repeat(vbar, g, axis=0))  # per query head (GQA: head h reads kv head h // g)
        out["s2"].append(np.repeat(s2, g, axis=0))
        out["attn_out"].append(r.attn_out[0])
    return {k: np.stack(v) for k, v in out.items()}


def _stats(a: dict, n_keys: int, idx=None) -> dict:
    """Per-(layer, head) statistics of one length's window arrays; ``idx`` (B, W) resamples windows (bootstrap)."""
    def take(name):
        x = a[name].astype(np.float64)
        return x[None] if idx is None else x[idx]  # (B, W, ...)

    o, y2, vbar, s2, ao = take("o"), take("y2"), take("vbar"), take("s2"), take("attn_out")
    W = o.shape[1]
    c = W / (W - 1)
    var_c = (np.mean(o * o, axis=1) - np.mean(o, axis=1) ** 2) * c  # (B, L, H, dh)
    var_total = var_c.mean(-1)
    var_iid = np.mean(s2 * y2[..., None], axis=1).mean(-1)
    var_vbar = (np.mean(vbar * vbar, axis=1) - np.mean(vbar, axis=1) ** 2) * c
    var_offset = (var_vbar - np.mean(s2, axis=1) / n_keys).mean(-1)
    ao_var = ((np.mean(ao * ao, axis=1) - np.mean(ao, axis=1) ** 2) * c).mean(-1)  # (B, L)
    out = {
        "std": np.sqrt(var_total), "y2": y2.mean(axis=1), "var_total": var_total, "var_iid": var_iid,
        "var_offset": var_offset, "attn_out_std": np.sqrt(ao_var),
    }
    if idx is None:
        out = {k: v[0] for k, v in out.items()}
        sd = np.sqrt(np.maximum(var_c[0], 0.0))
        out.update({
            "var_rest": out["var_total"] - out["var_iid"] - out["var_offset"],
            "std_median": np.median(sd, axis=-1),
            "std_components": sd[..., :N_COMPONENTS],
            "y2_se": a["y2"].std(axis=0, ddof=1) / math.sqrt(W),
            "w_first": a["w_first"].mean(axis=0), "w_max": a["w_max"].mean(axis=0),
            "sigma2": a["s2"].mean(axis=(0, -1)),
        })
    return out


def _slope(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Least-squares slope of ``y`` (axis 0 = length) on ``x``; works on trailing axes."""
    xc = x - x.mean()
    yc = y - y.mean(axis=0, keepdims=True)
    return np.tensordot(xc, yc, axes=(0, 0)) / np.sum(xc * xc)


def _log(x):
    return np.log(np.maximum(x, 1e-300))  # a degenerate bootstrap resample (all one window) has zero spread


_SLOPED = {"std": lambda s: _log(s["std"]), "y2": lambda s: _log(s["y2"]),
           "std_iid": lambda s: 0.5 * _log(s["var_iid"]), "attn_out_std": lambda s: _log(s["attn_out_std"])}


def summarize(arrays: dict, lengths, *, seed, bootstrap: int, chunk: int = 25, on_resamples=None,
              n_keys: dict | None = None) -> dict:
    """Statistics per length and slopes with bootstrap intervals from the per-window arrays ``arrays[n]``;
    ``on_resamples(k)`` is called after each chunk of ``k`` bootstrap resamples (progress).

    ``n_keys[n]``: the keys the query sees at length ``n`` (default ``n``; a trained decoder sees ``n k + 1`` tokens,
    :mod:`varsim.train.attention_probe`); slopes are fitted against ``log n``."""
    lengths = [int(n) for n in lengths]
    nk = {n: int(n_keys[n]) if n_keys is not None else n for n in lengths}
    x = np.log(np.asarray(lengths, dtype=float))
    per = [_stats(arrays[n], nk[n]) for n in lengths]
    keys = per[0].keys()
    per_length = {k: np.stack([p[k] for p in per]) for k in keys}  # (nN, L, H[, k])
    slopes = {name: {"value": _slope(x, f(per_length))} for name, f in _SLOPED.items()}
    if bootstrap > 0:
        boot = {name: [] for name in _SLOPED}
        for b0 in range(0, bootstrap, chunk):
            nb = min(chunk, bootstrap - b0)
            stats_b = []
            for i, n in enumerate(lengths):
                W = arrays[n]["y2"].shape[0]
                idx = np.stack([child_generator(seed, _BOOT_KEY + b0 + j, i).integers(0, W, W) for j in range(nb)])
                stats_b.append(_stats(arrays[n], nk[n], idx))
            st = {k: np.stack([s[k] for s in stats_b]) for k in stats_b[0]}  # (nN, B, ...)
            for name, f in _SLOPED.items():
                boot[name].append(_slope(x, f(st)))
            if on_resamples is not None:
                on_resamples(nb)
        for name in _SLOPED:
            allb = np.concatenate(boot[name], axis=0)
            slopes[name]["lo"] = np.percentile(allb, 2.5, axis=0)
            slopes[name]["hi"] = np.percentile(allb, 97.5, axis=0)
    return {"per_length": per_length, "slopes": slopes}


def _save_partial(path: Path, key: str, arrays: dict) -> None:
    flat = {"key": np.array(key)}
    for n, a in arrays.items():
        for f, v in a.items():
            flat[f"{n}:{f}"] = v
    buf = io.BytesIO()
    np.savez(buf, **flat)
    atomic_write_with(path, lambda fh: fh.write(buf.getvalue()))


def _load_partial(path: Path, key: str) -> dict:
    if not path.is_file():
        return {}
    try:
        with np.load(path, allow_pickle=False) as z:
            if str(z["key"]) != key:
                return {}
            arrays: dict = {}
            for name in z.files:
                if name == "key":
                    continue
                n, f = name.split(":")
                arrays.setdefault(int(n), {})[f] = z[name]
    except (OSError, ValueError, KeyError):
        return {}
    return {n: a for n, a in arrays.items() if set(a) == set(_FIELDS)}


def _parse_layers(layers, n_layer: int) -> tuple[int, ...]:
    grid = check_int_grid("layers", layers, minimum=0)
    bad = [int(l) for l in grid if l >= n_layer]
    if bad:
        raise ValueError(f"layers: {bad} outside 0..{n_layer - 1} (the model has {n_layer} layers)")
    return tuple(sorted({int(l) for l in grid}))


def probe_model(
    model,
    *,
    text: str | None = None,
    text_files=None,
    lengths=None,
    windows: int = DEFAULT_WINDOWS,
    layers=None,
    query_position: int | None = None,
    bos: bool = False,
    seed=SEED_DEFAULT,
    bootstrap: int = DEFAULT_BOOTSTRAP,
    out=None,
    progress: bool = False,
    blas_threads: int = 1,
    rng=None,
) -> dict:
    """Run the probe and return the result dict (also written to ``out`` as JSON when given).

    model           a shipped model name ("smollm2", "minilm"), a GGUF file, a safetensors file or directory,
                    or a loaded :class:`~varsim.pretrained.model.PretrainedModel`
    text            the text itself; else ``text_files`` (UTF-8 paths); else the built-in "python-docs" source
    lengths         N values = keys the query attends to (default: the model's entry in SHIPPED, or 16..1024
                    capped at the context length); each N must fit the context (special tokens included)
    windows         disjoint text windows per N (>= 3)
    layers          layers to probe (default: the model's entry in SHIPPED, else DEFAULT_LAYERS); the pass stops
                    after the deepest one
    query_position  query row (default: -1, the last token, for causal models; 0 for encoders)
    bos             prepend the BOS token (causal models); it counts as one of the N keys
    bootstrap       bootstrap resamples for the slope intervals (0: none)
    seed, rng       the root seed (int or SeedSequence; None: fresh entropy), or instead ``rng`` (SPEC 7: an int or
                    SeedSequence, the same windows and intervals bit for bit as ``seed`` with that value, or a
                    numpy Generator, from which the root entropy is drawn and recorded); giving both is an error
    blas_threads    BLAS threads during the forward passes (default 1: faster on a loaded machine, see
                    varsim._common.blas)
    """
    t_start = time.perf_counter()
    windows = check_int("windows", windows, minimum=3)
    bootstrap = check_int("bootstrap", bootstrap, minimum=0)
    blas_threads = check_int("blas_threads", blas_threads, minimum=1)
    seed = resolve_seed(seed, rng)  # one root SeedSequence for the windows and the bootstrap
    if text is not None and text_files:
        raise ValueError("text: give either text or text_files, not both")
    if out is not None:
        out = check_writable(out, "out")
    m = load_model(model)
    layers, lengths, query_position = _probe_grid(m, layers, lengths, query_position, bos)
    text, source = _probe_text(text, text_files)
    n_special = m.n_special(bos=bos)
    tokens = m.encode(text)
    for n in lengths:  # fail before any work if the text is too short
        draw_windows(len(tokens), n - n_special, windows, seed, n)

    name = m.source.get("name")
    model_file = Path(m.source["path"])
    settings = {
        "model": name, "lengths": lengths, "windows": windows, "layers": list(layers),
        "query_position": query_position, "bos": bool(bos), "seed": seed_entropy(seed), "bootstrap": bootstrap,
    }
    text_info = {"source": source, "sha256": text_digest(text), "chars": len(text), "tokens": int(len(tokens))}
    model_info = {"name": name, "format": m.source["format"], "file": model_file.name,
                  "sha256": file_digest(model_file), "spec": dataclasses.asdict(m.spec)}
    key = json.dumps({"settings": settings, "text": text_info["sha256"], "model": model_info["sha256"]},
                     sort_keys=True)
    # a device or FIFO given as out (-o /dev/stdout) is written through, with no partial file beside it
    partial = None if out is None or is_special_file(out) else out.with_name(out.name + ".partial.npz")
    arrays, seconds = _probe_windows(m, tokens, settings, seed, partial, key, progress=progress,
                                     blas_threads=blas_threads)
    with Progress(bootstrap, f"probe {name}: bootstrap", enabled=progress and bootstrap > 0) as bar:
        summ = summarize(arrays, lengths, seed=seed, bootstrap=bootstrap, on_resamples=bar.update)
    sp = m.spec
    result = {
        "kind": "varsim.probe_model",
        "format_version": 1,
        "settings": settings,
        "model": model_info,
        "text": text_info,
        "lengths": lengths,
        "n_keys": lengths,
        "layers": list(layers),
        "n_head": sp.n_head,
        "n_kv_head": sp.n_kv_head,
        "d_head": sp.d_head,
        "components": list(range(min(N_COMPONENTS, sp.d_head))),
        "per_length": {k: round_digits(v) for k, v in summ["per_length"].items()},
        "slopes": {k: {kk: round_digits(vv, 5) for kk, vv in v.items()} for k, v in summ["slopes"].items()},
        "layer_summary": layer_summary(summ, layers),
        "timing": {"seconds_total": round(time.perf_counter() - t_start, 2),
                   "seconds_per_length": {str(n): round(s, 2) for n, s in seconds.items()},
                   "resumed_lengths": [n for n in lengths if n not in seconds], "blas_threads": blas_threads},
        "provenance": provenance(),
    }
    if out is not None:
        atomic_write_json(out, result, indent=1)
        if partial is not None and partial.exists():
            partial.unlink()
    return result


def _probe_grid(m, layers, lengths, query_position, bos: bool) -> tuple[tuple[int, ...], list[int], int]:
    """The probed layers, lengths and query row of model ``m``: the arguments checked, defaults filled in."""
    sp = m.spec
    name = m.source.get("name")
    if layers is None:
        layers = SHIPPED[name]["layers"] if name in SHIPPED else DEFAULT_LAYERS
    layers = _parse_layers(layers, sp.n_layer)
    if lengths is None:
        lengths = SHIPPED[name]["lengths"] if name in SHIPPED else tuple(
            n for n in (16, 32, 64, 128, 256, 512, 1024) if n <= sp.context_length)
    lengths = [int(n) for n in check_int_grid("lengths", lengths, minimum=1)]
    if len(set(lengths)) < 2:
        raise ValueError("lengths: need at least two distinct lengths for a slope")
    lengths = sorted(set(lengths))
    n_special = m.n_special(bos=bos)
    if lengths[0] < n_special + 2:
        raise ValueError(f"lengths: each N must be >= {n_special + 2} (room for {n_special} special tokens)")
    if lengths[-1] > sp.context_length:
        raise ValueError(f"lengths: N = {lengths[-1]} exceeds the model's context length {sp.context_length}")
    if query_position is None:
        query_position = -1 if sp.causal else 0
    query_position = check_int("query_position", query_position)
    if not -lengths[0] <= query_position < lengths[0]:
        raise ValueError(f"query_position must lie in [-{lengths[0]}, {lengths[0]}) for the shortest N")
    if bos and sp.arch != "llama":
        raise ValueError("bos: only for causal (llama) models; encoders always get [CLS] ... [SEP]")
    if bos and "bos" not in m.special:
        raise ValueError("bos: the model defines no BOS token")
    return layers, lengths, query_position


def _probe_text(text, text_files) -> tuple[str, object]:
    """``(text, source)``: the text argument, else the files' text, else the built-in "python-docs" source."""
    if text is not None:
        if not isinstance(text, str) or not text.strip():
            raise ValueError("text must be a non-empty string")
        return text, "text argument"
    if text_files:
        return load_text(text_files), [str(p) for p in ([text_files] if isinstance(text_files, (str, Path))
                                                       else text_files)]
    return builtin_text("python-docs"), "python-docs"


def _probe_windows(m, tokens, settings: dict, seed, partial: Path | None, key: str, *, progress: bool,
                   blas_threads: int) -> tuple[dict, dict]:
    """The per-window arrays of every length (``{N: {field: array}}``; the lengths of ``partial`` made with the same
    ``key`` are reused, the others are run and saved there after each) and the seconds each run length took."""
    lengths, windows, layers = settings["lengths"], settings["windows"], tuple(settings["layers"])
    bos, query_position = settings["bos"], settings["query_position"]
    n_special = m.n_special(bos=bos)
    arrays = _load_partial(partial, key) if partial is not None else {}
    arrays = {n: a for n, a in arrays.items() if n in lengths}
    if arrays and progress:
        print(f"probe-model: resuming, lengths {sorted(arrays)} already done", file=sys.stderr, flush=True)
    todo = [n for n in lengths if n not in arrays]
    seconds = {}
    name = m.source.get("name")
    with _blas.blas_threads(blas_threads), Progress(windows * len(todo), f"probe {name}: windows",
                                                    enabled=progress) as bar:
        for n in todo:
            t0 = time.perf_counter()
            starts = draw_windows(len(tokens), n - n_special, windows, seed, n)
            rows = []
            for s in starts:
                ids = m.frame(tokens[s : s + n - n_special], bos=bos)
                rows.append(_collect_window(m, ids, layers, query_position, m.spec.causal))
                bar.update(1, f"N={n}")
            arrays[n] = {f: np.stack([r[f] for r in rows]) for f in _FIELDS}
            seconds[n] = time.perf_counter() - t0
            if partial is not None:
                _save_partial(partial, key, arrays)
    return arrays, seconds


def layer_summary(summ: dict, layers) -> list[dict]:
    """Per probed layer: median and range over heads of the slopes, and the shares of the variance at the largest N."""
    pl, sl = summ["per_length"], summ["slopes"]
    rows = []
    for i, l in enumerate(layers):
        row = {"layer": l}
        for nm in ("std", "y2", "std_iid"):
            row[f"median_slope_{nm}"] = round_digits(np.median(sl[nm]["value"][i]), 4)
            row[f"slope_{nm}_range"] = round_digits([np.min(sl[nm]["value"][i]), np.max(sl[nm]["value"][i])], 4)
        row["slope_attn_out_std"] = round_digits(sl["attn_out_std"]["value"][i], 4)
        first, last = pl["var_total"][0, i], pl["var_total"][-1, i]
        row["median_std_ratio_first_last"] = round_digits(np.median(np.sqrt(first / last)), 4)
        row["median_iid_share_last"] = round_digits(np.median(pl["var_iid"][-1, i] / last), 4)
        row["median_offset_share_last"] = round_digits(np.median(pl["var_offset"][-1, i] / last), 4)
        rows.append(row)
    return rows
