"""The MCP loop: one event loop on a daemon thread, where every connection's owner task lives.

Why not the loop that first uses a toolset: in a kernel, `agent.run()` runs on a private loop
in a worker thread while the kernel's loop sits blocked in the cell, so a connection owned by
the kernel loop could not answer it, and one owned by the private loop would die with it (a
new server process per `agent.run()`, torn down by `asyncio.run` cancelling its tasks). On a
loop of their own, connections serve the kernel's loop, private loops and scripts alike, one
server process each, and they can still be closed cleanly at interpreter exit, whatever state
the kernel's loop is in by then. Callers hand work over with `run` (from any loop) or
`run_blocking` (from plain code); the SDK's anyio contexts never leave their owner task.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

__all__ = ["at_exit", "loop", "run", "run_blocking"]

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None
_exit_hooks: list[Callable[[], Awaitable[None]]] = []
EXIT_TIMEOUT = 10.0  # seconds the atexit handler waits for connections to close


def loop() -> asyncio.AbstractEventLoop:
    """The MCP loop, started on first use."""
    global _loop, _thread
    with _lock:
        if _loop is None or _thread is None or not _thread.is_alive():
            ready = threading.Event()
            new_loop = asyncio.new_event_loop()

            def serve() -> None:
                asyncio.set_event_loop(new_loop)
                new_loop.call_soon(ready.set)
                new_loop.run_forever()

            _loop = new_loop
            _thread = threading.Thread(target=serve, name="adk-mcp", daemon=True)
            _thread.start()
            ready.wait()
        return _loop


def in_loop() -> bool:
    """Whether the caller runs on the MCP loop's thread."""
    return _thread is not None and threading.current_thread() is _thread


async def run(coro: Coroutine[Any, Any, T]) -> T:
    """Await `coro` on the MCP loop from any other loop; cancelling the caller cancels it there too."""
    if in_loop():
        return await coro
    return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, loop()))


def run_blocking(coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
    """Run `coro` on the MCP loop and wait for it from synchronous code (a magic, atexit)."""
    if in_loop():
        coro.close()
        raise RuntimeError("run_blocking called on the MCP loop itself; await the coroutine instead")
    future = asyncio.run_coroutine_threadsafe(coro, loop())
    try:
        return future.result(timeout)
    except concurrent.futures.TimeoutError:
        future.cancel()
        raise TimeoutError(f"the MCP loop did not finish within {timeout} s") from None


def at_exit(hook: Callable[[], Awaitable[None]]) -> None:
    """Run `hook()` on the MCP loop when the interpreter exits (before the loop stops)."""
    with _lock:
        if not _exit_hooks:
            atexit.register(_shutdown)
        _exit_hooks.append(hook)


def _shutdown() -> None:
    """atexit: run the hooks (closing every connection), then stop the loop and its thread."""
    with _lock:
        running, thread = _loop, _thread
    if running is None or thread is None or not thread.is_alive():
        return

    async def hooks() -> None:
        await asyncio.gather(*(hook() for hook in _exit_hooks), return_exceptions=True)

    with contextlib.suppress(Exception):  # at exit, there is nobody left to report to
        run_blocking(hooks(), EXIT_TIMEOUT)
    running.call_soon_threadsafe(running.stop)
    thread.join(2.0)
