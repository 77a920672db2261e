"""Helpers of the command-line tests (tests/test_cli_*.py, tests/test_output_paths.py)."""

from __future__ import annotations

from varsim.cli import main


def run_cli(capsys, argv) -> tuple[int, str, str]:
    """``varsim ARGV`` in-process: ``(exit status, stdout, stderr)``; argparse's own errors (SystemExit) included."""
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err
