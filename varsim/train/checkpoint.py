"""Checkpoints: one self-describing, checksummed ``.npz`` file per saved step, written atomically.

A checkpoint ``ckpt-00000500.npz`` holds the model parameters (``param/<name>``), the Adam moments
(``opt/m/<name>``, ``opt/v/<name>``) and a JSON header (``__header__``, UTF-8 bytes) with the step, the full
training config, the optimizer's update count and settings, the data-stream description (the batch of step k is
drawn from ``child_generator(data_seed, k)``, so the step is the whole RNG state), the metrics window in
progress, the elapsed wall time, library versions and a SHA-256 of the array payload. One file, renamed into
place only when complete, so a run killed at any moment leaves either the previous checkpoint or the new one,
never a mixture; a file that was damaged afterwards fails the checksum (or cannot be unzipped) and is refused.
"""

from __future__ import annotations

import hashlib
import json
import re
import zipfile
from pathlib import Path

import numpy as np

from varsim._common.atomic import atomic_write_with
from varsim.train.config import TrainConfig

__all__ = [
    "CHECKPOINT_FORMAT",
    "save_checkpoint",
    "read_checkpoint",
    "load_checkpoint",
    "latest_checkpoint",
    "list_checkpoints",
    "checkpoint_path",
    "payload_sha256",
    "is_checkpoint_file",
    "is_checkpoint_name",
    "resolve_checkpoint",
]

CHECKPOINT_FORMAT = "varsim.train.checkpoint"
FORMAT_VERSION = 1
_HEADER = "__header__"
_NAME = re.compile(r"^ckpt-(\d{8,})\.npz$")


def checkpoint_path(outdir, step: int) -> Path:
    return Path(outdir) / f"ckpt-{int(step):08d}.npz"


def is_checkpoint_name(name: str) -> bool:
    """Whether ``name`` is a checkpoint's file name (``ckpt-00000500.npz``): a run lists such files as its own."""
    return _NAME.match(str(name)) is not None


def is_checkpoint_file(path) -> bool:
    """Whether ``path`` is a varsim checkpoint (an ``.npz`` archive with a header), valid or not."""
    try:
        with zipfile.ZipFile(path) as z:
            return _HEADER + ".npy" in z.namelist()
    except (OSError, zipfile.BadZipFile):
        return False


def list_checkpoints(outdir) -> list[tuple[int, Path]]:
    """``(step, path)`` of the checkpoints in ``outdir``, oldest first (temporary files are not listed)."""
    d = Path(outdir)
    if not d.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in d.iterdir() if (m := _NAME.match(p.name))]
    return sorted(found)


def latest_checkpoint(outdir) -> Path | None:
    found = list_checkpoints(outdir)
    return found[-1][1] if found else None


def payload_sha256(arrays: dict[str, np.ndarray]) -> str:
    """SHA-256 over name, dtype, shape and bytes of every array, in name order."""
    h = hashlib.sha256()
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"{name}\0{a.dtype.str}\0{a.shape}\0".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def save_checkpoint(path, *, params: dict, optimizer_state: dict, header: dict) -> Path:
    """Write params, optimizer moments and ``header`` (plus format, array list and checksum) atomically."""
    arrays = {f"param/{k}": np.asarray(v) for k, v in params.items()}
    arrays.update({f"opt/m/{k}": np.asarray(v) for k, v in optimizer_state["m"].items()})
    arrays.update({f"opt/v/{k}": np.asarray(v) for k, v in optimizer_state["v"].items()})
    full = {
        "format": CHECKPOINT_FORMAT,
        "format_version": FORMAT_VERSION,
        **header,
        "optimizer": {"t": optimizer_state["t"], "hyperparameters": optimizer_state["hyperparameters"]},
        "arrays": {k: [a.dtype.str, list(a.shape)] for k, a in sorted(arrays.items())},
        "sha256": payload_sha256(arrays),
    }
    blob = np.frombuffer(json.dumps(full, allow_nan=False).encode("utf-8"), dtype=np.uint8)
    return atomic_write_with(path, lambda fh: np.savez(fh, **{_HEADER: blob}, **arrays))


