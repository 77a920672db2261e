"""Where the ``fig_probe_*`` figures get their numbers: ``varsim probe-model`` result files.

The results of the two shipped models (SmolLM2-135M-Instruct and all-MiniLM-L6-v2, made with the probe's default
settings) and of three trained causal decoders of the decoder grid (``varsim reproduce DIR --preset decoder``: argmax,
NoPE / RoPE / ALiBi, no norm, softmax, seed 0; each file's ``model.grid_run`` names the run) ship with the package in
:data:`COMMITTED_DIR` (:data:`COMMITTED_FILES`): that is what ``varsim figures`` draws by default, one row of panels
per file, the decoders' layers next to SmolLM2's, so drawing needs neither the model packages nor any computation
(quick mode draws the same data, hence no smoke-test stamp). ``varsim figures --probe-results FILE ...`` draws a
user's own probe files instead, one row of panels per file.

:func:`read_probe` checks a file's kind, format and array shapes, so a torn or partial file is one ``ValueError``
naming the file, not a traceback from inside Matplotlib.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from .source_spec import SourceOption

__all__ = ["COMMITTED_DIR", "COMMITTED_FILES", "PROBE_KIND", "read_probe", "probe_command", "ProbeSource"]

#: The probe results of the shipped models, shipped with the package (one copy in the repository: here).
COMMITTED_DIR = Path(__file__).resolve().parent / "data" / "probe"
COMMITTED_FILES = ("smollm2.json", "decoder_nope.json", "decoder_rope.json", "decoder_alibi.json", "minilm.json")
PROBE_KIND = "varsim.probe_model"
_FORMAT_VERSION = 1

# per_length fields the figures use, with the trailing shape after (lengths, layers, heads)
_PER_LENGTH = {"std": (), "y2": (), "var_total": (), "var_iid": (), "var_offset": (), "var_rest": (), "sigma2": (),
               "std_components": (None,)}
_SLOPES = ("std", "y2", "std_iid")


def _shape(x) -> tuple:
    """Shape of a nested list of numbers (ragged or non-numeric leaves: ValueError)."""
    if isinstance(x, list):
        if not x:
            return (0,)
        subs = {_shape(v) for v in x}
        if len(subs) != 1:
            raise ValueError("ragged array")
        return (len(x), *subs.pop())
    if x is None or (isinstance(x, (int, float)) and not isinstance(x, bool)):
        return ()
    raise ValueError(f"non-numeric entry {type(x).__name__}")


def _check(data: dict) -> None:
    """Raise ValueError (message without the file name) when ``data`` is not a complete probe result."""
    if data.get("kind") != PROBE_KIND:
        raise ValueError(f"kind is {data.get('kind')!r}, not {PROBE_KIND!r}")
    if data.get("format_version") != _FORMAT_VERSION:
        raise ValueError(f"format_version {data.get('format_version')!r} is not {_FORMAT_VERSION}")
    for key in ("settings", "model", "text", "lengths", "layers", "n_head", "per_length", "slopes", "provenance"):
        if key not in data:
            raise ValueError(f"missing field {key!r} (a partial file?)")
    lengths, layers, n_head = data["lengths"], data["layers"], data["n_head"]
    if not (isinstance(lengths, list) and len(lengths) >= 2 and all(isinstance(n, int) and n > 0 for n in lengths)):
        raise ValueError("lengths must be a list of at least two positive integers")
    if not (isinstance(layers, list) and layers and all(isinstance(n, int) and n >= 0 for n in layers)):
        raise ValueError("layers must be a non-empty list of layer indices")
    if not isinstance(n_head, int) or n_head < 1:
        raise ValueError("n_head must be a positive integer")
    base = (len(lengths), len(layers), n_head)
    for key, tail in _PER_LENGTH.items():
        if key not in data["per_length"]:
            raise ValueError(f"missing field per_length.{key!r} (a partial file?)")
        try:
            shape = _shape(data["per_length"][key])
        except ValueError as exc:
            raise ValueError(f"per_length.{key}: {exc}") from None
        if shape[:3] != base or len(shape) != 3 + len(tail):
            raise ValueError(f"per_length.{key} has shape {shape}, expected {base}{' + (k,)' if tail else ''}")
    for key in _SLOPES:
        for part in ("value", "lo", "hi"):
            arr = (data["slopes"].get(key) or {}).get(part) if isinstance(data["slopes"], dict) else None
            if arr is None:
                raise ValueError(f"missing field slopes.{key}.{part} (a partial file?)")
            try:
                shape = _shape(arr)
            except ValueError as exc:
                raise ValueError(f"slopes.{key}.{part}: {exc}") from None
            if shape != base[1:]:
                raise ValueError(f"slopes.{key}.{part} has shape {shape}, expected {base[1:]}")


def read_probe(path) -> dict:
    """The validated content of one ``varsim probe-model`` JSON file; a one-line ValueError naming it otherwise."""
    from varsim._common.jsonio import read_json

    path = Path(path)
    data = read_json(path, what="probe results")
    try:
        _check(data)
    except (ValueError, TypeError, AttributeError) as exc:
        raise ValueError(f"probe results {str(path)!r} is not a complete varsim probe-model result: {exc}") from None
    return data


def probe_command(data: dict) -> str:
    """The ``varsim probe-model`` command line that reproduces ``data`` (every setting explicit)."""
    st = data["settings"]
    model = st.get("model") or data["model"].get("file") or "MODEL"
    args = ["varsim", "probe-model", "--model", str(model)]
    src = data["text"].get("source")
    if isinstance(src, list):
        args += ["--text", *map(str, src)]
    elif src not in (None, "python-docs") and "task" not in data["text"]:  # a trained model's windows: task examples
        args += ["--text", f"<{src}>"]
    args += ["--lengths", *map(str, st["lengths"]), "--windows", str(st["windows"]),
             "--layers", *map(str, st["layers"])]
    causal = bool(data["model"].get("spec", {}).get("causal", True))
    if st.get("query_position") is not None and st["query_position"] != (-1 if causal else 0):
        args += ["--query-position", str(st["query_position"])]
    if st.get("bos"):
        args.append("--bos")
    args += ["--seed", str(st["seed"]), "--bootstrap", str(st["bootstrap"])]
    return shlex.join(args)


def _where(path: Path, committed: bool) -> str:
    return f"varsim/figures/data/probe/{path.name}" if committed else str(path)


def footer_line(data: dict, path: Path, committed: bool) -> str:
    """One footer line: model, text, the command with its seed, the commit the data were made at, the file."""
    p = data.get("provenance") or {}
    commit = p.get("git_commit")
    made = (f"commit {commit[:10]}{'+dirty' if p.get('git_dirty') else ''}" if commit else "no git commit recorded")
    when = (p.get("created_utc") or "")[:10]
    model = data["model"].get("name") or data["model"].get("file")
    text = data["text"]
    src = text.get("source") if isinstance(text.get("source"), str) else "files"
    inputs = f"task {text['task']}" if "task" in text else f"text {src}, {text.get('tokens')} tokens"
    grid = data["model"].get("grid_run")
    if grid:
        inputs += f"; grid run {grid['run_id']}, trained at commit {(grid.get('git_commit') or '?')[:10]}"
    return (f"{model}: {_where(path, committed)}, made at {made}{', ' + when if when else ''} ({inputs}) by\n"
            f"    {probe_command(data)}")


class ProbeSource:
    """Which probe results the ``fig_probe_*`` figures draw, read once per ``varsim figures`` call.

    ``results=None``: the committed files of the shipped models (:data:`COMMITTED_FILES`); else a list of paths to
    ``varsim probe-model`` JSON files. ``load()`` returns ``[{"data", "path", "committed", "footer"}, ...]``.
    """

    #: the options of varsim.figures.make it reads (varsim.figures.source_spec) and its gallery section
    OPTIONS = (SourceOption("probe_results", "draw the real-model figures (fig_probe_*) from these `varsim "
                                             "probe-model` JSON files instead of the committed results (SmolLM2, "
                                             "three trained decoders, MiniLM)", nargs="+", metavar="FILE"),)
    GALLERY = "Real pretrained models"

    def __init__(self, results=None):
        if results is None:
            self.committed = True
            self.paths = [COMMITTED_DIR / name for name in COMMITTED_FILES]
        else:
            paths = [results] if isinstance(results, (str, Path)) else list(results)
            if not paths or any(not str(p).strip() for p in paths):
                raise ValueError("probe_results must name at least one non-empty path")
            self.committed = False
            self.paths = [Path(p) for p in paths]
        self._loaded: list | None = None

    def check(self) -> None:
        """Read and validate every file now (fail before drawing anything)."""
        self.load()

    @classmethod
    def from_options(cls, options: dict) -> ProbeSource:
        """The source :func:`varsim.figures.make`'s arguments ``options`` ask for."""
        return cls(options["probe_results"])

    def prepare(self, names: list[str], *, explicit: bool, replot: bool, outdir) -> tuple[list[str], str]:
        """Before :func:`varsim.figures.make` draws the figures ``names``: read every file (a corrupt or partial
        probe file fails here, before any drawing). Never skips: returns ``([], "")``."""
        if names and not replot:
            self.check()
        return [], ""

    def load(self) -> list[dict]:
        if self._loaded is None:
            out = []
            for path in self.paths:
                if self.committed and not path.is_file():
                    raise ValueError(f"probe results: this build has no committed probe file {str(path)!r}; give "
                                     "your own with --probe-results FILE")
                data = read_probe(path)
                out.append({"data": data, "path": str(path), "committed": self.committed,
                            "footer": footer_line(data, path, self.committed)})
            self._loaded = out
        return self._loaded


