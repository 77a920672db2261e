"""MkDocs hooks for the varsim site (see mkdocs.yml).

* the notebooks in ``varsim/notebooks/`` (shipped in the package for ``varsim demo``) become ``notebooks/<name>.py``
  pages (rendered and executed by mkdocs-jupyter);
* ``docs/THEORY.md`` and ``docs/PAPER.md`` become ``reference/THEORY.md`` and ``reference/PAPER.md``;
* the marker ``<!-- varsim-cli-reference -->`` in ``cli.md`` is replaced by every command's ``--help``, generated
  from the argparse parsers (``varsim.cli.build_parser``), so the page cannot drift from the code;
* ``docs/jupyter`` goes first on the Jupyter config path, so that the notebooks' execution has a time limit
  (``jupyter_nbconvert_config.json``: a cell still running after 600 s fails the build with its name; nbclient's
  default is to wait forever, which turned a hung kernel into a CI run killed at its time limit).
"""

from __future__ import annotations

import os
from pathlib import Path

from mkdocs.plugins import event_priority
from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[1]
CLI_MARKER = "<!-- varsim-cli-reference -->"
JUPYTER_CONFIG = ROOT / "docs" / "jupyter"


def on_config(config):
    # read by the NbConvertApp that mkdocs-jupyter makes for each notebook; JUPYTER_CONFIG_PATH entries take
    # precedence over the user's own config dirs
    old = os.environ.get("JUPYTER_CONFIG_PATH")
    os.environ["JUPYTER_CONFIG_PATH"] = os.pathsep.join([str(JUPYTER_CONFIG)] + ([old] if old else []))
    return config


@event_priority(100)  # before mkdocs-jupyter turns the notebooks/*.py files into notebook pages
def on_files(files, config):
    # real files under the package directory (src_uri notebooks/<name>.py): mkdocs-jupyter needs a src_dir
    for path in sorted((ROOT / "varsim" / "notebooks").glob("[0-9]*.py")):
        files.append(File(f"notebooks/{path.name}", src_dir=str(ROOT / "varsim"), dest_dir=config.site_dir,
                          use_directory_urls=config.use_directory_urls))
    for name in ("THEORY.md", "PAPER.md"):
        files.append(File.generated(config, f"reference/{name}", abs_src_path=str(ROOT / "docs" / name)))
    return files


def cli_reference() -> str:
    """Markdown with ``varsim --help`` and each command's ``--help`` (80 columns, as a terminal shows them)."""
    from varsim.cli import COMMANDS, build_parser

    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"
    try:
        parts = ["## varsim\n", "```text\n" + build_parser().format_help().rstrip() + "\n```\n"]
        for name, (_, help_) in COMMANDS.items():
            top = build_parser(name)
            sub = next(a for a in top._actions if a.__class__.__name__ == "_SubParsersAction")
            parts.append(f"## varsim {name}\n\n{help_[0].upper() + help_[1:]}.\n")
            parts.append("```text\n" + sub.choices[name].format_help().rstrip() + "\n```\n")
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old
    return "\n".join(parts)


def on_page_markdown(markdown, page, config, files):
    if page.file.src_uri == "cli.md":
        if CLI_MARKER not in markdown:
            raise ValueError(f"cli.md: the marker {CLI_MARKER} is missing")
        return markdown.replace(CLI_MARKER, cli_reference())
    return markdown
