"""Agents: the base interface, the model-driven LlmAgent and its builder."""

from .base import Agent
from .builder import LlmAgentBuilder
from .dispatch import RetryBudget, ToolExecutionStrategy
from .llm_agent import LlmAgent

__all__ = ["Agent", "LlmAgent", "LlmAgentBuilder", "RetryBudget", "ToolExecutionStrategy"]
