"""The timings the testing guide states: the example test file, the standard battery in NumPy, torch and JAX.

    nice python benchmarks/bench_testing_timings.py          # torch and JAX rows when they are installed

Writes the table to ``docs/site/examples/testing_timings.md`` (included by the docs page "Test your attention").

Each row runs twice in one process (imports done first): the first run pays for cold caches (Numba loading its
cache, JAX compiling), the second does not. CPU seconds (``time.process_time``, all threads) and wall seconds; the
machine's load average is printed with them. JAX runs the battery eagerly (every
operation compiled for every new shape) and with ``jax.jit`` (one compilation per case).
"""

from __future__ import annotations

import math
import os
import sys
import time
from pathlib import Path

from varsim._common.atomic import atomic_write_text

ROOT = Path(__file__).resolve().parents[1]


ROWS = []


def _timed(label, fn):
    """The first run (imports done, caches cold: Numba loads its cache, JAX compiles) and a second one."""
    for run in ("first", "second"):
        wall, cpu = time.perf_counter(), time.process_time()
        fn()
        ROWS.append(f"| {label}, {run} run | {time.process_time() - cpu:.2f} | {time.perf_counter() - wall:.2f} |")
        print(ROWS[-1], flush=True)


def _example():
    sys.path.insert(0, str(ROOT / "tests"))
    from kit_checks import EXAMPLE_TESTS, load_example

    mod = load_example()
    return lambda: [getattr(mod, name)() for name in EXAMPLE_TESTS]


def main() -> None:
    from varsim.testing import adapt, assert_matches_reference
    from varsim.testing.mutants import kernel

    load = os.getloadavg()[0]
    _timed("docs example file, its three tests", _example())
    ref = kernel("reference")
    numpy_fn = adapt(lambda q, K, V, tau=1.0, mask=None: ref(q, K, V, tau=tau, mask=mask), layout="bhld")
    _timed("standard battery (16 cases), NumPy", lambda: assert_matches_reference(numpy_fn))
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        def sdpa(q, K, V, tau=1.0, mask=None):
            return torch.nn.functional.scaled_dot_product_attention(q, K, V, attn_mask=mask,
                                                                    scale=tau / math.sqrt(q.shape[-1]))
        for dtype in ("float64", "bfloat16"):
            attn = adapt(sdpa, array="torch", dtype=dtype, layout="bhld")
            _timed(f"standard battery, torch SDPA (CPU) {dtype}", lambda attn=attn: assert_matches_reference(attn))
    try:
        import jax
    except ImportError:
        jax = None
    if jax is not None:
        jnp = jax.numpy

        def jax_attention(q, K, V, tau=1.0, mask=None):
            s = tau * jnp.einsum("bhld,bhnd->bhln", q, K) / math.sqrt(q.shape[-1])
            s = s if mask is None else jnp.where(mask, s, -jnp.inf)
            w = jax.nn.softmax(s, axis=-1)
            return jnp.einsum("bhln,bhnd->bhld", w, V), w

        for label, fn in (("eager", jax_attention), ("jax.jit", jax.jit(jax_attention))):
            attn = adapt(fn, array=jnp, layout="bhld", accepts=("tau", "mask"))
            _timed(f"standard battery, JAX {label}", lambda attn=attn: assert_matches_reference(attn))
    text = ("| what | CPU s | wall s |\n|---|---|---|\n" + "\n".join(ROWS) + f"\n\nLoad average {load:.1f} at "
            f"the start, {os.getloadavg()[0]:.1f} at the end, on {os.cpu_count()} CPUs (wall times are inflated "
            f"by the load).\n")
    print(text)
    atomic_write_text(ROOT / "docs" / "site" / "examples" / "testing_timings.md", text)

if __name__ == "__main__":
    main()
