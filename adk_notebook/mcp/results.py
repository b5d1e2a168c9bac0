"""What an MCP tool answered, as the function response a model receives.

    text blocks           -> {"result": "..."} (or the structured content, when the server sends it)
    image / audio blocks  -> inline_data parts (so the widget shows images inline)
    embedded resources    -> text under "resources"; blobs as inline_data parts
    resource links        -> {"uri", "name", ...} under "resources"
    isError               -> an AdkError, which reaches the model as {"error": "...", ...}

Blocks are read by their `type` field, as the protocol defines them, not by SDK classes.
"""

from __future__ import annotations

from typing import Any

from ..core.errors import AdkError
from ..tools.responses import FunctionResponseData

__all__ = ["response_data"]


def response_data(server: str, tool: str, result: Any) -> FunctionResponseData:
    """`result` (an MCP CallToolResult) as JSON plus media parts.

    Raises:
        AdkError: `mcp_tool_error` when the server flagged the result as an error; its message
            is the server's text, for the model to read.
    """
    texts: list[str] = []
    resources: list[dict[str, Any]] = []
    data = FunctionResponseData()
    for block in result.content:
        kind = getattr(block, "type", None)
        if kind == "text":
            texts.append(block.text)
        elif kind in ("image", "audio"):
            data.with_inline_data(block.mime_type, block.data)  # base64 text, decoded and checked there
        elif kind == "resource":
            resources.append(_embedded(block.resource, data))
        elif kind == "resource_link":
            resources.append(_fields(block, "uri", "name", "title", "description", "mime_type"))
    if result.is_error:
        message = "\n".join(texts) or f"MCP tool {tool!r} on server {server!r} reported an error without a message."
        raise AdkError("mcp", "internal", "mcp_tool_error", message)
    structured = getattr(result, "structured_content", None)
    if isinstance(structured, dict):
        data.response = dict(structured)  # the text blocks only repeat it, as the protocol asks
    elif texts:
        data.response = {"result": "\n".join(texts)}
    if resources:
        data.response["resources"] = resources
    return data


def _embedded(resource: Any, data: FunctionResponseData) -> dict[str, Any]:
    """A text resource's text stays in the JSON; a blob's bytes become a part, its uri stays here."""
    entry = _fields(resource, "uri", "mime_type")
    text = getattr(resource, "text", None)
    if text is not None:
        entry["text"] = text
    else:
        data.with_inline_data(entry.get("mime_type") or "application/octet-stream", resource.blob)
    return entry


def _fields(obj: Any, *names: str) -> dict[str, Any]:
    out = {}
    for name in names:
        value = getattr(obj, name, None)
        if value is not None:
            out[name] = str(value)
    return out
