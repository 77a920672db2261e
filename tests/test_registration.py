"""A weight map, a task and a figure registered for this test only pass the checks every registered one passes
(tests/registry_checks.py, which the generic tests run over the registries), with no other test edited: the files
DEVELOPING.md lists for an addition are all it needs. Each is removed afterwards, leaving the registries as found.

Catches a consumer that keeps its own list of names (a figure placing maps by name, a test branching on the task),
and an addition that needs more than its registry entry (a scaled softmax whose theory, kernel or figure row must
be written elsewhere)."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest
from registry_checks import (
    check_figure_module,
    check_figure_replot,
    check_figure_written,
    check_positions_grads,
    check_positions_padding,
    check_positions_predict,
    check_task_batches,
    check_task_in_cli,
    check_task_models,
    check_variant_colours_in_figure,
    check_variant_declared,
    check_variant_in_figure,
    check_variant_kernel,
    check_variant_theory,
)

import varsim.figures as figures
from varsim import variants as VR
from varsim.nn.positions import POSITIONS, PositionEncoding, register_positions
from varsim.tasks import TASK_REGISTRY, register_task
from varsim.tasks.argmax import ArgmaxRetrieval


def _half(n):
    return 0.5 * np.ones_like(np.asarray(n, dtype=np.float64))


def _half_softmax() -> VR.Variant:
    """softmax(z / 2): a scaled softmax, inference-only, its reference built from softmax's."""
    return VR.Variant("half_softmax_test", "softmax(z / 2)", (), True,
                      lambda z, n: VR.VARIANTS["softmax"].reference(0.5 * z, n), theory="exact_ipr",
                      kernel="scaled_softmax", trainable=False, beta_factor_fn=_half, label="softmax ($z/2$)",
                      family=VR.FAMILIES[0], marker="8")


class ArgminRetrieval(ArgmaxRetrieval):
    """The label of the item with the smallest priority."""

    name = "argmin_test"

    def draw(self, rng, sizes, mask, vocab):
        batch = super().draw(rng, sizes, mask, vocab)
        batch["target"] = batch["label"][np.arange(mask.shape[0]), self.correct_item(batch)]
        return batch

    def correct_item(self, batch):
        return np.argmin(np.where(batch["mask"], batch["priority"], np.inf), axis=1)


def _figure_module(name: str) -> types.ModuleType:
    """A figure module computing its own data: E[sum w^2] of softmax at two betas, exact (varsim.theory)."""

    def compute(quick=False, seed=0, *, progress=False, source=None):
        from varsim.figures._style import computed_footer
        from varsim.theory import expected_ipr

        n = [16, 64, 256] if quick else [16, 64, 256, 1024]
        return {"name": name, "quick": bool(quick), "n": n, "footer": computed_footer(seed, quick),
                "curves": {str(b): [float(expected_ipr(k, b)) for k in n] for b in (1.0, 2.0)}}

    def draw(data, ax=None, *, style=None, footer=False):
        from varsim.figures import _style

        with _style.style(style):
            fig, grid = _style.subplots(1, 1, ax=ax, style=style)
            for beta, ipr in data["curves"].items():
                grid[0][0].loglog(data["n"], ipr, marker="o", label=rf"$\beta = {beta}$")
            grid[0][0].legend()
            return _style.finish(fig, data, footer=footer)

    module = types.ModuleType(f"varsim_test_{name}")
    module.NAME, module.compute, module.draw, module.main = name, compute, draw, figures.figure_main(name)
    return module


@pytest.fixture
def half_softmax():
    variant = VR.register_variant(_half_softmax())
    yield variant.name
    del VR.VARIANTS[variant.name]


def _toy_source_module() -> types.ModuleType:
    """A figure data source declared beside its class: its option (and so its flag) and its gallery section."""
    from varsim.figures.source_spec import SourceOption

    class ToySource:
        OPTIONS = (SourceOption("toy_results", "draw the toy figures from this JSON file", metavar="FILE"),)
        GALLERY = "Toy grid"

        def __init__(self, path=None):
            self.path, self.available = path, path is not None

        @classmethod
        def from_options(cls, options):
            return cls(options["toy_results"])

        def prepare(self, names, *, explicit, replot, outdir):
            if not self.available and names and not explicit:
                return list(names), "no toy results (draw them with --toy-results FILE)"
            if not self.available and names and not replot:
                raise ValueError("toy_results: name a file")
            return [], ""

        def load(self):
            from varsim._common.jsonio import read_json

            return read_json(self.path, what="toy_results")

    module = types.ModuleType("varsim_test_toy_source")
    module.ToySource = ToySource
    return module


def _toy_figure_module(name: str) -> types.ModuleType:
    """A figure drawing the toy source's numbers."""

    def compute(quick=False, seed=0, *, progress=False, source=None):
        values = source.load()["values"]
        return {"name": name, "quick": bool(quick), "values": values, "footer": "toy results"}

    def draw(data, ax=None, *, style=None, footer=False):
        from varsim.figures import _style

        with _style.style(style):
            fig, grid = _style.subplots(1, 1, ax=ax, style=style)
            grid[0][0].plot(data["values"], marker="o")
            return _style.finish(fig, data, footer=footer)

    module = types.ModuleType(f"varsim_test_{name}")
    module.NAME, module.SOURCE, module.compute, module.draw = name, "toy_source", compute, draw
    module.main = figures.figure_main(name)
    return module


