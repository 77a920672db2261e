"""The blind test of the long-N accuracy predictor (issue 46), run as registered in
``docs/experiments/prediction_blind_registration.md`` (committed before any of its runs existed).

Runs (:func:`blind_specs`): the remedies grid's one-block softmax runs, argmax and the dictionary's binary key code,
built by the grid's own settings (:func:`blind_settings`: the remedies settings with 9 seeds, the same root seed, and
the new recipe of :data:`BLIND_RECIPES` added to the grid's recipe table, so that its TrainConfig is made by the
settings like every other run's): part ``new_seeds``, the held-out recipes at seed indices 6-8 (18 runs); part
``new_cell``, recipe ``cosine_lr2e3`` at seed indices 0-5 (12 runs). They are trained, predicted and evaluated in
the order of :data:`ROUNDS` (whole seeds, fixed before any run), so a run stopped early leaves whole seeds.

Four steps, each resumable, ``python -m varsim.experiments.prediction_blind STEP``:

- ``train CKPT``: train (or resume) the runs into ``CKPT/<run_id>`` (:func:`varsim.experiments.prediction.
  train_specs`, the worker's training step).
- ``predict CKPT``: per trained run, its accuracy at N = 16 on the grid's own test set (the registered exclusion
  reads it) and the predictions (:func:`varsim.experiments.prediction.prediction_fields`, readout scales
  :data:`BLIND_KAPPAS`); one record per run under ``DATA/predictions``. Nothing beyond N = 16 is evaluated.
- ``evaluate CKPT``: only for a run whose prediction record is committed in git and unchanged since
  (:func:`committed_version`), the accuracy at every length of the grid's test sets, of softmax and of the four
  inference-only maps, and softmax's ranking/dispersion split; one record per run under ``DATA/evaluations``, naming
  the commit of the prediction it follows.
- ``analyze``: the registered analysis (:func:`analyze_blind`) from the committed records into
  ``DATA/analysis_blind.json`` and ``.md``.

Every record carries the run's spec (config and seeds), the provenance (versions, CPU, BLAS kernel, commit, time)
and its timing; every write is atomic; each step appends one line per run to ``CKPT/progress.log``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

__all__ = ["BLIND_RECIPES", "HELD_OUT_RECIPES", "PARTS", "ROUNDS", "BLIND_KAPPAS", "KAPPA", "DATA_DIR",
           "blind_settings", "blind_specs", "part_of", "committed_version", "predict_blind", "evaluate_blind",
           "analyze_blind", "render_blind", "main"]

#: the new cell's recipe, added to the grid's recipe table (``varsim.experiments.remedies.RECIPES``)
BLIND_RECIPES = {"cosine_lr2e3": {"schedule": "cosine", "lr": 2e-3}}
HELD_OUT_RECIPES = ("cosine_lr3e3", "constant_lr1e3", "constant_lr3e3")
#: part -> (its recipes, its seed indices)
PARTS = {"new_seeds": (HELD_OUT_RECIPES, (6, 7, 8)), "new_cell": (tuple(BLIND_RECIPES), (0, 1, 2, 3, 4, 5))}
GRID_SEEDS = 9
#: the run order, whole seeds: (part, seed index); fixed before any run, so a stop leaves complete seeds
ROUNDS = (("new_seeds", 6), ("new_cell", 0), ("new_cell", 1), ("new_seeds", 7), ("new_cell", 2), ("new_cell", 3),
          ("new_seeds", 8), ("new_cell", 4), ("new_cell", 5))
#: the registered readout scales: 0.5 (the first test's development fit, the primary) and 1
KAPPA = 0.5
BLIND_KAPPAS = (0.5, 1.0)
MIN_ACCURACY_16 = 0.9
ALPHA = 0.05
#: the full predictor (kappa 0.5) against these, per part (Holm over all of them)
COMPARED = ("ranking_only", "carry", "logistic", "gaussian")
METHODS = ("predictor", "predictor_kappa1", "ranking_only", "carry", "logistic", "gaussian")
DATA_DIR = Path(__file__).resolve().parents[1] / "figures" / "data" / "prediction_blind"
PREDICTION_FORMAT = "varsim.prediction.blind_prediction/1"
EVALUATION_FORMAT = "varsim.prediction.blind_evaluation/1"
ANALYSIS_FORMAT = "varsim.prediction.blind_analysis/1"


def blind_settings(*, quick: bool = False):
    """The remedies grid's settings with 9 seeds and the recipes of :data:`BLIND_RECIPES` added (``quick``: the
    grid's smoke-test sizes, for tests)."""
    from varsim.experiments.remedies import RECIPES, remedies_settings

    return remedies_settings(quick=quick, seeds=GRID_SEEDS, recipes={**RECIPES, **BLIND_RECIPES})


