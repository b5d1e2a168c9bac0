"""Callbacks: user hooks around the agent, each model call and each tool call.

| callback          | called with                        | a non-None return...                     |
|-------------------|------------------------------------|------------------------------------------|
| before_agent      | (ctx)                              | Content: the agent does not run          |
| after_agent       | (ctx)                              | Content: added as a last answer          |
| before_model      | (ctx, request)                     | LlmResponse: the model is not called     |
| after_model       | (ctx, response)                    | LlmResponse: replaces the response       |
| before_tool       | (ctx, tool, args)                  | dict: the tool does not run; the result  |
| after_tool        | (ctx, tool, args, response)        | dict: replaces the response              |
| on_tool_error     | (ctx, tool, args, error)           | dict: a fallback result for the model    |

Each may be sync or async, and a list of them runs in order until one returns non-None
(short-circuit). A callback may take fewer parameters than listed (e.g. the seed's
`after_tool_callback(ctx)` reading `ctx.tool_outcome`); the trailing ones are then left out.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any, TypeAlias

__all__ = ["Callback", "CallbackChain"]

Callback: TypeAlias = Callable[..., Any]


def _positional_capacity(fn: Callable[..., Any]) -> int | None:
    """How many positional arguments `fn` takes (None: any number)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return None
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)


class CallbackChain:
    """Zero or more callbacks of one kind, prepared once so each call is cheap."""

    __slots__ = ("_callbacks",)

    def __init__(self, callbacks: Callback | Sequence[Callback] | None = None) -> None:
        if callbacks is None:
            items: list[Callback] = []
        elif callable(callbacks):
            items = [callbacks]
        else:
            items = list(callbacks)
        self._callbacks = [(fn, _positional_capacity(fn)) for fn in items]

    def __bool__(self) -> bool:
        return bool(self._callbacks)

    def __add__(self, other: CallbackChain) -> CallbackChain:
        """This chain's callbacks, then `other`'s (a run's plugins before an agent's own)."""
        if not other._callbacks:
            return self
        if not self._callbacks:
            return other
        joined = CallbackChain()
        joined._callbacks = self._callbacks + other._callbacks
        return joined

    async def __call__(self, *args: Any) -> Any:
        """Run the callbacks in order; return the first non-None result (None if all return None)."""
        for fn, capacity in self._callbacks:
            result = fn(*args) if capacity is None else fn(*args[:capacity])
            if inspect.isawaitable(result):
                result = await result
            if result is not None:
                return result
        return None
