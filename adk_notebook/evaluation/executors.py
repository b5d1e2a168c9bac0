"""Where the cases run: here, `max_concurrency` at a time, or as Ray tasks (extra `[ray]`).

`map_agent(source, job, items, ...)` runs `job(agent, item)` for every item and returns the
results in order. Locally `source` may be an agent or a factory; on Ray it must be a picklable
zero-argument factory, called on the worker, so models and keys are made there. A task whose
worker dies gets `on_error(item, reason)` in its place and the others go on.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any, Literal, TypeVar

from ..agents.base import Agent
from ..core.errors import AdkError
from ..extras import install_hint

__all__ = ["AgentSource", "Executor", "map_agent"]

T = TypeVar("T")
R = TypeVar("R")
AgentSource = Agent | Callable[[], Agent]
Executor = Literal["local", "ray"]


async def map_agent(
    source: AgentSource,
    job: Callable[[Agent, T], Coroutine[Any, Any, R]],
    items: Sequence[T],
    on_error: Callable[[T, str], R],
    *,
    executor: Executor = "local",
    max_concurrency: int = 1,
    ray_address: str | None = None,
    ray_options: Mapping[str, Any] | None = None,
) -> list[R]:
    """`job(agent, item)` for each item, in order; `job` itself turns its failures into results."""
    if max_concurrency < 1:
        raise AdkError(
            "eval",
            "invalid_input",
            "invalid_concurrency",
            f"max_concurrency must be ≥ 1; got {max_concurrency}.",
        )
    if executor == "local":
        gate = asyncio.Semaphore(max_concurrency)

        async def one(item: T) -> R:
            async with gate:
                return await job(build_agent(source), item)

        return list(await asyncio.gather(*(one(item) for item in items)))
    if executor == "ray":
        if isinstance(source, Agent):
            raise AdkError(
                "eval",
                "invalid_input",
                "agent_not_factory",
                "executor='ray' builds the agent on each worker: pass a zero-argument function that "
                f"returns it (e.g. `def make_agent(): return LlmAgent(...)`), not the agent {source.name!r}.",
            )
        return await _map_ray(source, job, items, on_error, ray_address, dict(ray_options or {}))
    raise AdkError(
        "eval",
        "invalid_input",
        "unknown_executor",
        f"executor must be 'local' or 'ray'; got {executor!r}.",
    )


def build_agent(source: AgentSource) -> Agent:
    """The agent itself, or a fresh one from the factory."""
    if isinstance(source, Agent):
        return source
    agent = source()
    if not isinstance(agent, Agent):
        raise AdkError(
            "eval",
            "invalid_input",
            "not_an_agent",
            f"the agent factory returned {type(agent).__name__}, not an Agent.",
        )
    return agent


def _on_worker(
    factory: Callable[[], Agent],
    job: Callable[[Agent, Any], Coroutine[Any, Any, Any]],
    item: Any,
) -> Any:
    """A Ray task: build the agent here and run the job on a loop of its own."""
    return asyncio.run(job(build_agent(factory), item))


async def _map_ray(
    factory: Callable[[], Agent],
    job: Callable[[Agent, T], Coroutine[Any, Any, R]],
    items: Sequence[T],
    on_error: Callable[[T, str], R],
    address: str | None,
    options: dict[str, Any],
) -> list[R]:
    try:
        import ray
    except ImportError as exc:
        raise ImportError(f"executor='ray' needs Ray: {install_hint('ray')}") from exc
    started = not ray.is_initialized()
    if started:
        if address is None:  # a local Ray for this run, importing what this process imports
            options.setdefault("include_dashboard", False)
            path = os.pathsep.join(p for p in sys.path if p and os.path.isdir(p))
            options.setdefault("runtime_env", {"env_vars": {"PYTHONPATH": path}})
        options.setdefault("log_to_driver", False)
        ray.init(address=address, **options)
    try:
        task = ray.remote(max_retries=0)(_on_worker)
        refs = [task.remote(factory, job, item) for item in items]
        results: list[R] = []
        for item, ref in zip(items, refs, strict=True):
            try:
                results.append(await ref)
            except ray.exceptions.RayError as exc:  # the worker died, or the task could not start
                results.append(on_error(item, _reason(exc)))
        return results
    finally:
        if started:
            ray.shutdown()


def _reason(exc: Exception) -> str:
    """A Ray error in one line: its class and the last line of its message (the cause), no colours."""
    lines = [line for line in re.sub(r"\x1b\[[0-9;]*m", "", str(exc)).splitlines() if line.strip()]
    return f"{type(exc).__name__}: {lines[-1].strip() if lines else ''}"
