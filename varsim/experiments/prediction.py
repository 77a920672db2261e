"""The pre-registered test of the long-N accuracy predictor (:mod:`varsim.train.predict`) on the remedies grid's
softmax runs (``docs/experiments/prediction_preregistration.md``, issue 34).

Three steps, each resumable, run by ``python -m varsim.experiments.prediction {train,predict,analyze}``:

- :func:`train_runs`: the grid's softmax runs of the pre-registered subset (argmax and the dictionary's binary key
  code, 4 recipes, 6 seeds), trained bitwise as the grid trained them (its specs, the worker's training step), seed
  by seed; checkpoints kept under ``DIR/<run_id>``.
- :func:`predict_runs`: per run, the identity check (accuracy at N = 16 on the grid's own test set against the
  committed value), the training-length statistics, the predictions of the measured-logit and the Gaussian-logit
  predictor at every length and readout scale of :data:`KAPPAS`, for softmax and the inference-only maps; one JSON
  per run under ``DIR/predictions``. Uses nothing measured beyond the training length.
- :func:`analyze`: kappa fitted on the development recipe, the primary metric and baselines on the held-out recipes,
  with per-seed intervals; the gains; per-cell tables (JSON and Markdown).

The trained remedies (amendment 2 of the pre-registration): ``--attentions ssmax logn entmax15 --seeds 0 1 2`` on
``train`` and ``predict`` (each run's own map with its learned parameters, :func:`varsim.train.predict.own_map`), then
``analyze-trained``, :func:`analyze_trained`: kappa frozen at the committed softmax analysis's fit, every run held
out, the primary metric per variant, and each remedy's predicted gain over softmax.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["DEV_RECIPE", "KAPPAS", "LENGTHS", "PRIMARY_LENGTH", "INFERENCE_MAPS", "TRAINED_REMEDIES",
           "LOGISTIC_FIT_LENGTHS", "subset_specs", "train_runs", "train_specs", "prediction_fields", "predict_runs",
           "explore_runs", "analyze", "analyze_trained", "render_trained", "baseline_carry", "baseline_logistic",
           "run_row", "seed_metrics", "complete_seeds", "t_summary", "fmt_t", "provenance_lines",
           "write_analysis_files"]

DEV_RECIPE = "cosine_lr1e3"
#: the readout scales kappa searched on the development runs: 2^(k/8), k = -8 .. 16
KAPPAS = tuple(2.0 ** (k / 8.0) for k in range(-8, 17))
LENGTHS = tuple(2 ** k for k in range(4, 15))
PRIMARY_LENGTH = 1024
#: the lengths the logistic baseline (b) is fitted on (pre-registered)
LOGISTIC_FIT_LENGTHS = (16, 32, 64)
ENCODINGS = ("none", "binary")  # argmax (no key encoding) and the dictionary's binary key code
SEED_KEY = 34
N_SETS, N_SIM = 2048, 1024
PREDICTION_FORMAT = "varsim.prediction.run/1"


def _inference_maps() -> dict:
    from varsim.experiments.remedies import INFERENCE_ATTENTIONS

    keep = ("logn_temperature", "adaptive_temperature", "critical", "topk1")
    return {"softmax": ("softmax", {}), **{k: (INFERENCE_ATTENTIONS[k]["attention"],
                                                INFERENCE_ATTENTIONS[k].get("params", {})) for k in keep}}


INFERENCE_MAPS = ("logn_temperature", "adaptive_temperature", "critical", "topk1")
#: the grid's trained remedies of amendment 2 (labels of its trained attentions)
TRAINED_REMEDIES = ("ssmax", "logn", "entmax15")


def subset_specs(encodings=ENCODINGS, attentions=("softmax",), seeds=None) -> list[dict]:
    """The grid's run specs of the subset, seed-major: ``attentions``, labels of the grid's trained attentions;
    ``seeds``, the seed indices kept (None: all)."""
    from varsim.experiments.remedies import remedies_settings
    from varsim.experiments.settings import job_specs

    specs = [s for s in job_specs(remedies_settings()) if s.get("attention") in attentions
             and (s.get("key_encoding") or "none") in encodings and (seeds is None or s["seed_index"] in seeds)]
    return sorted(specs, key=lambda s: (s["seed_index"], s["run_id"]))


def train_runs(outdir, encodings=ENCODINGS, attentions=("softmax",), seeds=None) -> None:
    """Train (or resume) every run of the subset into ``outdir/<run_id>``, printing one line per run."""
    train_specs(subset_specs(encodings, attentions, seeds), outdir)


def train_specs(specs, outdir, log=None) -> None:
    """Train (or resume) the runs of ``specs`` in order into ``outdir/<run_id>`` with one BLAS thread, printing one
    line per run (and appending it to the file ``log`` when given)."""
    import time

    from varsim._common.atomic import append_text
    from varsim._common.blas import limit_blas_threads
    from varsim.experiments.worker import train_spec

    limit_blas_threads(1)
    for spec in specs:
        t, c = time.perf_counter(), time.process_time()
        _, summary, _, _ = train_spec(spec, Path(outdir) / spec["run_id"])
        line = (f"{spec['run_id']} {summary['status']} wall {time.perf_counter() - t:.1f} s cpu "
                f"{time.process_time() - c:.1f} s")
        print(line, flush=True)
        if log is not None:
            append_text(log, line + "\n")


def _summary_groups(summary: dict) -> dict:
    return {(g["task"], g["recipe"], g["encoding"], g["variant"]): g for g in summary["groups"]}


def _measured(groups: dict, spec: dict, variant: str, field: str = "accuracy") -> list:
    g = groups[(spec["task"], spec["recipe"], spec.get("key_encoding"), variant)]
    i = g["seeds"].index(spec["seed_index"])
    if field == "accuracy":
        return g["accuracy"]["per_seed"][i]
    return g["ranking"][field]["per_seed"][i]


def _maps(variant: str, stats) -> dict:
    """The maps a run's record predicts: its own map (label: the grid's attention label), and for the softmax runs
    the inference-only maps the grid applied to them."""
    from varsim.variants import BASELINE

    own = {variant: (stats.attention, dict(stats.map_params))}
    return {**own, **_inference_maps()} if variant == BASELINE else own


def prediction_fields(model, config, spec: dict, seed, kappas=KAPPAS) -> dict:
    """The prediction of one trained run of ``spec``: the training-length statistics (:func:`varsim.train.predict.
    measure` on :data:`N_SETS` sets) and, per readout scale of ``kappas``, the tables of the measured-logit and the
    Gaussian-logit predictor at every length of :data:`LENGTHS` for the run's own map (and the inference-only maps
    for softmax); ``{"refused": message}`` when the predictor refuses the model. ``seed``: the measurement seed."""
    from varsim.train.predict import measure, simulate

    try:
        stats = measure(model, config, n_sets=N_SETS, seed=seed)
    except ValueError as exc:
        return {"refused": str(exc)}
    maps = _maps(spec["attention"], stats)
    rec = {"best_head": stats.best_head, "tau": stats.tau, "sigma": stats.sigma, "lapse": stats.lapse,
           "accuracy_n0": stats.accuracy_n0, "lengths": list(LENGTHS), "kappas": list(kappas),
           "map": {"attention": stats.attention, "params": stats.map_params}}
    for kind, gaussian in (("measured", False), ("gaussian", True)):
        sim = simulate(stats, LENGTHS, maps=maps, n_sim=N_SIM, gaussian=gaussian, seed=seed)
        rec[kind] = [sim.table(k) for k in kappas]
    return rec


def predict_runs(ckptdir, summary_path, encodings=ENCODINGS, attentions=("softmax",), seeds=None) -> None:
    """One prediction record per trained run of the subset under ``ckptdir/predictions`` (skips those written)."""
    import time

    from varsim._common.atomic import atomic_write_json
    from varsim._common.jsonio import read_json
    from varsim._common.provenance import provenance
    from varsim.train import evaluate, load_checkpoint

    groups = _summary_groups(read_json(summary_path))
    out = Path(ckptdir) / "predictions"
    out.mkdir(parents=True, exist_ok=True)
    for spec in subset_specs(encodings, attentions, seeds):
        path = out / f"{spec['run_id']}.json"
        run_dir = Path(ckptdir) / spec["run_id"]
        if path.exists() or not run_dir.exists():
            continue
        t, c = time.perf_counter(), time.process_time()
        try:
            model, config, state = load_checkpoint(run_dir)
        except ValueError:  # still training: no checkpoint yet
            continue
        if state["step"] != config.steps:
            continue
        ev = spec["eval"]
        acc16 = evaluate(model, [16], ev["examples"], ev["batch_size"], ev["seed"], progress=False)["accuracy"][0]
        committed16 = _measured(groups, spec, spec["attention"])[0]
        seed = np.random.SeedSequence([SEED_KEY, spec["seed_index"]])
        rec = {"format": PREDICTION_FORMAT, "run_id": spec["run_id"], "task": spec["task"], "recipe": spec["recipe"],
               "encoding": spec.get("key_encoding"), "seed_index": spec["seed_index"],
               "identity": {"accuracy_16": acc16, "committed_16": committed16, "equal": acc16 == committed16}}
        rec.update(prediction_fields(model, config, spec, seed))
        rec["timing"] = {"wall_s": time.perf_counter() - t, "cpu_s": time.process_time() - c}
        rec["provenance"] = provenance()
        atomic_write_json(path, rec)
        print(spec["run_id"], "cpu %.1f s" % rec["timing"]["cpu_s"], rec.get("refused", ""), flush=True)


def explore_runs(ckptdir, outdir, encodings=ENCODINGS) -> None:
    """The exploratory readout (``Simulation.table(readout="any")``, not pre-registered): the measured-logit
    predictor again, every example read from its weight on the correct item, written as prediction records under
    ``outdir/predictions`` (the Gaussian baseline's tables copied from ``ckptdir``'s records) so that
    :func:`analyze` reads them unchanged."""
    import time

    from varsim._common.atomic import atomic_write_json
    from varsim._common.jsonio import read_json
    from varsim.train import load_checkpoint
    from varsim.train.predict import measure, simulate

    maps = _inference_maps()
    out = Path(outdir) / "predictions"
    out.mkdir(parents=True, exist_ok=True)
    for spec in subset_specs(encodings):
        src, path = Path(ckptdir) / "predictions" / f"{spec['run_id']}.json", out / f"{spec['run_id']}.json"
        if path.exists() or not src.exists():
            continue
        rec = read_json(src)
        if "refused" in rec:
            continue
        c = time.process_time()
        model, config, _ = load_checkpoint(Path(ckptdir) / spec["run_id"])
        seed = np.random.SeedSequence([SEED_KEY, spec["seed_index"]])
        stats = measure(model, config, n_sets=N_SETS, seed=seed)
        sim = simulate(stats, LENGTHS, maps=maps, n_sim=N_SIM, seed=seed)
        rec["measured"] = [sim.table(k, readout="any") for k in KAPPAS]
        rec["readout"] = "any"
        atomic_write_json(path, rec)
        print(spec["run_id"], "cpu %.1f s" % (time.process_time() - c), flush=True)


# ----------------------------------------------------------------------------------------------------------------------
# Baselines


def baseline_carry(acc: list, lengths) -> list:
    """(a) the accuracy at the first (longest training) length carried to every length."""
    return [acc[0]] * len(lengths)


def baseline_logistic(acc: list, lengths, fit_lengths, chance: float, examples: int = 512) -> list:
    """(b) least squares of logit((acc - chance) / (1 - chance)) on ln N over ``fit_lengths``, extrapolated."""
    lengths = list(lengths)
    idx = [lengths.index(n) for n in fit_lengths]
    eps = 1.0 / (2 * examples)
    frac = np.clip((np.asarray(acc, float)[idx] - chance) / (1.0 - chance), eps, 1.0 - eps)
    y = np.log(frac / (1.0 - frac))
    beta, alpha = np.polyfit(np.log(np.asarray(fit_lengths, float)), y, 1)
    z = alpha + beta * np.log(np.asarray(lengths, float))
    return (chance + (1.0 - chance) / (1.0 + np.exp(-z))).tolist()


# ----------------------------------------------------------------------------------------------------------------------
# Analysis


def t_summary(values) -> dict:
    from varsim.experiments.stats import t_interval

    v = np.asarray(values, float)
    if v.size < 2:
        return {"mean": float(v.mean()), "ci_low": None, "ci_high": None, "n": int(v.size)}
    r = t_interval(v)
    return {"mean": r["mean"], "ci_low": r["ci_low"], "ci_high": r["ci_high"], "n": int(v.size)}


def _records(ckptdir, attentions=("softmax",)) -> tuple[list, list, list]:
    """The prediction records of the subset: the run ids excluded (identity check failed, or refused), then the
    kept ``(spec, record)`` pairs of the development recipe and of the held-out ones."""
    from varsim._common.jsonio import read_json

    recs = []
    for spec in subset_specs(attentions=attentions):
        p = Path(ckptdir) / "predictions" / f"{spec['run_id']}.json"
        if p.exists():
            recs.append((spec, read_json(p)))
    bad = [r["run_id"] for _, r in recs if not r["identity"]["equal"] or "refused" in r]
    recs = [(s, r) for s, r in recs if r["identity"]["equal"] and "refused" not in r]
    dev = [(s, r) for s, r in recs if s["recipe"] == DEV_RECIPE]
    test = [(s, r) for s, r in recs if s["recipe"] != DEV_RECIPE]
    return bad, dev, test


def _fit_kappa(dev: list, groups: dict, li: int) -> tuple[dict, dict]:
    """The kappa index per simulation kind (measured, gaussian) that minimises the development MAE at the primary
    length, and those fields of the result (kappa, its MAE, the MAE at kappa = 1)."""
    def mae_at(kind, k):
        return float(np.mean([abs(r[kind][k]["softmax"]["accuracy"][li] - _measured(groups, s, "softmax")[li])
                              for s, r in dev]))

    kappa_idx = {kind: int(np.argmin([mae_at(kind, k) for k in range(len(KAPPAS))]))
                 for kind in ("measured", "gaussian")}
    k1 = KAPPAS.index(1.0)
    fields = {"kappa": {kind: KAPPAS[i] for kind, i in kappa_idx.items()},
              "dev_mae_1024": {kind: mae_at(kind, i) for kind, i in kappa_idx.items()},
              "dev_mae_1024_kappa1": {kind: mae_at(kind, k1) for kind in kappa_idx}}
    return kappa_idx, fields


def complete_seeds(rows: list) -> tuple[list, list, list]:
    """The cells (task, recipe, key encoding) of ``rows``, the seeds present in every cell, and the rows of those
    seeds."""
    def cell(s):
        return s["task"], s["recipe"], s.get("key_encoding")

    cells = sorted({cell(s) for s, _ in rows}, key=str)
    seeds = sorted(set.intersection(*[{s["seed_index"] for s, _ in rows if cell(s) == c} for c in cells])
                   ) if cells else []
    return cells, seeds, [(s, r) for s, r in rows if s["seed_index"] in seeds]


def run_row(s: dict, r: dict, groups: dict, kappa_idx: dict, lengths: list, li: int, maps=INFERENCE_MAPS) -> dict:
    """One run of the analysis: its measured accuracy, every method's prediction, the gains of the inference
    ``maps`` and the ranking/dispersion split at the primary length, measured and predicted (of the run's own
    attention, ``s["attention"]``)."""
    from varsim.tasks import chance_level

    v = s["attention"]
    meas = _measured(groups, s, v)
    measured, gaussian = r["measured"][kappa_idx["measured"]], r["gaussian"][kappa_idx["gaussian"]]
    preds = {
        "predictor": measured[v]["accuracy"],
        "predictor_kappa1": r["measured"][list(r.get("kappas", KAPPAS)).index(1.0)][v]["accuracy"],
        "carry": baseline_carry(meas, lengths),
        "logistic": baseline_logistic(meas, lengths, LOGISTIC_FIT_LENGTHS, chance_level(s["task"])),
        "gaussian": gaussian[v]["accuracy"],
    }
    gains = {}
    for m in maps:
        mm = _measured(groups, s, m)
        gains[m] = {"measured": mm[li] - meas[li],
                    "predicted": measured[m]["accuracy"][li] - preds["predictor"][li],
                    "gaussian": gaussian[m]["accuracy"][li] - preds["gaussian"][li],
                    "measured_acc": mm[li],
                    "predicted_acc": measured[m]["accuracy"][li]}
    return {
        "run_id": s["run_id"], "task": s["task"], "recipe": s["recipe"], "encoding": s.get("key_encoding"),
        "seed": s["seed_index"], "tau": r["tau"], "sigma": r["sigma"], "lapse": r["lapse"],
        "best_head": r["best_head"],
        "measured": meas, "predictions": preds, "gains": gains,
        **{f: {"measured": _measured(groups, s, v, f)[li], "predicted": measured[v][f][li]}
           for f in ("ranking_correct", "dispersion_error")},
    }


def seed_metrics(per_run: list, seeds: list, lengths: list, li: int, maps=INFERENCE_MAPS) -> dict:
    """The per-seed means of every error over the runs, as t intervals over the seeds: each method's MAE per N and
    at the primary length, the gains' MAE (of the inference ``maps``; none: no gain fields), the ranking and
    dispersion MAE, and the paired differences."""
    def per_seed(fn):
        return [float(np.mean([fn(x) for x in per_run if x["seed"] == sd])) for sd in seeds]

    methods = ("predictor", "carry", "logistic", "gaussian", "predictor_kappa1")
    out = {"mae": {}}
    for n in lengths[2:]:
        j = lengths.index(n)
        out["mae"][n] = {m: t_summary(per_seed(lambda x, m=m, j=j: abs(x["predictions"][m][j] - x["measured"][j])))
                         for m in methods}
    prim = {m: per_seed(lambda x, m=m: abs(x["predictions"][m][li] - x["measured"][li])) for m in methods}
    out["primary"] = {m: t_summary(v) for m, v in prim.items()}
    out["primary_vs"] = {b: t_summary(np.subtract(prim["predictor"], prim[b]))
                         for b in ("carry", "logistic", "gaussian")}
    if maps:
        gm = {kind: per_seed(lambda x, kind=kind: np.mean([abs(x["gains"][m][kind] - x["gains"][m]["measured"])
                                                          for m in maps]))
              for kind in ("predicted", "gaussian")}
        gm["zero"] = per_seed(lambda x: np.mean([abs(x["gains"][m]["measured"]) for m in maps]))
        out["gain_mae"] = {k: t_summary(v) for k, v in gm.items()}
        out["gain_vs"] = {b: t_summary(np.subtract(gm["predicted"], gm[b])) for b in ("zero", "gaussian")}
    for f, key in (("ranking_correct", "ranking_mae"), ("dispersion_error", "dispersion_mae")):
        out[key] = t_summary(per_seed(lambda x, f=f: abs(x[f]["predicted"] - x[f]["measured"])))
    return out


def _read_summary(summary_path) -> tuple[dict, list, int]:
    """The remedies summary's groups, its lengths (refused unless the predictor's) and the primary length's index."""
    from varsim._common.jsonio import read_json

    summary = read_json(summary_path)
    lengths = list(summary["lengths"])
    if lengths != list(LENGTHS):
        raise ValueError(f"summary: lengths {lengths} differ from the predictor's {list(LENGTHS)}")
    return _summary_groups(summary), lengths, lengths.index(PRIMARY_LENGTH)