def part_of(spec: dict) -> str | None:
    """The part (a key of :data:`PARTS`) a run spec belongs to, or None."""
    for part, (recipes, seeds) in PARTS.items():
        if spec.get("recipe") in recipes and spec["seed_index"] in seeds:
            return part
    return None


def blind_specs(settings=None, rounds=ROUNDS) -> list[dict]:
    """The blind test's run specs in the order of ``rounds`` (within a round by run id)."""
    from varsim.experiments.prediction import ENCODINGS
    from varsim.experiments.settings import job_specs

    settings = blind_settings() if settings is None else settings
    specs = [s for s in job_specs(settings) if s.get("attention") == "softmax"
             and (s.get("key_encoding") or "none") in ENCODINGS and part_of(s) is not None]
    return [s for part, seed in rounds for s in sorted(
        (s for s in specs if part_of(s) == part and s["seed_index"] == seed), key=lambda s: s["run_id"])]


def _log(ckptdir, line: str) -> None:
    from varsim._common.atomic import append_text

    print(line, flush=True)
    append_text(Path(ckptdir) / "progress.log", line + "\n")


def _finished(run_dir: Path):
    """``(model, config)`` of a run whose training is complete; None otherwise."""
    from varsim.train import load_checkpoint

    if not run_dir.exists():
        return None
    try:
        model, config, state = load_checkpoint(run_dir)
    except ValueError:  # no checkpoint yet
        return None
    return (model, config) if state["step"] == config.steps else None


def model_digest(model) -> str:
    """SHA-256 of a model's parameters (names, shapes, dtypes and bytes): the evaluation checks it is the model that
    was predicted."""
    import hashlib

    h = hashlib.sha256()
    for k in sorted(model.params):
        v = np.ascontiguousarray(model.params[k])
        h.update(f"{k}{v.shape}{v.dtype}".encode())
        h.update(v.tobytes())
    return h.hexdigest()


def predict_blind(ckptdir, data_dir=DATA_DIR, specs=None) -> None:
    """One prediction record per trained run under ``data_dir/predictions`` (skips those written and the runs not
    trained yet). Evaluates the model at N = 16 only."""
    import time

    from varsim._common.atomic import atomic_write_json
    from varsim._common.provenance import provenance
    from varsim.experiments.prediction import LENGTHS, SEED_KEY, prediction_fields
    from varsim.train import evaluate

    out = Path(data_dir) / "predictions"
    out.mkdir(parents=True, exist_ok=True)
    for spec in blind_specs() if specs is None else specs:
        path = out / f"{spec['run_id']}.json"
        found = None if path.exists() else _finished(Path(ckptdir) / spec["run_id"])
        if found is None:
            continue
        model, config = found
        t, c = time.perf_counter(), time.process_time()
        ev = spec["eval"]
        acc16 = evaluate(model, [LENGTHS[0]], ev["examples"], ev["batch_size"], ev["seed"], progress=False)
        rec = {"format": PREDICTION_FORMAT, "run_id": spec["run_id"], "part": part_of(spec), "task": spec["task"],
               "recipe": spec["recipe"], "encoding": spec.get("key_encoding"), "seed_index": spec["seed_index"],
               "accuracy_16": acc16["accuracy"][0], "model_sha256": model_digest(model),
               **prediction_fields(model, config, spec, np.random.SeedSequence([SEED_KEY, spec["seed_index"]]),
                                   kappas=BLIND_KAPPAS),
               "spec": spec}
        rec["timing"] = {"wall_s": time.perf_counter() - t, "cpu_s": time.process_time() - c}
        rec["provenance"] = provenance()
        atomic_write_json(path, rec)
        _log(ckptdir, f"predict {spec['run_id']} accuracy_16 {rec['accuracy_16']:.4f} cpu {rec['timing']['cpu_s']:.1f}"
                      f" s {rec.get('refused', '')}")


