"""`%adk trace`: a run drawn as a waterfall, per step latency and tokens, errors marked.

%adk trace [AGENT]                      the last run in this notebook (of AGENT)
%adk trace [AGENT] --file runs.jsonl    the last run kept in a JSONL trace file (of AGENT)
%adk trace --file runs.jsonl --run N    its N-th run (1 the first, -1 the last)
"""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path
from typing import Any

from IPython.core.error import UsageError

from ..core.errors import AdkError
from ..plugins.jsonl import read_traces
from .display import Display
from .render import escape
from .timeline import trace_of
from .waterfall import waterfall_html, waterfall_text
from .workspace import Workspace

__all__ = ["trace_command"]

_USAGE = "Usage: %adk trace [AGENT] [--file PATH] [--run N]"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # one line, as IPython shows a UsageError
        raise UsageError(f"%adk trace: {message}. {_USAGE}")


def _parser() -> _Parser:
    parser = _Parser(prog="%adk trace", add_help=False)
    parser.add_argument("agent", nargs="?")
    parser.add_argument("--file", metavar="PATH")
    parser.add_argument("--run", type=int, metavar="N")
    return parser


def trace_command(workspace: Workspace, line: str) -> Display:
    """What `%adk trace ...` does; `line` is what follows `trace`."""
    try:
        args = _parser().parse_args(shlex.split(line))
    except ValueError as exc:
        raise UsageError(f"%adk trace: {exc} in {line.strip()!r}") from None
    if args.file is None:
        if args.run is not None:
            raise UsageError(f"%adk trace: --run picks a run from a file; add --file PATH. {_USAGE}")
        trace, where = _last_run(workspace, args.agent)
    else:
        trace, where = _from_file(Path(args.file), args.agent, args.run)
    title = f"Trace of {trace.get('agent') or trace['name']} ({where})"
    html = f'<div class="adk-trace-view"><b>{escape(title)}</b>{waterfall_html(trace)}</div>'
    return Display(html, f"{title}\n{waterfall_text(trace)}")


def _last_run(workspace: Workspace, agent: str | None) -> tuple[dict[str, Any], str]:
    runs = workspace.last_runs
    if agent is None:
        if not runs:
            raise UsageError("%adk trace: no run yet in this notebook; run %%chat AGENT first, or give --file PATH.")
        agent = next(reversed(runs))
    elif agent not in runs:
        ran = ", ".join(runs) or "none yet"
        raise UsageError(
            f"%adk trace: {agent} has not run in this notebook (agents that ran: {ran}); "
            f"run %%chat {agent} first, or give --file PATH."
        )
    trace = trace_of(runs[agent], agent)
    if trace is None:
        raise UsageError(f"%adk trace: the last run of {agent} has no events to draw.")
    return trace, "its last run"


def _from_file(path: Path, agent: str | None, run: int | None) -> tuple[dict[str, Any], str]:
    if not path.is_file():
        raise UsageError(f"%adk trace: there is no file {str(path)!r}; give the path a JsonlTraceExporter writes to.")
    try:
        spans = read_traces(path)
    except AdkError as exc:
        raise UsageError(f"%adk trace: {exc}") from None
    traces = [span.to_dict() for span in spans if agent is None or span.agent == agent]
    if not traces:
        whose = f" of {agent}" if agent else ""
        raise UsageError(f"%adk trace: {path} has no run{whose}.")
    index = -1 if run is None else run - 1 if run > 0 else run
    if run == 0 or not -len(traces) <= index < len(traces):
        raise UsageError(
            f"%adk trace: --run {run} is not a run of {path}: it has {len(traces)} (1 to {len(traces)}, or -1 for the last)."
        )
    number = index % len(traces) + 1
    return traces[index], f"run {number} of {len(traces)} in {path.name}"
