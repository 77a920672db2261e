"""Calling the function under test with a time limit: the one home of the checks' hang detection."""

from __future__ import annotations

import threading

__all__ = ["Hung", "call_with_timeout"]


class Hung(Exception):
    """The function did not return in time."""


def call_with_timeout(fn, args: tuple, kw: dict, timeout: float | None, name: str = "varsim-check"):
    """``fn(*args, **kw)`` in a daemon thread, waiting at most ``timeout`` seconds (None: in this thread).

    Parameters
    ----------
    fn : callable
        The function.
    args, kw : tuple, dict
        Its arguments.
    timeout : float or None
        Seconds to wait; past this :class:`Hung` is raised and the thread is left running (a daemon: it does not
        keep the interpreter alive).
    name : str
        The thread's name.

    Returns
    -------
    object
        What ``fn`` returned; what it raised is raised here.

    Examples
    --------
    >>> import time
    >>> from varsim.testing.calls import Hung, call_with_timeout
    >>> call_with_timeout(max, (1, 2), {}, 1.0)
    2
    >>> try:
    ...     call_with_timeout(time.sleep, (2.0,), {}, 0.05)
    ... except Hung:
    ...     print("hung")
    hung
    """
    if timeout is None:
        return fn(*args, **kw)
    box = {}

    def target():
        try:
            box["out"] = fn(*args, **kw)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            box["exc"] = exc

    worker = threading.Thread(target=target, daemon=True, name=name)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise Hung()
    if "exc" in box:
        raise box["exc"]
    return box["out"]
