"""Agents: the base interface, the model-driven LlmAgent, workflow agents, agents as tools."""

from .agent_tool import AgentTool
from .base import Agent
from .builder import LlmAgentBuilder
from .llm_agent import LlmAgent
from .tool_policy import RetryBudget, ToolExecutionStrategy, ToolPolicy
from .transfer import exit_loop
from .workflow import LoopAgent, MapAgent, ParallelAgent, SequentialAgent

__all__ = [
    "Agent",
    "AgentTool",
    "LlmAgent",
    "LlmAgentBuilder",
    "LoopAgent",
    "MapAgent",
    "ParallelAgent",
    "RetryBudget",
    "SequentialAgent",
    "ToolExecutionStrategy",
    "ToolPolicy",
    "exit_loop",
]
