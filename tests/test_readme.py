"""The README's Python example runs as printed and prints what it computes.

Catches an example that no longer runs after an API change (a renamed function, a removed argument), and one that
computes something without showing it (a bare call whose result is thrown away)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def _using_it_example() -> str:
    text = README.read_text(encoding="utf-8")
    section = text.split("## Using it", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_example_runs_and_prints_every_result(capsys):
    code = _using_it_example()
    for node in ast.parse(code).body:  # every statement is an import, an assignment or a print
        if isinstance(node, ast.Expr):
            assert isinstance(node.value, ast.Call) and getattr(node.value.func, "id", "") == "print", \
                ast.unparse(node)
    exec(compile(code, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert out.count("\n") > 10 and "1048576" in out


# ----------------------------------------------------------------------------------------------------------------------
# The README's numbers: every count and every result it states is computed here from the repository (the registries,
# the committed summaries and probes), so a number that goes stale fails, and a signed result the README states
# without a claim below fails too.


def _signed(x: float, digits: int) -> str:
    return f"{x:+.{digits}f}".replace("-", "\N{MINUS SIGN}")


def _interval(row: dict) -> str:
    return f"{_signed(row['mean_diff'], 3)} [{_signed(row['ci_low'], 3)}, {_signed(row['ci_high'], 3)}]"


def _readme_claims() -> list[str]:
    """The phrases the README must contain, each made from the repository."""
    import json

    from varsim.experiments.committed import committed_summary
    from varsim.figures import FIGURES
    from varsim.testing.cases import REFERENCE_CASES
    from varsim.testing.mutants import CORRECT, MUTANTS

    root = README.parent
    data = root / "varsim" / "figures" / "data"
    notebooks = sorted((root / "varsim" / "notebooks").glob("[0-9]*.py"))
    reproduction = json.loads((data / "reproduction" / "summary.json").read_text())
    remedies = committed_summary("remedies")
    decoder, constant = committed_summary("decoder"), committed_summary("decoder_constant")
    smollm2 = json.loads((data / "probe" / "smollm2.json").read_text())["layer_summary"][0]
    arm = json.loads((data / "kernel_check" / "summary.json").read_text())["conclusions"]
    credit = json.loads((data / "prediction" / "analysis_credit.json").read_text())["held_out"]
    blind = json.loads((data / "prediction_blind" / "analysis_blind.json").read_text())
    blind_mae = {part: blind["parts"][part]["primary"]["predictor"] for part in ("new_seeds", "new_cell")}
    wins = [c for c in blind["holm"] if c["verdict"] == "win"]
    assert len(wins) == len(blind["holm"]), "a blind comparison is no longer a Holm win: say so in the README"
    largest = max(f"{c['p_holm']:.3f}" for c in wins)  # the closest wins, as the README counts them
    n_close = sum(f"{c['p_holm']:.3f}" == largest for c in wins)
    words = ("none", "one", "two", "three", "four", "five", "six")

    def rows(summary, **where):
        return [r for r in summary["primary"] if all(r.get(k) == v for k, v in where.items())]

    def significant(rs):
        return f"{sum(r['significant'] for r in rs)} of {len(rs)} significant"

    def mae(d):
        return f"{d['mean']:.3f} [{d['ci_low']:.3f}, {d['ci_high']:.3f}]"

    cosine = rows(remedies, task="argmax", recipe="cosine_lr1e3") + rows(remedies, task="argmax", recipe="cosine_lr3e3")
    flat = rows(remedies, task="argmax", recipe="constant_lr1e3") + rows(remedies, task="argmax",
                                                                          recipe="constant_lr3e3")
    (ssmax,) = rows(remedies, task="argmax", recipe="cosine_lr1e3", variant="ssmax")
    (table,) = rows(remedies, task="dictionary", recipe="cosine_lr1e3", encoding="embedding", variant="ssmax")
    nope = sorted(rows(decoder, architecture="decoder_none"), key=lambda r: r["mean_diff"])
    positional = [r for r in decoder["primary"] if r["architecture"] != "decoder_none"]
    assert max(r["mean_diff"] for r in table_rows(remedies, "dictionary", "cosine_lr1e3", "embedding")) \
        == table["mean_diff"], "SSMax is no longer the largest dictionary gain"
    assert all(c["behaves"] for c in remedies["controls"]), "a control misbehaves"
    assert not any(r["significant"] for r in positional), "a RoPE/ALiBi gain became significant"
    from varsim.cli.predict import DEFAULT_KAPPA
    from varsim.experiments.kernel_check import symmetric_verdicts

    sym = symmetric_verdicts(json.loads((data / "kernel_check" / "summary.json").read_text()))
    held_sym = {sum(c["rules"][rule] for c in sym["conclusions"]) for rule in ("holm_both", "unadjusted_both")}
    assert len(held_sym) == 1, "the two symmetric rules disagree: say so in the README"
    return [
        f"draws the {len(FIGURES)} figures of the registry",
        f"{len(notebooks)} notebooks",
        f"over {len(REFERENCE_CASES)} cases",
        f"{len(MUTANTS)} bug classes",
        f"{len(CORRECT)} correct kernels",
        f"({reproduction['runs']['expected']} runs, 6 paired seeds;",
        f"(Holm over {remedies['primary_endpoint']['n_comparisons']} pre-registered comparisons)",
        f"SSMax {_interval(ssmax)} at lr 1e-3; {significant(cosine)};",
        f"add at most {_interval(max(flat, key=lambda r: r['mean_diff']))} ({significant(flat)};",
        f"to {_interval(table)} (SSMax, learned key table, cosine, lr 1e-3; rechecked)",
        "Controls behave in every cell.",
        f"Holm over {decoder['primary_endpoint']['n_comparisons']} comparisons per recipe",
        f"gain {_interval(nope[0])} to {_interval(nope[-1])} at N = 1024 ({len(nope)} of {len(nope)} significant;",
        f"({len(positional)} of {len(positional)}; intervals within "
        f"[{_signed(min(r['ci_low'] for r in positional), 3)}, {_signed(max(r['ci_high'] for r in positional), 3)}])",
        f"({significant(constant['primary']).replace(' significant', '')} significant)",
        f"(default kappa = {DEFAULT_KAPPA:g}, fitted)",
        f"on {credit['runs']} held-out runs with mean absolute error {mae(credit['mae']['predictor'])}",
        f"up to N = 64: {mae(credit['mae']['logistic'])})",
        f"its ranking part alone (no readout, no fitted constant) {mae(credit['mae']['ranking_only'])}",
        f"kappa = 1: {mae(credit['mae']['predictor_kappa1'])}",
        f"Blind, {blind['evaluated']} new runs: {mae(blind_mae['new_seeds'])} (new seeds), "
        f"{mae(blind_mae['new_cell'])} (new cell), ahead of {words[len(wins) // 2]} baselines (Holm over "
        f"{len(blind['holm'])}; {words[n_close]} at adjusted p = {largest})",
        f"median slope {_signed(smollm2['median_slope_y2'], 2)}",
        f"slope of {_signed(smollm2['median_slope_std_iid'], 2)}",
        f"measured slope is {_signed(smollm2['median_slope_std'], 2)}",
        f"Of the {words[len(arm)]} rechecked sentences, {words[sum(c['holds'] for c in arm)]} held as pre-registered",
        f"{words[held_sym.pop()]} under either symmetric rule",
    ]


def table_rows(summary: dict, task: str, recipe: str, encoding: str) -> list[dict]:
    return [r for r in summary["primary"] if (r["task"], r["recipe"], r["encoding"]) == (task, recipe, encoding)]


def test_every_number_comes_from_the_repository():
    """Catches a README number left behind when the code or the committed data change (a figure added, a grid
    rerun), and a signed result stated without a claim here to compute it."""
    text = README.read_text(encoding="utf-8")
    claims = _readme_claims()
    flat = " ".join(text.split())
    missing = [c for c in claims if " ".join(c.split()) not in flat]
    assert missing == [], missing
    stated = re.findall(r"[+\N{MINUS SIGN}]\d+\.\d+", text.split("## The answers so far", 1)[1].split("## ", 1)[0])
    computed = " ".join(claims)
    assert stated and [s for s in stated if s not in computed] == []


def test_a_newcomer_reads_it_in_five_minutes():
    """At most 1200 words, and the install commands in the first 40 lines."""
    text = README.read_text(encoding="utf-8")
    assert len(text.split()) <= 1200
    head = text.splitlines()[:40]
    assert any("pip install -e ." in line for line in head) and any("pytest" in line for line in head)
