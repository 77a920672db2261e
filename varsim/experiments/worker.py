"""One run of the reproduction, as a worker executes it: train, evaluate, probe, return the record.

Each run is a pure function of its spec (``varsim.experiments.settings.job_specs``), so its record does not depend
on the executor (local processes or Dask), the number of workers or the order of completion; only ``timing`` and
``provenance`` do.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from varsim._common.jsonio import jsonable
from varsim.experiments.records import RUN_FORMAT

__all__ = ["run_job"]


def run_job(job) -> dict:
    """Train, evaluate and probe one run; return its record (the caller writes it).

    ``job`` is ``(spec, workdir)``: ``spec`` from :func:`job_specs`; ``workdir`` the run's checkpoint directory
    (training resumes from it if it holds a checkpoint) or None for a temporary one.
    """
    spec, workdir = job
    if workdir is None:
        with tempfile.TemporaryDirectory(prefix="varsim-repro-") as tmp:
            return _run(spec, Path(tmp))
    return _run(spec, Path(workdir))


def _run(spec: dict, workdir: Path) -> dict:
    from varsim._common.blas import limit_blas_threads
    from varsim._common.provenance import provenance
    from varsim.experiments.probes import probe_model
    from varsim.train import TrainConfig, evaluate, load_checkpoint, train

    blas = limit_blas_threads(1)  # the same rounding in every executor (see varsim._common.blas)
    t_start = time.perf_counter()
    cpu_start = time.process_time()
    config = TrainConfig.from_dict(spec["train_config"])
    summary = train(config, workdir, resume=True, progress=False)
    t_train = time.perf_counter()
    try:
        model, _, state = load_checkpoint(workdir)
    except ValueError:
        if summary["status"] == "completed":
            raise
        # Diverged before its first checkpoint: evaluate the initial model, recorded as a variant that did not
        # learn (``learned`` is False whenever training did not complete) rather than as a failed run.
        from varsim.nn.model import Transformer

        model, state = Transformer(config.model, seed=config.seed), {"step": 0}

    ev_spec = spec["eval"]
    ev = evaluate(model, ev_spec["lengths"], ev_spec["examples"], ev_spec["batch_size"], ev_spec["seed"],
                  progress=False)
    id_spec = spec["in_distribution"]
    idv = evaluate(model, [id_spec["length"]], id_spec["examples"], ev_spec["batch_size"], id_spec["seed"],
                   progress=False)
    id_correct = int(idv["correct"][0])
    id_acc = id_correct / id_spec["examples"]
    id_lo, id_hi = idv["ci_low"][0], idv["ci_high"][0]  # evaluate() gives the Wilson interval of each count
    t_eval = time.perf_counter()

    pr = spec["probe"]
    probe = probe_model(model, config.task, lengths=pr["lengths"], n_sets=pr["sets"], seed=pr["seed"],
                        hist_lengths=pr["hist_lengths"], max_items=pr["max_items"], task_kwargs=config.task_kwargs())
    t_probe = time.perf_counter()

    train_rec = {k: summary[k] for k in ("status", "steps_done", "steps", "final_loss", "train_accuracy")}
    if summary["status"] != "completed":
        train_rec["message"] = summary["message"]
    train_rec["evaluated_step"] = int(state["step"])
    return jsonable({
        "format": RUN_FORMAT,
        "run_id": spec["run_id"],
        "spec": spec,
        "train": train_rec,
        "in_distribution": {
            "length": id_spec["length"], "examples": id_spec["examples"], "correct": id_correct,
            "accuracy": id_acc, "ci_low": id_lo, "ci_high": id_hi,
            "learned": bool(summary["status"] == "completed" and id_acc >= id_spec["threshold"]),
            "threshold": id_spec["threshold"],
        },
        "eval": {
            "lengths": ev["lengths"], "examples": ev_spec["examples"], "correct": ev["correct"],
            "accuracy": ev["accuracy"], "ci_low": ev["ci_low"], "ci_high": ev["ci_high"],
        },
        "probes": probe,
        "timing": {
            "train_s": t_train - t_start, "eval_s": t_eval - t_train, "probe_s": t_probe - t_eval,
            "total_s": t_probe - t_start, "cpu_s": time.process_time() - cpu_start,
            "train_wall_time_s": summary["wall_time_s"],
        },
        "provenance": {**provenance(), "blas_single_thread": blas},
    })
