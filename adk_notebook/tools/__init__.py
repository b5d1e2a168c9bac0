"""Tools: what an agent can do besides talk."""

from .base import FunctionDeclaration, Tool, Toolset
from .builtin import BuiltinTool, CodeExecution, GoogleSearch, Grounding, WebSearch
from .code_executor import PythonCodeExecutor
from .files import resolve_file_uri
from .function import FunctionTool, tool
from .responses import FunctionResponseData
from .simple_context import SimpleToolContext
from .stateful import StatefulTool
from .toolsets import BasicToolset, FilteredToolset, MergedToolset, PrefixedToolset

__all__ = [
    "BasicToolset",
    "BuiltinTool",
    "CodeExecution",
    "FilteredToolset",
    "FunctionDeclaration",
    "FunctionResponseData",
    "FunctionTool",
    "GoogleSearch",
    "Grounding",
    "MergedToolset",
    "PrefixedToolset",
    "PythonCodeExecutor",
    "SimpleToolContext",
    "StatefulTool",
    "Tool",
    "Toolset",
    "WebSearch",
    "resolve_file_uri",
    "tool",
]