@pytest.fixture
def toy_grid(monkeypatch):
    """A grid kind (refining the paper grid, claiming settings with ``toy``) naming its figure source, the source
    (one entry of SOURCES) and a figure drawing it (one entry of FIGURES)."""
    from varsim.experiments import aggregation
    from varsim.experiments.grid_kind import GridKind

    source, fig = _toy_source_module(), _toy_figure_module("fig_toy_test")
    kind = GridKind("toy_kind", "toy grid", claims=lambda st: bool(st.get("toy")), summarize=lambda *a, **k: {},
                    summary_format="toy/1", table=lambda summary, title: title, refines="reproduction",
                    figure_source="toy_source")
    for mod in (source, fig):
        monkeypatch.setitem(sys.modules, mod.__name__, mod)
    monkeypatch.setitem(figures.SOURCES, "toy_source", (source.__name__, "ToySource"))
    monkeypatch.setitem(figures.FIGURES, fig.NAME, fig.__name__)
    monkeypatch.setitem(aggregation.GRID_KINDS, kind.name, kind)
    return kind, fig.NAME


@pytest.fixture
def rope_alibi():
    """RoPE and ALiBi together: a new encoding made of the flags the decoder reads (rotary, bias)."""
    enc = register_positions(PositionEncoding("rope_alibi_test", "RoPE on q, k and ALiBi on the logits",
                                              rotary=True, bias=True))
    yield enc.name
    del POSITIONS[enc.name]


@pytest.fixture
def argmin_task():
    task = register_task(ArgminRetrieval())
    yield task.name
    del TASK_REGISTRY[task.name]


@pytest.fixture
def demo_figure(monkeypatch):
    module = _figure_module("fig_registration_test")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setitem(figures.FIGURES, module.NAME, module.__name__)
    return module.NAME


def test_a_registered_weight_map_passes_the_generic_checks(half_softmax):
    """Declared metadata, theory (exact softmax at scale beta / 2), simulator packing and its figure row: a new
    scaled softmax lands in the rescaled family's panels with its own marker."""
    check_variant_declared(half_softmax)
    check_variant_theory(half_softmax, {})
    check_variant_kernel(half_softmax, {})
    check_variant_in_figure(half_softmax)


def test_a_registered_weight_map_gets_a_colour_of_its_own(half_softmax):
    """Every map, the new one included, keeps its registry colour in fig_variants_ipr, and no panel repeats one."""
    check_variant_colours_in_figure()


def test_a_registered_positional_encoding_is_gradient_checked(rope_alibi):
    """The decoder's gradients, padding and evaluation path with an encoding no test names."""
    for pre_ln in (True, False):
        check_positions_grads(rope_alibi, "argmax", pre_ln)
    check_positions_padding(rope_alibi)
    check_positions_predict(rope_alibi)


def test_a_registered_grid_kind_with_figures_reaches_the_engine_the_command_and_the_gallery(toy_grid, tmp_path,
                                                                                          capsys):
    """A grid kind names its figure source; the source's option is a keyword of make, a flag of `varsim figures`
    and its class's gallery section is the docs' — from their registry entries, no hand-kept list edited."""
    import json

    from varsim.cli import main as cli
    from varsim.experiments.aggregation import kind_of
    from varsim.figures import gallery_groups, source_options

    kind, name = toy_grid
    assert kind_of({"toy": True}) is kind and kind.figure_source in figures.SOURCES
    assert "toy_results" in [o.name for o in source_options()]
    assert ("Toy grid", "toy_source") in gallery_groups()
    data = tmp_path / "toy.json"
    data.write_text(json.dumps({"values": [3.0, 1.0, 2.0]}))
    written = figures.make([name], outdir=tmp_path / "a", toy_results=str(data), progress=False)
    assert json.loads(written[name][0].read_text())["values"] == [3.0, 1.0, 2.0]
    assert cli(["figures", "--only", name, "--toy-results", str(data), "--outdir", str(tmp_path / "b"),
                "--no-progress"]) == 0
    assert (tmp_path / "b" / f"{name}.png").is_file()
    with pytest.raises(ValueError, match="toy_resultz: no data source takes this option"):
        figures.make([name], outdir=tmp_path / "c", toy_resultz=str(data))
    capsys.readouterr()


def test_a_registered_task_passes_the_generic_checks(argmin_task):
    check_task_batches(argmin_task)
    check_task_in_cli(argmin_task)
    check_task_models(argmin_task)


def test_a_registered_figure_passes_the_generic_checks(demo_figure, tmp_path):
    check_figure_module(demo_figure)
    outdir = tmp_path / "out"
    assert list(figures.make([demo_figure], outdir=outdir, quick=True, progress=False)) == [demo_figure]
    check_figure_written(outdir, demo_figure)
    check_figure_replot(outdir, demo_figure, tmp_path)


def test_the_registries_are_left_as_found():
    """Runs after the tests above (file order): nothing they registered is left behind."""
    assert "half_softmax_test" not in VR.VARIANTS and "argmin_test" not in TASK_REGISTRY
    assert "fig_registration_test" not in figures.FIGURES and "rope_alibi_test" not in POSITIONS
    assert "toy_source" not in figures.SOURCES and "fig_toy_test" not in figures.FIGURES
