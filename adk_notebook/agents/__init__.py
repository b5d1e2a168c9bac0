"""Agents: the base interface, the model-driven LlmAgent, its builder and its tool policy."""

from .base import Agent
from .builder import LlmAgentBuilder
from .llm_agent import LlmAgent
from .tool_policy import RetryBudget, ToolExecutionStrategy, ToolPolicy

__all__ = ["Agent", "LlmAgent", "LlmAgentBuilder", "RetryBudget", "ToolExecutionStrategy", "ToolPolicy"]
