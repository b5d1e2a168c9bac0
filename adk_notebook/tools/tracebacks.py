"""Where a tool raised, in the tool's own frames: the traceback a tool card shows, collapsed.

The model only hears one line (`{"error": "Tool 'x' failed: ValueError: ..."}`); the person who
wrote the tool wants the line that raised. The frames of adk-notebook itself and of the stdlib
machinery that runs a tool (asyncio, the thread a sync tool runs in) say nothing to them and are
left out; every other frame (the tool, the code it calls, libraries included) stays.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import traceback
from pathlib import Path

__all__ = ["user_traceback"]

MAX_TRACEBACK = 8_000  # characters; the end (where it raised) is kept
_OURS = Path(__file__).resolve().parents[1]
_MACHINERY = tuple(
    str(Path(m.__file__).resolve().parent if m is not threading else Path(m.__file__).resolve())
    for m in (asyncio, concurrent.futures, threading)
    if m.__file__
)


def user_traceback(error: BaseException) -> str | None:
    """`error`'s traceback without our frames and the asyncio/thread machinery; None when no frame is left."""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if not _hidden(f.filename)]
    if not frames:
        return None
    text = "".join(
        [
            "Traceback (most recent call last):\n",
            *traceback.format_list(frames),
            *traceback.format_exception_only(type(error), error),
        ]
    ).rstrip("\n")
    return text if len(text) <= MAX_TRACEBACK else "…" + text[-(MAX_TRACEBACK - 1) :]


def _hidden(filename: str) -> bool:
    try:
        path = Path(filename).resolve()
    except (OSError, ValueError):
        return False
    return path.is_relative_to(_OURS) or str(path).startswith(_MACHINERY)
