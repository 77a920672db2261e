"""What every registered weight map, task and figure must do, as functions of its name: the generic tests call them
over the registries (tests/test_variants.py, test_variant_capabilities.py, test_tasks.py, test_figures.py), and
tests/test_registration.py calls them on entries registered for that test only, so an addition is checked without a
test being edited."""

from __future__ import annotations

import numpy as np
import pytest
from nn_checks import check_model_grads

import varsim.figures as figures
from varsim.nn.architectures import ARCHITECTURES
from varsim.nn.config import ModelConfig
from varsim.tasks import TASK_REGISTRY, check_set_size, get_task, make_batch
from varsim.theory.remedies import variant_theory
from varsim.variants import BASELINE, CONTROLS, FAMILIES, KERNELS, THEORY_KINDS, VARIANTS, get_variant

# ----------------------------------------------------------------------------------------------------------------------
# Weight maps


def check_variant_declared(name: str) -> None:
    """Its label, family and marker (no other map's), a scaled softmax in the rescaled family; its reference on
    masked logits: finite, non-negative, 0 at masked keys, rows summing to 1 when it says so."""
    v = get_variant(name)
    assert isinstance(v.label, str) and v.label and v.family in FAMILIES, (name, v.label, v.family)
    assert [k for k, o in VARIANTS.items() if o.marker == v.marker] == [name]
    assert not v.is_scaled_softmax or v.family == FAMILIES[0]
    z = np.random.default_rng(0).standard_normal((4, 9))
    z[1:, 3] = -np.inf
    w = v.weights(z)
    assert w.shape == z.shape and np.all(np.isfinite(w) & (w >= 0)) and np.all(w[1:, 3] == 0)
    if v.sums_to_one:
        np.testing.assert_allclose(w.sum(axis=-1), 1.0, rtol=1e-12)


def check_variant_theory(name: str, params: dict, ns=(8, 16, 64), beta: float = 1.3, rows: int = 6000) -> None:
    """variant_theory gives the fields of the entry's declared kind, and its exact values agree with the map's own
    Monte Carlo (5 SE + 1%); a bound holds for every draw; a 'none' map claims no number."""
    spec = get_variant(name)
    th = variant_theory(name, list(ns), beta, **params)
    assert th.kind == spec.theory in THEORY_KINDS and th.attention == name and th.n == tuple(float(n) for n in ns)
    present = {f for f in ("beta_n", "ipr_lower", "ipr_upper", "wsum", "wsum_var") if getattr(th, f) is not None}
    assert present == {"exact_ipr": {"beta_n"}, "sigmoid_moments": {"wsum", "wsum_var"},
                       "bound": {"ipr_lower", "ipr_upper"}, "none": set()}[spec.theory]
    for i, n in enumerate(ns):
        z = beta * np.random.default_rng(1000 + i).standard_normal((rows, n))
        draws = np.sum(spec.weights(z, **params) ** 2, axis=-1)
        mean, se = draws.mean(), draws.std(ddof=1) / np.sqrt(rows)
        if th.ipr_lower is not None:
            assert np.all((draws >= th.ipr_lower[i] - 1e-12) & (draws <= th.ipr_upper[i] + 1e-12))
        if spec.theory == "none":
            assert th.ipr[i] is None
        elif th.ipr[i] is not None:
            assert abs(mean - th.ipr[i]) <= 5 * se + 0.01 * th.ipr[i], (name, n, mean, se, th.ipr[i])
    if spec.theory in ("exact_ipr", "sigmoid_moments"):
        assert all(v is not None for v in th.ipr)


def check_variant_kernel(name: str, params: dict) -> None:
    """pack gives the code of the entry's declared kernel; unpack gives back a map whose reference weights equal the
    entry's own (the simulator's twins rely on it)."""
    from varsim.sim._variant_codes import pack, unpack

    spec = get_variant(name)
    params = spec.check_params(params)
    code, vparams = pack(name, params, 64)
    assert code == KERNELS.index(spec.kernel) and vparams.dtype == np.float64 and vparams.size >= 1
    other, other_params, factor = unpack(code, vparams)
    z = np.random.default_rng(3).standard_normal((5, 64))
    np.testing.assert_allclose(get_variant(other).weights(factor * z, n=64, **other_params),
                               spec.weights(z, n=64, **params), rtol=1e-12, atol=1e-15)


