"""The worker threads that sync tool functions run on, and what happens to one left running.

A plain (non-async) tool function runs on a worker thread, so the event loop stays free for
interrupts, the Stop button, progress lines and parallel calls. Python cannot stop a thread:
when a call is cancelled (an interrupt, Stop, `runner.cancel`) or passes its timeout, the call is
answered at once, but the function runs on until it returns; what it returns then is dropped.

So that such threads cannot hold anything up, they are daemon threads of a pool of our own, not
asyncio's default executor: nothing waits for them, neither the end of `agent.run()` nor Ctrl-C
in a script nor the interpreter's exit. So that they cannot pile up unnoticed, they are counted
per tool: while `MAX_LEFT_RUNNING` calls of a tool are still running after their call ended, a
new call of that tool is refused at once with an error saying so (the model and the tool card
see it) instead of starting one more thread. It works again as soon as one of them returns.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import queue
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..core.errors import AdkError

if TYPE_CHECKING:
    from .base import Tool

__all__ = ["MAX_LEFT_RUNNING", "left_running", "run_in_thread"]

MAX_LEFT_RUNNING = 4  # per tool: threads still running calls that were already answered
_IDLE_SECONDS = 60.0  # an idle worker thread ends after this long


class _Pool:
    """Daemon worker threads, made on demand and reused while they are idle."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._idle = threading.Semaphore(0)  # one token per idle worker nobody has claimed yet

    def submit(self, job: Callable[[], None]) -> None:
        self._jobs.put(job)
        if not self._idle.acquire(blocking=False):
            threading.Thread(target=self._work, name="adk-tool", daemon=True).start()

    def _work(self) -> None:
        while True:
            try:
                job = self._jobs.get(timeout=_IDLE_SECONDS)
            except queue.Empty:
                if self._idle.acquire(blocking=False):  # take back this worker's token, then end
                    return
                continue  # a submit claimed this worker: its job is on the way
            job()
            del job
            self._idle.release()


_POOL = _Pool()
_left_lock = threading.Lock()
_left: dict[Tool, int] = {}


def left_running(tool: Tool) -> int:
    """How many calls of `tool` were answered (cancelled, timed out) while their thread runs on."""
    with _left_lock:
        return _left.get(tool, 0)


def _count(tool: Tool, step: int) -> None:
    with _left_lock:
        value = _left.get(tool, 0) + step
        if value:
            _left[tool] = value
        else:
            _left.pop(tool, None)


async def run_in_thread(tool: Tool, fn: Callable[..., Any], *args: Any, then: Callable[[], None] | None = None) -> Any:
    """`fn(*args)` on a worker thread (in a copy of the caller's context), awaited.

    `then()` is called once the function has returned or raised, or when it will never run
    (refused, or cancelled before a thread picked it up) — on whichever thread that happens.
    """
    left = left_running(tool)
    if left >= MAX_LEFT_RUNNING:
        if then is not None:
            then()
        raise AdkError.tool(
            f"Tool {tool.name!r} is refused for now: {left} earlier calls of it were cancelled or timed out and are "
            "still running in their threads (a sync function cannot be stopped). It works again as soon as one of "
            "them returns; check why it hangs (a network call without a timeout?).",
            code="tool_still_running",
            category="unavailable",
        )
    future: concurrent.futures.Future[Any] = concurrent.futures.Future()
    if then is not None:
        future.add_done_callback(lambda _: then())
    context = contextvars.copy_context()

    def job() -> None:
        if not future.set_running_or_notify_cancel():
            return  # cancelled before it started
        try:
            result = context.run(fn, *args)
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting call
            future.set_exception(exc)
        else:
            future.set_result(result)

    _POOL.submit(job)
    try:
        return await asyncio.wrap_future(future)
    except asyncio.CancelledError:
        if not future.cancel():  # it is running: count its thread until the function returns
            _count(tool, 1)
            future.add_done_callback(lambda _: _count(tool, -1))
        raise
