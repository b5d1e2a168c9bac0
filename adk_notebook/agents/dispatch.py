"""Running the tool calls of one model turn: strategies, retries, circuit breaker, progress.

A tool never crashes the loop: an unknown name, missing scopes, arguments its schema rejects,
an exception, a breaker that tripped — each becomes `{"error": ...}` in the function
response, and the model carries on. Responses always come back in the model's order.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import timedelta
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from ..core.content import INVALID_ARGUMENTS_KEY, Content, FunctionCall, FunctionResponse, Part
from ..core.context import InvocationContext, ToolContext
from ..core.errors import AdkError
from ..core.events import Event, EventActions, ToolOutcome
from ..tools.base import Tool
from ..tools.progress import ProgressChannel
from ..tools.responses import FunctionResponseData
from ..tools.tracebacks import user_traceback

if TYPE_CHECKING:
    from .llm_agent import LlmAgent

__all__ = ["RetryBudget", "ToolDispatcher", "ToolExecutionStrategy"]


class ToolExecutionStrategy(StrEnum):
    """How the calls of one model turn run.

    SEQUENTIAL: one at a time, in the model's order (the default).
    PARALLEL: all at once, whatever the tools declare (you vouch for their safety).
    AUTO: calls to tools that are both read-only and concurrency-safe run at once first,
        then the others one at a time in order.
    """

    SEQUENTIAL = "sequential"
    PARALLEL = "parallel"
    AUTO = "auto"


@dataclass(frozen=True, slots=True)
class RetryBudget:
    """Run a failing tool again up to `max_retries` times, `delay` seconds apart."""

    max_retries: int = 0
    delay: float = 0.0

    def __post_init__(self) -> None:
        if isinstance(self.delay, timedelta):
            object.__setattr__(self, "delay", self.delay.total_seconds())
        if self.max_retries < 0 or self.delay < 0:
            raise AdkError.config("RetryBudget needs max_retries >= 0 and delay >= 0.", code="invalid_retry_budget")


@dataclass(slots=True)
class _Result:
    response: dict[str, Any]
    outcome: ToolOutcome
    parts: list[Part] = field(default_factory=list)  # images or files the tool returned


class ToolDispatcher:
    """Runs tool calls for one invocation of `agent`; the circuit breaker counts live here."""

    def __init__(self, invocation: InvocationContext, agent: LlmAgent, tools: Mapping[str, Tool]) -> None:
        self.invocation = invocation
        self.agent = agent
        self.tools = tools
        self.consecutive_failures: dict[str, int] = {}

    async def run(self, calls: list[FunctionCall]) -> AsyncIterator[Event]:
        """Yield progress events while the calls run, then one event with every response."""
        channel = ProgressChannel()
        actions = EventActions()
        results: list[_Result | None] = [None] * len(calls)
        batch = asyncio.ensure_future(self._run_batch(calls, actions, channel, results))
        batch.add_done_callback(channel.close)
        try:
            while (progress := await channel.queue.get()) is not None:
                yield self._progress_event(progress)
            batch.result()
        finally:
            if not batch.done():
                batch.cancel()
                with suppress(asyncio.CancelledError):
                    await batch
        done = [r for r in results if r is not None]
        yield Event(
            author=self.agent.name,
            invocation_id=self.invocation.invocation_id,
            content=Content("tool", [
                Part(function_response=FunctionResponse(call.name, r.response, call.id, r.parts))
                for call, r in zip(calls, done)
            ]),
            actions=actions,
            long_running_tool_ids=[
                call.id for call in calls if call.id and (t := self.tools.get(call.name)) is not None and t.is_long_running
            ],
            tool_outcomes=[r.outcome for r in done],
        )

    def _progress_event(self, progress: Any) -> Event:
        return Event.chunk(self.agent.name, None, self.invocation.invocation_id, progress)

    async def _run_batch(
        self, calls: list[FunctionCall], actions: EventActions, channel: ProgressChannel, results: list[_Result | None]
    ) -> None:
        async def run(index: int) -> None:
            results[index] = await self._run_call(calls[index], actions, channel)

        strategy = self.agent.tool_execution_strategy
        if strategy is ToolExecutionStrategy.SEQUENTIAL or len(calls) == 1:
            concurrent: list[int] = []
        elif strategy is ToolExecutionStrategy.PARALLEL:
            concurrent = list(range(len(calls)))
        else:
            concurrent = [i for i, call in enumerate(calls) if _is_parallel_safe(self.tools.get(call.name))]
        if concurrent:
            await asyncio.gather(*(run(i) for i in concurrent))
        for i in range(len(calls)):
            if results[i] is None:
                await run(i)

    async def _run_call(self, call: FunctionCall, actions: EventActions, channel: ProgressChannel) -> _Result:
        started = time.perf_counter()
        tool = self.tools.get(call.name)
        refusal = self._refusal(call, tool)
        if refusal is not None or tool is None:
            return _refused(call, refusal or {})
        try:
            args = tool.validate_args(call.args)
        except Exception as exc:  # noqa: BLE001 - whatever a validator raises, the model hears it
            detail = exc.message if isinstance(exc, AdkError) else f"{type(exc).__name__}: {exc}"
            return _refused(call, {"error": f"Invalid arguments for tool {call.name!r}: {detail}", "code": "invalid_arguments"})

        agent = self.agent
        ctx = ToolContext(self.invocation, call.id or "", call.name, actions, channel)
        response = await agent.before_tool_callback(ctx, tool, args)
        error: BaseException | None = None
        attempt = 1
        parts: list[Part] = []
        if response is None:
            budget = agent.tool_retry_budgets.get(tool.name, agent.default_retry_budget)
            while True:
                try:
                    data = FunctionResponseData.from_tool_result(tool.name, await tool.execute(ctx, args))
                    response, parts = data.response, data.parts
                    error = None if data.error is None else _ConversionError(data.error)
                    break
                except Exception as exc:  # noqa: BLE001 - reported to the model below
                    error = exc
                if attempt > budget.max_retries or not _worth_retrying(error):
                    break
                attempt += 1
                if budget.delay:
                    await asyncio.sleep(budget.delay)
        if error is None:
            self.consecutive_failures[tool.name] = 0
        else:
            self.consecutive_failures[tool.name] = self.consecutive_failures.get(tool.name, 0) + 1
            fallback = await agent.on_tool_error(ctx, tool, args, error)
            if isinstance(fallback, dict):
                response = fallback
            elif not isinstance(error, _ConversionError):
                response = _error_response(tool.name, error)
        outcome = ToolOutcome(call.id or "", call.name, call.args, error is None, time.perf_counter() - started,
                              None if error is None else _describe(error), attempt,
                              None if error is None else user_traceback(error))
        ctx.tool_outcome = outcome
        replaced = await agent.after_tool_callback(ctx, tool, args, response)
        return _Result(replaced if isinstance(replaced, dict) else response, outcome, parts)

    def _refusal(self, call: FunctionCall, tool: Tool | None) -> dict[str, Any] | None:
        """Why a call must not run at all, as the model should hear it; None when it may run."""
        if tool is None:
            available = ", ".join(sorted(self.tools)) or "none"
            return {"error": f"Unknown tool {call.name!r}. Available tools: {available}.", "code": "unknown_tool"}
        if not isinstance(call.args, dict):
            return {"error": f"The arguments for tool {call.name!r} must be a JSON object, not "
                             f"{type(call.args).__name__}.", "code": "invalid_arguments"}
        if INVALID_ARGUMENTS_KEY in call.args:  # the provider could not parse the arguments
            return {"error": str(call.args[INVALID_ARGUMENTS_KEY]), "code": "invalid_arguments"}
        missing = [s for s in tool.required_scopes if s not in self.invocation.run_config.scopes]
        if missing:
            return {"error": f"missing required scopes: {', '.join(missing)}", "code": "missing_scopes",
                    "category": "forbidden"}
        threshold = self.agent.circuit_breaker_threshold
        failures = self.consecutive_failures.get(tool.name, 0)
        if threshold is not None and failures >= threshold:
            return {
                "error": f"Tool {tool.name!r} is disabled for the rest of this run: it failed {failures} times in a row "
                f"(circuit breaker threshold {threshold}). Do not call it again; answer without it.",
                "code": "circuit_open",
                "category": "unavailable",
            }
        return None


class _ConversionError(Exception):
    """The tool ran, but its result could not be sent; the response already says why."""


def _refused(call: FunctionCall, response: dict[str, Any]) -> _Result:
    """A call that never ran: its response explains why."""
    return _Result(response, ToolOutcome(call.id or "", call.name, call.args, False, 0.0, response.get("error")))


def _worth_retrying(error: BaseException) -> bool:
    """A plain exception may be transient; an AdkError says itself whether it is (a tool that raises
    `AdkError.tool("Cannot divide by zero")` means it); a result that could not be sent never is."""
    if isinstance(error, AdkError):
        return error.is_retryable()
    return not isinstance(error, _ConversionError)


def _is_parallel_safe(tool: Tool | None) -> bool:
    return tool is not None and tool.is_read_only and tool.is_concurrency_safe


def _describe(error: BaseException) -> str:
    if isinstance(error, AdkError):
        return error.message
    if isinstance(error, _ConversionError):  # its message already says what went wrong
        return str(error)
    return f"{type(error).__name__}: {error}"


def _error_response(tool_name: str, error: BaseException) -> dict[str, Any]:
    if isinstance(error, AdkError):
        return error.to_dict()
    return {"error": f"Tool {tool_name!r} failed: {type(error).__name__}: {error}", "code": "tool_exception"}
