"""What a tool is to the runtime: a name, a description, a schema and `execute`."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.errors import AdkError

if TYPE_CHECKING:
    from ..core.context import ReadonlyContext, ToolContext

__all__ = ["LONG_RUNNING_NOTE", "FunctionDeclaration", "Tool", "Toolset", "check_tool_name"]

LONG_RUNNING_NOTE = (
    "NOTE: This is a long-running operation. Do not call this tool again if it has already returned "
    "some intermediate or pending status."
)

# The names every provider accepts (OpenAI and Anthropic allow no dots; Gemini allows more).
_VALID_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")


def check_tool_name(name: str) -> str:
    """Provider APIs accept only short identifier-like names; say so before a request fails."""
    if not isinstance(name, str) or not _VALID_NAME.fullmatch(name):
        raise AdkError.config(
            f"Tool name {name!r} is not accepted by model providers: it must start with a letter or underscore "
            "and contain only letters, digits, '_' or '-', at most 64 characters (e.g. 'get_weather'); "
            "pass name=... to choose another.",
            code="invalid_tool_name",
        )
    return name


@dataclass(frozen=True, slots=True)
class FunctionDeclaration:
    """A tool as the model sees it; providers translate it to their wire format."""

    name: str
    description: str
    parameters: dict[str, Any] | None = None
    response: dict[str, Any] | None = None


class Tool(ABC):
    """Base class for tools. Subclasses set the attributes and implement `execute`."""

    name: str
    description: str = ""
    is_long_running: bool = False
    is_read_only: bool = False
    is_concurrency_safe: bool = False
    required_scopes: tuple[str, ...] = ()

    @property
    def parameters_schema(self) -> dict[str, Any] | None:
        return None

    @property
    def response_schema(self) -> dict[str, Any] | None:
        return None

    def validate_args(self, args: dict[str, Any]) -> dict[str, Any]:
        """Check the model's arguments before `execute`; raise ValueError with a message for the model."""
        return args

    @abstractmethod
    async def execute(self, ctx: ToolContext, args: dict[str, Any]) -> Any:
        """Run the tool with validated arguments and return its result."""

    def declaration(self) -> FunctionDeclaration:
        description = self.description
        if self.is_long_running:
            description = f"{description}\n\n{LONG_RUNNING_NOTE}" if description else LONG_RUNNING_NOTE
        return FunctionDeclaration(self.name, description, self.parameters_schema, self.response_schema)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


class Toolset(ABC):
    """A group of tools chosen per run, e.g. by the user's permissions."""

    name: str = "toolset"

    @abstractmethod
    async def tools(self, ctx: ReadonlyContext) -> list[Tool]:
        """The tools available to this run."""
