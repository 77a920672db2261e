"""Training-step time of varsim's NumPy transformer against an identical PyTorch CPU model; evaluation throughput.

    python benchmarks/bench_train.py [--threads 2] [--repeats 200] [--eval-n 16384] [--eval-repeats 9] [--quick]
    python benchmarks/bench_train.py --profile [--repeats 200]    # where one step's time goes, per function

``--profile`` runs each model's step (``loss_and_grads`` + ``Adam.step``, one BLAS thread, as ``train`` runs) under
cProfile for ``--repeats`` steps and prints the functions with the most time of their own (a matrix product is
counted in the function that calls ``@``: ``linear_forward``/``linear_backward`` hold the linear layers' products,
the attention functions their batched small products), as a share of the profiled time; nothing else is timed.

What is timed, per configuration (float32, batch 64, set size 16, H = 4 heads; the first two rows are the
configurations with speed targets, the third adds the dictionary task with LayerNorm after attention):
  varsim   ``Transformer.loss_and_grads`` (input features, forward, cross-entropy, backward) + ``Adam.step``
  torch    the same architecture written with torch ops on the same parameters (checked to give the same logits and
           gradients), forward + ``F.cross_entropy`` + ``backward()`` + ``torch.optim.Adam.step`` (default settings);
           its input features are built once outside the timed loop, so the comparison favours torch slightly.
Beside them, the gemm floor: the same linear-layer products as one varsim step (shapes recorded from a
``loss_and_grads`` call), done back to back with nothing else, at ``--threads`` and at one BLAS thread, timed in the
same blocks; no implementation of these FLOPs on this BLAS goes below it, so where the goal (TRAIN_GOAL x torch's
time) lies below it the script says so. Both run in this process with ``--threads`` threads (OPENBLAS_NUM_THREADS /
OMP_NUM_THREADS set before NumPy is imported, ``torch.set_num_threads`` for torch); varsim also with one BLAS
thread, as ``varsim.train.train`` runs (the thread count changes float32 bits, so training fixes it at 1). The five
(varsim and the gemms at each thread count, torch) are timed in alternating blocks of steps
(``_timing.blocked_times``: other load on the machine hits all alike, and neither library's idle threads slow the
other). With ``--threads`` T > 1 two more contenders run in the same blocks: the step with its batch cut into T
shards (``loss_and_grads(shards=T)``, :mod:`varsim.nn.shards`, as ``train`` runs ``TrainConfig(shards=T)``) on a
pool of T threads at one BLAS thread each, and the same shards one after the other in one thread (the pool's
speed-up is their ratio; threads share the GIL for the step's Python and small NumPy work).
The fused path (``ModelConfig(fused=True)``, :mod:`varsim.nn.fused`:
the same model and parameters with attention's softmax, layer norm and ReLU's backward in Numba
kernels) runs in the same blocks at ``--threads`` and at one BLAS thread (and in ``--threads`` shards); a table gives
each path's step against the floor (the share of the step outside the products). The table gives the median
step time of ``--repeats`` steps, the ratios varsim / torch (<= 1.0 means varsim is as fast or faster) at
``--threads`` BLAS threads and at one, and the largest difference between the two models' logits and gradients
before training (the twin check), then whether the goals of ``TRAIN_GOAL`` and ``EVAL_GOAL``
(at N = 4096) are met.

Then: evaluation throughput of the one-block model (``Transformer.predict``) at N = ``--eval-n`` with batch 64, in
examples per second (the median of ``--eval-repeats`` evaluations; also per CPU-second, robust to other load), two
ways on ``--threads`` cores: that many worker threads of one BLAS thread each (how ``varsim evaluate`` runs by
default; the goal is judged on it) and one worker with that many BLAS threads; and the peak resident memory of the
process (``resource.getrusage``) plus the peak of NumPy allocations during evaluation (``tracemalloc``).

torch is optional (``pip install torch``, CPU wheel): without it only the varsim columns are printed.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from concurrent.futures import ThreadPoolExecutor


def _set_threads(n: int) -> None:
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(n)


def _parse():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=200, help="timed steps per configuration")
    ap.add_argument("--eval-n", type=int, default=16384, help="set size of the evaluation-throughput measurement")
    ap.add_argument("--eval-repeats", type=int, default=9, help="timed evaluations (the median is reported)")
    ap.add_argument("--quick", action="store_true", help="few repeats, small evaluation (a smoke run)")
    ap.add_argument("--profile", action="store_true", help="only profile one step of each model (cProfile)")
    return ap.parse_args()


ARGS = _parse() if __name__ == "__main__" else None
if ARGS is not None:
    _set_threads(ARGS.threads)  # before NumPy loads OpenBLAS

import numpy as np  # noqa: E402
from _timing import blocked_times  # noqa: E402

from varsim.nn.model import ModelConfig, Transformer  # noqa: E402
from varsim.nn.optim import Adam  # noqa: E402
from varsim.tasks import make_batch  # noqa: E402

CONFIGS = {
    "argmax, 1 block, D=64": dict(task="argmax", d_model=64, n_heads=4, n_blocks=1),
    "argmax, 2 blocks, D=128": dict(task="argmax", d_model=128, n_heads=4, n_blocks=2),
    "dict, 1 block, D=64, LN": dict(task="dictionary", d_model=64, n_heads=4, n_blocks=1, norm="layernorm"),
}
BATCH, SET_SIZE = 64, 16
#: the goals (issue 32): varsim / torch step time at most TRAIN_GOAL on every model; evaluation of the one-block
#: model at N = EVAL_GOAL_N at least EVAL_GOAL examples per second
TRAIN_GOAL, EVAL_GOAL, EVAL_GOAL_N = 0.5, 1000.0, 4096


# ----------------------------------------------------------------------------------------------------------------------
# The PyTorch twin: the same equations on the same parameters (see varsim/nn/model.py)


def torch_model(model: Transformer):
    import torch
    import torch.nn.functional as F

    cfg = model.config
    d, h = cfg.d_model, cfg.n_heads
    dh = d // h
    params = {k: torch.tensor(v, requires_grad=True) for k, v in model.params.items()}
    act = F.relu if cfg.activation == "relu" else (lambda z: F.gelu(z, approximate="tanh"))

    def lin(x, prefix):
        return torch.addmm(params[f"{prefix}.b"], x.reshape(-1, x.shape[-1]), params[f"{prefix}.w"]).reshape(
            *x.shape[:-1], -1
        )

    def mlp(x, prefix, depth):
        for i in range(depth):
            x = lin(x, f"{prefix}.{i}")
            if i < depth - 1:
                x = act(x)
        return x

    def ln(x, prefix):
        return F.layer_norm(x, (d,), params[f"{prefix}.gamma"], params[f"{prefix}.beta"], 1e-5)

    def attn_norm(x, prefix):
        if cfg.norm == "none":
            return x
        if cfg.norm.endswith("_per_head"):
            y = F.layer_norm(x.reshape(*x.shape[:-1], h, dh), (dh,), eps=1e-5).reshape(x.shape)
        else:
            y = F.layer_norm(x, (d,), eps=1e-5)
        if cfg.norm.startswith("layernorm"):
            y = y * params[f"{prefix}.gamma"] + params[f"{prefix}.beta"]
        return y

    def block(i, x, mask, last):
        p = f"block{i}"
        b, t, _ = x.shape
        hx = ln(x, f"{p}.ln1") if cfg.pre_ln else x
        w, bias = params[f"{p}.attn.w_qkv"], params[f"{p}.attn.b_qkv"]
        if last:
            q = (hx[:, 0] @ w[:, :d] + bias[:d]).reshape(b, h, 1, dh)
            k, v = (hx @ w[:, d:] + bias[d:]).reshape(b, t, 2, h, dh).permute(2, 0, 3, 1, 4)
            heads = F.scaled_dot_product_attention(q, k, v, attn_mask=mask[:, None, None, :]).reshape(b, d)
            xres = x[:, 0]
        else:
            q, k, v = (hx @ w + bias).reshape(b, t, 3, h, dh).permute(2, 0, 3, 1, 4)
            heads = F.scaled_dot_product_attention(q, k, v, attn_mask=mask[:, None]).transpose(1, 2).reshape(b, t, d)
            xres = x
        if cfg.norm.endswith("_per_head"):
            a = lin(attn_norm(heads, f"{p}.attn_norm"), f"{p}.attn.o")
        else:
            a = attn_norm(lin(heads, f"{p}.attn.o"), f"{p}.attn_norm")
        r = xres + a if cfg.residual else a
        return r + mlp(ln(r, f"{p}.ln2") if cfg.pre_ln else r, f"{p}.mlp", 2)

    # varsim names the output projection attn.w_o / attn.b_o; alias them for lin()
    for i in range(cfg.n_blocks):
        params[f"block{i}.attn.o.w"] = params[f"block{i}.attn.w_o"]
        params[f"block{i}.attn.o.b"] = params[f"block{i}.attn.b_o"]

    def forward(feats, keys_all, row_mask, full_mask):
        x = lin(feats, "embed.0")
        if keys_all is not None:
            x = x + params["embed.key_table"][keys_all]
        for i in range(1, cfg.item_mlp_depth):
            x = lin(act(x), f"embed.{i}")
        if cfg.task == "argmax":
            x = torch.cat([params["query"].expand(x.shape[0], 1, d), x[:, 1:]], dim=1)
        for i in range(cfg.n_blocks - 1):
            x = block(i, x, full_mask, last=False)
        z = block(cfg.n_blocks - 1, x, row_mask, last=True)
        if cfg.pre_ln:
            z = ln(z, "final_ln")
        return mlp(z, "head", cfg.predictor_depth)

    names = list(model.params)
    return forward, {k: params[k] for k in names}


def torch_inputs(model: Transformer, batch):
    import torch

    feats, keys_all, mask = model._inputs(batch)
    b, n = mask.shape
    row_mask = np.concatenate([np.zeros((b, 1), bool), mask], axis=1)  # (B, T)
    full_mask = np.repeat(row_mask[:, None, :], n + 1, axis=1)
    full_mask[:, 1:, 0] = True
    return (
        torch.from_numpy(feats),
        None if keys_all is None else torch.from_numpy(keys_all),
        torch.from_numpy(row_mask),
        torch.from_numpy(full_mask),
    )


# ----------------------------------------------------------------------------------------------------------------------


def gemm_shapes(model: Transformer, batch: dict) -> list[tuple[int, int, int]]:
    """``(M, K, N)`` of every product of the linear layers in one ``loss_and_grads`` call: ``x @ w`` forward,
    ``dout @ w.T`` and ``x.T @ dout`` backward (recorded by wrapping varsim.nn's linear functions for that call).
    The attention's own products (Q K^T and the weighted sum over 17 tokens) are left out: a few percent of the
    FLOPs at this set size."""
    import importlib
    import pkgutil
    from unittest import mock

    import varsim.nn as nn
    from varsim.nn import layers

    shapes = []
    linear_backward = layers.linear_backward

    def forward(f):
        def wrapped(x, w, *rest):
            shapes.append((x.size // w.shape[0], w.shape[0], w.shape[1]))
            return f(x, w, *rest)
        return wrapped

    def backward(dout, cache):
        x, w, _ = cache
        m = x.size // w.shape[0]
        shapes.extend([(m, w.shape[1], w.shape[0]), (w.shape[0], m, w.shape[1])])
        return linear_backward(dout, cache)

    # linear_bias_relu is not wrapped: it calls layers.linear_forward, which is
    wrappers = {"linear_forward": forward(layers.linear_forward), "linear_backward": backward}
    with contextlib.ExitStack() as stack:
        for info in pkgutil.iter_modules(nn.__path__):
            module = importlib.import_module(f"varsim.nn.{info.name}")
            for attr, wrapper in wrappers.items():
                if hasattr(module, attr):
                    stack.enter_context(mock.patch.object(module, attr, wrapper))
        model.loss_and_grads(batch)
    return shapes


def gemm_floor(shapes: list[tuple[int, int, int]]):
    """A step function doing only the products of ``shapes`` (float32, back to back): the time the step cannot go
    below with this BLAS while it does these FLOPs."""
    rng = np.random.default_rng(0)
    ops = [(rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32))
           for m, k, n in shapes]

    def gemms():
        for a, b in ops:
            a @ b
    return gemms


def bench_step(name: str, kw: dict, repeats: int, torch_ok: bool, shards: int = 1) -> dict:
    from varsim._common.blas import blas_threads

    model = Transformer(ModelConfig(dtype="float32", **kw), seed=0)
    batch = make_batch(kw["task"], BATCH, SET_SIZE, np.random.default_rng(0))
    opt = Adam(model.params, lr=1e-3)

    def varsim_step():
        _, _, grads = model.loss_and_grads(batch)
        opt.step(grads)

    fmodel = Transformer(ModelConfig(dtype="float32", fused=True, **kw), seed=0)  # the same parameters, fused path
    fopt = Adam(fmodel.params, lr=1e-3)

    def fused_step():
        _, _, grads = fmodel.loss_and_grads(batch)
        fopt.step(grads)

    shapes = gemm_shapes(model, batch)
    floor = gemm_floor(shapes)
    steps = {"varsim": varsim_step, "varsim_1": varsim_step, "gemms": floor, "gemms_1": floor,
             "fused": fused_step, "fused_1": fused_step}
    pool = ThreadPoolExecutor(shards) if shards > 1 else None
    if pool is not None:
        steps["sharded"] = lambda: opt.step(model.loss_and_grads(batch, shards=shards, pool=pool)[2])
        steps["sharded_serial"] = lambda: opt.step(model.loss_and_grads(batch, shards=shards)[2])
        steps["fused_sharded"] = lambda: fopt.step(fmodel.loss_and_grads(batch, shards=shards, pool=pool)[2])
    row = {"config": name, "params": model.n_params, "gflop": sum(2 * m * k * n for m, k, n in shapes) / 1e9}
    if torch_ok:
        import torch
        import torch.nn.functional as F

        ref = Transformer(ModelConfig(dtype="float32", **kw), seed=0)
        forward, tparams = torch_model(ref)
        inputs = torch_inputs(ref, batch)
        target = torch.from_numpy(batch["target"])
        # identity check: same logits and gradients as varsim before any update
        logits, cache = ref.forward(batch)
        tlogits = forward(*inputs)
        g = ref.backward(np.ones_like(logits), cache)
        tlogits.sum().backward()
        err = max(
            float(np.max(np.abs(tlogits.detach().numpy() - logits))),
            max(float(np.max(np.abs(tparams[k].grad.numpy() - g[k]))) for k in g),
        )
        if err > 1e-3:
            raise AssertionError(f"the torch twin differs from varsim by {err:.2e}")
        topt = torch.optim.Adam(list(tparams.values()), lr=1e-3)

        def torch_step():
            topt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(forward(*inputs), target)
            loss.backward()
            topt.step()

        steps["torch"] = torch_step
        row["max_abs_diff"] = err
    one = {k: (lambda: blas_threads(1)) for k in ("varsim_1", "gemms_1", "fused_1", "sharded", "sharded_serial",
                                                   "fused_sharded")}
    try:
        times = blocked_times(steps, repeats, contexts=one)
    finally:
        if pool is not None:
            pool.shutdown()
    med = {k: float(np.median(walls)) for k, (walls, _) in times.items()}
    row["cpu_ms"] = {k: 1e3 * float(np.median(cpus)) for k, (_, cpus) in times.items()}  # process CPU per step
    if pool is not None:
        row["sharded_ms"], row["sharded_serial_ms"] = 1e3 * med["sharded"], 1e3 * med["sharded_serial"]
        row["fused_sharded_ms"] = 1e3 * med["fused_sharded"]
    row["varsim_ms"], row["varsim_1_ms"] = 1e3 * med["varsim"], 1e3 * med["varsim_1"]
    row["fused_ms"], row["fused_1_ms"] = 1e3 * med["fused"], 1e3 * med["fused_1"]
    row["gemms_ms"], row["gemms_1_ms"] = 1e3 * med["gemms"], 1e3 * med["gemms_1"]
    if torch_ok:
        row["torch_ms"] = 1e3 * med["torch"]
        row["ratio"] = row["varsim_ms"] / row["torch_ms"]
        row["ratio_1"] = row["varsim_1_ms"] / row["torch_ms"]
    return row


def bench_eval(n: int, repeats: int, threads: int, batch_size: int = 64) -> list[dict]:
    """The one-block model's ``predict`` at set size ``n``, two ways on ``threads`` cores: ``threads`` worker threads
    with one BLAS thread each (``varsim evaluate``'s default, one worker per core) and one worker with ``threads``
    BLAS threads; the same predictions (checked). Timed one way after the other, not alternately: OpenBLAS's idle
    threads spin for a while after a multi-threaded call (about 0.1 s), and would take a core from the workers
    that follow."""
    import resource
    import statistics
    import tracemalloc

    from varsim._common.blas import blas_threads

    model = Transformer(ModelConfig(task="argmax", dtype="float32"), seed=0)
    batch = make_batch("argmax", batch_size, n, np.random.default_rng(1))
    ways = {f"{threads} workers x 1 BLAS thread": (threads, 1), f"1 worker x {threads} BLAS threads": (1, threads)}

    steps = {way: (lambda w=workers: model.predict(batch, workers=w)) for way, (workers, _) in ways.items()}
    contexts = {way: (lambda b=blas: blas_threads(b)) for way, (_, blas) in ways.items()}
    first = []
    for way, step in steps.items():  # warm-up; both give the same predictions
        with contexts[way]():
            first.append(step())
    assert all(np.array_equal(first[0], other) for other in first[1:]), "the ways disagree"
    # untraced (tracemalloc slows allocation): all of one way after a pause, then the other
    times = blocked_times(steps, repeats, block=repeats, warmup=0, contexts=contexts, pause=1.0)
    way = next(iter(ways))
    tracemalloc.start()
    with contexts[way]():
        steps[way]()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB -> MiB (Linux)
    out = []
    for way, (walls, cpus) in times.items():
        dt = statistics.median(walls)
        out.append({"way": way, "n": n, "batch": batch_size, "examples_per_s": batch_size / dt, "seconds": dt,
                    "examples_per_cpu_s": batch_size / statistics.median(cpus), "numpy_peak_mib": peak / 2**20,
                    "max_rss_mib": rss})
    return out


def profile_steps(repeats: int, top: int = 12) -> None:
    """Each model's step under cProfile at one BLAS thread: the ``top`` functions by own time, as shares."""
    import cProfile
    import pstats

    from varsim._common.blas import blas_threads

    for name, kw in CONFIGS.items():
        model = Transformer(ModelConfig(dtype="float32", **kw), seed=0)
        batch = make_batch(kw["task"], BATCH, SET_SIZE, np.random.default_rng(0))
        opt = Adam(model.params, lr=1e-3)
        prof = cProfile.Profile()
        with blas_threads(1):
            for _ in range(5):  # warm (Numba compilation, allocator)
                opt.step(model.loss_and_grads(batch)[2])
            prof.enable()
            for _ in range(repeats):
                opt.step(model.loss_and_grads(batch)[2])
            prof.disable()
        stats = pstats.Stats(prof).stats  # {(file, line, func): (calls, prim, own, cumulative, callers)}
        total = sum(v[2] for v in stats.values())
        print(f"\n{name}: {1e3 * total / repeats:.2f} ms per step profiled ({repeats} steps, 1 BLAS thread)")
        for (file, line, func), v in sorted(stats.items(), key=lambda kv: -kv[1][2])[:top]:
            where = f"{os.path.basename(file)}:{line}" if line else "builtin"
            print(f"  {100 * v[2] / total:5.1f}%  {1e3 * v[2] / repeats:7.3f} ms  {func} ({where})")


def print_outside_products(rows: list[dict], t: int, torch_ok: bool) -> None:
    """The product floor, the step and the share of the step outside the products, for the default path and the
    fused one (``ModelConfig(fused=True)``), at ``t`` BLAS threads and at one; each step's ratio to torch at ``t``
    threads; and the same from the process CPU time per step (median), which other load on the machine disturbs less
    than the wall time (at one thread it is the thread's own work; at ``t`` it includes the spinning of idle BLAS
    threads)."""
    print("\nthe step outside the products: floor = the linear layers' products alone; outside = 1 - floor / step; "
          "step / floor (issue goal <= 1.5)")
    ways = [("default", "varsim", "gemms", t), ("default", "varsim_1", "gemms_1", 1),
            ("fused", "fused", "gemms", t), ("fused", "fused_1", "gemms_1", 1)]
    print(f"{'model':24s} {'path':8s} {'threads':>7s} {'floor ms':>9s} {'step ms':>8s} {'outside':>8s} "
          f"{'step/floor':>10s}" + (f" {f'/ torch ({t})':>12s}" if torch_ok else "")
          + f" {'CPU ms: floor':>13s} {'step':>7s} {'step/floor':>10s}")
    for r in rows:
        cpu = r["cpu_ms"]
        for path, step_key, floor_key, threads in ways:
            step, floor = r[f"{step_key}_ms"], r[f"{floor_key}_ms"]
            vs = f" {step / r['torch_ms']:12.2f}" if torch_ok else ""
            print(f"{r['config']:24s} {path:8s} {threads:7d} {floor:9.3f} {step:8.3f} {1 - floor / step:8.1%} "
                  f"{step / floor:10.2f}{vs} {cpu[floor_key]:13.3f} {cpu[step_key]:7.3f} "
                  f"{cpu[step_key] / cpu[floor_key]:10.2f}")


def main() -> int:
    args = ARGS
    if args.profile:
        profile_steps(20 if args.quick else args.repeats)
        return 0
    repeats = 20 if args.quick else args.repeats
    eval_n = min(args.eval_n, 1024) if args.quick else args.eval_n
    try:
        import torch

        torch.set_num_threads(args.threads)
        torch_ok = True
        tv = torch.__version__
    except ImportError:
        torch_ok, tv = False, "not installed"
    t = args.threads
    print(f"numpy {np.__version__}, torch {tv}, threads {t}, float32, batch {BATCH}, set size {SET_SIZE}, "
          f"median of {repeats} steps in alternating blocks")
    print(f"{'model':24s} {'params':>8s} {f'varsim ms ({t})':>15s} {'varsim ms (1)':>14s} {f'torch ms ({t})':>14s} "
          f"{'ratio':>6s} {'ratio (1)':>9s} {'max|diff|':>9s}")
    rows = []
    for name, kw in CONFIGS.items():
        r = bench_step(name, kw, repeats, torch_ok, shards=t)
        rows.append(r)
        if torch_ok:
            tail = f"{r['torch_ms']:14.3f} {r['ratio']:6.2f} {r['ratio_1']:9.2f} {r['max_abs_diff']:9.1e}"
        else:
            tail = f"{'-':>14s} {'-':>6s} {'-':>9s}"
        print(f"{name:24s} {r['params']:8d} {r['varsim_ms']:15.3f} {r['varsim_1_ms']:14.3f} {tail}")
    print("\nthe gemm floor: the linear layers' products of one step alone, back to back (same blocks, same run)")
    print(f"{'model':24s} {'GFLOP':>6s} {f'gemms ms ({t})':>14s} {'gemms ms (1)':>13s} {'goal ms':>8s} "
          f"{f'GFLOP/s: gemms ({t})':>20s} {'(1)':>6s} {f'varsim ({t})':>12s} {'(1)':>6s}")
    for r in rows:
        goal = f"{TRAIN_GOAL * r['torch_ms']:8.3f}" if torch_ok else f"{'-':>8s}"
        print(f"{r['config']:24s} {r['gflop']:6.3f} {r['gemms_ms']:14.3f} {r['gemms_1_ms']:13.3f} {goal} "
              f"{r['gflop'] / r['gemms_ms'] * 1e3:20.1f} {r['gflop'] / r['gemms_1_ms'] * 1e3:6.1f} "
              f"{r['gflop'] / r['varsim_ms'] * 1e3:12.1f} {r['gflop'] / r['varsim_1_ms'] * 1e3:6.1f}")
    print_outside_products(rows, t, torch_ok)
    if t > 1:
        print(f"\nsharded step: the batch in {t} shards, 1 BLAS thread each (same blocks, same run)")
        print(f"{'model':24s} {f'{t} threads ms':>14s} {'serial ms':>10s} {'speed-up':>9s} {'vs varsim (1)':>14s}"
              + (f" {'vs torch':>9s}" if torch_ok else "") + f" {'fused ms':>9s}"
              + (f" {'vs torch':>9s}" if torch_ok else ""))
        for r in rows:
            vs_torch = f" {r['sharded_ms'] / r['torch_ms']:9.2f}" if torch_ok else ""
            fused_vs = f" {r['fused_sharded_ms'] / r['torch_ms']:9.2f}" if torch_ok else ""
            speedup = r["sharded_serial_ms"] / r["sharded_ms"]
            print(f"{r['config']:24s} {r['sharded_ms']:14.3f} {r['sharded_serial_ms']:10.3f} {speedup:9.2f} "
                  f"{r['sharded_ms'] / r['varsim_1_ms']:14.2f}{vs_torch} {r['fused_sharded_ms']:9.3f}{fused_vs}")
    if torch_ok:
        for key, how in (("ratio", f"varsim at {t} BLAS threads"),
                         ("ratio_1", "varsim at 1 BLAS thread, as train() runs")):
            met = all(r[key] <= TRAIN_GOAL for r in rows)
            print(f"goal: ratio <= {TRAIN_GOAL} on every model ({how}): {'met' if met else 'not met'}")
        for r in rows:
            for key, threads in (("gemms_ms", t), ("gemms_1_ms", 1)):
                if TRAIN_GOAL * r["torch_ms"] < r[key]:
                    print(f"  {r['config']}: the goal ({TRAIN_GOAL * r['torch_ms']:.2f} ms) is below the gemm floor at "
                          f"{threads} BLAS thread(s) ({r[key]:.2f} ms): out of reach with these FLOPs and this BLAS")
    evals = bench_eval(eval_n, 3 if args.quick else args.eval_repeats, args.threads)
    for e in evals:
        print(f"evaluation (predict), 1 block D=64, N={e['n']}, batch {e['batch']}, {e['way']}: "
              f"{e['examples_per_s']:.1f} examples/s (median {e['seconds']:.3f} s; {e['examples_per_cpu_s']:.0f} "
              "examples per CPU-second)")
    e = evals[0]
    print(f"peak NumPy allocations {e['numpy_peak_mib']:.0f} MiB ({e['way']}); process max RSS "
          f"{e['max_rss_mib']:.0f} MiB")
    if e["n"] == EVAL_GOAL_N:
        met = e["examples_per_s"] >= EVAL_GOAL
        print(f"goal: >= {EVAL_GOAL:.0f} examples/s at N = {EVAL_GOAL_N} ({e['way']}, as varsim evaluate runs): "
              f"{'met' if met else 'not met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
