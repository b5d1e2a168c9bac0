"""What a tool is to the runtime: a name, a description, a schema, a time limit and `execute`."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.errors import AdkError

if TYPE_CHECKING:
    from ..core.context import ReadonlyContext, ToolContext

__all__ = ["LONG_RUNNING_NOTE", "FunctionDeclaration", "Tool", "Toolset", "check_timeout"]

LONG_RUNNING_NOTE = (
    "NOTE: This is a long-running operation. Do not call this tool again if it has already returned "
    "some intermediate or pending status."
)


def check_timeout(seconds: float | None, what: str) -> float | None:
    """A time limit in seconds (None: no limit); anything else is a clear error at definition time."""
    if seconds is None:
        return None
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not 0 < seconds < math.inf:
        raise AdkError.config(
            f"{what} must be a number of seconds above 0 (or None for no limit), got {seconds!r}.",
            code="invalid_timeout",
        )
    return float(seconds)


@dataclass(frozen=True, slots=True)
class FunctionDeclaration:
    """A tool as the model sees it; providers translate it to their wire format."""

    name: str
    description: str
    parameters: dict[str, Any] | None = None
    response: dict[str, Any] | None = None


class Tool(ABC):
    """Base class for tools. Subclasses set the attributes and implement `execute`.

    `timeout` is the most seconds one call may take (None: the agent's `tool_timeout`, if any);
    a call past it is answered `{"error": ...}` naming the limit. Arguments are checked against
    `parameters_schema` before `execute` runs (see `validate_args`).
    """

    name: str
    description: str = ""
    is_long_running: bool = False
    is_read_only: bool = False
    is_concurrency_safe: bool = False
    required_scopes: tuple[str, ...] = ()
    timeout: float | None = None

    @property
    def parameters_schema(self) -> dict[str, Any] | None:
        return None

    @property
    def response_schema(self) -> dict[str, Any] | None:
        return None

    def validate_args(self, args: dict[str, Any]) -> dict[str, Any]:
        """Check the model's arguments before `execute`; raise ValueError with a message for the model.

        This default enforces `parameters_schema` (a JSON schema), so a subclass that only
        declares its schema never runs with arguments the schema rejects.
        """
        schema = self.parameters_schema
        return args if schema is None else _schema_check(schema)(args)

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


_CHECKS: dict[int, tuple[dict[str, Any], Callable[[dict[str, Any]], dict[str, Any]]]] = {}


def _schema_check(schema: dict[str, Any]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """The validator of a JSON schema, built once per schema object (the last 128 are kept)."""
    cached = _CHECKS.get(id(schema))
    if cached is not None and cached[0] is schema:
        return cached[1]
    # pydantic loads with the first such tool
    from .schema import args_validator, model_json_schema

    check = args_validator(schema, model_json_schema(schema))
    if len(_CHECKS) >= 128:
        del _CHECKS[next(iter(_CHECKS))]
    _CHECKS[id(schema)] = (schema, check)  # the entry holds the schema, so its id is not reused meanwhile
    return check


class Toolset(ABC):
    """A group of tools chosen per run, e.g. by the user's permissions."""

    name: str = "toolset"

    @abstractmethod
    async def tools(self, ctx: ReadonlyContext) -> list[Tool]:
        """The tools available to this run."""
