"""Timing harness shared by the in-process workload and the peer scripts (stdlib only)."""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Awaitable, Callable

ROUNDS = 5


async def per_invocation(invoke: Callable[[], Awaitable[None]], n: int) -> float:
    """Return the median over `ROUNDS` rounds of seconds per invocation, after a warm-up.

    Args:
        invoke: Runs one full invocation (fresh session, user text to final answer).
        n: Invocations per round.
    """
    for _ in range(max(50, n // 10)):
        await invoke()
    rounds = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        for _ in range(n):
            await invoke()
        rounds.append((time.perf_counter() - start) / n)
    return statistics.median(rounds)


def report(framework: str, version: str, seconds: float, n: int) -> None:
    """Print the one JSON line that `bench/loop.py` reads from a peer's stdout."""
    print(json.dumps({"framework": framework, "version": version, "per_invocation_s": seconds, "n": n}))
