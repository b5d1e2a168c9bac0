"""Tools that end the process they run in, served by `python -m adk_notebook mcp serve` in tests."""

from __future__ import annotations

import sys

from adk_notebook import tool


@tool
def quit_now(code: int) -> str:
    """Calls sys.exit(code), as a script's helper might."""
    sys.exit(code)


@tool
async def quit_async(code: int) -> str:
    """Calls sys.exit(code) on the server's event loop."""
    sys.exit(code)


@tool
def interrupt() -> str:
    """Raises KeyboardInterrupt, as a tool that catches Ctrl-C badly might."""
    raise KeyboardInterrupt


@tool
async def interrupt_async() -> str:
    """Raises KeyboardInterrupt on the server's event loop."""
    raise KeyboardInterrupt


@tool
def echo(text: str) -> str:
    """Says `text` back."""
    return text