def analyze(ckptdir, summary_path, *, dev_only: bool = False) -> dict:
    """kappa on the development runs, then (unless ``dev_only``) the held-out test: module docstring."""
    groups, lengths, li = _read_summary(summary_path)
    bad, dev, test = _records(ckptdir)
    kappa_idx, kappa_fields = _fit_kappa(dev, groups, li)
    cells, seeds, rows = complete_seeds(dev if dev_only else test)
    per_run = [run_row(s, r, groups, kappa_idx, lengths, li) for s, r in rows]
    return {"excluded": bad, "n_dev": len(dev), "n_test": len(test), **kappa_fields,
            "seeds": seeds, "cells": [list(c) for c in cells], "per_run": per_run,
            **seed_metrics(per_run, seeds, lengths, li)}


def analyze_trained(ckptdir, summary_path, softmax_analysis_path) -> dict:
    """The trained remedies' held-out test (amendment 2): kappa frozen at the fit recorded in the softmax analysis
    ``softmax_analysis_path`` (what :func:`analyze` wrote), every run held out; per variant of
    :data:`TRAINED_REMEDIES` its complete seeds, per-run rows and metrics (:func:`seed_metrics`, without inference
    maps), and the predicted gain over softmax at the primary length where the softmax run of the same cell and seed
    index is in that analysis; then the metrics of all variants pooled (the seeds complete in every variant)."""
    from varsim._common.jsonio import read_json

    groups, lengths, li = _read_summary(summary_path)
    soft = read_json(softmax_analysis_path, what="softmax prediction analysis")
    kappa = dict(soft["kappa"])
    kappa_idx = {kind: KAPPAS.index(k) for kind, k in kappa.items()}
    soft_runs = {(x["task"], x["recipe"], x["encoding"], x["seed"]): x for x in soft["per_run"]}
    bad, dev, test = _records(ckptdir, TRAINED_REMEDIES)
    variants, pooled = {}, []
    for v in TRAINED_REMEDIES:
        cells, seeds, rows = complete_seeds([(s, r) for s, r in dev + test if s["attention"] == v])
        per_run = [run_row(s, r, groups, kappa_idx, lengths, li, maps=()) for s, r in rows]
        for (s, r), x in zip(rows, per_run):
            x["map_params"] = r["map"]["params"]
            sm = soft_runs.get((s["task"], s["recipe"], s.get("key_encoding"), s["seed_index"]))
            if sm is not None:
                x["gain_over_softmax"] = {
                    "measured": x["measured"][li] - _measured(groups, s, "softmax")[li],
                    "predicted": x["predictions"]["predictor"][li] - sm["predictions"]["predictor"][li]}
        res = {"seeds": seeds, "cells": [list(c) for c in cells], "per_run": per_run}
        if per_run:
            res.update(seed_metrics(per_run, seeds, lengths, li, maps=()))
            with_gain = [x for x in per_run if "gain_over_softmax" in x]
            gseeds = sorted({x["seed"] for x in with_gain})
            if with_gain:
                def per_seed(fn, with_gain=with_gain):
                    return [float(np.mean([fn(x["gain_over_softmax"]) for x in with_gain if x["seed"] == sd]))
                            for sd in gseeds]
                pred = per_seed(lambda g: abs(g["predicted"] - g["measured"]))
                zero = per_seed(lambda g: abs(g["measured"]))
                res["gain_over_softmax"] = {"runs": len(with_gain), "predicted": t_summary(pred),
                                            "zero": t_summary(zero),
                                            "predicted_vs_zero": t_summary(np.subtract(pred, zero))}
        variants[v] = res
        pooled.append((set(seeds), per_run))
    seeds = sorted(set.intersection(*[sd for sd, _ in pooled])) if pooled else []
    rows = [x for _, per_run in pooled for x in per_run if x["seed"] in seeds]
    return {"excluded": bad, "kappa": kappa, "kappa_source": "frozen: the softmax analysis's development fit",
            "n_runs": len(dev) + len(test), "variants": variants,
            "pooled": {"seeds": seeds, "runs": len(rows), **(seed_metrics(rows, seeds, lengths, li, maps=()) if rows
                                                             else {})}}


