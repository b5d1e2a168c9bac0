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

from .agents import Agent, LlmAgent
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
    State,
    ToolContext,
    ToolOutcome,
    ToolProgress,
    Usage,
)
from .models import FunctionModel, GenerateContentConfig, Llm, LlmRequest, LlmResponse, ScriptedModel, resolve_model
from .runner import RunConfig, Runner, RunResult
from .sessions import BaseSessionService, InMemorySessionService, Session, SqliteSessionService
from .tools import FunctionDeclaration, FunctionTool, Tool, Toolset, tool

__version__ = "0.1.0"

__all__ = [
    "AdkError",
    "Agent",
    "BaseSessionService",
    "Blob",
    "CallbackContext",
    "Content",
    "ErrorCategory",
    "Event",
    "EventActions",
    "FileData",
    "FunctionCall",
    "FunctionDeclaration",
    "FunctionModel",
    "FunctionResponse",
    "FunctionTool",
    "GenerateContentConfig",
    "InMemorySessionService",
    "InvocationContext",
    "Llm",
    "LlmAgent",
    "LlmRequest",
    "LlmResponse",
    "Part",
    "ReadonlyContext",
    "RunConfig",
    "RunResult",
    "Runner",
    "ScriptedModel",
    "Session",
    "SqliteSessionService",
    "State",
    "Tool",
    "ToolContext",
    "ToolOutcome",
    "ToolProgress",
    "Toolset",
    "Usage",
    "resolve_model",
    "tool",
]
