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
    Part,
    ReadonlyContext,
    RunConfig,
    Session,
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
    resolve_model,
)
from .runner import Runner, RunResult
from .sessions import BaseSessionService, InMemorySessionService, SqliteSessionService
from .tools import (
    BasicToolset,
    FilteredToolset,
    FunctionDeclaration,
    FunctionResponseData,
    FunctionTool,
    MergedToolset,
    PrefixedToolset,
    PythonCodeExecutor,
    SimpleToolContext,
    StatefulTool,
    Tool,
    Toolset,
    tool,
)


def load_ipython_extension(ipython):  # noqa: ANN001, ANN201 - IPython's extension hook
    """`%load_ext adk_notebook`: the magics. IPython and ipywidgets load here, not on import."""
    from .notebook import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython):  # noqa: ANN001, ANN201
    from .notebook import unload_ipython_extension as unload

    unload(ipython)


__version__ = "0.1.0"

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
    "CallbackContext",
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
    "InMemoryArtifactService",
    "InMemoryMemoryService",
    "InMemorySessionService",
    "InvocationContext",
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
    "OpenAIModel",
    "ParallelAgent",
    "Part",
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
    "SqliteSessionService",
    "State",
    "StatefulTool",
    "Tool",
    "ToolContext",
    "ToolExecutionStrategy",
    "ToolOutcome",
    "ToolPolicy",
    "ToolProgress",
    "Toolset",
    "Usage",
    "exit_loop",
    "resolve_model",
    "tool",
]


def __getattr__(name: str) -> object:
    # Provider models (GeminiModel, AnthropicModel, ...) load on first use; see models/__init__.
    from . import models

    if name in models._LAZY:
        value = getattr(models, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
