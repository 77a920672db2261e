"""Training-step time of varsim's causal decoder (varsim.nn.decoder) against an identical PyTorch CPU model.

    python benchmarks/bench_decoder_step.py [--threads 1] [--repeats 200] [--quick]

What is timed, per configuration (float32, batch 64, pre-norm, H = 4 heads, ReLU MLP of width 2D):
  varsim   ``Decoder.loss_and_grads`` (input features, forward, cross-entropy, backward) + ``Adam.step``
  torch    the twin of tests/decoder_torch.py (the same architecture with torch ops on the same parameters, checked
           here to give the same logits and gradients), forward + ``F.cross_entropy`` + ``backward()`` +
           ``torch.optim.Adam.step``; its inputs are built once outside the timed loop (favouring torch slightly).
Both run in this process with the same number of threads (OPENBLAS_NUM_THREADS / OMP_NUM_THREADS set before NumPy is
imported, ``torch.set_num_threads``; 1 by default, as varsim trains), timed in alternating blocks of steps
(``_timing.blocked_medians``: other load on the machine hits both alike, and neither library's idle threads slow the
other). The table gives the median step time over ``--repeats`` steps after a warm-up,
the ratio varsim / torch (<= 1.0: varsim is as fast or faster) and the largest difference of the two models' logits
and gradients before training (the twin check). Needs torch (an optional CPU wheel).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def _parse():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=200, help="timed steps per configuration")
    ap.add_argument("--quick", action="store_true", help="20 repeats (a smoke run)")
    return ap.parse_args()


ARGS = _parse() if __name__ == "__main__" else None
if ARGS is not None:
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(ARGS.threads)  # before NumPy loads OpenBLAS

import numpy as np  # noqa: E402
from _timing import blocked_medians  # noqa: E402

from varsim.nn.decoder import Decoder  # noqa: E402
from varsim.nn.model import ModelConfig  # noqa: E402
from varsim.nn.optim import Adam  # noqa: E402
from varsim.tasks import make_batch  # noqa: E402

BATCH = 64
BASE = dict(architecture="decoder", d_model=64, n_heads=4, n_blocks=2, pre_ln=True, dtype="float32")
CONFIGS = {  # name: (model options, items per example)
    "argmax, 2 layers, D=64, RoPE, N=16": (dict(task="argmax", positions="rope"), 16),
    "dict, 2 layers, D=64, ALiBi, N=16": (dict(task="dictionary", positions="alibi"), 16),
    "recall, 4 layers, D=64, RoPE, N=32": (dict(task="recall", positions="rope", n_blocks=4, key_vocab=256), 32),
    "argmax, 2 layers, D=128, SSMax+RoPE, N=64": (dict(task="argmax", positions="rope", d_model=128,
                                                       attention="ssmax"), 64),
}


def bench_step(name: str, kw: dict, n: int, repeats: int) -> dict:
    import torch
    import torch.nn.functional as F
    from decoder_torch import torch_decoder, torch_inputs

    config = ModelConfig(**{**BASE, **kw})
    model = Decoder(config, seed=0)
    batch = make_batch(config.task, BATCH, n, np.random.default_rng(0), **config.vocab)
    opt = Adam(model.params, lr=1e-3)

    def varsim_step():
        _, _, grads = model.loss_and_grads(batch)
        opt.step(grads)

    ref = Decoder(config, seed=0)
    forward, tparams = torch_decoder(ref)
    inputs = torch_inputs(ref, batch)
    target = torch.from_numpy(batch["target"])
    logits, cache = ref.forward(batch)
    g = ref.backward(np.ones_like(logits), cache)
    tlogits = forward(*inputs)
    tlogits.sum().backward()
    err = max(float(np.max(np.abs(tlogits.detach().numpy() - logits))),
              max(float(np.max(np.abs(tparams[k].grad.numpy() - g[k]))) for k in g))
    if err > 1e-3:
        raise AssertionError(f"the torch twin differs from varsim by {err:.2e}")
    topt = torch.optim.Adam(list(tparams.values()), lr=1e-3)

    def torch_step():
        topt.zero_grad(set_to_none=True)
        F.cross_entropy(forward(*inputs), target).backward()
        topt.step()

    med = blocked_medians({"varsim": varsim_step, "torch": torch_step}, repeats)
    return {"config": name, "params": model.n_params, "tokens": n * config.task_spec.item_tokens + 1,
            "varsim_ms": 1e3 * med["varsim"], "torch_ms": 1e3 * med["torch"],
            "ratio": med["varsim"] / med["torch"], "max_abs_diff": err}


def main() -> int:
    args = ARGS
    try:
        import torch
    except ImportError:
        print("bench_decoder_step: torch is not installed (pip install torch, CPU wheel)", file=sys.stderr)
        return 2
    torch.set_num_threads(args.threads)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the torch twin
    repeats = 20 if args.quick else args.repeats
    print(f"decoder training step, float32, batch {BATCH}, {args.threads} thread(s), median of {repeats} steps "
          f"(numpy {np.__version__}, torch {torch.__version__})")
    print(f"{'configuration':44s} {'params':>7s} {'T':>4s} {'varsim ms':>10s} {'torch ms':>9s} {'ratio':>6s} "
          f"{'twin diff':>9s}")
    for name, (kw, n) in CONFIGS.items():
        r = bench_step(name, kw, n, repeats)
        print(f"{name:44s} {r['params']:7d} {r['tokens']:4d} {r['varsim_ms']:10.2f} {r['torch_ms']:9.2f} "
              f"{r['ratio']:6.2f} {r['max_abs_diff']:9.1e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
