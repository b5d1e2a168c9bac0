"""Core types: messages, events, errors, state, sessions, run settings and contexts."""

from .content import Blob, Content, FileData, FunctionCall, FunctionResponse, Part
from .context import CallbackContext, InvocationContext, ReadonlyContext, ToolContext
from .errors import AdkError, ErrorCategory
from .events import Event, EventActions, ToolOutcome, ToolProgress, Usage
from .run_config import RunConfig
from .session import Session
from .state import State
from .trace import ModelPrice, Span

__all__ = [
    "AdkError",
    "Blob",
    "CallbackContext",
    "Content",
    "ErrorCategory",
    "Event",
    "EventActions",
    "FileData",
    "FunctionCall",
    "FunctionResponse",
    "InvocationContext",
    "ModelPrice",
    "Part",
    "ReadonlyContext",
    "RunConfig",
    "Session",
    "Span",
    "State",
    "ToolContext",
    "ToolOutcome",
    "ToolProgress",
    "Usage",
]
