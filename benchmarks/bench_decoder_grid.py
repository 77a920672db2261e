"""CPU time of one full-size run of each kind of the decoder grid, and the grid's estimated wall time on 2 cores.

    python benchmarks/bench_decoder_grid.py [RUN_ID_PART ...]

Each argument picks the first seed-0 run of ``varsim reproduce --preset decoder`` whose run id contains it (default:
one run per trained attention, each with another position and norm). The run is the worker's (training, test
evaluation, probes, ranking decomposition), timed with ``time.process_time`` (CPU, not wall time, so a loaded
machine does not inflate it). The estimate multiplies each attention's CPU time by its number of runs and divides by
2 cores.
"""

import json
import sys
import time

from varsim.experiments.decoder_grid import decoder_settings
from varsim.experiments.settings import job_specs
from varsim.experiments.worker import run_job

DEFAULT = ["decoder_rope-none-softmax-", "decoder_alibi-layernorm-ssmax-", "decoder_none-layernorm-logn-"]


def main(parts):
    settings = decoder_settings()
    specs = job_specs(settings)
    out = {}
    for part in parts:
        spec = next(s for s in specs if part in s["run_id"] and s["seed_index"] == 0)
        c0 = time.process_time()
        rec = run_job((spec, None))
        out[spec["run_id"]] = {"cpu_s": time.process_time() - c0, "timing": rec["timing"],
                               "id_accuracy": rec["in_distribution"]["accuracy"],
                               "accuracy": dict(zip(rec["eval"]["lengths"], rec["eval"]["accuracy"]))}
        print(json.dumps({spec["run_id"]: out[spec["run_id"]]}), flush=True)
    per_att = {}
    for run_id, r in out.items():
        per_att.setdefault(next(s["attention"] for s in specs if s["run_id"] == run_id), []).append(r["cpu_s"])
    mean = {a: sum(v) / len(v) for a, v in per_att.items()}
    mean.setdefault("softmax_replicate", mean.get("softmax"))
    n = {a: sum(1 for s in specs if s["attention"] == a) for a in settings.attentions}
    if all(mean.get(a) for a in n):
        total = sum(mean[a] * n[a] for a in n)
        print(json.dumps({"runs": n, "cpu_s_per_run": mean, "total_cpu_s": total, "wall_min_2_cores": total / 120}))
    return out


if __name__ == "__main__":
    main(sys.argv[1:] or DEFAULT)
