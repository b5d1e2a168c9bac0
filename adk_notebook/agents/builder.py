"""LlmAgentBuilder: the seed's fluent way to configure an LlmAgent.

    agent = (LlmAgentBuilder("assistant")
             .instruction("You are a helpful assistant.")
             .model(model)
             .tool(get_weather)
             .max_iterations(10)
             .build())

Each method records one keyword of `LlmAgent(...)`; `build()` creates the agent, so every
check happens in one place. `tool`, `toolset` and the callbacks add; the rest set.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal, cast

from ..models.base import GenerateContentConfig, Llm
from ..tools.base import Tool, Toolset
from .base import Agent
from .callbacks import Callback
from .llm_agent import InstructionProvider, LlmAgent
from .tool_policy import RetryBudget, ToolExecutionStrategy

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = ["LlmAgentBuilder"]


class LlmAgentBuilder:
    def __init__(self, name: str) -> None:
        self._options: dict[str, Any] = {"name": name}
        self._tools: list[Tool | Callable[..., Any]] = []
        self._toolsets: list[Toolset] = []
        self._retry_budgets: dict[str, RetryBudget] = {}
        self._callbacks: dict[str, list[Callback]] = {}
        self._sub_agents: list[Agent] = []

    def _set(self, key: str, value: Any) -> LlmAgentBuilder:
        self._options[key] = value
        return self

    def _add_callback(self, key: str, callback: Callback) -> LlmAgentBuilder:
        self._callbacks.setdefault(key, []).append(callback)
        return self

    def description(self, text: str) -> LlmAgentBuilder:
        return self._set("description", text)

    def instruction(self, text: str) -> LlmAgentBuilder:
        return self._set("instruction", text)

    def instruction_provider(self, provider: InstructionProvider) -> LlmAgentBuilder:
        return self._set("instruction_provider", provider)

    def global_instruction(self, text: str) -> LlmAgentBuilder:
        return self._set("global_instruction", text)

    def model(self, model: Llm | str) -> LlmAgentBuilder:
        return self._set("model", model)

    def tool(self, tool: Tool | Callable[..., Any]) -> LlmAgentBuilder:
        self._tools.append(tool)
        return self

    def toolset(self, toolset: Toolset) -> LlmAgentBuilder:
        self._toolsets.append(toolset)
        return self

    def output_schema(self, schema: type[BaseModel] | dict[str, Any]) -> LlmAgentBuilder:
        return self._set("output_schema", schema)

    def output_max_retries(self, retries: int) -> LlmAgentBuilder:
        return self._set("output_max_retries", retries)

    def output_key(self, key: str) -> LlmAgentBuilder:
        return self._set("output_key", key)

    def include_contents(self, mode: Literal["default", "none"]) -> LlmAgentBuilder:
        return self._set("include_contents", mode)

    def max_iterations(self, limit: int) -> LlmAgentBuilder:
        return self._set("max_iterations", limit)

    def generate_content_config(self, config: GenerateContentConfig) -> LlmAgentBuilder:
        return self._set("generate_content_config", config)

    def tool_execution_strategy(self, strategy: ToolExecutionStrategy | str) -> LlmAgentBuilder:
        return self._set("tool_execution_strategy", strategy)

    def default_retry_budget(self, budget: RetryBudget) -> LlmAgentBuilder:
        return self._set("default_retry_budget", budget)

    def tool_retry_budget(self, tool_name: str, budget: RetryBudget) -> LlmAgentBuilder:
        self._retry_budgets[tool_name] = budget
        return self

    def circuit_breaker_threshold(self, threshold: int) -> LlmAgentBuilder:
        return self._set("circuit_breaker_threshold", threshold)

    def tool_timeout(self, seconds: float | None) -> LlmAgentBuilder:
        return self._set("tool_timeout", seconds)

    def before_agent_callback(self, callback: Callback) -> LlmAgentBuilder:
        return self._add_callback("before_agent_callback", callback)

    def after_agent_callback(self, callback: Callback) -> LlmAgentBuilder:
        return self._add_callback("after_agent_callback", callback)

    def before_model_callback(self, callback: Callback) -> LlmAgentBuilder:
        return self._add_callback("before_model_callback", callback)

    def after_model_callback(self, callback: Callback) -> LlmAgentBuilder:
        return self._add_callback("after_model_callback", callback)

    def before_tool_callback(self, callback: Callback) -> LlmAgentBuilder:
        return self._add_callback("before_tool_callback", callback)

    def after_tool_callback(self, callback: Callback) -> LlmAgentBuilder:
        return self._add_callback("after_tool_callback", callback)

    def on_tool_error(self, callback: Callback) -> LlmAgentBuilder:
        return self._add_callback("on_tool_error", callback)

    def sub_agent(self, agent: Agent) -> LlmAgentBuilder:
        """Add an agent this one may transfer the conversation to."""
        self._sub_agents.append(agent)
        return self

    def disallow_transfer_to_parent(self, disallow: bool = True) -> LlmAgentBuilder:
        return self._set("disallow_transfer_to_parent", disallow)

    def disallow_transfer_to_peers(self, disallow: bool = True) -> LlmAgentBuilder:
        return self._set("disallow_transfer_to_peers", disallow)

    def build(self) -> LlmAgent:
        budgets: Mapping[str, RetryBudget] = dict(self._retry_budgets)
        return LlmAgent(
            **self._options,
            tools=list(self._tools),
            toolsets=list(self._toolsets),
            tool_retry_budgets=budgets,
            sub_agents=list(self._sub_agents),
            **cast(dict[str, Any], self._callbacks),
        )
