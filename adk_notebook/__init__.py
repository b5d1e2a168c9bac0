"""adk-notebook: an Agent Development Kit for Python that lives in Jupyter.

In a notebook, `%load_ext adk_notebook` adds the %%tool, %%agent and %%chat magics; in
scripts, everything is plain Python:

    from adk_notebook import LlmAgent, ScriptedModel, FunctionCall, tool

    @tool
    def get_weather(city: str) -> dict:
        \"\"\"Get the current weather for a city.\"\"\"
        return {"city": city, "condition": "sunny"}

    model = ScriptedModel([FunctionCall("get_weather", {"city": "Tokyo"}), "It is sunny in Tokyo."])
    agent = LlmAgent(name="weather", model=model, tools=[get_weather])
    print(agent.run("Weather in Tokyo?").text)
"""

from typing import Any

from .agents import (
    Agent,
    AgentTool,
    LlmAgent,
    LlmAgentBuilder,
    LoopAgent,
    MapAgent,
    ParallelAgent,
    RetryBudget,
    SequentialAgent,
    ToolExecutionStrategy,
    ToolPolicy,
    exit_loop,
)
from .artifacts import BaseArtifactService, InMemoryArtifactService
from .core import (
    AdkError,
    Blob,
    CallbackContext,
    Content,
    ErrorCategory,
    Event,
    EventActions,
    FileData,
    FunctionCall,
    FunctionResponse,
    InvocationContext,
    ModelPrice,
    Part,
    ReadonlyContext,
    RunConfig,
    Session,
    Span,
    State,
    ToolContext,
    ToolOutcome,
    ToolProgress,
    Usage,
)
from .memory import BaseMemoryService, InMemoryMemoryService, MemoryEntry
from .models import (
    FunctionModel,
    GenerateContentConfig,
    Llm,
    LlmRequest,
    LlmResponse,
    ScriptedModel,
    ThinkingConfig,
    resolve_model,
)
from .plugins import JsonlTraceExporter, Plugin, read_traces
from .runner import Runner, RunResult
from .sessions import BaseSessionService, InMemorySessionService, SqliteSessionService
from .tools import (
    BasicToolset,
    BuiltinTool,
    CodeExecution,
    FilteredToolset,
    FunctionDeclaration,
    FunctionResponseData,
    FunctionTool,
    GoogleSearch,
    Grounding,
    MergedToolset,
    PrefixedToolset,
    PythonCodeExecutor,
    SimpleToolContext,
    StatefulTool,
    Tool,
    Toolset,
    WebSearch,
    tool,
)


def load_ipython_extension(ipython: Any) -> None:  # Any: IPython is imported only inside
    """`%load_ext adk_notebook`: the magics. IPython and ipywidgets load here, not on import."""
    from .notebook import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    from .notebook import unload_ipython_extension as unload

    unload(ipython)


__version__ = "0.1.0"

# What `from adk_notebook import *` binds: everything the base install can import. The names that
# need an extra, PostgresSessionService ([postgres]) and OpenTelemetryPlugin ([otel]), are not
# listed, so a star-import works without them; `from adk_notebook import PostgresSessionService`
# works with its extra and, without it, raises an ImportError naming the extra.
__all__ = [
    "AdkError",
    "Agent",
    "AgentTool",
    "AnthropicModel",
    "BaseArtifactService",
    "BaseMemoryService",
    "BaseSessionService",
    "BasicToolset",
    "Blob",
    "BuiltinTool",
    "CallbackContext",
    "CodeExecution",
    "Content",
    "ErrorCategory",
    "Event",
    "EventActions",
    "FileData",
    "FilteredToolset",
    "FunctionCall",
    "FunctionDeclaration",
    "FunctionModel",
    "FunctionResponse",
    "FunctionResponseData",
    "FunctionTool",
    "GeminiModel",
    "GenerateContentConfig",
    "GoogleSearch",
    "Grounding",
    "InMemoryArtifactService",
    "InMemoryMemoryService",
    "InMemorySessionService",
    "InvocationContext",
    "JsonlTraceExporter",
    "Llm",
    "LlmAgent",
    "LlmAgentBuilder",
    "LlmRequest",
    "LlmResponse",
    "LocalModel",
    "LoopAgent",
    "MapAgent",
    "MemoryEntry",
    "MergedToolset",
    "ModelPrice",
    "OpenAIModel",
    "ParallelAgent",
    "Part",
    "Plugin",
    "PrefixedToolset",
    "PythonCodeExecutor",
    "ReadonlyContext",
    "RetryBudget",
    "RetryPolicy",
    "RunConfig",
    "RunResult",
    "Runner",
    "ScriptedModel",
    "SequentialAgent",
    "Session",
    "SimpleToolContext",
    "Span",
    "SqliteSessionService",
    "State",
    "StatefulTool",
    "ThinkingConfig",
    "Tool",
    "ToolContext",
    "ToolExecutionStrategy",
    "ToolOutcome",
    "ToolPolicy",
    "ToolProgress",
    "Toolset",
    "Usage",
    "WebSearch",
    "exit_loop",
    "read_traces",
    "resolve_model",
    "tool",
]


def __getattr__(name: str) -> object:
    # Provider models (GeminiModel, ...), PostgresSessionService and OpenTelemetryPlugin load on
    # first use; see their packages' __init__.
    from . import models, plugins, sessions

    if name == "PostgresSessionService":
        return sessions.PostgresSessionService

    for package in (models, plugins):
        if name in package._LAZY:
            value = getattr(package, name)
            globals()[name] = value
            return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
