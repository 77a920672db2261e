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
from varsim.experiments.records import RUN_FORMAT, SELECT_FORMAT

__all__ = ["run_job", "train_spec"]


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


def train_spec(spec: dict, workdir: Path):
    """Train (or resume) the run of ``spec``: ``(config, summary, model, state)``."""
    from varsim.train import TrainConfig, load_checkpoint, train

    config = TrainConfig.from_dict(spec["train_config"])
    summary = train(config, workdir, resume=True, progress=False)
    try:
        model, _, state = load_checkpoint(workdir)
    except ValueError:
        if summary["status"] == "completed":
            raise
        # Diverged before its first checkpoint: evaluate the initial model, recorded as a variant that did not
        # learn (``learned`` is False whenever training did not complete) rather than as a failed run.
        from varsim.nn.architectures import build_model

        model, state = build_model(config.model, seed=config.seed), {"step": 0}
    return config, summary, model, state


def _train_record(summary: dict, state: dict) -> dict:
    rec = {k: summary[k] for k in ("status", "steps_done", "steps", "final_loss", "train_accuracy")}
    if summary["status"] != "completed":
        rec["message"] = summary["message"]
    rec["evaluated_step"] = int(state["step"])
    return rec


def _select(spec: dict, workdir: Path) -> dict:
    """A learning-rate selection run: train, then accuracy on the in-distribution validation sets only."""
    from varsim._common.blas import limit_blas_threads
    from varsim._common.provenance import provenance
    from varsim.train import evaluate

    blas = limit_blas_threads(1)
    t_start, cpu_start = time.perf_counter(), time.process_time()
    config, summary, model, state = train_spec(spec, workdir)
    v = spec["validation"]
    val = evaluate(model, v["lengths"], v["examples"], v["batch_size"], v["seed"], progress=False)
    ok = summary["status"] == "completed"
    return jsonable({
        "format": SELECT_FORMAT, "run_id": spec["run_id"], "spec": spec, "train": _train_record(summary, state),
        "validation": {"lengths": val["lengths"], "examples": v["examples"], "correct": val["correct"],
                       "accuracy": val["accuracy"],
                       # a diverged run scores 0: it must not be selected on the accuracy of its early checkpoint
                       "score": (sum(val["accuracy"]) / len(val["accuracy"])) if ok else 0.0},
        "timing": {"total_s": time.perf_counter() - t_start, "cpu_s": time.process_time() - cpu_start},
        "provenance": {**provenance(), "blas_single_thread": blas},
    })


def _evaluate_all(model, config, spec: dict) -> dict:
    """Test accuracy, in-distribution accuracy and probes of ``model`` on the spec's sets."""
    from varsim.train import evaluate
    from varsim.train.probes import probe_length_shift

    t_start = time.perf_counter()
    ev_spec = spec["eval"]
    ev = evaluate(model, ev_spec["lengths"], ev_spec["examples"], ev_spec["batch_size"], ev_spec["seed"],
                  progress=False)
    id_spec = spec["in_distribution"]
    idv = evaluate(model, [id_spec["length"]], id_spec["examples"], ev_spec["batch_size"], id_spec["seed"],
                   progress=False)
    id_correct = int(idv["correct"][0])
    id_acc = id_correct / id_spec["examples"]
    id_lo, id_hi = idv["ci_low"][0], idv["ci_high"][0]  # evaluate() gives the Wilson interval of each count
    long = None
    if "long" in ev_spec:  # longer sets, fewer examples: a record of its own (its own example count)
        lg = ev_spec["long"]
        out = evaluate(model, lg["lengths"], lg["examples"], ev_spec["batch_size"], ev_spec["seed"], progress=False)
        long = {"lengths": out["lengths"], "examples": lg["examples"], "correct": out["correct"],
                "accuracy": out["accuracy"], "ci_low": out["ci_low"], "ci_high": out["ci_high"]}
        ranking_long = out["ranking"]
    t_eval = time.perf_counter()

    pr = spec["probe"]
    probe = probe_length_shift(model, config.task, lengths=pr["lengths"], n_sets=pr["sets"], seed=pr["seed"],
                        hist_lengths=pr["hist_lengths"], max_items=pr["max_items"], task_kwargs=config.task_kwargs())
    return {
        "in_distribution": {
            "length": id_spec["length"], "examples": id_spec["examples"], "correct": id_correct,
            "accuracy": id_acc, "ci_low": id_lo, "ci_high": id_hi,
        },
        "eval": {
            "lengths": ev["lengths"], "examples": ev_spec["examples"], "correct": ev["correct"],
            "accuracy": ev["accuracy"], "ci_low": ev["ci_low"], "ci_high": ev["ci_high"],
        },
        "probes": probe,
        "ranking": ev["ranking"],
        **({} if long is None else {"eval_long": long, "ranking_long": ranking_long}),
        "eval_s": t_eval - t_start,
    }


def _run(spec: dict, workdir: Path) -> dict:
    from varsim._common.blas import limit_blas_threads
    from varsim._common.provenance import provenance

    if spec.get("kind") == "select":
        return _select(spec, workdir)
    blas = limit_blas_threads(1)  # the same rounding in every executor (see varsim._common.blas)
    t_start = time.perf_counter()
    cpu_start = time.process_time()
    config, summary, model, state = train_spec(spec, workdir)
    t_train = time.perf_counter()
    res = _evaluate_all(model, config, spec)
    t_eval = t_train + res.pop("eval_s")
    t_probe = time.perf_counter()
    completed = summary["status"] == "completed"
    id_spec = spec["in_distribution"]
    res["in_distribution"]["learned"] = bool(completed and res["in_distribution"]["accuracy"] >= id_spec["threshold"])
    res["in_distribution"]["threshold"] = id_spec["threshold"]
    extra = {}
    if spec.get("inference"):  # inference-only maps on the same weights, the same test, validation and probe sets
        t_inf = time.perf_counter()
        extra["inference"] = {}
        for item in spec["inference"]:
            other = _evaluate_all(model.with_attention(item["attention"], item["params"]), config, spec)
            other.pop("eval_s")
            other["in_distribution"]["learned"] = bool(
                completed and other["in_distribution"]["accuracy"] >= id_spec["threshold"])
            extra["inference"][item["label"]] = other
        extra_timing = {"inference_s": time.perf_counter() - t_inf}
    else:
        extra_timing = {}
    return jsonable({
        "format": RUN_FORMAT,
        "run_id": spec["run_id"],
        "spec": spec,
        "train": _train_record(summary, state),
        "in_distribution": res["in_distribution"],
        "eval": res["eval"],
        "probes": res["probes"],
        # ranking vs dispersion on the test sets (varsim.train.ranking); a key of its own so that the fields above
        # keep their numbers (tests/golden_outputs.py fingerprints them)
        "ranking": res["ranking"],
        **{k: res[k] for k in ("eval_long", "ranking_long") if k in res},
        **extra,
        "timing": {
            "train_s": t_train - t_start, "eval_s": t_eval - t_train, "probe_s": t_probe - t_eval,
            "total_s": time.perf_counter() - t_start, "cpu_s": time.process_time() - cpu_start, **extra_timing,
            "train_wall_time_s": summary["wall_time_s"],
        },
        "provenance": {**provenance(), "blas_single_thread": blas},
    })
