"""JsonlTraceExporter: every run's trace kept in a local file, one JSON line per run.

No dashboard, no service: the file is appended to after each run and `read_traces` reads it
back (what `%adk trace` draws). Each line is `Span.to_dict()` of the run's root span.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.errors import AdkError
from ..core.trace import Span
from .base import Plugin

if TYPE_CHECKING:
    from ..core.context import InvocationContext

__all__ = ["JsonlTraceExporter", "read_traces"]


class JsonlTraceExporter(Plugin):
    """Appends each run's trace to `path` as one JSON line (the folder is made if missing).

    Args:
        path: The file to append to, e.g. "traces.jsonl".
    """

    def __init__(self, path: str | Path) -> None:
        super().__init__()
        self.path = Path(path)

    async def after_run_callback(self, ctx: InvocationContext) -> None:
        line = json.dumps(ctx.span.to_dict(), ensure_ascii=False, separators=(",", ":")) + "\n"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as file:  # one write: a line is never split between runs
            file.write(line)


def read_traces(path: str | Path) -> list[Span]:
    """The traces a `JsonlTraceExporter` wrote to `path`, oldest first ([] when there is no file yet)."""
    path = Path(path)
    if not path.exists():
        return []
    traces = []
    with path.open(encoding="utf-8") as file:
        for number, line in enumerate(file, 1):
            if not line.strip():
                continue
            try:
                traces.append(Span.from_dict(json.loads(line)))
            except (ValueError, KeyError, TypeError) as exc:
                raise AdkError.config(
                    f"Line {number} of {str(path)!r} is not a trace ({type(exc).__name__}: {exc}); "
                    "read files JsonlTraceExporter wrote, or remove that line.",
                    code="invalid_trace_file",
                ) from None
    return traces
