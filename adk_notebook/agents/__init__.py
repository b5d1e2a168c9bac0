"""Agents: the base interface and the model-driven LlmAgent."""

from .base import Agent
from .llm_agent import LlmAgent

__all__ = ["Agent", "LlmAgent"]