def committed_version(path) -> str | None:
    """The commit that last changed ``path`` when git tracks it and it equals that commit's version (no staged or
    unstaged change); None otherwise (untracked, modified, not in a git checkout, or no git)."""
    import subprocess

    p = Path(path).resolve()

    def git(*args):
        return subprocess.run(["git", "-C", str(p.parent), *args, "--", p.name], capture_output=True, text=True)

    try:
        if git("ls-files", "--error-unmatch").returncode or git("diff", "--quiet", "HEAD").returncode:
            return None
        commit = git("log", "-1", "--format=%H").stdout.strip()
    except OSError:
        return None
    return commit or None


def _evaluate_map(model, spec: dict) -> dict:
    """Accuracy at every length of the spec's test sets (``eval`` then ``eval.long``), and the ranking split."""
    from varsim.train import evaluate

    ev = spec["eval"]
    parts = [(ev["lengths"], ev["examples"])] + ([(ev["long"]["lengths"], ev["long"]["examples"])]
                                                  if "long" in ev else [])
    out = {"lengths": [], "examples": [], "accuracy": [], "ranking_correct": [], "dispersion_error": []}
    for lengths, examples in parts:
        r = evaluate(model, lengths, examples, ev["batch_size"], ev["seed"], progress=False)
        rk = r["ranking"]
        out["lengths"] += list(r["lengths"])
        out["examples"] += [examples] * len(lengths)
        out["accuracy"] += list(r["accuracy"])
        out["ranking_correct"] += list(rk["ranking_correct"])
        for j in range(len(lengths)):  # errors with the top item right, as a fraction of all examples
            n = rk["n_ranking_correct"][j] + rk["n_ranking_wrong"][j]
            out["dispersion_error"].append((rk["n_ranking_correct"][j] - rk["correct_given_ranking_correct"][j]) / n)
    return out


def evaluate_blind(ckptdir, data_dir=DATA_DIR, specs=None) -> None:
    """One evaluation record per run whose prediction record is committed (:func:`committed_version`) under
    ``data_dir/evaluations``: softmax and the inference-only maps of :data:`varsim.experiments.prediction.
    INFERENCE_MAPS` at every length of the grid's test sets. Refuses a model that is not the one predicted."""
    import time

    from varsim._common.atomic import atomic_write_json
    from varsim._common.jsonio import read_json
    from varsim._common.provenance import provenance
    from varsim.experiments.prediction import INFERENCE_MAPS

    out = Path(data_dir) / "evaluations"
    out.mkdir(parents=True, exist_ok=True)
    for spec in blind_specs() if specs is None else specs:
        pred_path, path = Path(data_dir) / "predictions" / f"{spec['run_id']}.json", out / f"{spec['run_id']}.json"
        if path.exists() or not pred_path.exists():
            continue
        commit = committed_version(pred_path)
        if commit is None:
            _log(ckptdir, f"evaluate {spec['run_id']}: not evaluated, its prediction record is not committed")
            continue
        pred = read_json(pred_path, what="blind prediction record")
        model, _ = _finished(Path(ckptdir) / spec["run_id"])
        if model_digest(model) != pred["model_sha256"]:
            raise ValueError(f"{spec['run_id']}: the checkpoint is not the model that was predicted")
        t, c = time.perf_counter(), time.process_time()
        inference = {item["label"]: item for item in spec.get("inference", ())}
        rec = {"format": EVALUATION_FORMAT, "run_id": spec["run_id"], "part": part_of(spec), "task": spec["task"],
               "recipe": spec["recipe"], "encoding": spec.get("key_encoding"), "seed_index": spec["seed_index"],
               "prediction_commit": commit, "model_sha256": pred["model_sha256"],
               "softmax": _evaluate_map(model, spec),
               "inference": {m: _evaluate_map(model.with_attention(inference[m]["attention"],
                                                                   inference[m]["params"]), spec)
                             for m in INFERENCE_MAPS}, "spec": spec}
        rec["timing"] = {"wall_s": time.perf_counter() - t, "cpu_s": time.process_time() - c}
        rec["provenance"] = provenance()
        atomic_write_json(path, rec)
        _log(ckptdir, f"evaluate {spec['run_id']} cpu {rec['timing']['cpu_s']:.1f} s")


# ----------------------------------------------------------------------------------------------------------------------
# Analysis (as registered)


def _read_records(data_dir, specs) -> tuple[dict, dict]:
    from varsim._common.jsonio import read_json

    def read(kind, what):
        return {s["run_id"]: read_json(p, what=what) for s in specs
                if (p := Path(data_dir) / kind / f"{s['run_id']}.json").exists()}

    return read("predictions", "blind prediction record"), read("evaluations", "blind evaluation record")


