"""The command that commits a finished run's figure data into the package (``python -m varsim.figures.reproduction
RESULTS_DIR [DEST]``, ``python -m varsim.figures.remedies RESULTS_DIR [DEST]``): one line per file written; a
directory that cannot be committed gives one line on stderr and exit status 2."""

from __future__ import annotations

import argparse
import sys


def commit_main(argv, *, prog: str, description: str, results_help: str, default_dest, write, flags=(),
                dest_help: str | None = None) -> int:
    """Parse ``RESULTS [DEST] [flags]`` and call ``write(results, dest, **flags)``, which returns the paths written
    and raises ``ValueError`` (one line) for a directory it refuses. ``flags``: ``(option, help)`` pairs of boolean
    options passed to ``write`` by their names (``--allow-incomplete`` -> ``allow_incomplete``). ``dest_help``: how
    the help names the default destination (default: ``default_dest`` itself)."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("results", help=results_help)
    parser.add_argument("dest", nargs="?", default=None, help=dest_help or f"default {default_dest}")
    for option, help_ in flags:
        parser.add_argument(option, action="store_true", help=help_)
    args = vars(parser.parse_args(argv))
    results, dest = args.pop("results"), args.pop("dest")
    try:
        for path in write(results, default_dest if dest is None else dest, **args):
            print(f"{path} ({path.stat().st_size / 1024:.0f} kB)")
    except ValueError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    return 0
