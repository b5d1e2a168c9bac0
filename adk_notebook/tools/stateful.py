"""StatefulTool: a tool whose calls share one state object (a counter, a cache, a client pool).

    cache = {"greeting": "hello"}

    cache_lookup = StatefulTool(
        "cache_lookup",
        "Look up a value in the application cache",
        cache,
        lambda state, ctx, args: {"key": args["key"], "value": state.get(args["key"], "")},
    ).with_read_only().with_concurrency_safe()

Calls run one at a time by default, so a handler may read, await and write the state without
another call of the same tool slipping in between (as happens with PARALLEL dispatch). Pass
`exclusive=False` when the state guards itself and calls may overlap (a plain, non-async
handler then runs on several worker threads at once: guard the state with a threading.Lock).
"""

from __future__ import annotations

import asyncio
import inspect
import weakref
from collections.abc import Callable
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from .function import FunctionTool

if TYPE_CHECKING:
    from ..core.context import ToolContext

__all__ = ["StatefulTool"]

S = TypeVar("S")


class StatefulTool(FunctionTool, Generic[S]):
    """A tool backed by `handler(state, ctx, args)` (sync or async) and one shared `state`.

    It has FunctionTool's builders: `with_parameters_schema`, `with_response_schema`,
    `with_long_running`, `with_read_only`, `with_concurrency_safe`, `with_scopes`.

    Args:
        name: The name the model calls it by.
        description: What it does and when to use it.
        state: The object every call receives; the tool keeps a reference, never a copy.
        handler: `handler(state, ctx, args)`, returning the result (or awaitable of it).
        exclusive: Run one call at a time (default). False when the state has its own locking.
    """

    def __init__(
        self,
        name: str,
        description: str,
        state: S,
        handler: Callable[[S, ToolContext, dict[str, Any]], Any],
        *,
        exclusive: bool = True,
    ) -> None:
        super().__init__(name, description, handler)
        self.state = state
        self.exclusive = exclusive
        # One asyncio.Lock per event loop: `agent.run()` in a notebook runs each call on a
        # fresh loop, and an asyncio.Lock must not be shared between loops.
        self._locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = weakref.WeakKeyDictionary()

    async def execute(self, ctx: ToolContext, args: dict[str, Any]) -> Any:
        async with self._lock() if self.exclusive else nullcontext():
            if self._blocking:  # a plain function runs on a worker thread, as FunctionTool's do
                return await asyncio.to_thread(self._handler, self.state, ctx, args)
            result = self._handler(self.state, ctx, args)
            if inspect.isawaitable(result):
                result = await result
            return result

    def _lock(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        lock = self._locks.get(loop)
        if lock is None:
            lock = self._locks[loop] = asyncio.Lock()
        return lock