def render_trained(res: dict) -> str:
    """Markdown tables of :func:`analyze_trained`'s result."""
    li = list(LENGTHS).index(PRIMARY_LENGTH)
    methods = ("predictor", "carry", "logistic", "gaussian", "predictor_kappa1")
    lines = [*provenance_lines(res),
             f"kappa frozen at {res['kappa']['measured']:g} (Gaussian {res['kappa']['gaussian']:g}); "
             f"{res['n_runs']} runs kept, excluded {res['excluded'] or 'none'}.", "",
             "| variant | seeds | " + " | ".join(methods) + " | predictor - carry | predictor - logistic | "
             "predictor - Gaussian |", "|---" * (2 + len(methods) + 3) + "|"]
    for v, d in [*res["variants"].items(), ("pooled", res["pooled"])]:
        if "primary" not in d:
            lines.append(f"| {v} | none complete |" + " |" * (len(methods) + 3))
            continue
        lines.append(f"| {v} | {d['seeds']} | " + " | ".join(fmt_t(d["primary"][m]) for m in methods) + " | "
                     + " | ".join(fmt_t(d["primary_vs"][b]) for b in ("carry", "logistic", "gaussian")) + " |")
    lines += ["", "| variant | ranking-correct MAE | dispersion-error MAE | gain over softmax: predicted MAE | "
              "zero-gain MAE | predicted - zero |", "|---" * 6 + "|"]
    for v, d in res["variants"].items():
        if "primary" not in d:
            continue
        g = d.get("gain_over_softmax")
        gain = (f"{fmt_t(g['predicted'])} | {fmt_t(g['zero'])} | {fmt_t(g['predicted_vs_zero'])}" if g
                else "| |")
        lines.append(f"| {v} | {fmt_t(d['ranking_mae'])} | {fmt_t(d['dispersion_mae'])} | {gain} |")
    lines += ["", "| N | " + " | ".join(f"{v} predictor / logistic / Gaussian" for v in res["variants"]) + " |",
              "|---" * (1 + len(res["variants"])) + "|"]
    for n in [n for n in LENGTHS[2:]]:
        cells = []
        for d in res["variants"].values():
            row = d.get("mae", {}).get(n) or d.get("mae", {}).get(str(n))
            cells.append(" / ".join(f"{row[m]['mean']:.3f}" for m in ("predictor", "logistic", "gaussian"))
                         if row else "")
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    lines += ["", "| variant | cell | seed | map parameters (best head) | tau | sigma | measured | predictor | carry | "
              "logistic | Gaussian | rank ok meas/pred | disp. err meas/pred | gain over softmax meas/pred |",
              "|---" * 14 + "|"]
    for v, d in res["variants"].items():
        for x in d["per_run"]:
            p, g = x["predictions"], x.get("gain_over_softmax")
            mp = ", ".join(f"{k} {val:.3g}" if isinstance(val, float) else f"{k} {val}"
                           for k, val in x["map_params"].items())
            lines.append(
                f"| {v} | {x['task']} {x['encoding'] or ''} {x['recipe']} | {x['seed']} | "
                f"{mp} | {x['tau']:.3f} | {x['sigma']:.3g} | {x['measured'][li]:.3f} | "
                f"{p['predictor'][li]:.3f} | {p['carry'][li]:.3f} | {p['logistic'][li]:.3f} | "
                f"{p['gaussian'][li]:.3f} | "
                f"{x['ranking_correct']['measured']:.3f} / {x['ranking_correct']['predicted']:.3f} | "
                f"{x['dispersion_error']['measured']:.3f} / {x['dispersion_error']['predicted']:.3f} | "
                + (f"{g['measured']:+.3f} / {g['predicted']:+.3f} |" if g else " |"))
    return "\n".join(lines) + "\n"