def _groups(specs, evals: dict) -> dict:
    """The evaluations in the shape of the remedies summary's groups that :func:`varsim.experiments.prediction.
    run_row` reads: (task, recipe, key encoding, variant) -> seeds, per-seed accuracies and ranking split."""
    from varsim.experiments.prediction import INFERENCE_MAPS

    groups: dict = {}
    for s in specs:
        e = evals.get(s["run_id"])
        if e is None:
            continue
        for v, m in [("softmax", e["softmax"]), *((k, e["inference"][k]) for k in INFERENCE_MAPS)]:
            g = groups.setdefault((s["task"], s["recipe"], s.get("key_encoding"), v),
                                  {"seeds": [], "accuracy": {"per_seed": []},
                                   "ranking": {f: {"per_seed": []} for f in ("ranking_correct", "dispersion_error")}})
            g["seeds"].append(s["seed_index"])
            g["accuracy"]["per_seed"].append(m["accuracy"])
            for f in ("ranking_correct", "dispersion_error"):
                g["ranking"][f]["per_seed"].append(m[f])
    return groups


def _exclusion(pred: dict) -> str | None:
    if "refused" in pred:
        return "refused: " + pred["refused"]
    if pred["accuracy_16"] < MIN_ACCURACY_16:
        return f"accuracy at N = 16 {pred['accuracy_16']:.4f} < {MIN_ACCURACY_16}"
    return None


def _part_rows(specs, preds, evals, groups, part) -> tuple[list, list, dict]:
    """A part's seeds kept (every cell of the seed predicted, evaluated and not excluded: whole seeds dropped) and
    its per-run rows; and per run id left out, why."""
    from varsim.experiments.prediction import LENGTHS, PRIMARY_LENGTH, run_row
    from varsim.tasks import chance_level

    mine = [s for s in specs if part_of(s) == part]
    why = {}
    for s in mine:
        p = preds.get(s["run_id"])
        why[s["run_id"]] = ("not predicted" if p is None else _exclusion(p) or
                            (None if s["run_id"] in evals else "not evaluated"))
    seeds = [sd for sd in PARTS[part][1] if any(s["seed_index"] == sd for s in mine)
             and all(why[s["run_id"]] is None for s in mine if s["seed_index"] == sd)]
    k = {"measured": BLIND_KAPPAS.index(KAPPA), "gaussian": BLIND_KAPPAS.index(KAPPA)}
    lengths, li = list(LENGTHS), list(LENGTHS).index(PRIMARY_LENGTH)
    rows = []
    for s in mine:
        if s["seed_index"] not in seeds:
            continue
        r = preds[s["run_id"]]
        x = run_row(s, r, groups, k, lengths, li)
        rank = np.asarray(r["measured"][k["measured"]]["softmax"]["ranking_correct"], float)
        x["predictions"]["ranking_only"] = (rank + (1.0 - rank) * chance_level(s["task"])).tolist()
        x["accuracy_16"] = r["accuracy_16"]
        rows.append(x)
    return seeds, rows, {k_: v for k_, v in why.items() if v is not None}


def _per_seed(rows: list, seeds: list, fn) -> list:
    return [float(np.mean([fn(x) for x in rows if x["seed"] == sd])) for sd in seeds]


def _err(m: str, j: int):
    return lambda x: abs(x["predictions"][m][j] - x["measured"][j])


def _part_metrics(rows: list, seeds: list) -> dict:
    """MAE per method at the primary length and at every length; the paired comparisons (t interval and paired
    t-test p-value); the readout part's contribution; the gains, ranking and dispersion MAE."""
    from varsim.experiments.prediction import LENGTHS, PRIMARY_LENGTH, seed_metrics, t_summary
    from varsim.experiments.stats import paired_t_pvalue

    lengths, li = list(LENGTHS), list(LENGTHS).index(PRIMARY_LENGTH)
    err = {m: _per_seed(rows, seeds, _err(m, li)) for m in METHODS}
    comparisons = {}
    for b in COMPARED:
        d = np.subtract(err["predictor"], err[b])
        comparisons[b] = {**t_summary(d), "p": paired_t_pvalue(d) if d.size >= 2 else float("nan"),
                          "per_seed": d.tolist()}
    rest = seed_metrics(rows, seeds, lengths, li)
    return {"seeds": seeds, "runs": len(rows), "primary": {m: t_summary(v) for m, v in err.items()},
            "primary_per_seed": err, "comparisons": comparisons,
            "readout_contribution": {
                "kappa_0.5": t_summary(np.subtract(err["predictor"], err["ranking_only"])),
                "kappa_1": t_summary(np.subtract(err["predictor_kappa1"], err["ranking_only"]))},
            "mae": {n: {m: t_summary(_per_seed(rows, seeds, _err(m, j))) for m in METHODS}
                    for j, n in enumerate(lengths)},
            **{k: rest[k] for k in ("gain_mae", "gain_vs", "ranking_mae", "dispersion_mae")}}


