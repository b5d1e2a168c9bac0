"""Core types: messages, events, errors, state and contexts."""

from .content import Blob, Content, FileData, FunctionCall, FunctionResponse, Part
from .context import CallbackContext, InvocationContext, ReadonlyContext, ToolContext
from .errors import AdkError, ErrorCategory
from .events import Event, EventActions, ToolOutcome, ToolProgress, Usage
from .state import State

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
    "Part",
    "ReadonlyContext",
    "State",
    "ToolContext",
    "ToolOutcome",
    "ToolProgress",
    "Usage",
]