def read_checkpoint(path) -> tuple[dict, dict[str, np.ndarray]]:
    """``(header, arrays)`` of a checkpoint file after checking its format and checksum.

    Raises ``ValueError`` naming the file when it is missing, truncated, not a checkpoint, or fails the checksum.
    """
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"checkpoint {str(p)!r} does not exist")
    try:
        with np.load(p, allow_pickle=False) as z:
            data = {k: z[k] for k in z.files}
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, KeyError) as exc:
        raise ValueError(f"checkpoint {str(p)!r} is unreadable (truncated or corrupt): {exc}") from None
    blob = data.pop(_HEADER, None)
    try:
        header = json.loads(blob.tobytes().decode("utf-8")) if blob is not None else None
    except (UnicodeDecodeError, json.JSONDecodeError):
        header = None
    if not isinstance(header, dict) or header.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(f"{str(p)!r} is not a varsim checkpoint (missing or unreadable header)")
    if header.get("format_version") != FORMAT_VERSION:
        raise ValueError(
            f"checkpoint {str(p)!r} has format version {header.get('format_version')}, expected {FORMAT_VERSION}"
        )
    if payload_sha256(data) != header.get("sha256"):
        raise ValueError(f"checkpoint {str(p)!r} is corrupt: the array checksum does not match its header")
    return header, data


def _split(arrays: dict, prefix: str) -> dict:
    return {k[len(prefix):]: v for k, v in arrays.items() if k.startswith(prefix)}


def _check_finite(p: Path, arrays: dict) -> None:
    """ValueError naming the checkpoint file and the first weight (or optimizer moment) that holds a NaN or an
    infinity: training never saves one (it stops before a non-finite update), so such a file was made elsewhere."""
    for name in sorted(arrays):
        a = arrays[name]
        if a.dtype.kind not in "fc" or np.isfinite(a).all():
            continue
        nan = int(np.isnan(a).sum())
        what = "weight" if name.startswith("param/") else "optimizer moment"
        raise ValueError(f"checkpoint {str(p)!r}: {what} {name.split('/', 1)[1] if what == 'weight' else name!r} "
                         f"holds {nan} NaN and {int(a.size - np.isfinite(a).sum()) - nan} infinite value(s) of "
                         f"{a.size}; training never saves one, so the file was made or edited elsewhere")


def resolve_checkpoint(path) -> Path:
    """A checkpoint file, or the latest checkpoint of a run directory."""
    p = Path(path)
    if p.is_dir():
        latest = latest_checkpoint(p)
        if latest is None:
            raise ValueError(f"run directory {str(p)!r} contains no checkpoint")
        return latest
    return p


def load_checkpoint(path):
    """Load a trained model, its run's config and the training state from a checkpoint.

    Parameters
    ----------
    path : path
        A checkpoint file, or a run directory (its latest checkpoint).

    Returns
    -------
    model : Transformer or Decoder
        The model of the config's architecture (:func:`varsim.nn.architectures.build_model`, a
        :class:`varsim.nn.model.Transformer` for the set transformer) with the saved parameters.
    config : TrainConfig
        The run's configuration.
    state : dict
        ``step``, ``optimizer`` (a state dict for :meth:`varsim.nn.optim.Adam.load_state_dict`), ``header`` and
        ``path``.

    See Also
    --------
    varsim.train.train : writes the checkpoints.
    varsim.train.evaluate : takes the checkpoint or the model.

    Examples
    --------
    >>> import tempfile
    >>> from varsim.train import TrainConfig, load_checkpoint, train
    >>> run = tempfile.mkdtemp() + "/argmax"
    >>> _ = train(TrainConfig(task="argmax", steps=10, checkpoint_every=10, log_every=5), run, progress=False)
    >>> model, config, state = load_checkpoint(run)
    >>> type(model).__name__, config.steps, state["step"]
    ('Transformer', 10, 10)
    """
    from varsim.nn.architectures import build_model

    p = resolve_checkpoint(path)
    header, arrays = read_checkpoint(p)
    _check_finite(p, arrays)
    try:
        config = TrainConfig.from_dict(header["config"])
    except (KeyError, TypeError) as exc:
        raise ValueError(f"checkpoint {str(p)!r} has no usable config: {exc}") from None
    model = build_model(config.model, seed=config.seed)
    try:  # copies into the model's own arrays, so an optimizer built on model.params afterwards updates them
        model.load_state_dict(_split(arrays, "param/"))
    except ValueError as exc:
        raise ValueError(f"checkpoint {str(p)!r} does not fit the model built from its config: {exc}") from None
    opt = header["optimizer"]
    state = {
        "step": int(header["step"]),
        "optimizer": {"t": opt["t"], "hyperparameters": opt["hyperparameters"],
                      "m": _split(arrays, "opt/m/"), "v": _split(arrays, "opt/v/")},
        "header": header,
        "path": p,
    }
    return model, config, state
