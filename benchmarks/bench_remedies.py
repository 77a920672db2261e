"""CPU time of one full-size run of each kind of the remedies grid, and the grid's estimated wall time on 2 cores.

    python benchmarks/bench_remedies.py [KIND ...]

Kinds: ``select-<attention>-d<depth>`` (an lr selection run: training + validation) and ``main-<attention>-d<depth>``
(a main run: training, test evaluation, probes, and for softmax the inference-only maps). CPU time
(``time.process_time``) is measured, not wall time, so a loaded machine does not inflate it; the grid's wall time is
estimated as total CPU / 2 cores.
"""

import json
import sys
import time

from varsim.experiments.remedies import remedies_settings
from varsim.experiments.settings import cell_key, cells, job_specs, selection_specs
from varsim.experiments.worker import run_job


def main(kinds):
    settings = remedies_settings()
    sel = {cell_key(c): settings.lr_grid[1] for c in cells(settings)}
    out = {}
    for kind in kinds:
        what, att, depth = kind.split("-")
        pool = selection_specs(settings) if what == "select" else job_specs(settings, sel)
        spec = next(s for s in pool if f"-none-{att}-{depth}-" in s["run_id"] and s["seed_index"] == 0)
        c0 = time.process_time()
        rec = run_job((spec, None))
        out[kind] = {"cpu_s": time.process_time() - c0, "timing": rec["timing"]}
        print(json.dumps({kind: out[kind]}), flush=True)
    return out


if __name__ == "__main__":
    main(sys.argv[1:] or ["select-softmax-d1", "main-softmax-d1", "select-softmax-d2", "main-softmax-d2",
                          "main-entmax15-d2"])
