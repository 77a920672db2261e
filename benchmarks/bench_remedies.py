"""Where the remedies grid's time goes: per kind of run (task, key encoding, softmax with its inference maps or
another trained variant), the CPU seconds of training, test evaluation, probes and inference maps, read from the
``timing`` of a results directory's run records; and the grid's total CPU and wall time.

    python benchmarks/bench_remedies.py RESULTS_DIR

CPU time is what the records measured (``time.process_time`` per run); the wall time is the span from the first
run's start to the last record's write, so it includes any other load the machine had.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path


def main(outdir: str) -> None:
    rows = defaultdict(lambda: defaultdict(float))
    counts = defaultdict(int)
    first_start, last_end = None, None
    for path in sorted((Path(outdir) / "runs").glob("*.json")):
        rec = json.loads(path.read_text())
        spec, t = rec["spec"], rec["timing"]
        kind = (spec["task"], spec.get("key_encoding") or "-", "softmax + maps" if spec.get("inference") else "other")
        counts[kind] += 1
        wall_train = t["train_s"]
        for key in ("train_s", "eval_s", "probe_s", "inference_s", "cpu_s", "total_s"):
            rows[kind][key] += t.get(key, 0.0)
        rows[kind]["train_wall"] += wall_train
        end = path.stat().st_mtime
        start = end - t["total_s"]
        first_start = start if first_start is None else min(first_start, start)
        last_end = end if last_end is None else max(last_end, end)
    total = defaultdict(float)
    print("task        keys       runs              n   CPU s   train s   eval s  probe s  maps s  (wall s per part)")
    for kind in sorted(rows):
        r = rows[kind]
        print(f"{kind[0]:11s} {kind[1]:10s} {kind[2]:15s} {counts[kind]:4d} {r['cpu_s']:7.0f} {r['train_s']:9.0f} "
              f"{r['eval_s']:8.0f} {r['probe_s']:8.0f} {r['inference_s']:7.0f}")
        for k, v in r.items():
            total[k] += v
    n = sum(counts.values())
    print(f"total: {n} runs, CPU {total['cpu_s']:.0f} s ({total['cpu_s'] / 2 / 60:.1f} min on 2 cores); per part of "
          f"the runs' wall time: training {total['train_s']:.0f} s, test evaluation {total['eval_s']:.0f} s, probes "
          f"{total['probe_s']:.0f} s, inference maps and controls (evaluation and probes) {total['inference_s']:.0f} s")
    if first_start is not None:
        print(f"grid wall time (first run's start to last record): {(last_end - first_start) / 60:.1f} min")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
