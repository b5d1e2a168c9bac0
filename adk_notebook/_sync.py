"""Running a coroutine to completion from synchronous code, even inside a running kernel.

Without a running event loop (a script) the coroutine runs on a new loop in this thread. With
one (ipykernel always has one, so `asyncio.run` fails in a cell), rather than patching the
user's loop (nest_asyncio breaks on 3.12+), it runs on a private loop in a worker thread and
the caller waits for it.

Either way Ctrl-C cancels the coroutine's task and waits for it to end (a run answers its open
calls and releases its session), then raises KeyboardInterrupt: nothing goes on behind the
caller's back. A worker's loop that does not even take the cancel within half a second (a tool
blocks it with `time.sleep` inside `async def`) is no longer waited for: the run ends when the
loop is free. Should the run take the cancel and still not end (a tool that ignores it),
another Ctrl-C stops waiting.
Unlike `asyncio.run`, the end does not wait for threads the coroutine left in the loop's
default executor.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from ._interrupt import sigint_cancels

__all__ = ["run_sync"]

T = TypeVar("T")


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro` to the end and return its result; see the module docstring for Ctrl-C."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _run_here(coro)
    return _run_in_worker(coro)


class _Job:
    """The coroutine's task on its loop, so a signal handler can cancel it (without a lock)."""

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.task: asyncio.Task[Any] | None = None
        self.requested = False

    def bind(self, loop: asyncio.AbstractEventLoop, task: asyncio.Task[Any]) -> None:
        self.loop, self.task = loop, task
        if self.requested:  # Ctrl-C came before the task existed
            task.cancel()

    def cancel(self) -> None:
        self.requested = True
        loop, task = self.loop, self.task
        if loop is not None and task is not None:
            try:
                loop.call_soon_threadsafe(task.cancel)
            except RuntimeError:  # the loop is closed: the coroutine is over
                pass


def _run_here(coro: Coroutine[Any, Any, T]) -> T:
    job = _Job()
    loop = asyncio.new_event_loop()
    with sigint_cancels(job.cancel, loop=loop, escape=True) as interrupts:
        try:
            return _run_on(loop, coro, job)
        except asyncio.CancelledError:
            if interrupts.count:
                raise KeyboardInterrupt from None
            raise


def _run_in_worker(coro: Coroutine[Any, Any, T]) -> T:
    job = _Job()
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = _run_on(asyncio.new_event_loop(), coro, job)
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            outcome["error"] = exc

    worker = threading.Thread(target=target, name="adk-run-sync", daemon=True)
    with sigint_cancels(job.cancel, worker_loop=lambda: job.loop) as interrupts:
        worker.start()
        worker.join()
    error = outcome.get("error")
    if error is not None:
        if interrupts.count and isinstance(error, asyncio.CancelledError):
            raise KeyboardInterrupt from None
        raise error
    return outcome["value"]


def _run_on(loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, T], job: _Job) -> T:
    """Run `coro` as a task on `loop` (not running yet), then close the loop as asyncio.run does."""
    try:
        task = loop.create_task(coro)
        job.bind(loop, task)
        return loop.run_until_complete(task)
    finally:
        try:
            if _cancel_remaining(loop):  # else a generator is still inside a task that ignores its cancel
                loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()  # the default executor is shut down without waiting for its threads


_LEFTOVERS_WAIT = 1.0  # seconds the tasks still running at the end get to finish their cancel


def _cancel_remaining(loop: asyncio.AbstractEventLoop) -> bool:
    """Cancel the tasks still running (after a Ctrl-C, the run itself) and let them clean up;
    unlike asyncio.run, give up on one that ignores its cancel rather than hang. True if all ended."""
    tasks = [task for task in asyncio.all_tasks(loop) if not task.done()]
    for task in tasks:
        task.cancel()
    if not tasks:
        return True
    _, pending = loop.run_until_complete(asyncio.wait(tasks, timeout=_LEFTOVERS_WAIT))
    return not pending
