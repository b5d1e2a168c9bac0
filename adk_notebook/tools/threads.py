"""The worker threads that sync tool functions run on, and how a call on one is stopped.

A plain (non-async) tool function runs on a worker thread, so the event loop stays free for
interrupts, the Stop button, progress lines and parallel calls. Python has no way to kill a
thread, but it can raise an exception in one at its next Python instruction
(`PyThreadState_SetAsyncExc`). So when a run is cancelled (an interrupt, Ctrl-C, Stop,
`runner.cancel`, a cancelled task) a call still running on its thread is stopped that way with
`ToolCallStopped`, a BaseException, so that the function's own `except Exception` does not catch
it (its `finally` blocks and `with` exits run as usual). Limits: a call blocked in C
(`time.sleep`, a socket read, a lock) stops only when that returns; a function that catches
BaseException can ignore it. The exception is sent only while the thread is inside that very
call, and one not yet raised when the call returns is withdrawn, so a thread the pool reuses for
other work never gets it.

A call that passes its timeout is answered at once but not stopped (only the run's cancel is):
the function runs on until it returns and what it returns then is dropped. Such threads hold
nothing up, being daemon threads of a pool of our own, not asyncio's default executor: nothing
waits for them, neither the end of `agent.run()` nor Ctrl-C in a script nor the interpreter's
exit. So that they cannot pile up unnoticed, they are counted per tool: while
`MAX_LEFT_RUNNING` calls of a tool are still running after their call ended, a new call of that
tool is refused at once with an error saying so (the model and the tool card see it) instead of
starting one more thread. It works again as soon as one of them returns.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import ctypes
import queue
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from ..core.errors import AdkError

if TYPE_CHECKING:
    from .base import Tool

__all__ = ["MAX_LEFT_RUNNING", "ToolCallStopped", "left_running", "run_in_thread", "time_limit"]

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


class ToolCallStopped(BaseException):
    """Raised inside a sync tool function whose call was cancelled with its run.

    A BaseException, as KeyboardInterrupt is, so that `except Exception` in the tool lets it pass.
    """


# The C function, called with the GIL held; a second prototype passes NULL, which withdraws
# an exception sent but not yet raised (py_object would pass None, not NULL).
_send_async = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_ulong, ctypes.py_object)(
    ("PyThreadState_SetAsyncExc", ctypes.pythonapi)
)
_withdraw_async = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p)(
    ("PyThreadState_SetAsyncExc", ctypes.pythonapi)
)


class _Call:
    """One call on a worker thread, stoppable only while that thread is inside it.

    The lock orders `stop` against the thread entering and leaving the call: the exception is
    sent at most once, only between `enter` and `leave`, and `leave` withdraws it if it has not
    been raised yet. Should it be raised in `leave` itself (after the function returned), it was
    sent once and is spent, so nothing can reach the thread later.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._thread: int | None = None  # the worker's id while it is inside the call
        self._stopped = False

    def enter(self) -> None:
        with self._lock:
            if self._stopped:  # cancelled between the thread picking the call up and here
                raise ToolCallStopped
            self._thread = threading.get_ident()

    def leave(self) -> None:
        with self._lock:
            thread, self._thread = self._thread, None
            if thread is not None and self._stopped:
                _withdraw_async(thread, None)

    def stop(self) -> None:
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            if self._thread is not None:
                _send_async(self._thread, ToolCallStopped)


_deadline: contextvars.ContextVar[asyncio.Timeout | None] = contextvars.ContextVar("adk_tool_deadline", default=None)


@asynccontextmanager
async def time_limit(seconds: float | None) -> AsyncIterator[asyncio.Timeout]:
    """`asyncio.timeout(seconds)` around one tool call, known to `run_in_thread`.

    A sync call cut short by it is not stopped: a timeout answers that call and the run goes on,
    while an exception raised in a thread the user did not ask to stop could leave a library's
    lock held. Only the run's cancel stops the thread.
    """
    async with asyncio.timeout(seconds) as deadline:
        token = _deadline.set(deadline)
        try:
            yield deadline
        finally:
            _deadline.reset(token)


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

    When the await is cancelled, other than by a `time_limit`, the call is stopped: it raises
    `ToolCallStopped` at its next Python instruction (blocked in C, when that returns).
    `then()` is called once the function has returned or raised, or when it will never run
    (refused, or cancelled before a thread picked it up) — on whichever thread that happens.
    """
    left = left_running(tool)
    if left >= MAX_LEFT_RUNNING:
        if then is not None:
            then()
        raise AdkError.tool(
            f"Tool {tool.name!r} is refused for now: {left} earlier calls of it were cancelled or timed out and are "
            "still running in their threads (a sync function past its timeout, or blocked in C, cannot be stopped). "
            "It works again as soon as one of them returns; check why it hangs (a network call without a timeout?).",
            code="tool_still_running",
            category="unavailable",
        )
    future: concurrent.futures.Future[Any] = concurrent.futures.Future()
    if then is not None:
        future.add_done_callback(lambda _: then())
    context = contextvars.copy_context()
    call = _Call()

    def job() -> None:
        if not future.set_running_or_notify_cancel():
            return  # cancelled before it started
        try:
            try:
                call.enter()
                result = context.run(fn, *args)
            finally:
                call.leave()
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting call (ToolCallStopped too)
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
            deadline = _deadline.get()
            if deadline is None or not deadline.expired():
                call.stop()
        raise