def check_variant_in_figure(name: str) -> None:
    """fig_variants_ipr draws every map but the controls': this one (next to the baseline, from a small sweep) with
    its own marker and label in its family's row only."""
    from varsim.figures import _style
    from varsim.figures import fig_variants_ipr as fig

    specs = {spec[0]: spec for spec in fig.variant_specs()}
    assert (name in specs) != (name in {c.weight_map for c in CONTROLS.values()}), name
    if name not in specs:
        return
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(fig, "variant_specs", lambda: tuple(specs[k] for k in dict.fromkeys((BASELINE, name))))
        mp.setitem(fig._DENSE_POINTS, True, 4)
        f = fig.draw(fig.compute(quick=True, n_min=16, n_max=64, sequences=64))
    v = get_variant(name)
    for ax in (ax for ax in f.axes if ax.get_title()):
        markers = {line.get_marker() for line in ax.get_lines()}
        assert (v.marker in markers) == (ax.get_title().split("\n")[1] == v.family or name == BASELINE), ax.get_title()
    assert any(t.get_text().startswith(v.label) for leg in f.legends for t in leg.get_texts())
    _style.plt.close(f)


def check_variant_colours_in_figure(min_delta_e: float = 20.0) -> None:
    """fig_variants_ipr over every registered map (a small sweep): in each panel no two series share a colour, and any
    two differ by at least ``min_delta_e`` (CIE76); each map in its registry colour and marker
    (:func:`varsim.figures.series.variant_style`), the same in every panel. Catches colours given by a series'
    position in a palette, which wraps onto the baseline's colour once a map is added."""
    from varsim.figures import _style, series
    from varsim.figures import fig_variants_ipr as fig

    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(fig._DENSE_POINTS, True, 4)
        f = fig.draw(fig.compute(quick=True, n_min=16, n_max=64, sequences=32))
    by_marker = {series.variant_style(name)["marker"]: name for name, *_ in fig.variant_specs()}
    for ax in (ax for ax in f.axes if ax.get_title()):
        drawn = {}
        for line in ax.get_lines():
            if line.get_marker() in by_marker:  # the Monte Carlo points (caps and exact lines have no marker)
                drawn.setdefault(by_marker[line.get_marker()], set()).add(line.get_color())
        colours = [c for name, cs in drawn.items() for c in cs]
        assert len(colours) == len(drawn) >= 2, (ax.get_title(), drawn)
        assert len(set(colours)) == len(colours), (ax.get_title(), drawn)
        for name, (colour,) in drawn.items():
            assert colour == series.variant_style(name)["color"], (ax.get_title(), name, colour)
        closest = min(series.delta_e(a, b) for i, a in enumerate(colours) for b in colours[i + 1:])
        assert closest >= min_delta_e, (ax.get_title(), drawn, closest)
    _style.plt.close(f)


# ----------------------------------------------------------------------------------------------------------------------
# Tasks


def check_task_batches(name: str, seed: int = 0, set_sizes=(1, 5, (2, 12), (1, 16)), batch: int = 8) -> None:
    """Batches at the task's example vocabulary: schema valid, sizes in range with the mask a prefix, the target an
    output class, the correct item a real one (for a task with keys: the only real item with the query's key), the
    same seed the same batch; its default training range and chance level valid."""
    task = get_task(name)
    vocab = task.vocab_of(task.example_vocab)
    for set_size in set_sizes:
        lo, hi = check_set_size(name, set_size, **vocab)
        b = make_batch(name, batch, set_size, np.random.default_rng(seed), **vocab)
        mask, sizes = b["mask"], b["mask"].sum(axis=1)
        assert lo <= sizes.min() and sizes.max() <= hi and mask.shape == (batch, sizes.max())
        np.testing.assert_array_equal(mask, np.arange(mask.shape[1])[None, :] < sizes[:, None])
        arrays = task.check_batch(b, vocab)
        target = b["target"]
        assert target.dtype == np.int64 and target.shape == (batch,)
        assert 0 <= target.min() and target.max() < task.n_outputs(vocab)
        item = task.correct_item(b)
        assert mask[np.arange(batch), item].all()
        keys = task.key_ids(arrays)
        if keys is not None:
            for row, q, m, i in zip(*keys, mask, item):
                assert len(set(row[m].tolist())) == m.sum() and row[i] == q and np.sum(row[m] == q) == 1
        again = make_batch(name, batch, set_size, np.random.default_rng(seed), **vocab)
        assert again.keys() == b.keys() and all(np.array_equal(again[k], b[k]) for k in b)
    assert check_set_size(name, task.default_train_range) == tuple(task.default_train_range)
    assert task.chance(vocab) == 1 / task.n_outputs(vocab)


def check_task_in_cli(name: str) -> None:
    """``varsim train --help`` names the task under ``--task``."""
    import argparse

    from varsim.cli import train

    parser = argparse.ArgumentParser()
    train.register(parser)
    (action,) = [a for a in parser._actions if "--task" in a.option_strings]
    assert name in action.help.replace(",", " ").split(), action.help


