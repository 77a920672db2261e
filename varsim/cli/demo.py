"""``varsim demo``: list the teaching notebooks, copy them where a teacher wants them, say how to open them.

The notebooks are py:percent text files shipped inside the package (``varsim/notebooks/``, see
:mod:`varsim.notebooks`), so this command works from an installed wheel as well as from a checkout.
``--copy DIR`` writes them as ``.ipynb`` (converted with jupytext) or as the ``.py`` sources (``--format py``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from varsim._common.atomic import atomic_write_text
from varsim.notebooks import list_notebooks, notebooks_dir

__all__ = ["register", "run"]

FORMATS = ("ipynb", "py")


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--copy", metavar="DIR", default=None,
                        help="copy the notebooks into DIR (created if missing), then print how to open them")
    parser.add_argument("--format", choices=FORMATS, default="ipynb",
                        help="with --copy: Jupyter notebooks (.ipynb, needs jupytext) or the py:percent sources "
                             "(default: %(default)s)")
    parser.add_argument("--force", action="store_true", help="with --copy: overwrite notebooks already in DIR")


def notebook_text(path: Path, fmt: str) -> str:
    """The notebook ``path`` (a py:percent source) as the text of a ``fmt`` file: ``"ipynb"`` (converted with
    jupytext, outputs empty) or ``"py"`` (the source itself)."""
    text = path.read_text(encoding="utf-8")
    if fmt == "py":
        return text
    try:
        import jupytext
    except ImportError:
        raise ValueError("--format ipynb needs jupytext (pip install jupytext), or use --format py") from None
    return jupytext.writes(jupytext.reads(text, fmt="py:percent"), fmt="ipynb")


def _copy(notebooks, dest: Path, fmt: str, force: bool) -> list[Path]:
    if dest.exists() and not dest.is_dir():
        raise ValueError(f"--copy {str(dest)!r} exists and is not a directory")
    targets = [dest / f"{path.stem}.{fmt}" for path, _ in notebooks]
    clash = [str(t) for t in targets if t.exists()]
    if clash and not force:
        raise ValueError(f"--copy: {clash[0]} already exists (use --force to overwrite)")
    contents = [notebook_text(path, fmt) for path, _ in notebooks]  # convert all before writing any
    try:
        dest.mkdir(parents=True, exist_ok=True)
        for target, text in zip(targets, contents):
            atomic_write_text(target, text)
    except OSError as exc:
        raise ValueError(f"--copy: cannot write to {str(dest)!r} ({exc.strerror or exc})") from None
    return targets


def run(args) -> int:
    notebooks = list_notebooks()
    print("varsim teaching notebooks (each runs in under a minute on a laptop CPU):")
    for path, title in notebooks:
        print(f"  {path.name:40s} {title}")
    if args.copy is None:
        print(f"\nThey are in {notebooks_dir()} as py:percent text files. To open them in Jupyter:")
        print("  varsim demo --copy DIR          # writes DIR/*.ipynb")
        print("  jupyter lab DIR                 # needs: pip install jupyterlab ipywidgets")
        print("or open the .py files directly in JupyterLab with jupytext installed, or in VS Code.")
        return 0
    targets = _copy(notebooks, Path(args.copy), args.format, bool(args.force))
    print(f"\nwrote {len(targets)} notebooks to {args.copy}. Open them with:")
    print(f"  jupyter lab {args.copy}            # needs: pip install jupyterlab ipywidgets")
    return 0
