"""`%adk eval`: score an agent on a google-adk eval set, or save the conversation just run as a case.

    %adk eval AGENT PATH [--criteria JSON] [--max-concurrency N]
    %adk eval save AGENT [--session S] [--user U] --to PATH [--case ID]

The first returns the `EvalReport` (a table in Out[]); the second appends the session's turns —
each user message, the tool calls that followed, the answer — as one eval case to PATH (created
when new), with the session's state at its start, and shows the case.
"""

from __future__ import annotations

import argparse
import json
import shlex
from pathlib import Path
from typing import Any

from IPython.core.error import UsageError

from .._sync import run_sync
from ..core.errors import AdkError
from ..evaluation import EvalReport, EvalSet, case_from_events, evaluate
from .display import Display
from .render import escape
from .workspace import Workspace

__all__ = ["eval_command"]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # one line, as IPython shows a UsageError
        raise UsageError(f"%adk eval: {message}. Usage: %adk eval AGENT PATH | %adk eval save AGENT --to PATH")


def _parsers() -> tuple[_Parser, _Parser]:
    run = _Parser(prog="%adk eval", add_help=False)
    run.add_argument("agent")
    run.add_argument("path")
    run.add_argument(
        "--criteria",
        help="JSON, e.g. '{\"tool_trajectory_avg_score\": 1.0}' (default: test_config.json)",
    )
    run.add_argument("--max-concurrency", type=int, default=1)
    save = _Parser(prog="%adk eval save", add_help=False)
    save.add_argument("agent")
    save.add_argument("--to", required=True, metavar="PATH")
    save.add_argument("--session")
    save.add_argument("--user")
    save.add_argument("--case", metavar="ID")
    return run, save


def eval_command(workspace: Workspace, line: str) -> EvalReport | Display:
    """What `%adk eval ...` does; `line` is what follows `eval`."""
    try:
        words = shlex.split(line)
    except ValueError as exc:
        raise UsageError(f"%adk eval: {exc} in {line.strip()!r}") from None
    run, save = _parsers()
    if words[:1] == ["save"]:
        return _save(workspace, save.parse_args(words[1:]))
    args = run.parse_args(words)
    try:
        criteria = None if args.criteria is None else json.loads(args.criteria)
    except json.JSONDecodeError as exc:
        raise UsageError(f"%adk eval: --criteria is not JSON ({exc}): {args.criteria}") from None
    agent = workspace.agent(args.agent)
    try:
        return run_sync(evaluate(agent, args.path, criteria, max_concurrency=args.max_concurrency))
    except (AdkError, ImportError) as exc:  # ImportError: a metric's extra is missing
        raise UsageError(f"%adk eval: {exc}") from None


def _save(workspace: Workspace, args: argparse.Namespace) -> Display:
    agent, session, user, session_id = workspace.find_session(args.agent, args.session, args.user)
    if session is None or not session.events:
        raise UsageError(
            f"%adk eval save: {args.agent} has no session {session_id!r} with a conversation; "
            f"run %%chat {args.agent} --session {session_id} first."
        )
    path = Path(args.to)
    evalset = EvalSet.load(path) if path.exists() else EvalSet(eval_set_id=path.name.split(".")[0])
    written = {k for e in session.events if e.author != "user" for k in e.actions.state_delta}
    start = {k: v for k, v in session.state.items() if k not in written and not k.startswith("temp:")}
    case = case_from_events(
        session.events,
        args.case or session_id,
        start,
        app_name=agent.name,
        user_id=user,
    )
    evalset.add_case(case)
    evalset.save(path)
    turns = len(case.conversation)
    calls = sum(len(i.tool_uses) for i in case.conversation)
    text = f"Saved case {case.eval_id!r} ({turns} turns, {calls} tool calls) to {path}."
    return Display(f"<p>{escape(text)}</p>", text)
