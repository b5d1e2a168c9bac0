"""The session-store workload that bench/sessions.py times, the same for every framework (stdlib only).

`measure(create, append, get, n)`: appends per second (one session, `n` events appended one
after another, each a model text with a session-state change) and the time to read a session of
50 such events, medians over ROUNDS. The three callables wrap one framework's session service.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

ROUNDS = 5
READ_EVENTS = 50


async def measure(
    create: Callable[[str], Awaitable[Any]],
    append: Callable[[Any, int], Awaitable[None]],
    get: Callable[[str], Awaitable[Any]],
    n: int,
) -> dict[str, float]:
    """{"appends_per_s", "read_50_ms"}; `create(session_id)` returns a session, `append(session, i)`
    stores event i in it, `get(session_id)` reads it back whole."""
    rates = []
    # The first round warms up (tables created, connections opened)
    for round_ in range(ROUNDS + 1):
        session = await create(f"append-{round_}")
        start = time.perf_counter()
        for i in range(n):
            await append(session, i)
        if round_:
            rates.append(n / (time.perf_counter() - start))
    session = await create("read")
    for i in range(READ_EVENTS):
        await append(session, i)
    reads = []
    for _ in range(ROUNDS * 10 + 5):
        start = time.perf_counter()
        got = await get("read")
        reads.append(time.perf_counter() - start)
        assert len(got.events) == READ_EVENTS, len(got.events)
    return {
        "appends_per_s": statistics.median(rates),
        "read_50_ms": statistics.median(reads[5:]) * 1000,
    }