def write_analysis_files(data_dir, stem: str, res: dict, render) -> dict:
    """``res`` with the provenance (commit, time) written as ``data_dir/<stem>.json`` and its Markdown
    (``render(res)``) as ``<stem>.md``, both atomically; returns it."""
    from varsim._common.atomic import atomic_write_json, atomic_write_text
    from varsim._common.provenance import provenance

    res = {**res, "provenance": provenance()}
    atomic_write_json(Path(data_dir) / f"{stem}.json", res)
    atomic_write_text(Path(data_dir) / f"{stem}.md", render(res))
    return res


def provenance_lines(res: dict) -> list:
    """The line naming the commit and time that made an analysis (none for one written before they were recorded)."""
    prov = res.get("provenance")
    if not prov:
        return []
    dirty = " (with uncommitted changes)" if prov.get("git_dirty") else ""
    return [f"Made at commit {prov.get('git_commit')}{dirty}, {prov.get('created_utc')}.", ""]


def fmt_t(d: dict) -> str:
    if d["ci_low"] is None:
        return f"{d['mean']:.3f}"
    return f"{d['mean']:.3f} [{d['ci_low']:.3f}, {d['ci_high']:.3f}]"


def render(res: dict) -> str:
    """Markdown tables of :func:`analyze`'s result."""
    lines = [*provenance_lines(res),
             f"kappa (fitted on {DEV_RECIPE}): measured {res['kappa']['measured']:.3f}, Gaussian "
             f"{res['kappa']['gaussian']:.3f}; development MAE at N = 1024: measured "
             f"{res['dev_mae_1024']['measured']:.3f} (kappa = 1: {res['dev_mae_1024_kappa1']['measured']:.3f}), "
             f"Gaussian {res['dev_mae_1024']['gaussian']:.3f}. Seeds {res['seeds']}, cells {len(res['cells'])}, "
             f"excluded {res['excluded'] or 'none'}.", "",
             "| method | MAE at N = 1024 [95% t over seeds] | predictor - method |", "|---|---|---|"]
    for m, d in res["primary"].items():
        vs = fmt_t(res["primary_vs"][m]) if m in res["primary_vs"] else ""
        lines.append(f"| {m} | {fmt_t(d)} | {vs} |")
    lines += ["", "| N | " + " | ".join(res["primary"]) + " |", "|---" * (1 + len(res["primary"])) + "|"]
    for n, row in res["mae"].items():
        lines.append(f"| {n} | " + " | ".join(f"{row[m]['mean']:.3f}" for m in res["primary"]) + " |")
    lines += ["", "| gains: method | MAE of the gain at N = 1024 | predicted - method |", "|---|---|---|"]
    for k, d in res["gain_mae"].items():
        vs = fmt_t(res["gain_vs"][k]) if k in res["gain_vs"] else ""
        lines.append(f"| {k} | {fmt_t(d)} | {vs} |")
    lines += ["", f"ranking-correct fraction at 1024, MAE: {fmt_t(res['ranking_mae'])}; dispersion error, MAE: "
              f"{fmt_t(res['dispersion_mae'])}", ""]
    lines += ["| cell | seed | tau | sigma | measured | predictor | carry | logistic | Gaussian | rank ok meas/pred | "
              "disp. err meas/pred |", "|---" * 11 + "|"]
    li = list(LENGTHS).index(PRIMARY_LENGTH)
    for x in res["per_run"]:
        cell = f"{x['task']} {x['encoding'] or ''} {x['recipe']}"
        p = x["predictions"]
        lines.append(f"| {cell} | {x['seed']} | {x['tau']:.3f} | {x['sigma']:.3f} | {x['measured'][li]:.3f} | "
                     f"{p['predictor'][li]:.3f} | {p['carry'][li]:.3f} | {p['logistic'][li]:.3f} | "
                     f"{p['gaussian'][li]:.3f} | {x['ranking_correct']['measured']:.3f} / "
                     f"{x['ranking_correct']['predicted']:.3f} | {x['dispersion_error']['measured']:.3f} / "
                     f"{x['dispersion_error']['predicted']:.3f} |")
    lines += ["", "| cell | seed | " + " | ".join(f"{m} meas / pred / Gauss" for m in INFERENCE_MAPS) + " |",
              "|---" * (2 + len(INFERENCE_MAPS)) + "|"]
    for x in res["per_run"]:
        cell = f"{x['task']} {x['encoding'] or ''} {x['recipe']}"
        lines.append(f"| {cell} | {x['seed']} | " + " | ".join(
            f"{x['gains'][m]['measured']:+.3f} / {x['gains'][m]['predicted']:+.3f} / {x['gains'][m]['gaussian']:+.3f}"
            for m in INFERENCE_MAPS) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    import argparse

    from varsim._common.atomic import atomic_write_json, atomic_write_text
    from varsim._common.provenance import provenance

    ap = argparse.ArgumentParser(prog="python -m varsim.experiments.prediction", description=__doc__.split("\n")[0])
    ap.add_argument("step", choices=("train", "predict", "explore", "analyze", "analyze-trained"))
    ap.add_argument("dir", help="checkpoint directory (one folder per run; predictions under DIR/predictions)")
    ap.add_argument("--summary", default=str(Path(__file__).resolve().parents[1] / "figures" / "data" / "remedies"
                                             / "summary.json"), help="the committed remedies summary")
    ap.add_argument("--dev-only", action="store_true", help="analyze: the development runs only")
    ap.add_argument("--explore-dir", help="explore: where the exploratory readout's records go")
    ap.add_argument("--attentions", nargs="+", default=["softmax"],
                    help="train, predict: the grid's trained attentions (default softmax; amendment 2: "
                         + " ".join(TRAINED_REMEDIES) + ")")
    ap.add_argument("--seeds", nargs="+", type=int, help="train, predict: the seed indices (default all)")
    ap.add_argument("--softmax-analysis", default=str(Path(__file__).resolve().parents[1] / "figures" / "data"
                                                      / "prediction" / "analysis_test.json"),
                    help="analyze-trained: the committed softmax analysis (its kappa, its softmax predictions)")
    args = ap.parse_args(argv)
    if args.step == "train":
        train_runs(args.dir, attentions=tuple(args.attentions), seeds=args.seeds)
    elif args.step == "predict":
        predict_runs(args.dir, args.summary, attentions=tuple(args.attentions), seeds=args.seeds)
    elif args.step == "explore":
        if not args.explore_dir:
            ap.error("explore needs --explore-dir")
        explore_runs(args.dir, args.explore_dir)
    elif args.step == "analyze-trained":
        res = {**analyze_trained(args.dir, args.summary, args.softmax_analysis), "provenance": provenance()}
        atomic_write_json(Path(args.dir) / "analysis_trained.json", res)
        atomic_write_text(Path(args.dir) / "analysis_trained.md", render_trained(res))
        print(render_trained(res))
    else:
        res = {**analyze(args.dir, args.summary, dev_only=args.dev_only), "provenance": provenance()}
        tag = "dev" if args.dev_only else "test"
        atomic_write_json(Path(args.dir) / f"analysis_{tag}.json", res)
        atomic_write_text(Path(args.dir) / f"analysis_{tag}.md", render(res))
        print(render(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