def source_of(source) -> list[dict]:
    """The probe results to draw: ``source`` (a :class:`ProbeSource`) from :func:`varsim.figures.make`, else the
    committed files."""
    return (source if source is not None else ProbeSource()).load()


def header(models: list[dict], quick: bool) -> dict:
    """Fields every probe figure's data carries: the footer (one line per model) and no smoke-test stamp (the data
    are the real models' results in quick mode too)."""
    return {"quick": bool(quick), "smoke_test": False, "sources": [m["path"] for m in models],
            "footer": "\n".join(m["footer"] for m in models)}


_PRETRAINED_NAMES = {"smollm2": "SmolLM2-135M", "minilm": "all-MiniLM-L6-v2"}
#: how the titles name a trained decoder's positional encoding (names of varsim.nn.positions.POSITIONS)
_POSITION_NAMES = {"none": "NoPE", "rope": "RoPE", "alibi": "ALiBi", "learned": "learned positions"}


def _trained(data: dict) -> dict | None:
    """What a trained varsim model's probe result says about the model (``varsim.train.attention_probe``): kind
    (decoder or set model), task, positional encoding, attention map and training steps (None when the file does
    not record them: a model object probed directly); None for a pretrained model."""
    if "task" not in data["text"]:
        return None
    spec = data["model"].get("spec", {})
    cfg = spec.get("config", {})
    causal = bool(spec.get("causal"))
    from varsim.nn.config import ModelConfig

    pos = cfg.get("positions", ModelConfig.positions) if causal else None  # a config omits its default encoding
    return {"kind": "decoder" if causal else "set model", "task": data["text"]["task"],
            "positions": _POSITION_NAMES.get(pos, pos) if pos else None,
            "attention": cfg.get("attention", "softmax"), "steps": data["model"].get("step")}


