"""ToolPolicy: how an agent's tool calls run — strategy, retries, breaker, time limit, callbacks.

An agent owns one and hands it to the dispatcher (`dispatch.py`), which reads nothing else of
the agent; agents that run tools without being an LlmAgent can reuse it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from enum import StrEnum

from ..core.errors import AdkError
from ..tools.base import Tool, check_timeout
from .callbacks import CallbackChain

__all__ = ["RetryBudget", "ToolExecutionStrategy", "ToolPolicy"]


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

    @classmethod
    def parse(cls, value: ToolExecutionStrategy | str) -> ToolExecutionStrategy:
        """A strategy from its name in any case ("AUTO"); an unknown one is a clear error."""
        try:
            return cls(value.lower() if isinstance(value, str) else value)
        except ValueError:
            choices = ", ".join(repr(s.value) for s in cls)
            raise AdkError.config(
                f"Unknown tool_execution_strategy {value!r}; use one of {choices}.",
                code="invalid_strategy",
            ) from None


@dataclass(frozen=True, slots=True)
class RetryBudget:
    """Run a failing tool again up to `max_retries` times, `delay` seconds apart."""

    max_retries: int = 0
    delay: float = 0.0

    def __post_init__(self) -> None:
        if isinstance(self.delay, timedelta):
            object.__setattr__(self, "delay", self.delay.total_seconds())
        if self.max_retries < 0 or self.delay < 0:
            raise AdkError.config(
                "RetryBudget needs max_retries >= 0 and delay >= 0.",
                code="invalid_retry_budget",
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolPolicy:
    """How tool calls run; each field is the LlmAgent argument of the same name.

    Args:
        tool_execution_strategy: SEQUENTIAL (default), PARALLEL or AUTO.
        default_retry_budget: How often a failing tool is retried (none by default).
        tool_retry_budgets: Per-tool retry budgets by tool name.
        circuit_breaker_threshold: Disable a tool for the run after this many failures in a row.
        tool_timeout: Most seconds one call may take, for tools without a `timeout` of their own.
        before_tool_callback, after_tool_callback, on_tool_error: see `agents/callbacks.py`.
    """

    tool_execution_strategy: ToolExecutionStrategy = ToolExecutionStrategy.SEQUENTIAL
    default_retry_budget: RetryBudget = field(default_factory=RetryBudget)
    tool_retry_budgets: Mapping[str, RetryBudget] = field(default_factory=dict)
    circuit_breaker_threshold: int | None = None
    tool_timeout: float | None = None
    before_tool_callback: CallbackChain = field(default_factory=CallbackChain)
    after_tool_callback: CallbackChain = field(default_factory=CallbackChain)
    on_tool_error: CallbackChain = field(default_factory=CallbackChain)

    def __post_init__(self) -> None:
        breaker = self.circuit_breaker_threshold
        if breaker is not None and breaker < 1:
            raise AdkError.config(
                f"circuit_breaker_threshold must be at least 1, got {breaker}.",
                code="invalid_agent_config",
            )
        timeout = check_timeout(self.tool_timeout, "tool_timeout")
        object.__setattr__(self, "tool_timeout", timeout)
        # A copy: the caller's mapping may change later.
        object.__setattr__(self, "tool_retry_budgets", dict(self.tool_retry_budgets))

    def retry_budget(self, tool_name: str) -> RetryBudget:
        """How often a failing call to `tool_name` is retried."""
        return self.tool_retry_budgets.get(tool_name, self.default_retry_budget)

    def time_limit(self, tool: Tool) -> float | None:
        """The most seconds one call to `tool` may take: its own limit, else the policy's."""
        return tool.timeout if tool.timeout is not None else self.tool_timeout
