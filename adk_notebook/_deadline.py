"""A run's time limit: `RunConfig(time_limit=)` applied to the runner's event stream."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import TypeVar

from .core.errors import AdkError

__all__ = ["within_time_limit"]

T = TypeVar("T")


async def within_time_limit(stream: AsyncGenerator[T, None], seconds: float) -> AsyncGenerator[T, None]:
    """`stream`'s items until `seconds` have passed since the first was asked for, then
    AdkError(agent, timeout, ``run_time_limit``).

    One timer for the whole run: when it fires while `stream` is being stepped, it cancels the
    task stepping it, so the run stops where it waits (a model read, a tool) and answers its open
    calls as a cancelled run does; when it fires between steps, the next step closes the stream
    instead. The consumer's own awaits between steps are never cancelled. (An `asyncio.timeout`
    per step would do the same at ~20 µs a step, too much for a stream of thousands of chunks.)
    """
    loop = asyncio.get_running_loop()
    stepping: asyncio.Task[object] | None = None  # the task inside `anext(stream)`, if any
    expired = False

    def expire() -> None:
        nonlocal expired
        expired = True
        if stepping is not None:
            stepping.cancel()

    timer = loop.call_at(loop.time() + seconds, expire)
    try:
        async with aclosing(stream):  # closing it answers the run's open calls
            while not expired:
                stepping = asyncio.current_task()
                try:
                    item = await anext(stream)
                except StopAsyncIteration:
                    return
                except asyncio.CancelledError:
                    if not expired or stepping is None or stepping.uncancel() > 0:
                        raise  # a cancel that is not (only) ours
                    raise _exceeded(seconds) from None
                finally:
                    stepping = None
                yield item
            raise _exceeded(seconds)
    finally:
        timer.cancel()


def _exceeded(seconds: float) -> AdkError:
    return AdkError(
        "agent", "timeout", "run_time_limit",
        f"The run took longer than its time limit (RunConfig time_limit={seconds:g} s) and was stopped; "
        "calls it had started are answered as cancelled. Raise time_limit for longer runs.",
    )  # fmt: skip
