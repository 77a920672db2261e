"""``varsim recheck``: train runs of a grid again and compare them with what was recorded, from a clean clone.

Examples::

    varsim recheck remedies argmax-residual-none-ssmax-d1-cosine_lr1e3-s0      # a run of a committed grid
    varsim recheck remedies argmax-residual-none-ssmax-d1-cosine_lr1e3-s0 --kernel record   # on its BLAS kernel
    varsim recheck results/remedies RUN_ID                                     # a run of your results directory

GRID is a committed grid (``remedies``, ``decoder``, ``decoder_constant``: its settings and per-seed accuracies ship
with the package) or a ``varsim reproduce`` results directory (its run records; the same as ``varsim reproduce DIR
--recheck RUN_ID``). A committed run gets one of two verdicts, and the kernel decides which is asked:

- **bitwise**, on the BLAS kernel the grid was made with (``--kernel record`` reruns under it, OpenBLAS only, by its
  ``OPENBLAS_CORETYPE`` and ``OPENBLAS_L2_SIZE``): every accuracy, per variant and length, identical or not;
- **statistical**, on any other kernel (``--kernel NAME``, or whatever this machine selects): training rounds
  differently and single runs move, so the rerun holds when its largest per-length difference from the committed run
  lies within the spread the second-kernel arm measured for single runs (``varsim/figures/data/kernel_check/``) and
  every committed comparison that rests on it keeps its verdict (``varsim.experiments.rerun_verdict``;
  ``docs/experiments/reproducibility.md``).

Exit status (committed grids): 0 when every verdict asked held (each report line names which verdict it is), 1 when
a bitwise verdict failed (the same kernel gave other numbers: a defect), 3 when a statistical verdict failed and no
bitwise one did, 2 on bad input. A results directory: 0 or 1 as ``varsim reproduce --recheck``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

#: set in the child process that ``--kernel`` starts: the kernel OpenBLAS must have chosen there
_EXPECT = "VARSIM_RECHECK_KERNEL"


def register(parser) -> None:
    parser.add_argument("grid", help="a committed grid (remedies, decoder, decoder_constant) or a results directory")
    parser.add_argument("run_ids", nargs="+", metavar="RUN_ID", help="run ids of the grid (as in its runs/ or table)")
    parser.add_argument("--kernel", metavar="NAME", default=None,
                        help="rerun under this OpenBLAS kernel: 'record' (the one the grid was made with: the bitwise "
                             "verdict) or a name such as Haswell or SkylakeX (another kernel: the statistical "
                             "verdict; default: the kernel this machine selects)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def _committed_names() -> tuple:
    from varsim.experiments.committed import COMMITTED_GRIDS

    return tuple(COMMITTED_GRIDS)


def _check_grid(grid: str) -> str:
    """``"committed"`` or ``"directory"`` (ValueError naming ``grid`` otherwise)."""
    if grid in _committed_names():
        return "committed"
    path = Path(grid)
    if path.is_dir():
        if not (path / "runs").is_dir() or not any((path / "runs").glob("*.json")):
            raise ValueError(f"grid: {grid!r} holds no run records (no {grid}/runs/*.json); a committed grid's name "
                             f"({', '.join(_committed_names())}) rechecks its runs from the committed numbers")
        return "directory"
    raise ValueError(f"grid: {grid!r} is neither a committed grid ({', '.join(_committed_names())}) nor a results "
                     "directory")


def _kernel_env(args, kind: str) -> dict:
    """The environment that selects ``--kernel`` (ValueError naming ``--kernel`` for an unknown name)."""
    from varsim._common.provenance import OPENBLAS_KERNELS, kernel_selection

    if args.kernel == "record":
        if kind == "committed":
            from varsim.experiments.committed import committed_summary

            prov = committed_summary(args.grid).get("provenance")
        else:
            from varsim.experiments.recheck import record_provenance

            prov = record_provenance(args.grid, args.run_ids[0])
        sel = kernel_selection(prov)
        if not sel["env"]:
            raise ValueError(f"--kernel record: the records of {args.grid!r} name no OpenBLAS kernel "
                             f"(library {sel['library']!r})")
        return sel["env"]
    names = {k.lower(): k for k in OPENBLAS_KERNELS}
    if args.kernel.lower() not in names:
        raise ValueError(f"--kernel must be 'record' or an OpenBLAS kernel ({', '.join(OPENBLAS_KERNELS)}), got "
                         f"{args.kernel!r}")
    return {"OPENBLAS_CORETYPE": names[args.kernel.lower()]}


def _in_child(args, env: dict) -> int:
    """Run this command again in a process whose OpenBLAS loads with ``env`` (it reads it only at load time)."""
    argv = [sys.executable, "-m", "varsim", "recheck", args.grid, *args.run_ids] + (["--json"] if args.json else [])
    child = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    child.update(env)
    child[_EXPECT] = env["OPENBLAS_CORETYPE"]
    print(f"varsim recheck: rerunning with {' '.join(f'{k}={v}' for k, v in sorted(env.items()))}", file=sys.stderr,
          flush=True)
    return subprocess.run(argv, env=child, check=False).returncode


def _check_expected_kernel() -> None:
    from varsim._common.provenance import compute_environment, kernel_selection

    want = os.environ.get(_EXPECT)
    if want is None:
        return
    got = kernel_selection({"compute": compute_environment()})["kernel"]
    if (got or "").lower() != want.lower():
        raise ValueError(f"--kernel: OpenBLAS did not take {want} on this CPU (it chose {got}); this CPU cannot run "
                         "that kernel")


def _committed_text(r: dict) -> str:
    made, here, cmp = r["made_with"], r["here"], r["compare"]
    head = r["verdict"] if r["ok"] else r["verdict"].upper()
    worst = max(((v, i, d) for v, ds in cmp["per_variant"].items() for i, d in enumerate(ds)), key=lambda x: x[2])
    n_values = sum(len(ds) for ds in cmp["per_variant"].values())
    differ = sum(d > 0 for ds in cmp["per_variant"].values() for d in ds)
    lines = [f"{r['run_id']} ({r['grid']}): {r['mode']} verdict: {head}: {differ} of {n_values} accuracies (variant "
             f"x length) differ, by at most {cmp['max']} test example(s)" + (
                 f" ({worst[0]} at N = {cmp['lengths'][worst[1]]})" if cmp["max"] else "") + f"; {r['seconds']:.0f} s"]
    if r["mode"] == "bitwise":
        lines.append(f"  on the BLAS kernel the grid was made with ({made['kernel']}): "
                     + ("bitwise equal" if r["ok"] else "a defect: the same kernel must give the same numbers"))
        return "\n".join(lines)
    st, sp = r["statistical"], r["statistical"]["spread"]
    where = f"slice {sp['slice']}" if sp["slice"] else "all slices; the arm did not rerun this cell"
    lines.append(f"  made with {made['library']} {made['kernel']}, rerun here with {here['library']} {here['kernel']}: "
                 "single runs move on another kernel, so the verdict is statistical")
    lines.append(f"  spread: largest difference {st['largest']} example(s) against at most {sp['examples']} measured "
                 f"by the second-kernel arm ({sp['kernels'][0]} vs {sp['kernels'][1]}, {sp['runs']} reruns, {where}): "
                 + ("within" if st["within_spread"] else "BEYOND"))
    for c in st["conclusions"]:
        a, b = c["committed"], c["rerun"]
        lines.append(f"  {c['variant']} ({c['role']}): committed {a['mean_diff']:+.3f} {a['verdict']}, with this "
                     f"rerun {b['mean_diff']:+.3f} {b['verdict']}: " + ("holds" if c["holds"] else "CHANGED"))
    if r["advice"]:
        lines.append(f"  to ask the bitwise verdict: `varsim recheck {r['grid']} {r['run_id']} --kernel record` "
                     f"(sets {r['advice']})")
    return "\n".join(lines)


def _exit_status(results: list[dict]) -> int:
    """0 every verdict held, 1 a bitwise verdict failed, 3 a statistical one failed (module docstring)."""
    if any(r["mode"] == "bitwise" and not r["ok"] for r in results):
        return 1
    return 3 if any(not r["ok"] for r in results) else 0


def run(args) -> int:
    kind = _check_grid(args.grid)
    if args.kernel is not None and os.environ.get(_EXPECT) is None:
        return _in_child(args, _kernel_env(args, kind))
    _check_expected_kernel()
    if kind == "directory":
        from varsim.cli.reproduce import run_recheck

        return run_recheck(args.grid, args.run_ids, as_json=args.json)
    from varsim.experiments.committed import committed_settings, recheck_committed, run_spec

    settings = committed_settings(args.grid)
    for rid in args.run_ids:  # every id checked before any training
        run_spec(settings, rid)
    results = []
    for rid in args.run_ids:
        results.append(recheck_committed(args.grid, rid))
        if not args.json:
            print(_committed_text(results[-1]), flush=True)
    if args.json:
        print(json.dumps(results, indent=2))
    return _exit_status(results)
