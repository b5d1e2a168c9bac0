"""JsonlTraceExporter: every run's trace kept in a local file, one JSON line per run.

No dashboard, no service: the file is appended to after each run and `read_traces` reads it
back (what `%adk trace` draws). Each line is `Span.to_dict()` of the run's root span.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.errors import AdkError
from ..core.json_text import parse_json
from ..core.json_value import repaired
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
        # Lone surrogates (a file name read with surrogateescape, in an error) cannot be UTF-8:
        # they are written as U+FFFD, as sessions store them, so the line is always written.
        trace = repaired(ctx.span.to_dict())
        line = json.dumps(trace, ensure_ascii=False, separators=(",", ":")) + "\n"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as file:  # one write: a line is never split between runs
            file.write(line)


def read_traces(path: str | Path) -> list[Span]:
    """The traces a `JsonlTraceExporter` wrote to `path`, oldest first ([] when there is no file yet).

    A line that is not a trace (cut short, not JSON, not UTF-8, a field of the wrong type) is an
    AdkError naming the file, the line and the field.
    """
    path = Path(path)
    if not path.exists():
        return []
    traces = []
    with path.open("rb") as file:
        for number, line in enumerate(file, 1):
            if not line.strip():
                continue
            try:
                traces.append(Span.from_dict(parse_json(line.decode("utf-8").strip())))
            except UnicodeDecodeError as exc:
                raise _damaged(path, number, f"it is not UTF-8 text (byte {exc.start})") from None
            except json.JSONDecodeError as exc:
                raise _damaged(
                    path, number, f"it is cut short or is not JSON ({exc.msg}, column {exc.colno})"
                ) from None
            except RecursionError:
                raise _damaged(path, number, "its spans are nested too deeply") from None
            except ValueError as exc:  # nested too deeply for the reader, or not a span
                raise _damaged(path, number, str(exc)) from None
    return traces


def _damaged(path: Path, number: int, problem: str) -> AdkError:
    return AdkError.config(
        f"Line {number} of {str(path)!r} is not a trace: {problem}. "
        "Read files JsonlTraceExporter wrote, or remove that line.",
        code="invalid_trace_file",
    )
