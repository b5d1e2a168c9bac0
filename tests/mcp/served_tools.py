"""Tools that tests serve with `python -m adk_notebook mcp serve tests/mcp/served_tools.py`."""

from __future__ import annotations

import asyncio
import io
import struct
import sys
import wave
import zlib
from typing import Literal

from adk_notebook import FunctionResponseData, ToolContext, tool

print("loading served_tools")  # must not reach the protocol stream


def png(width: int = 4, height: int = 3) -> bytes:
    """A small red PNG, made without any imaging library."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


@tool(read_only=True)
def add(a: int, b: int) -> dict:
    """Add two whole numbers.

    Args:
        a: The first number.
        b: The second number.
    """
    print(f"adding {a} and {b}")  # a chatty tool: stdout must not corrupt the protocol
    return {"sum": a + b}


@tool
def convert(value: float, unit: Literal["km", "mi"] = "km") -> dict:
    """Convert a distance to meters.

    Args:
        value: The distance.
        unit: Its unit.
    """
    return {"meters": value * (1000 if unit == "km" else 1609.344)}


@tool
async def slow(seconds: float) -> dict:
    """Wait, then answer.

    Args:
        seconds: How long to wait.
    """
    print(f"slow: waiting {seconds} s", file=sys.stderr, flush=True)  # tests wait for this line
    await asyncio.sleep(seconds)
    return {"waited": seconds}


@tool
async def countdown(n: int, ctx: ToolContext) -> dict:
    """Count down, reporting each step.

    Args:
        n: Where to start.
    """
    for i in range(n, 0, -1):
        await ctx.emit_progress("status", f"{i} left\n")
        await asyncio.sleep(0.01)
    return {"done": True}


@tool
def chart(title: str) -> FunctionResponseData:
    """Draw a chart.

    Args:
        title: The chart's title.
    """
    return FunctionResponseData({"title": title}).with_inline_data("image/png", png())


def wav(frames: int = 80) -> bytes:
    """A short silent WAV (8 kHz, mono, 16-bit), made with the standard library."""
    out = io.BytesIO()
    with wave.open(out, "wb") as sound:
        sound.setnchannels(1)
        sound.setsampwidth(2)
        sound.setframerate(8000)
        sound.writeframes(b"\x00\x00" * frames)
    return out.getvalue()


@tool
def chime(times: int) -> FunctionResponseData:
    """Ring a chime.

    Args:
        times: How often.
    """
    return FunctionResponseData({"rang": times}).with_inline_data("audio/wav", wav())


@tool
def fail(reason: str) -> dict:
    """Always fail.

    Args:
        reason: What to complain about.
    """
    print(f"about to fail: {reason}", file=sys.stderr)
    raise RuntimeError(reason)
