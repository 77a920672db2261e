"""``varsim reproduce``: the paper's length-generalization experiment, resumable, locally or on a Dask cluster.

Examples::

    varsim reproduce results/reproduce                      # full grid, one worker process per core
    varsim reproduce results/quick --quick                  # tiny end-to-end run (under a minute)
    varsim reproduce results/reproduce --scheduler tcp://10.0.0.5:8786
    varsim reproduce results/reproduce --aggregate-only     # rebuild summary.json and table.md
    varsim reproduce results/remedies --preset remedies     # the attention-variant grid (REMEDIES.md 4)
    varsim reproduce results/decoder --preset decoder       # the causal decoder with positions (issue 20)
    varsim reproduce results/remedies --recheck RUN_ID      # recompute a finished run: same numbers as its record?

Re-running the same command resumes: finished runs are kept, unreadable ones are reported and redone. One process
at a time per results directory: a second one is refused while the first runs.
Exit status: 0 when every run finished, 1 when some runs failed (re-run to retry them) or, with --aggregate-only,
when runs are missing or corrupt (unless --allow-incomplete) or, with --recheck, when a recomputed run is not
bitwise equal to its record (within tolerance is accepted only when the record was made on another CPU, BLAS kernel,
NumPy or Numba: varsim.experiments.recheck), 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import sys

from varsim.cli._options import int_option, seed_option, threads_option

#: More seeds per variant than any reproduction needs (the paper's uses 6); a larger count is a typo.
MAX_SEEDS = 1000
#: the names of varsim.experiments.presets.PRESETS (listed here so that building the parser imports no grid;
#: tests/test_decoder_grid.py checks that they agree)
PRESET_NAMES = ["remedies", "decoder", "decoder_constant"]


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("outdir", help="results directory (settings.json, runs/, summary.json, table.md)")
    parser.add_argument("--quick", action="store_true",
                        help="tiny models, 2 seeds, few steps, N up to 256, residual architecture only")
    parser.add_argument("--seeds", type=int_option(1, MAX_SEEDS), default=None,
                        help=f"seeds per variant (default 6; 2 with --quick; at most {MAX_SEEDS})")
    parser.add_argument("--root-seed", type=seed_option(), default=0, help="root of every seed of the grid (default 0)")
    parser.add_argument("--tasks", nargs="+", metavar="TASK", help="subset of: argmax dictionary")
    parser.add_argument("--architectures", nargs="+", metavar="ARCH",
                        help="subset of: residual no_residual (--preset decoder: decoder_none decoder_rope "
                             "decoder_alibi, and decoder_learned)")
    parser.add_argument("--norms", nargs="+", metavar="NORM",
                        help="normalizations after attention (default: none layernorm standardize "
                             "layernorm_per_head; standardize_per_head is also available)")
    parser.add_argument("--preset", choices=PRESET_NAMES, default=None,
                        help="another grid: remedies = trained attention variants x inference-only maps x recipes "
                             "(varsim.experiments.remedies); decoder = a causal decoder with positions none/rope/"
                             "alibi x softmax/ssmax/logn x norm none/layernorm, cosine decay "
                             "(varsim.experiments.decoder_grid); decoder_constant = the same with a constant "
                             "learning rate")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--scheduler", metavar="ADDRESS",
                       help="run on a Dask cluster at ADDRESS (needs dask[distributed]; workers must import varsim)")
    where.add_argument("--workers", type=threads_option(), default=None,
                       help="local worker processes (default: one per core)")
    parser.add_argument("--checkpoints", action=argparse.BooleanOptionalAction, default=None,
                        help="keep training checkpoints in OUTDIR/checkpoints so interrupted runs resume "
                             "mid-training (default: on locally, off with --scheduler)")
    only = parser.add_mutually_exclusive_group()
    only.add_argument("--aggregate-only", action="store_true",
                      help="only rebuild summary.json and table.md from the finished runs")
    parser.add_argument("--allow-incomplete", action="store_true",
                        help="with --aggregate-only: exit 0 even when runs are missing or corrupt")
    only.add_argument("--recheck", nargs="+", metavar="RUN_ID",
                        help="only recompute these finished runs with the current code (in a temporary directory) and "
                             "say whether their numbers are bitwise equal to the records', else the largest "
                             "deviation of each field and whether it lies within tolerance; exit status 1 unless "
                             "bitwise equal, or within tolerance on a different CPU/BLAS kernel")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="one line per finished run on stderr (default: on; the lines also go to "
                             "OUTDIR/progress.log either way)")


def _names(values):
    # accept layernorm-per-head as well as layernorm_per_head, and no-residual as well as no_residual
    return None if values is None else [v.replace("-", "_") for v in values]


def _aggregate_only(outdir: str, *, allow_incomplete: bool) -> int:
    from varsim.experiments import aggregate

    summary = aggregate(outdir)
    runs = summary["runs"]
    print(f"aggregated {runs['found']} of {runs['expected']} runs into {outdir}/summary.json and table.md")
    for c in runs["corrupt"]:
        print(f"varsim reproduce: run {c['run_id']} has a corrupt record ({c['reason']}); it is left out here and "
              f"will be redone by `varsim reproduce {outdir}`", file=sys.stderr)
    if runs["missing"]:
        shown = ", ".join(runs["missing"][:5]) + (", ..." if len(runs["missing"]) > 5 else "")
        print(f"varsim reproduce: {len(runs['missing'])} run(s) not finished ({shown}); `varsim reproduce {outdir}` "
              f"runs them", file=sys.stderr)
    incomplete = bool(runs["corrupt"] or runs["missing"])
    if incomplete and not allow_incomplete:
        print("varsim reproduce: the results are incomplete (exit status 1; --allow-incomplete accepts them)",
              file=sys.stderr)
        return 1
    return 0


def run_recheck(outdir: str, run_ids: list, *, as_json: bool) -> int:
    from pathlib import Path

    from varsim.experiments.recheck import recheck_runs

    if not Path(outdir).is_dir():
        raise ValueError(f"outdir {outdir!r} is not a directory")

    def say(r):
        if not as_json:
            print(_recheck_text(r), flush=True)

    results = recheck_runs(outdir, run_ids, on_result=say)
    if as_json:
        print(json.dumps(results, indent=2))
    return 0 if all(r["ok"] for r in results) else 1


def _recheck_text(r: dict) -> str:
    """The verdict on one rechecked run: a headline, one line per field that differs, and the environments."""
    made, now = (r["made_at"] or "unknown")[:7], (r["recomputed_at"] or "unknown")[:7]
    env = r["environment"]
    where = ("on the same CPU, BLAS kernel, NumPy and Numba: bitwise equality applies" if env["same"] else
             "on a different environment (" + "; ".join(f"{k}: {a} -> {b}" for k, (a, b) in
                                                      env["differences"].items()) + "): the tolerance applies")
    verdict = r["verdict"].upper() if not r["ok"] else r["verdict"]
    if r["verdict"] != "bitwise-equal" and env["same"]:
        verdict += " (a defect: the same environment must give the same bits)"
    lines = [f"{r['run_id']}: {verdict} (record made at {made}, recomputed at {now} in {r['seconds']:.0f} s, "
             f"{where})"]
    for f in r["fields"]:
        judged = "within" if f["within"] else "BEYOND"
        tol = "exact" if f["kind"] == "exact" else f"tolerance {f['tolerance']:.3g}"
        lines.append(f"  {f['field']} ({f['kind']}): {f['differ']} of {f['values']} differ, max |d| "
                     f"{f['max_abs']:.3g}, max relative {f['max_rel']:.3g}, {tol}: {judged}")
    for k in r["removed"]:
        lines.append(f"  {k}: in the record, not in the recomputation: BEYOND")
    if r["added"]:
        lines.append(f"  not in the record (newer fields, not judged): {', '.join(r['added'])}")
    needs = r.get("needs")
    if needs and needs["env"] and not r["identical"]:
        sets = " ".join(f"{k}={v}" for k, v in sorted(needs["env"].items()))
        lines.append(f"  the record was made with {needs['library']} {needs['kernel']}: on another kernel training "
                     f"rounds differently and a run can move beyond the tolerance; to reproduce it bitwise, rerun "
                     f"with {sets} (`varsim recheck DIR {r['run_id']} --kernel record`)")
    return "\n".join(lines)


def run(args) -> int:
    from varsim.experiments import run_reproduction

    if args.allow_incomplete and not args.aggregate_only:
        raise ValueError("--allow-incomplete applies to --aggregate-only only (a run or --recheck reports failures "
                         "by its exit status whatever it is given)")
    if args.aggregate_only:
        return _aggregate_only(args.outdir, allow_incomplete=args.allow_incomplete)
    if args.recheck:
        return run_recheck(args.outdir, args.recheck, as_json=args.json)
    report = run_reproduction(
        args.outdir,
        quick=args.quick,
        seeds=args.seeds,
        root_seed=args.root_seed,
        tasks=args.tasks,
        architectures=_names(args.architectures),
        norms=_names(args.norms),
        preset=args.preset,
        scheduler=args.scheduler,
        workers=args.workers,
        checkpoints=args.checkpoints,
        progress=args.progress,
    )
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        not_learned = [x for x in report["learned"] if x["learned"] < x["seeds"]]
        print(f"{report['runs']} runs: {len(report['skipped'])} already finished, {len(report['completed'])} run now, "
              f"{len(report['corrupt'])} redone (corrupt), {len(report['failed'])} failed; "
              f"{report['elapsed_s']:.1f} s")
        for x in not_learned:
            print(f"did not learn: {x['task']} {x['architecture']} {x['norm']} "
                  + (f"{x['variant']} depth {x['depth']} " if "variant" in x else "")
                  + f"({x['seeds'] - x['learned']} of {x['seeds']} seeds below the in-distribution threshold)")
        print(f"table: {report['table']}")
    for f in report["failed"]:
        print(f"varsim reproduce: {f['run_id']} failed: {f['error']}")
    return 1 if report["failed"] else 0
