"""Fingerprints of what varsim computes, so a refactor can show its results are bitwise-identical.

``current()`` runs a fixed set of small computations (simulators with both samplers and several weight maps, a short
training run per task, one reproduction run through the worker) and returns, per computation, the sha256 of its
numbers' bytes and a few of the numbers themselves. ``tests/data/golden.json`` holds the fingerprints made at a
known-good commit together with the machine's fingerprint (CPU, BLAS kernel, NumPy); ``tests/test_golden.py``
compares. Regenerate (only when a change of numbers is intended, and say so in the commit):

    python tests/golden_outputs.py --write
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

GOLDEN = Path(__file__).parent / "data" / "golden.json"

# (name, simulate keyword arguments)
SIMULATIONS = [
    ("full-fixed-softmax", dict(n_grid=[4, 64, 300], d_k=8, d_v=3, tau=1.3, n_sequences=512, seed=11)),
    ("full-random-query-uniform-values", dict(n_grid=[8, 128], d_k=6, d_v=2, tau=0.7, query="random",
                                              value_dist="uniform", value_mean=0.5, n_sequences=512, seed=12)),
    ("full-coupled-rademacher-keys", dict(n_grid=[16, 64], d_k=4, d_v=4, tau=1.0, key_dist="rademacher",
                                          coupling=0.5, n_sequences=256, seed=13)),
    ("logits-sample", dict(n_grid=[16, 1024], tau=2.0, sampler="logits", n_sequences=1024, seed=14)),
    ("logits-rao-blackwell", dict(n_grid=[16, 4096], tau=1.5, sampler="logits", estimator="rao_blackwell",
                                  n_sequences=1024, seed=15)),
    ("full-topk", dict(n_grid=[8, 64], d_k=8, d_v=2, tau=1.0, attention="topk", k=3, n_sequences=256, seed=16)),
    ("logits-ssmax", dict(n_grid=[8, 256], tau=1.0, sampler="logits", attention="ssmax", s=0.6,
                          n_sequences=512, seed=17)),
    ("logits-sigmoid", dict(n_grid=[8, 256], tau=1.0, sampler="logits", attention="sigmoid",
                            n_sequences=512, seed=18)),
    ("full-entmax15", dict(n_grid=[8, 64], d_k=8, d_v=2, tau=2.0, attention="entmax15", n_sequences=256, seed=19)),
    ("logits-logn", dict(n_grid=[8, 512], tau=1.0, sampler="logits", attention="logn", n0=16,
                         n_sequences=512, seed=20)),
]

RESULT_FIELDS = ("var", "var_se", "ipr", "ipr_se", "mean", "global_var", "wsum", "slope")

TRAININGS = [
    ("train-argmax", dict(task="argmax", model={"d_model": 16, "n_heads": 2, "d_hidden": 32}, steps=30,
                          batch_size=16, train_max=8, seed=3, log_every=10, checkpoint_every=30)),
    ("train-dictionary-layernorm", dict(task="dictionary", model={"d_model": 16, "n_heads": 2, "d_hidden": 32,
                                                                   "norm": "layernorm"},
                                        steps=30, batch_size=16, train_max=8, seed=4, log_every=10,
                                        checkpoint_every=30)),
]


def _digest(arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(np.asarray(a, dtype=np.float64))
        h.update(str(a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()


def _simulation(kwargs: dict) -> dict:
    from varsim.sim import simulate

    res = simulate(**kwargs)
    arrays = [np.atleast_1d(np.asarray(getattr(res, f), dtype=np.float64))
              for f in RESULT_FIELDS if getattr(res, f, None) is not None]
    return {"sha256": _digest(arrays), "values": [float(v) for v in np.asarray(res.var).ravel()]}


def _training(kwargs: dict) -> dict:
    from varsim.train import TrainConfig, load_checkpoint, train

    with tempfile.TemporaryDirectory() as tmp:
        train(TrainConfig(**kwargs), tmp, progress=False)
        model, _, _ = load_checkpoint(tmp)
    params = model.params
    names = sorted(params)
    return {"sha256": _digest([params[k] for k in names]),
            "values": [float(np.sum(params[k])) for k in names[:4]]}


def _reproduction() -> dict:
    from varsim.experiments.settings import ReproductionSettings, job_specs
    from varsim.experiments.worker import run_job

    settings = ReproductionSettings.quick(seeds=1, tasks=("argmax",), norms=("none",))
    spec = job_specs(settings)[0]
    spec["train_config"]["steps"] = 40
    spec["train_config"]["checkpoint_every"] = 40
    rec = run_job((spec, None))
    # "ranking" (the ranking/dispersion decomposition) is left out: it was added after these numbers were pinned
    numbers = {k: v for k, v in rec.items()
               if k not in ("spec", "timing", "provenance", "run_id", "format", "ranking")}
    text = json.dumps(numbers, sort_keys=True)
    return {"sha256": hashlib.sha256(text.encode()).hexdigest(),
            "values": [float(a) for a in rec["eval"]["accuracy"]]}


def current() -> dict:
    out = {name: _simulation(kw) for name, kw in SIMULATIONS}
    out.update({name: _training(kw) for name, kw in TRAININGS})
    out["reproduction-run"] = _reproduction()
    return out


def machine() -> dict:
    """What bitwise equality depends on: CPU, the BLAS kernel, NumPy and Numba versions."""
    from varsim._common.provenance import compute_environment, versions

    env, v = compute_environment(), versions()
    return {"cpu": env["cpu"], "machine": env["machine"],
            "blas": [{"internal_api": b["library"], "version": b["version"], "architecture": b["kernel"]}
                     for b in env["blas"]],
            "numpy": v["numpy"], "numba": v["numba"], "python": v["python"]}


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/golden_outputs.py --write")
    GOLDEN.parent.mkdir(exist_ok=True)
    GOLDEN.write_text(json.dumps({"machine": machine(), "outputs": current()}, indent=1) + "\n")
    print(f"wrote {GOLDEN}")