def _holm_verdicts(parts: dict) -> list:
    """The registered symmetric criterion: Holm over every comparison of every part; win (adjusted p < alpha, mean
    difference < 0), loss (adjusted p < alpha, mean > 0), else undecided."""
    from varsim.experiments.stats import holm

    family = [(part, b, d["comparisons"][b]) for part, d in parts.items() if d["runs"] for b in COMPARED]
    adj = holm([c["p"] for _, _, c in family]) if family else []
    out = []
    for (part, b, c), a in zip(family, adj):
        verdict = "undecided"
        if np.isfinite(a) and a < ALPHA:
            verdict = "win" if c["mean"] < 0 else "loss" if c["mean"] > 0 else "undecided"
        out.append({"part": part, "against": b, "mean": c["mean"], "ci_low": c["ci_low"], "ci_high": c["ci_high"],
                    "p": c["p"], "p_holm": float(a), "verdict": verdict})
    return out


def analyze_blind(data_dir=DATA_DIR, specs=None) -> dict:
    """The registered analysis of the records under ``data_dir``: per part the primary MAE at N = 1024 and the
    comparisons with their t intervals, the Holm verdicts over both parts, and the secondary measures, both parts
    pooled too (per seed index the mean over its runs)."""
    specs = blind_specs() if specs is None else specs
    preds, evals = _read_records(data_dir, specs)
    groups = _groups(specs, evals)
    parts, left_out, all_rows = {}, {}, []
    for part in PARTS:
        seeds, rows, why = _part_rows(specs, preds, evals, groups, part)
        left_out.update(why)
        parts[part] = {"seeds": seeds, "runs": len(rows)}
        if seeds:
            parts[part] = {**_part_metrics(rows, seeds), "per_run": rows}
        all_rows += rows
    pooled_seeds = sorted({x["seed"] for x in all_rows})
    pooled = _part_metrics(all_rows, pooled_seeds) if pooled_seeds else {"seeds": [], "runs": 0}
    return {"format": ANALYSIS_FORMAT, "kappa": KAPPA, "registered_runs": len(specs), "predicted": len(preds),
            "evaluated": len(evals), "left_out": left_out, "parts": parts, "holm": _holm_verdicts(parts),
            "pooled": pooled}


def _fmt(d: dict, sign: str = "") -> str:
    if d.get("ci_low") is None:
        return f"{d['mean']:{sign}.3f} (one seed: no interval)"
    return f"{d['mean']:{sign}.3f} [{d['ci_low']:{sign}.3f}, {d['ci_high']:{sign}.3f}]"


_NAMES = {"predictor": "full predictor, kappa 0.5", "predictor_kappa1": "full predictor, kappa 1",
          "ranking_only": "ranking only", "carry": "(a) carry-over", "logistic": "(b) logistic in ln N",
          "gaussian": "(c) Gaussian logits, kappa 0.5"}


