"""MCP: any MCP server's tools in an agent (`McpToolset`), and our tools served over MCP (`serve`).

    from adk_notebook.mcp import McpToolset, StdioServer, HttpServer
    clock = McpToolset(StdioServer("mcp-server-time", ["--local-timezone", "UTC"]))

Needs the official SDK: `pip install "adk-notebook[mcp]"`. `import adk_notebook` never loads
it; this package checks that it is installed, and loads it when a server is first used.
"""

from __future__ import annotations

import importlib.util


def _require_sdk() -> None:
    try:
        found = importlib.util.find_spec("mcp") is not None
    except (ImportError, ValueError):  # a broken or blocked install
        found = False
    if not found:
        raise ImportError('adk_notebook.mcp needs the MCP SDK: pip install "adk-notebook[mcp]"', name="mcp")


_require_sdk()

from .client import McpTool, McpToolset  # noqa: E402  # only once the SDK is known to be there
from .servers import HttpServer, StdioServer  # noqa: E402  # likewise

__all__ = ["HttpServer", "McpTool", "McpToolset", "StdioServer"]
