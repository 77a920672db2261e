"""Run independent jobs on local worker processes or on a Dask cluster, with one interface.

Both back ends are ``concurrent.futures.Executor`` objects:

- local (default): a ``ProcessPoolExecutor`` with one worker per available core, started with
  the ``spawn`` method (no fork of a process that may hold threads or locks) and with the BLAS
  / OpenMP thread pools of each worker limited to one thread, so ``workers`` processes use
  ``workers`` cores instead of oversubscribing them, and each worker exits at once when this
  process dies, even by SIGKILL (``varsim._common.lifeline``), instead of finishing its job;
  ``workers=1`` runs the jobs in this process, one after the other (no start-up cost, easiest
  to debug);
- Dask: ``scheduler="tcp://host:port"`` (any address ``dask.distributed.Client`` accepts)
  submits the jobs to that cluster through ``Client.get_executor``. ``dask[distributed]`` is an
  optional dependency (``pip install "varsim[dask]"``), imported only here and only then; the
  workers must be able to import varsim.

A job is a picklable top-level function applied to one picklable argument. Jobs must derive all
their randomness from their argument (see ``varsim._common.seeding``): then the results do not
depend on the executor, the number of workers or the completion order. (Floating-point rounding
may still depend on the BLAS thread count; the reproduction's jobs pin it, see ``varsim._common.blas``.)

As with any ``spawn``-based pool, a script that starts local workers must guard its entry point
with ``if __name__ == "__main__":``: each worker re-imports the main module.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import multiprocessing
import os
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, Iterator, Sequence

from varsim._common.lifeline import worker_initializer
from varsim._common.validate import check_int, check_positive_int

__all__ = ["default_workers", "check_executor_args", "open_executor", "run_jobs", "JobFailure"]


def default_workers() -> int:
    """The number of cores this process may run on (one worker per core)."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # not on Linux
        return max(os.cpu_count() or 1, 1)


class _InlineExecutor(cf.Executor):
    """Runs each job at submission, in the calling process (the ``workers=1`` back end)."""

    def submit(self, fn, /, *args, **kwargs):
        future: cf.Future = cf.Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller through the future
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            future.set_exception(exc)
        return future


def _import_distributed():
    try:
        import distributed  # noqa: F401  (dask.distributed's package)
    except ImportError as exc:
        raise ValueError(
            "scheduler: running on a Dask cluster needs the optional dependency dask[distributed]; "
            'install it with `pip install "varsim[dask]"` (or `pip install "dask[distributed]"`)'
        ) from exc
    return distributed


def check_executor_args(scheduler: str | None, workers: int | None) -> None:
    """Validate ``scheduler`` / ``workers`` before any work starts (ValueError naming the parameter)."""
    if scheduler is not None:
        if not isinstance(scheduler, str) or not scheduler.strip():
            raise ValueError(f"scheduler must be a Dask scheduler address such as 'tcp://host:8786', got {scheduler!r}")
        if workers is not None:
            raise ValueError("workers applies to the local executor only; a Dask cluster sizes itself")
    elif workers is not None:
        check_positive_int("workers", workers)


@contextlib.contextmanager
def open_executor(scheduler: str | None = None, workers: int | None = None) -> Iterator[cf.Executor]:
    """Context manager yielding the executor for ``scheduler`` / ``workers`` (see module docstring).

    ``scheduler`` and ``workers`` are exclusive: a Dask cluster decides its own parallelism.
    """
    check_executor_args(scheduler, workers)
    if scheduler is not None:
        distributed = _import_distributed()
        try:
            client = distributed.Client(scheduler, set_as_default=False)
        except (OSError, TimeoutError) as exc:
            raise ValueError(f"scheduler: cannot connect to {scheduler!r}: {exc}") from exc
        try:
            # pure=False: every submission runs, even if a job with equal arguments ran before.
            yield client.get_executor(pure=False)
        finally:
            client.close()
        return
    n = default_workers() if workers is None else check_positive_int("workers", workers)
    if n == 1:
        yield _InlineExecutor()
        return
    pool = cf.ProcessPoolExecutor(
        max_workers=n, mp_context=multiprocessing.get_context("spawn"), initializer=worker_initializer
    )
    try:
        yield pool
    except BaseException:
        _stop_now(pool)
        raise
    else:
        pool.shutdown(wait=True)


def _stop_now(pool: cf.ProcessPoolExecutor) -> None:
    """Cancel the queued jobs and end the workers' jobs in flight: an interrupted or failed grid exits now instead
    of waiting for runs that may take minutes (jobs are pure and write atomically; a resume redoes them)."""
    terminate = getattr(pool, "terminate_workers", None)  # Python >= 3.14
    if terminate is not None:
        terminate()
        return
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in processes:
        proc.terminate()
    for proc in processes:
        proc.join(timeout=10)


class JobFailure:
    """Placeholder result of a job that raised (with ``return_exceptions=True``)."""

    __slots__ = ("index", "error")

    def __init__(self, index: int, error: BaseException):
        self.index = index
        self.error = error

    def __repr__(self) -> str:
        return f"JobFailure(index={self.index}, error={self.error!r})"


def run_jobs(
    fn: Callable[[Any], Any],
    jobs: Sequence[Any],
    *,
    scheduler: str | None = None,
    workers: int | None = None,
    on_result: Callable[[int, Any], None] | None = None,
    return_exceptions: bool = False,
    pool_restarts: int = 2,
) -> list:
    """Apply ``fn`` to every job concurrently; return the results in the order of ``jobs``.

    ``on_result(index, result)`` is called in this process as each job finishes (in completion
    order), e.g. to report progress. If a job raises, the pending jobs are cancelled and the
    exception propagates, unless ``return_exceptions`` is true: then the job's slot holds a
    :class:`JobFailure` and the other jobs carry on.

    A local worker process that dies (killed, out of memory) breaks the whole pool and fails
    every job still queued on it; those jobs, not their finished neighbours, are resubmitted to a
    fresh pool up to ``pool_restarts`` times (jobs are pure, so a rerun gives the same result).
    """
    if not callable(fn):
        raise ValueError("fn must be callable")
    jobs = list(jobs)
    if on_result is not None and not callable(on_result):
        raise ValueError("on_result must be callable or None")
    pool_restarts = check_int("pool_restarts", pool_restarts, minimum=0)
    check_executor_args(scheduler, workers)
    results: list = [None] * len(jobs)
    todo = list(range(len(jobs)))
    for attempt in range(pool_restarts + 1):
        if not todo:
            break
        broken: list[int] = []
        with open_executor(scheduler, workers) as ex:
            if isinstance(ex, _InlineExecutor):
                # One at a time, so that a failure stops the remaining jobs as it does on a pool.
                for i in todo:
                    _collect(i, ex.submit(fn, jobs[i]), results, on_result, return_exceptions)
                return results
            futures = {ex.submit(fn, jobs[i]): i for i in todo}
            try:
                for fut in cf.as_completed(futures):
                    if attempt < pool_restarts and isinstance(fut.exception(), BrokenProcessPool):
                        broken.append(futures[fut])
                        continue
                    _collect(futures[fut], fut, results, on_result, return_exceptions)
            except BaseException:
                for fut in futures:
                    fut.cancel()
                raise
        todo = sorted(broken)
    return results


def _collect(i: int, fut: cf.Future, results: list, on_result, return_exceptions: bool) -> None:
    exc = fut.exception()
    if exc is not None:
        if not return_exceptions:
            raise exc
        results[i] = JobFailure(i, exc)
    else:
        results[i] = fut.result()
    if on_result is not None:
        on_result(i, results[i])
