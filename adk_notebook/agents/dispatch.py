"""Running the tool calls of one model turn: strategies, retries, timeouts, circuit breaker, progress.

A tool never crashes the loop: an unknown name, missing scopes, arguments its schema rejects,
a timeout, an exception (of any class, even one whose message cannot be printed), a breaker
that tripped, a before/after-tool or on_tool_error callback that raises — each becomes
`{"error": ...}` in the function response, and the model carries on. Responses always come
back in the model's order.

Three exceptions keep their meaning: CancelledError (the run is being cancelled), and
KeyboardInterrupt and SystemExit raised by a tool or callback, which stop the run: the batch's
other calls are cancelled, and the exception reaches whoever runs the agent, after the runner
has answered every open call of the run (so the session stays usable).

Once a call is answered, its ToolContext writes nowhere: a sync tool's thread left running
after a timeout (or one that ignores the stop a cancel sends it; see `tools/threads.py`) cannot
change what is stored.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import suppress
from dataclasses import dataclass, field, replace
from typing import Any

from ..core.content import (
    INVALID_ARGUMENTS_KEY,
    Content,
    FunctionCall,
    FunctionResponse,
    Part,
)
from ..core.context import InvocationContext, ToolContext
from ..core.errors import AdkError
from ..core.events import Event, EventActions, ToolOutcome
from ..core.state import State
from ..core.trace import Span
from ..plugins.base import plugin_chain
from ..tools.base import Tool
from ..tools.progress import ProgressChannel
from ..tools.responses import FunctionResponseData
from ..tools.threads import time_limit
from ..tools.tracebacks import user_traceback
from .callbacks import CallbackChain
from .tool_policy import ToolExecutionStrategy, ToolPolicy

__all__ = ["ToolDispatcher"]


@dataclass(slots=True)
class _Result:
    response: dict[str, Any]
    outcome: ToolOutcome
    parts: list[Part] = field(default_factory=list)  # images or files the tool returned
    error: BaseException | None = None  # what the tool (or a callback) raised, if anything


class ToolDispatcher:
    """Runs the tool calls of one invocation as `policy` says; the circuit breaker counts live here."""

    def __init__(self, invocation: InvocationContext, policy: ToolPolicy, tools: Mapping[str, Tool]) -> None:
        self.invocation = invocation
        self.policy = policy
        self.tools = tools
        self.consecutive_failures: dict[str, int] = {}
        # The run's plugins before the agent's own callbacks, joined once per invocation.
        plugins = invocation.plugins
        self.before_tool = plugin_chain(plugins, "before_tool_callback", policy.before_tool_callback)
        self.after_tool = plugin_chain(plugins, "after_tool_callback", policy.after_tool_callback)
        self.on_tool_error = plugin_chain(plugins, "on_tool_error", policy.on_tool_error)

    async def run(self, calls: list[FunctionCall]) -> AsyncIterator[Event]:
        """Yield progress events while the calls run, then one event with every response."""
        channel = ProgressChannel()
        actions = EventActions()
        results: list[_Result | None] = [None] * len(calls)
        batch = asyncio.ensure_future(self._run_batch(calls, actions, channel, results))
        batch.add_done_callback(channel.close)
        try:
            try:
                while (progress := await channel.queue.get()) is not None:
                    yield progress if isinstance(progress, Event) else self._progress_event(progress)
                batch.result()
            finally:
                if not batch.done():
                    batch.cancel()
                    with suppress(asyncio.CancelledError):
                        await batch
        except (_Stop, BaseExceptionGroup) as stop:  # user code raised KeyboardInterrupt or SystemExit
            raise _stopping(stop) from None
        done = [r if r is not None else _refused(call, _NOT_FINISHED) for call, r in zip(calls, results, strict=True)]
        yield Event(
            author=self.invocation.agent_name,
            invocation_id=self.invocation.invocation_id,
            content=Content(
                "tool",
                [
                    Part(function_response=FunctionResponse(call.name, r.response, call.id, r.parts))
                    for call, r in zip(calls, done, strict=True)
                ],
            ),
            actions=actions,
            long_running_tool_ids=[
                call.id
                for call in calls
                if call.id and (t := self.tools.get(call.name)) is not None and t.is_long_running
            ],
            tool_outcomes=[r.outcome for r in done],
        )

    def _progress_event(self, progress: Any) -> Event:
        return Event.chunk(self.invocation.agent_name, None, self.invocation.invocation_id, progress)

    async def _run_batch(
        self, calls: list[FunctionCall], actions: EventActions, channel: ProgressChannel, results: list[_Result | None]
    ) -> None:
        async def run(index: int) -> None:
            results[index] = await self._run_call(calls[index], actions, channel)

        strategy = self.policy.tool_execution_strategy
        if strategy is ToolExecutionStrategy.SEQUENTIAL or len(calls) == 1:
            concurrent: list[int] = []
        elif strategy is ToolExecutionStrategy.PARALLEL:
            concurrent = list(range(len(calls)))
        else:
            concurrent = [i for i, call in enumerate(calls) if _is_parallel_safe(self.tools.get(call.name))]
        if concurrent:
            async with asyncio.TaskGroup() as group:  # a call that stops the run cancels the others
                for i in concurrent:
                    group.create_task(run(i))
        for i in sorted(set(range(len(calls))) - set(concurrent)):
            await run(i)

    async def _run_call(self, call: FunctionCall, actions: EventActions, channel: ProgressChannel) -> _Result:
        span = self.invocation.span.child(
            f"execute_tool {call.name}", "tool", agent=self.invocation.agent_name, tool=call.name, call_id=call.id
        )
        try:
            result = await self._call(call, actions, channel, span)
        except BaseException as exc:
            span.finish(exc)
            raise
        if not result.outcome.success and span.error_type is None:
            span.fail(_error_type(result), result.outcome.error)
        span.finish()
        return result

    async def _call(self, call: FunctionCall, actions: EventActions, channel: ProgressChannel, span: Span) -> _Result:
        started = time.perf_counter()
        tool = self.tools.get(call.name)
        refusal = self._refusal(call, tool)
        if refusal is not None or tool is None:
            return _refused(call, refusal or {})
        try:
            args = tool.validate_args(call.args)
        except BaseException as exc:  # noqa: BLE001 - whatever a validator raises, the model hears it
            detail = _describe(_reportable(exc))
            return _refused(
                call, {"error": f"Invalid arguments for tool {call.name!r}: {detail}", "code": "invalid_arguments"}
            )
        state = _CallState(self.invocation.session.state, actions.state_delta)
        ctx = ToolContext(self.invocation, call.id or "", call.name, actions, channel, state=state)
        ctx.span = span  # whatever runs inside the tool (an AgentTool's agent) records its spans under it
        try:
            result = await self._answer(call, tool, args, ctx, started)
        finally:  # answered: a thread left running writes nowhere from now on
            state.open = False
            ctx.progress_channel = None
            ctx.actions = EventActions()
        if result.error is not None:
            span.fail(type(result.error).__name__, result.outcome.error)
        return result

    async def _answer(
        self, call: FunctionCall, tool: Tool, args: dict[str, Any], ctx: ToolContext, started: float
    ) -> _Result:
        error: BaseException | None = None
        attempt = 1
        parts: list[Part] = []
        response, failed = await _hook(self.before_tool, ctx, tool, args)
        if failed is not None:  # on_tool_error is for the tool's own failures, not this one
            response, error = _hook_failed("before_tool_callback", tool.name, failed, "the tool did not run"), failed
        elif response is None:
            response, parts, error, attempt = await self._execute(tool, args, ctx)
            if error is None:
                self.consecutive_failures[tool.name] = 0
            else:
                self.consecutive_failures[tool.name] = self.consecutive_failures.get(tool.name, 0) + 1
                fallback, failed = await _hook(self.on_tool_error, ctx, tool, args, error)
                if isinstance(fallback, dict):
                    response = fallback
                else:
                    response = response if response is not None else _error_response(tool.name, error)
                    if failed is not None:
                        response = {
                            **response,
                            "error": f"{response['error']} (and on_tool_error raised {_describe(failed)})",
                        }
        outcome = ToolOutcome(
            call.id or "",
            call.name,
            call.args,
            error is None,
            time.perf_counter() - started,
            None if error is None else _describe(error),
            attempt,
            None if error is None else user_traceback(error),
        )
        ctx.tool_outcome = outcome
        replaced, failed = await _hook(self.after_tool, ctx, tool, args, response)
        if failed is not None:  # the callback may have been meant to filter the result: withhold it
            response = _hook_failed("after_tool_callback", tool.name, failed, "the tool's result is withheld")
            outcome = replace(outcome, success=False, error=response["error"])
            error = failed
        elif isinstance(replaced, dict):
            response = replaced
        return _Result(response, outcome, parts, error)

    async def _execute(
        self, tool: Tool, args: dict[str, Any], ctx: ToolContext
    ) -> tuple[dict[str, Any] | None, list[Part], BaseException | None, int]:
        """Run the tool, retried per its budget, each attempt bounded by its timeout.

        Returns (response, media parts, error, attempts); the response is None when the tool
        failed, or the conversion's error response when its result could not be sent.
        """
        budget = self.policy.retry_budget(tool.name)
        limit = self.policy.time_limit(tool)
        attempt = 1
        while True:
            try:
                async with time_limit(limit) as deadline:
                    result = await tool.execute(ctx, args)
                data = FunctionResponseData.from_tool_result(tool.name, result)
                if data.error is not None:
                    return data.response, data.parts, _ConversionError(data.error), attempt
                return data.response, data.parts, None, attempt
            except BaseException as exc:  # noqa: BLE001 - reported to the model
                error = _reportable(exc)
                if isinstance(error, TimeoutError) and deadline.expired():
                    error = _timed_out(tool.name, limit)
            if attempt > budget.max_retries or not _worth_retrying(error):
                return None, [], error, attempt
            attempt += 1
            if budget.delay:
                await asyncio.sleep(budget.delay)

    def _refusal(self, call: FunctionCall, tool: Tool | None) -> dict[str, Any] | None:
        """Why a call must not run at all, as the model should hear it; None when it may run."""
        if tool is None:
            available = ", ".join(sorted(self.tools)) or "none"
            return {"error": f"Unknown tool {call.name!r}. Available tools: {available}.", "code": "unknown_tool"}
        if not isinstance(call.args, dict):
            return {
                "error": f"The arguments for tool {call.name!r} must be a JSON object, not {type(call.args).__name__}.",
                "code": "invalid_arguments",
            }
        if INVALID_ARGUMENTS_KEY in call.args:  # the provider could not parse the arguments
            return {"error": str(call.args[INVALID_ARGUMENTS_KEY]), "code": "invalid_arguments"}
        missing = [s for s in tool.required_scopes if s not in self.invocation.run_config.scopes]
        if missing:
            return {
                "error": f"missing required scopes: {', '.join(missing)}",
                "code": "missing_scopes",
                "category": "forbidden",
            }
        threshold = self.policy.circuit_breaker_threshold
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


class _Stop(Exception):
    """KeyboardInterrupt or SystemExit from user code, carried out of the batch's tasks.

    Raised in a task, those two leave the event loop at once (asyncio re-raises them), so they
    travel as this until they reach the run's own frames, where they are raised again.
    """

    def __init__(self, exc: BaseException) -> None:
        super().__init__(type(exc).__name__)
        self.exc = exc


_NOT_FINISHED = {"error": "This call was cancelled before it finished.", "code": "cancelled"}


def _reportable(exc: BaseException) -> BaseException:
    """An exception user code raised, to report to the model; those that keep their meaning go on.

    A CancelledError means the run is being cancelled only when this task is (`cancelling()`);
    one a tool raises of its own accord (it awaited something someone else cancelled) is its error.
    """
    if isinstance(exc, asyncio.CancelledError) and _being_cancelled():
        raise exc
    if isinstance(exc, KeyboardInterrupt | SystemExit):
        raise _Stop(exc) from None
    return exc


def _being_cancelled() -> bool:
    task = asyncio.current_task()
    return task is None or task.cancelling() > 0


def _stopping(exc: BaseException) -> BaseException:
    """The KeyboardInterrupt or SystemExit inside `exc` (a _Stop, or a task group's exceptions)."""
    while isinstance(exc, BaseExceptionGroup):
        exc = exc.exceptions[0]
    return exc.exc if isinstance(exc, _Stop) else exc


class _CallState(State):
    """The state a tool call sees; once the call is answered it is closed and writes go nowhere."""

    __slots__ = ("open",)

    def __init__(self, value: dict[str, Any], delta: dict[str, Any]) -> None:
        super().__init__(value, delta)
        self.open = True

    def __setitem__(self, key: str, value: Any) -> None:
        if self.open:
            super().__setitem__(key, value)

    def __delitem__(self, key: str) -> None:
        if self.open:
            super().__delitem__(key)


async def _hook(chain: CallbackChain, *args: Any) -> tuple[Any, BaseException | None]:
    """Run a callback chain: (its result, None), or (None, what it raised)."""
    if not chain:
        return None, None
    try:
        return await chain(*args), None
    except BaseException as exc:  # noqa: BLE001 - reported to the model
        return None, _reportable(exc)


def _hook_failed(name: str, tool_name: str, error: BaseException, consequence: str) -> dict[str, Any]:
    return {
        "error": f"The {name} of tool {tool_name!r} raised {_describe(error)}; {consequence}.",
        "code": "callback_error",
    }


def _timed_out(tool_name: str, limit: float | None) -> AdkError:
    return AdkError.tool(
        f"Tool {tool_name!r} did not finish within its time limit of {limit:g} s, so it was stopped "
        "(a sync function's thread runs on in the background; its result will be dropped).",
        code="tool_timeout",
        category="timeout",
    )


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
    try:
        text = str(error)
    except Exception:  # noqa: BLE001 - an exception whose __str__ raises still gets named
        text = "<its message could not be read: str() raised>"
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _error_response(tool_name: str, error: BaseException) -> dict[str, Any]:
    if isinstance(error, AdkError):
        return error.to_dict()
    return {"error": f"Tool {tool_name!r} failed: {_describe(error)}", "code": "tool_exception"}


def _error_type(result: _Result) -> str:
    """What failed, for the trace: the response's code ("unknown_tool") when the call never ran."""
    code = result.response.get("code")
    return code if isinstance(code, str) else "ToolError"
