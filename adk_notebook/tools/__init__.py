"""Tools: what an agent can do besides talk."""

from .base import FunctionDeclaration, Tool, Toolset
from .function import FunctionTool, tool

__all__ = ["FunctionDeclaration", "FunctionTool", "Tool", "Toolset", "tool"]
