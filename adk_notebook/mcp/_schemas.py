"""Whether an MCP tool's input schema can be sent to every provider, and the error when not.

MCP requires `"type": "object"` at the top; Gemini needs `$ref`s written out, which a recursive
or dangling reference makes impossible and nested, repeated ones make huge (`inline_refs` is
bounded). Checked once per tool when the server lists it (`client.py`), and for a listing the
SDK refuses whole (`_connection.py`), with one wording.
"""

from __future__ import annotations

from typing import Any

from ..core.errors import AdkError
from ..tools.dialects import UnusableSchema, inline_refs

__all__ = ["NO_OBJECT", "check_usable", "unusable_schema"]

NO_OBJECT = 'it has no "type": "object" at the top, as MCP requires'


def check_usable(server: str, tool: str, schema: dict[str, Any]) -> None:
    """Raises `unusable_schema(...)` when `schema` cannot be sent."""
    problem = NO_OBJECT
    if schema.get("type") == "object":
        try:
            inline_refs(schema)
            return
        except UnusableSchema as exc:
            problem = exc.message
    raise unusable_schema(server, repr(tool), problem)


def unusable_schema(server: str, tool: str, problem: str) -> AdkError:
    """`mcp_bad_schema`, naming the server, the tool (as it should read, quoted) and what is wrong."""
    return AdkError(
        "mcp",
        "invalid_input",
        "mcp_bad_schema",
        f"MCP server {server!r}: the input schema of its tool {tool} cannot be used: {problem}. "
        "Fix the schema in the server.",
    )
