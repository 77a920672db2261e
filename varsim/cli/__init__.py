"""Command line: ``varsim <command> ...`` (also ``python -m varsim``).

Each command lives in its own module ``varsim.cli.<command>`` exposing
``register(subparsers)`` (adds its parser) and ``run(args) -> int``. Modules are imported only
when their command runs, so ``varsim --help`` stays fast and compiles nothing.
A ``ValueError`` raised by the library becomes a one-line message and exit status 2; an ``OSError`` from the
operating system (a full disk, a file system gone read-only, a permission refused while writing) a one-line message
and exit status 1. Anything else (a programming error) keeps its traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import sys

# command name -> (module, one-line help)
COMMANDS = {
    "simulate": ("varsim.cli.simulate", "Monte Carlo variance of the softmax attention output over a grid of N"),
    "sweep": ("varsim.cli.sweep", "simulate a grid of (attention variant, parameters, beta, N) locally or on Dask"),
    "theory": ("varsim.cli.theory", "exact and asymptotic E[sum w^2] and related theory values"),
    "figures": ("varsim.cli.figures", "draw every figure (theory; experiments from committed data) into figures/out"),
    "train": ("varsim.cli.train", "train the small transformer on a synthetic task"),
    "evaluate": ("varsim.cli.evaluate", "evaluate a checkpoint at many set sizes"),
    "predict": ("varsim.cli.predict", "predict a checkpoint's long-N accuracy from its training-length statistics"),
    "reproduce": ("varsim.cli.reproduce", "run the paper's length-generalization experiment"),
    "recheck": ("varsim.cli.recheck", "train runs again: bitwise verdict on the grid's kernel, statistical elsewhere"),
    "demo": ("varsim.cli.demo", "list the teaching notebooks and copy them to open in Jupyter"),
    "probe-model": ("varsim.cli.probe_model", "vanishing variance per layer and head of a real pretrained model"),
}


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, non-zero exit, no usage dump
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser(which: str | None = None) -> argparse.ArgumentParser:
    parser = _Parser(prog="varsim", description="varsim: vanishing variance of softmax attention")
    from varsim import __version__

    parser.add_argument("--version", action="version", version=f"varsim {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, (module, help_) in COMMANDS.items():
        cmd = sub.add_parser(name, help=help_, description=help_)
        if name == which:  # only the command that runs is imported and gets its options
            importlib.import_module(module).register(cmd)
    return parser


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    which = next((a for a in argv if not a.startswith("-")), None)
    which = which if which in COMMANDS else None
    parser = build_parser(which)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    module = sys.modules[COMMANDS[args.command][0]]
    try:
        with _sigterm_raises():
            return int(module.run(args) or 0)
    except Terminated:
        print(f"varsim {args.command}: terminated", file=sys.stderr)
        return 128 + 15
    except ValueError as exc:
        print(f"varsim {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        if exc.errno is None:  # raised by code, not by the system: a bug, keep the traceback
            raise
        print(f"varsim {args.command}: error: {_os_error_text(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"varsim {args.command}: interrupted", file=sys.stderr)
        return 130


class Terminated(BaseException):
    """SIGTERM during a command: raised in the main thread, so every ``finally`` and worker pool shuts down as on
    Ctrl-C (a pool killed with its parent leaks its semaphores: Python's resource tracker warns about them)."""


@contextlib.contextmanager
def _sigterm_raises():
    """While the command runs, SIGTERM raises :class:`Terminated` (in the main thread; elsewhere nothing changes);
    the previous handler is restored after."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def raise_terminated(signum, frame):
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _os_error_text(exc: OSError) -> str:
    """``No space left on device (writing '/x/.ckpt-00000500.npz.tmp'); files written before it are kept``."""
    import os

    what = exc.strerror or os.strerror(exc.errno)
    where = f" ({exc.filename!r})" if exc.filename else ""
    return f"{what}{where}; files completed before it are unchanged"


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