def model_label(data: dict) -> str:
    """Full label of a model: name and the query row; for a trained varsim model its kind, task, positional
    encoding, attention map and training steps."""
    t = _trained(data)
    if t is not None:
        parts = [t["task"], t["positions"], f"{t['attention']} attention",
                 None if t["steps"] is None else f"{t['steps']} steps"]
        return f"trained {t['kind']} ({', '.join(p for p in parts if p)})"
    spec = data["model"].get("spec", {})
    name = _PRETRAINED_NAMES.get(data["model"].get("name"), data["model"].get("name") or "model")
    q = data["settings"].get("query_position")
    query = "last token" if q == -1 else ("[CLS]" if q == 0 and not spec.get("causal", True) else f"position {q}")
    return f"{name} (query: {query})"


def panel_name(data: dict) -> str:
    """Short name of a model for panel titles: a pretrained model's name; for a trained varsim model its task and
    kind, positional encoding, attention map (when not softmax) and training steps ("argmax decoder, RoPE, 300
    steps")."""
    t = _trained(data)
    if t is None:
        return _PRETRAINED_NAMES.get(data["model"].get("name"), data["model"].get("name") or "model")
    parts = [f"{t['task']} {t['kind']}", t["positions"], None if t["attention"] == "softmax" else t["attention"],
             None if t["steps"] is None else f"{t['steps']} steps"]
    return ", ".join(p for p in parts if p)


_SHORT_NAMES = {"smollm2": "SmolLM2", "minilm": "MiniLM"}


def short_name(data: dict) -> str:
    """The shortest name that tells the models of one figure apart: "SmolLM2", "MiniLM"; for a trained varsim model
    its positional encoding and kind ("RoPE decoder"), its attention map when not softmax."""
    t = _trained(data)
    if t is None:
        name = data["model"].get("name")
        return _SHORT_NAMES.get(name, _PRETRAINED_NAMES.get(name, name or "model"))
    parts = [t["positions"], None if t["attention"] == "softmax" else t["attention"], t["kind"]]
    return " ".join(p for p in parts if p)


def title_name(data: dict) -> str:
    """How a panel title names a model: a pretrained model with its query row (:func:`model_label`), a trained one
    by :func:`panel_name` (its full label is in the footer)."""
    return model_label(data) if _trained(data) is None else panel_name(data)


def row_name(row: dict) -> str:
    """The panel name of a figure's data row (``name``; a row without one, from data saved by an earlier version:
    its label up to the parenthesis)."""
    return row.get("name") or row["model"].split(" (")[0]