def _render_part(name: str, d: dict) -> list:
    from varsim.experiments.prediction import LENGTHS

    if not d["runs"]:
        return [f"### {name}: no complete seed", ""]
    lines = [f"### {name}: seeds {d['seeds']}, {d['runs']} runs", "",
             "| method | MAE at N = 1024 [95% t over seeds] | full (kappa 0.5) minus method |", "|---|---|---|"]
    for m in METHODS:
        c = d["comparisons"].get(m)
        lines.append(f"| {_NAMES[m]} | {_fmt(d['primary'][m])} | {_fmt(c, '+') if c else ''} |")
    rc = d["readout_contribution"]
    lines += ["", f"Readout/variance part (full minus ranking only): kappa 0.5 {_fmt(rc['kappa_0.5'], '+')}, "
              f"kappa 1 {_fmt(rc['kappa_1'], '+')}. Ranking-correct MAE {_fmt(d['ranking_mae'])}, dispersion-error "
              f"MAE {_fmt(d['dispersion_mae'])}. Gains of the inference-time maps, MAE: predicted "
              f"{_fmt(d['gain_mae']['predicted'])}, zero gain {_fmt(d['gain_mae']['zero'])}, Gaussian "
              f"{_fmt(d['gain_mae']['gaussian'])}; predicted minus zero {_fmt(d['gain_vs']['zero'], '+')}.", "",
              "| N | " + " | ".join(_NAMES[m] for m in METHODS) + " |", "|---" * (1 + len(METHODS)) + "|"]
    for n in LENGTHS:
        row = d["mae"].get(n) or d["mae"][str(n)]
        lines.append(f"| {n} | " + " | ".join(f"{row[m]['mean']:.3f}" for m in METHODS) + " |")
    return lines + [""]


def render_blind(res: dict) -> str:
    """Markdown tables of :func:`analyze_blind`'s result."""
    from varsim.experiments.prediction import LENGTHS, PRIMARY_LENGTH, provenance_lines

    li = list(LENGTHS).index(PRIMARY_LENGTH)
    lines = [*provenance_lines(res),
             f"{res['registered_runs']} registered runs: {res['predicted']} predicted, {res['evaluated']} evaluated; "
             "left out: " + (", ".join(f"{k} ({v})" for k, v in res["left_out"].items()) or "none") + ".", ""]
    for part, d in res["parts"].items():
        lines += _render_part(part, d)
    lines += ["### Holm over the comparisons of both parts (alpha 0.05, symmetric)", "",
              "| part | full minus | difference [95% t] | p | p Holm | verdict |", "|---|---|---|---|---|---|"]
    for h in res["holm"]:
        lines.append(f"| {h['part']} | {_NAMES[h['against']]} | {_fmt(h, '+')} | {h['p']:.3g} | {h['p_holm']:.3g} | "
                     f"{h['verdict']} |")
    lines += [""] + _render_part("both parts pooled (secondary)", res["pooled"])
    lines += ["| part | cell | seed | accuracy N=16 | measured | full | kappa 1 | ranking only | carry | logistic | "
              "Gaussian |", "|---" * 11 + "|"]
    for part, d in res["parts"].items():
        for x in d.get("per_run", []):
            p = x["predictions"]
            lines.append(f"| {part} | {x['task']} {x['encoding'] or ''} {x['recipe']} | {x['seed']} | "
                         f"{x['accuracy_16']:.3f} | {x['measured'][li]:.3f} | "
                         + " | ".join(f"{p[m][li]:.3f}" for m in METHODS) + " |")
    return "\n".join(lines) + "\n"


def write_analysis(data_dir=DATA_DIR) -> dict:
    """Write ``analysis_blind.json`` (with the provenance: commit, time) and ``analysis_blind.md``; return it."""
    from varsim.experiments.prediction import write_analysis_files

    return write_analysis_files(data_dir, "analysis_blind", analyze_blind(data_dir), render_blind)


def main(argv=None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m varsim.experiments.prediction_blind",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("step", choices=("train", "predict", "evaluate", "analyze"))
    ap.add_argument("ckpt", nargs="?", help="train, predict, evaluate: the checkpoint directory (one folder per run)")
    ap.add_argument("--data", default=str(DATA_DIR), help="where the records go (default: the package's)")
    args = ap.parse_args(argv)
    if args.step != "analyze" and not args.ckpt:
        ap.error(f"{args.step} needs the checkpoint directory")
    try:
        return _run_step(args)
    except (ValueError, OSError) as exc:  # bad paths, corrupt records, a model that is not the one predicted
        print(f"prediction_blind {args.step}: {exc}", file=sys.stderr)
        return 2


def _run_step(args) -> int:
    from varsim._common.runlock import run_lock
    from varsim.experiments.prediction import train_specs

    if args.step == "analyze":
        print(render_blind(write_analysis(args.data)))
        return 0
    ckpt = Path(args.ckpt)
    ckpt.mkdir(parents=True, exist_ok=True)
    with run_lock(ckpt, f"prediction_blind {args.step}"):
        if args.step == "train":
            train_specs(blind_specs(), ckpt, log=ckpt / "progress.log")
        elif args.step == "predict":
            predict_blind(ckpt, args.data)
        else:
            evaluate_blind(ckpt, args.data)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
