"""Tools: what an agent can do besides talk."""

from .base import FunctionDeclaration, Tool, Toolset
from .code_executor import PythonCodeExecutor
from .files import resolve_file_uri
from .function import FunctionTool, tool
from .responses import FunctionResponseData
from .simple_context import SimpleToolContext
from .stateful import StatefulTool
from .toolsets import BasicToolset, FilteredToolset, MergedToolset, PrefixedToolset

__all__ = [
    "BasicToolset",
    "FilteredToolset",
    "FunctionDeclaration",
    "FunctionResponseData",
    "FunctionTool",
    "MergedToolset",
    "PrefixedToolset",
    "PythonCodeExecutor",
    "SimpleToolContext",
    "StatefulTool",
    "Tool",
    "Toolset",
    "resolve_file_uri",
    "tool",
]
