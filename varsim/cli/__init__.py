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
import errno
import importlib
import signal
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
    "recheck": ("varsim.cli.recheck", "train runs of a committed grid or results directory again and compare"),
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
    stdout = sys.stdout
    sys.stdout = _NamedStdout(stdout)
    on_term = _catch_sigterm()
    try:
        code = int(module.run(args) or 0)
        sys.stdout.flush()  # a full disk or a closed pipe is reported here, not by the interpreter at exit
        return code
    except ValueError as exc:
        print(f"varsim {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        if exc.errno is None:  # raised by code, not by the system: a bug, keep the traceback
            raise
        if exc.filename == STDOUT_NAME:
            _silence(stdout)
            if exc.errno == errno.EPIPE:  # the reader stopped reading (``| head``): quiet, as a killed writer is
                return 128 + signal.SIGPIPE
        print(f"varsim {args.command}: error: {_os_error_text(exc)}", file=sys.stderr)
        return 1
    except Terminated:
        print(f"varsim {args.command}: terminated (SIGTERM); files completed before it are unchanged", file=sys.stderr)
        return 128 + signal.SIGTERM
    except KeyboardInterrupt:
        print(f"varsim {args.command}: interrupted", file=sys.stderr)
        return 130
    finally:
        sys.stdout = stdout
        if on_term is not None:
            signal.signal(signal.SIGTERM, on_term)


class Terminated(KeyboardInterrupt):
    """Raised in the main thread by SIGTERM while a command runs: a ``KeyboardInterrupt``, so that everything that
    cleans up after Ctrl-C (worker pools stopped and their semaphores released, run locks, temporary files) does the
    same for ``kill``, instead of the process vanishing with its pool's semaphores leaked."""


def _raise_terminated(signum, frame):
    raise Terminated()


def _catch_sigterm():
    """Install :func:`_raise_terminated` for SIGTERM; return the handler it replaced (None where signals cannot be
    set: not the main thread)."""
    try:
        return signal.signal(signal.SIGTERM, _raise_terminated)
    except ValueError:  # signal only works in the main thread
        return None


#: the file name an error writing standard output carries (the system gives none)
STDOUT_NAME = "standard output"


class _NamedStdout:
    """``sys.stdout`` while a command runs: a write or flush error (a full disk, a closed pipe) is the ``OSError``
    it is, naming ``standard output``; everything else is the stream's own."""

    def __init__(self, stream):
        self._stream = stream

    def __getattr__(self, name):
        return getattr(self._stream, name)

    def _named(self, call, *args):
        try:
            return call(*args)
        except OSError as exc:
            if exc.errno is None or exc.filename is not None:
                raise
            raise OSError(exc.errno, exc.strerror, STDOUT_NAME) from None

    def write(self, text):
        return self._named(self._stream.write, text)

    def writelines(self, lines):
        return self._named(self._stream.writelines, lines)

    def flush(self):
        return self._named(self._stream.flush)


def _silence(stream) -> None:
    """Point the failed standard output at ``/dev/null``, so the interpreter's flush at exit does not fail again
    with a second message (a stream with no descriptor, as under pytest's capture, is left as it is)."""
    import os

    try:
        fd = stream.fileno()
    except (OSError, ValueError, AttributeError):
        return
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, fd)
    os.close(null)


def _os_error_text(exc: OSError) -> str:
    """``No space left on device (writing '/x/.ckpt-00000500.npz.tmp'); files written before it are kept``."""
    import os

    what = exc.strerror or os.strerror(exc.errno)
    where = f" ({exc.filename!r})" if exc.filename else ""
    if exc.filename == STDOUT_NAME:
        where = f" (writing {STDOUT_NAME})"
    return f"{what}{where}; files completed before it are unchanged"


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
