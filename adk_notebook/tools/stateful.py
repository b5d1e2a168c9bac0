"""StatefulTool: a tool whose calls share one state object (a counter, a cache, a client pool).

    cache = {"greeting": "hello"}

    cache_lookup = StatefulTool(
        "cache_lookup",
        "Look up a value in the application cache",
        cache,
        lambda state, ctx, args: {"key": args["key"], "value": state.get(args["key"], "")},
    ).with_read_only().with_concurrency_safe()

Calls run one at a time by default, so a handler may read, await and write the state without
another call of the same tool slipping in between: whatever the dispatch (PARALLEL), and across
threads and event loops (`agent.run()` gives each call a loop of its own; several threads may
run agents that share the tool). A cancelled call keeps its turn until its handler has really
returned: a sync handler's thread cannot be stopped, so the next call waits for it. Pass
`exclusive=False` when the state guards itself and calls may overlap (a plain, non-async
handler then runs on several worker threads at once: guard the state with a threading.Lock).
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from .function import FunctionTool
from .threads import run_in_thread

if TYPE_CHECKING:
    from ..core.context import ToolContext

__all__ = ["StatefulTool"]

S = TypeVar("S")


class StatefulTool(FunctionTool, Generic[S]):
    """A tool backed by `handler(state, ctx, args)` (sync or async) and one shared `state`.

    It has FunctionTool's builders: `with_parameters_schema`, `with_response_schema`,
    `with_long_running`, `with_read_only`, `with_concurrency_safe`, `with_scopes`, `with_timeout`.

    Args:
        name: The name the model calls it by.
        description: What it does and when to use it.
        state: The object every call receives; the tool keeps a reference, never a copy.
        handler: `handler(state, ctx, args)`, returning the result (or awaitable of it).
        exclusive: Run one call at a time (default). False when the state has its own locking.
        timeout: Most seconds one call may take, waiting for its turn included (see FunctionTool).
    """

    def __init__(
        self,
        name: str,
        description: str,
        state: S,
        handler: Callable[[S, ToolContext, dict[str, Any]], Any],
        *,
        exclusive: bool = True,
        timeout: float | None = None,
    ) -> None:
        super().__init__(name, description, handler, timeout=timeout)  # type: ignore[arg-type]  # (state, ctx, args): _run calls it
        self.state = state
        self.exclusive = exclusive
        self._turns = _Turns()
        self._recipe = (None, (name, description, state, handler), {"exclusive": exclusive, "timeout": timeout})

    async def execute(self, ctx: ToolContext, args: dict[str, Any]) -> Any:
        if not self.exclusive:
            return await self._run(ctx, args, None)
        await self._turns.acquire()
        if self._blocking:  # the worker thread gives the turn back when the handler returns
            return await self._run(ctx, args, self._turns.release)
        try:
            return await self._run(ctx, args, None)
        finally:
            self._turns.release()

    async def _run(self, ctx: ToolContext, args: dict[str, Any], then: Callable[[], None] | None) -> Any:
        if self._blocking:  # a plain function runs on a worker thread, as FunctionTool's do
            return await run_in_thread(self, self._handler, self.state, ctx, args, then=then)
        result = self._handler(self.state, ctx, args)
        if inspect.isawaitable(result):
            result = await result
        return result


class _Turns:
    """A lock for callers on any thread and event loop, taken in arrival order.

    An asyncio.Lock serves one loop; a threading.Lock would block the loop while it waits. A
    waiter here awaits a future of its own loop; `release` (from any thread) hands the lock to
    the next waiter through that loop.
    """

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._held = False
        self._waiters: deque[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = deque()

    async def acquire(self) -> None:
        loop = asyncio.get_running_loop()
        with self._mutex:
            if not self._held:
                self._held = True
                return
            waiter = (loop, loop.create_future())
            self._waiters.append(waiter)
        try:
            await waiter[1]
        except asyncio.CancelledError:
            with self._mutex:
                handed = waiter[1].done() and not waiter[1].cancelled()
                if not handed and waiter in self._waiters:
                    self._waiters.remove(waiter)
            if handed:  # the lock reached us just as we were cancelled: pass it on
                self.release()
            raise

    def release(self) -> None:
        with self._mutex:
            while self._waiters:
                loop, future = self._waiters.popleft()
                try:
                    loop.call_soon_threadsafe(self._hand, future)
                    return
                except RuntimeError:  # that waiter's loop is closed: the next one
                    continue
            self._held = False

    def _hand(self, future: asyncio.Future[None]) -> None:
        if future.done():  # cancelled on its way: the next waiter
            self.release()
        else:
            future.set_result(None)