def tasks_read_by(architecture: str) -> list[str]:
    """The registered tasks a model of ``architecture`` reads: a sequence model every task, another only tasks whose
    items are one token each."""
    sequence = ARCHITECTURES[architecture].sequence
    return [name for name, task in TASK_REGISTRY.items() if sequence or task.item_tokens == 1]


def check_task_models(name: str) -> None:
    """Every registered architecture that reads the task builds a model of it at its example vocabulary whose
    gradients are right."""
    task = get_task(name)
    archs = [a for a in ARCHITECTURES.values() if name in tasks_read_by(a.name)]
    assert archs, name
    for arch in archs:
        cfg = ModelConfig(task=name, architecture=arch.name, d_model=8, n_heads=2, d_hidden=6, dtype="float64",
                          **task.vocab_of(task.example_vocab))
        check_model_grads(cfg)


# ----------------------------------------------------------------------------------------------------------------------
# Positional encodings (of the causal decoder)

#: a tiny float64 decoder the checks build
DECODER_TINY = dict(architecture="decoder", d_model=8, n_heads=2, n_blocks=2, n_classes=4, key_vocab=32,
                    value_vocab=5, d_hidden=6, dtype="float64")


def _decoder(task: str, **kw):
    from varsim.nn import Decoder

    config = ModelConfig(task=task, **{**DECODER_TINY, **kw})
    return config, Decoder(config, seed=1)


def check_positions_grads(positions: str, task: str = "argmax", pre_ln: bool = True) -> None:
    """The whole decoder with this encoding: every gradient equals central differences."""
    check_model_grads(ModelConfig(task=task, **{**DECODER_TINY, "positions": positions, "pre_ln": pre_ln,
                                                "max_positions": 16}), n=(2, 5))


def check_positions_padding(positions: str, task: str = "argmax") -> None:
    """Left padding: each example of a padded batch gets the logits it gets alone."""
    c, m = _decoder(task, positions=positions, max_positions=32)
    batch = make_batch(task, 6, (2, 7), np.random.default_rng(3), **c.vocab)
    assert not batch["mask"].all()
    logits = m.forward(batch)[0]
    for i in range(6):
        n = int(batch["mask"][i].sum())
        alone = {k: (np.asarray(v)[i:i + 1, :n] if np.ndim(v) == 2 else np.asarray(v)[i:i + 1])
                 for k, v in batch.items()}
        np.testing.assert_allclose(m.forward(alone)[0][0], logits[i], rtol=1e-10, atol=1e-12)


def check_positions_predict(positions: str) -> None:
    """``predict`` and ``analysis`` (the chunked evaluation path) agree with the training path; the query token keeps
    weight on itself and none on padding."""
    from varsim.nn import Decoder

    c = ModelConfig(task="dictionary", **{**DECODER_TINY, "positions": positions, "pre_ln": True,
                                           "max_positions": 64})
    m = Decoder(c, seed=2)
    batch = make_batch("dictionary", 9, (2, 20), np.random.default_rng(4), **c.vocab)
    logits = m.forward(batch)[0]
    np.testing.assert_array_equal(m.predict(batch), np.argmax(logits, axis=1))
    an = m.analysis(batch)
    np.testing.assert_allclose(an["logits"], logits, rtol=1e-10, atol=1e-12)
    w = an["block1.attn_weights"]
    assert w.shape == (9, 2, 20)
    np.testing.assert_allclose(w.sum(axis=-1) < 1.0, True)  # the query token keeps some weight on itself
    pad = ~batch["mask"][:, ::-1]  # left padding: padded items come first
    assert np.all(w[np.broadcast_to(pad[:, None], w.shape)] == 0.0)


# ----------------------------------------------------------------------------------------------------------------------
# Figures


def check_figure_module(name: str) -> None:
    """The registry names an importable module with its NAME, ``compute``, ``draw`` and ``main``, and a data source
    that is registered (or none)."""
    module = figures.load(name)
    assert module.NAME == name
    assert all(callable(getattr(module, f)) for f in ("compute", "draw", "main"))
    figures.data_source(name)


def check_figure_written(outdir, name: str) -> None:
    """A figure made into ``outdir`` wrote a PNG and a PDF of some size and its data."""
    png, pdf = outdir / f"{name}.png", outdir / f"{name}.pdf"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    assert pdf.read_bytes()[:5] == b"%PDF-" and pdf.stat().st_size > 5_000
    assert (outdir / f"{name}.json").is_file()


def check_figure_replot(outdir, name: str, tmp_path) -> None:
    """Redrawn from its stored data alone (``replot``), a figure made into ``outdir`` gives the identical PNG."""
    (tmp_path / f"{name}.json").write_bytes((outdir / f"{name}.json").read_bytes())
    figures.make([name], outdir=tmp_path, replot=True, progress=False)
    assert (tmp_path / f"{name}.png").read_bytes() == (outdir / f"{name}.png").read_bytes()
