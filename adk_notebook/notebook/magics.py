"""The magics — `%%tool`, `%%agent`, `%%mcp`, `%%chat` / `%chat`, `%adk` — thin over a `Workspace`.

A magic parses its options with IPython's magic_arguments (so `%%agent?` shows them) and hands
off to a `Workspace` method (`workspace.py`), which tests call without a shell. It returns a rich
object for Out[] — a `Display` (drawn by `tables.py`) or a chat's result — rather than printing.

Options and messages are taken literally: no `$var` / `{var}` expansion, so braces in a message
reach the model as written, whichever way the cell runs. Misuse raises `UsageError`, which
IPython prints as one line. How a `%%chat` runs on the kernel's event loop is `kernel.py`'s
business.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_cell_magic, line_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments

from ..agents.agent_tool import AgentTool
from . import kernel
from .display import Display
from .kernel import ChatPlan, ChatResult
from .render import escape
from .tables import agent_card, tool_cards
from .workspace import Workspace

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

    from ..evaluation import EvalReport

__all__ = ["AdkMagics", "split_chat_line"]


_TOKEN = r"""(?:[^\s"']|"[^"]*"|'[^']*')+"""
_LINE_OPTION = re.compile(rf"\s+(?:--new-session(?=\s|$)|--(?:session|user|state)(?:=|\s+){_TOKEN})")


def split_chat_line(line: str) -> tuple[str, str]:
    """`%chat NAME [options] message` -> ("NAME [options]", "message"), the message kept verbatim."""
    head = re.match(r"\s*\S+", line)
    if head is None:
        return "", ""
    pos = head.end()
    while (option := _LINE_OPTION.match(line, pos)) is not None:
        pos = option.end()
    return line[:pos], line[pos:].strip()


def _parse(magic: Callable[..., Any], line: str, prefix: str) -> Any:
    """The magic's own parser over shell-style words: `--state name="Ana Maria"` is one value.

    Not IPython's `parse_argstring`: it splits without POSIX quoting, so `--description "Plans
    trips"` would keep its quotes in the value."""
    try:
        return magic.parser.parse_args(shlex.split(line))  # type: ignore[attr-defined]  # set by @magic_arguments
    except UsageError as exc:
        raise UsageError(f"{prefix}: {exc}") from None
    except ValueError as exc:  # unbalanced quotes
        raise UsageError(f"{prefix}: {exc} in {line.strip()!r}") from None


def _requires(extras: list[str]) -> None:
    """`%adk requires eval ray`: nothing when the extras are installed, else one line naming the first missing."""
    from ..extras import EXTRAS, requires

    if not extras:
        raise UsageError(
            f"%adk requires needs the names of extras, e.g. %adk requires eval; the extras: {', '.join(EXTRAS)}."
        )
    try:
        requires(*extras, what="this notebook")
    except (ImportError, ValueError) as exc:
        raise UsageError(str(exc)) from None


_WORKFLOWS = ("sequential", "parallel", "loop", "map")
_WORKFLOW_REFUSES = (
    "model",
    "tools",
    "toolsets",
    "strategy",
    "max_iterations",
    "output_key",
    "output_schema",
    "include_contents",
    "sub_agents",
    "agent_tools",
    "items",
    "max_concurrency",
)


def _names(values: Sequence[str] | None) -> list[str]:
    return [n for v in values or () for n in re.split(r"[,\s]+", v) if n]


@magics_class
class AdkMagics(Magics):
    """%%tool, %%agent, %%mcp, %%chat / %chat and %adk."""

    shell: InteractiveShell  # not Optional as in Magics: these are always registered on a shell

    def __init__(self, shell: Any, workspace: Workspace | None = None) -> None:
        super().__init__(shell)
        self.workspace = workspace or Workspace(shell)

    @magic_arguments("%tool")
    @argument("--read-only", action="store_true", help="The tool only reads (no side effects).")
    @argument("--concurrency-safe", action="store_true", help="Calls may run at the same time as others.")
    @argument(
        "--long-running",
        action="store_true",
        help="It starts a long operation; the model is told not to call it again.",
    )
    @argument("--name", help="The tool's name for the model (the cell must define one function).")
    @no_var_expand
    @cell_magic
    def tool(self, line: str, cell: str) -> Display:
        """Run the cell, then turn every function it defines into a tool.

        Each function is replaced in the namespace by its FunctionTool (still callable as
        before). The schema comes from the signature and the docstring (Args/Parameters).
        Functions whose names start with "_" stay plain helpers. Redefining replaces the tool,
        in every agent that uses it too.
        """
        args = _parse(self.tool, line, "%%tool")
        namespace = self.shell.user_ns
        before = dict(namespace)
        if not self._run_body(cell):
            raise UsageError("%%tool: the cell raised an error (above); no tool was registered.")
        missing = object()
        defined = {k: v for k, v in namespace.items() if before.get(k, missing) is not v}
        tools = self.workspace.define_tools(
            defined,
            read_only=args.read_only,
            concurrency_safe=args.concurrency_safe,
            long_running=args.long_running,
            name=args.name,
        )
        return tool_cards(tools)

    def _run_body(self, cell: str) -> bool:
        """Run a cell body in the user namespace as IPython would; False (traceback shown) if it raised."""
        shell = self.shell
        source = shell.transform_cell(cell)
        filename = shell.compile.cache(source, shell.execution_count)  # tracebacks show the cell's lines
        try:
            code = shell.compile(source, filename, "exec")
        except SyntaxError:
            shell.showsyntaxerror(filename)
            return False
        try:
            exec(code, shell.user_global_ns, shell.user_ns)  # noqa: S102 - the user's own cell
        except Exception as exc:  # noqa: BLE001 - shown like any cell's error, from the cell's frame on
            tb = exc.__traceback__
            shell.showtraceback((type(exc), exc, tb.tb_next if tb is not None else None))
            return False
        return True

    @magic_arguments("%agent")
    @argument("name", help="The agent's name; the agent is bound to this variable.")
    @argument(
        "--model",
        help="A model string (auto, gemini-2.5-flash, openai:gpt-4o-mini, ...) or the name of a "
        "variable holding a model (e.g. a ScriptedModel). Default: auto, or the model set with %%adk model STRING. "
        "A string is checked here; a provider's API key only when a request is sent.",
    )
    @argument("--tools", action="append", metavar="A,B", help="Tools by name (from %%%%tool, or variables).")
    @argument("--toolsets", action="append", metavar="X,Y", help="Variables holding Toolsets.")
    @argument("--strategy", choices=["sequential", "parallel", "auto"], help="How one turn's tool calls run.")
    @argument("--max-iterations", type=int, metavar="N", help="Most model calls per message (default 100).")
    @argument("--output-key", metavar="K", help="Save the final answer in session state under K.")
    @argument(
        "--output-schema", metavar="VAR", help="A variable holding a pydantic model or JSON schema for the answer."
    )
    @argument(
        "--include-contents", choices=["default", "none"], help="Send the conversation so far, or only this message."
    )
    @argument("--description", help="What the agent does.")
    @argument(
        "--sub-agents",
        action="append",
        metavar="A,B",
        help="Agents it may hand the conversation to (transfer_to_agent).",
    )
    @argument("--agent-tools", action="append", metavar="A,B", help="Agents it may call as tools (AgentTool).")
    @argument("--sequential", metavar="A,B", help="Not an LLM agent: run these agents one after another.")
    @argument(
        "--parallel", metavar="A,B", help="Not an LLM agent: run these agents at the same time, each in its branch."
    )
    @argument(
        "--loop",
        metavar="A,B",
        help="Not an LLM agent: run these in turn until one calls exit_loop or --max-iterations rounds are done.",
    )
    @argument("--map", metavar="A", help="Not an LLM agent: run A once per item of the state list --items.")
    @argument("--items", metavar="KEY", help="--map: the state key of the list to map over.")
    @argument("--max-concurrency", type=int, metavar="N", help="--map: most items running at once (default: all).")
    @no_var_expand
    @cell_magic
    def agent(self, line: str, cell: str) -> Display:
        """Define an LlmAgent; the cell body is its instruction ({var} is filled from session state).

        With --sequential / --parallel / --loop A,B or --map A --items KEY it defines a workflow
        agent over agents defined before, and the body is its description.
        Redefining an agent replaces it; its sessions go on with the new definition.
        """
        args = _parse(self.agent, line, "%%agent")
        workflow = [(kind, getattr(args, kind)) for kind in _WORKFLOWS if getattr(args, kind)]
        if workflow:
            return self._workflow(args, workflow, cell.strip())
        for option in ("items", "max_concurrency"):
            if getattr(args, option) is not None:
                raise UsageError(f"%%agent {args.name}: --{option.replace('_', '-')} is for --map.")
        agent = self.workspace.define_agent(
            args.name,
            cell.strip(),
            model=args.model,
            tools=_names(args.tools),
            toolsets=_names(args.toolsets),
            strategy=args.strategy,
            max_iterations=args.max_iterations,
            output_key=args.output_key,
            output_schema=args.output_schema,
            include_contents=args.include_contents,
            description=args.description,
            sub_agents=_names(args.sub_agents),
            agent_tools=_names(args.agent_tools),
        )
        card = agent_card(agent)
        if agent.sub_agents or any(isinstance(t, AgentTool) for t in agent.tools):
            graph = self.workspace.graph_view(agent.name)
            return Display(card.html + graph.html, card.text)
        return card

    def _workflow(self, args: Any, workflow: list[tuple[str, str]], body: str) -> Display:
        """`%%agent NAME --sequential a,b` and its kin; options only an LLM agent has are refused."""
        name = args.name
        if len(workflow) > 1:
            raise UsageError(f"%%agent {name}: choose one of {', '.join('--' + k for k, _ in workflow)}.")
        kind, agents = workflow[0]
        allowed = {"loop": {"max_iterations"}, "map": {"items", "output_key", "max_concurrency"}}.get(kind, set())
        given = [o for o in _WORKFLOW_REFUSES if getattr(args, o) and o not in allowed]
        if given:
            flags = ", ".join("--" + o.replace("_", "-") for o in given)
            raise UsageError(
                f"%%agent {name} --{kind}: {flags} {'is' if len(given) == 1 else 'are'} not for a "
                f"{kind} agent (it runs other agents; give those options to them)."
            )
        agent = self.workspace.define_workflow(
            name,
            kind,
            _names([agents]),
            description=args.description or body,
            max_iterations=args.max_iterations,
            items_key=args.items,
            output_key=args.output_key,
            max_concurrency=args.max_concurrency,
        )
        graph = self.workspace.graph_view(agent.name)
        line = f"agent {name}: {kind} of {', '.join(a.name for a in agent.sub_agents)}"
        return Display(f"<div>agent <code><b>{escape(name)}</b></code> · {escape(kind)}</div>{graph.html}", line)

    @magic_arguments("%mcp")
    @argument(
        "--timeout",
        type=float,
        metavar="S",
        help='Seconds one tool call may take (default 30; a server\'s own "timeout" wins).',
    )
    @no_var_expand
    @cell_magic
    def mcp(self, line: str, cell: str) -> Display:
        """Define MCP servers from Claude Desktop's JSON: one toolset per server.

        {"mcpServers": {"time": {"command": "mcp-server-time", "args": [...], "env": {...}},
                        "docs": {"url": "http://127.0.0.1:8000/mcp", "headers": {...}}}}
        "${VAR}" reads an environment variable; env and header values are never shown.
        Servers start on first use; use them with %%agent NAME --tools time (all its tools)
        or --tools time.get_current_time. %adk mcp shows their status and tools.
        """
        args = _parse(self.mcp, line, "%%mcp")
        return self.workspace.define_mcp(cell, timeout=args.timeout)

    @magic_arguments("%chat")
    @argument("agent", help="The agent's name (from %%%%agent, or a variable holding an agent).")
    @argument("message", nargs="*", help="%%chat only: the message, the rest of the line.")
    @argument(
        "--session",
        metavar="ID",
        help="The session to use (created when new); it becomes the current one. "
        "Without it the agent's current session (s1 at first) goes on.",
    )
    @argument("--user", metavar="U", help="The user id (default: user).")
    @argument(
        "--state",
        nargs="+",
        action="extend",
        metavar="KEY=VALUE",
        default=[],
        help="Session state: the initial state of a new session, or changes to an existing one.",
    )
    @argument("--new-session", action="store_true", help="Start a new session (with --session ID: start ID over).")
    @no_var_expand
    @line_cell_magic
    def chat(self, line: str, cell: str | None = None) -> ChatResult | None:
        """Run an agent on the cell's text (or `%chat NAME message`) with a live widget.

        Returns the run's result (.text, .events, .state, .usage); Out[] shows one summary line,
        as the widget above already shows the run. A Stop button or an interrupt cancels the run.
        In a notebook the cell becomes a top-level await on the kernel loop; called without that
        rewrite, the run goes on a worker thread.
        """
        return self._remember(kernel.run_chat_blocking(self.plan_chat(line, cell), self.workspace.view_factory))

    async def chat_async(self, line: str, cell: str | None = None) -> ChatResult | None:
        """What `await __adk_chat__(...)` runs: the same chat, on the running loop."""
        return self._remember(await kernel.run_chat(self.plan_chat(line, cell), self.workspace.view_factory))

    def _remember(self, result: ChatResult | None) -> ChatResult | None:
        """Keep an agent's last run for `%adk trace` (the latest last)."""
        if result is not None:
            runs = self.workspace.last_runs
            runs.pop(result.agent_name, None)
            runs[result.agent_name] = result
        return result

    def plan_chat(self, line: str, cell: str | None) -> ChatPlan:
        if cell is None:
            options, message = split_chat_line(line)
            args = _parse(self.chat, options, "%chat")
        else:
            args = _parse(self.chat, line, "%%chat")
            if args.message:
                raise UsageError(
                    f"%%chat: the message goes in the cell below the %%chat line, not after {args.agent!r}."
                )
            message = cell
        return self.workspace.plan_chat(
            args.agent, message, session=args.session, user=args.user, state=args.state, new_session=args.new_session
        )

    @magic_arguments()
    @argument(
        "command",
        nargs="?",
        choices=[
            "tools",
            "agents",
            "sessions",
            "state",
            "schema",
            "request",
            "reset",
            "model",
            "models",
            "mcp",
            "graph",
        ],
        help="What to show (default: tools and agents).",
    )
    @argument(
        "target",
        nargs="?",
        help="The AGENT (state, request, graph), TOOL (schema), model STRING (model) or MCP server (mcp).",
    )
    @argument("--session", metavar="ID", help="state/request: the session (default: the agent's current one).")
    @argument("--user", metavar="U", help="state/request: the user id.")
    @argument("--message", metavar="TEXT", help="request: the next user message to show in the contents.")
    @argument(
        "--provider",
        choices=["openai", "gemini", "anthropic", "all"],
        help="request: the provider wire format(s) to show (default: the agent's model's, else all).",
    )
    @argument(
        "--use",
        metavar="VAR|URL",
        help="sessions: keep chat sessions in this session service variable, or "
        "the one a URL names (memory, sqlite:///chats.db, postgresql://...), from now on.",
    )
    @argument("--mermaid", action="store_true", help="graph: print Mermaid flowchart text instead of drawing SVG.")
    @no_var_expand
    @line_magic
    def adk(self, line: str) -> Display | EvalReport | None:
        """Look at the notebook's tools, agents, sessions and state, and what a model receives.

        %adk tools | agents | sessions [--use VAR|URL] | state AGENT [--session ID] | schema TOOL
        %adk request AGENT [--message TEXT] [--provider P] | reset | model [STRING] | models | mcp [SERVER]
        %adk graph AGENT [--mermaid]
        %adk eval AGENT PATH [--criteria JSON] | eval save AGENT [--session S] --to PATH
        %adk trace [AGENT] [--file PATH] [--run N]
        %adk requires EXTRA ...    (a notebook's first cell: fails in one line naming a missing pip extra)
        """
        if line.split(maxsplit=1)[:1] == ["requires"]:
            _requires(line.split()[1:])
            return None
        if line.split(maxsplit=1)[:1] == ["eval"]:  # its own parser; the evaluation package loads on first use
            from .eval_command import eval_command

            return eval_command(self.workspace, line.strip()[len("eval") :])
        if line.split(maxsplit=1)[:1] == ["trace"]:  # its own parser, as eval
            from .trace_command import trace_command

            return trace_command(self.workspace, line.strip()[len("trace") :])
        args = _parse(self.adk, line, "%adk")
        command, target = args.command, args.target
        if command in _NEEDS and not target:
            raise UsageError(f"%adk {command} needs a {_NEEDS[command]}: %adk {command} {_NEEDS[command]}.")
        if target and command not in (*_NEEDS, "model", "mcp"):
            raise UsageError(f"%adk {command or ''} takes no {target!r}.".replace("  ", " "))
        return _ADK_COMMANDS[command](self.workspace, args)


def _overview(ws: Workspace, args: Any) -> Display:
    tools, agents = ws.tools_table(), ws.agents_table()
    return Display(tools.html + agents.html, f"{tools.text}\n\n{agents.text}")


_NEEDS = {"state": "AGENT", "request": "AGENT", "schema": "TOOL", "graph": "AGENT"}  # what each command names
# %adk COMMAND -> what shows it (eval and trace have parsers of their own: see AdkMagics.adk)
_ADK_COMMANDS: dict[str | None, Callable[[Workspace, Any], Display]] = {
    None: _overview,
    "tools": lambda ws, args: ws.tools_table(),
    "agents": lambda ws, args: ws.agents_table(),
    "sessions": lambda ws, args: ws.use_sessions(args.use) if args.use else ws.sessions_table(),
    "state": lambda ws, args: ws.state_table(args.target, args.session, args.user),
    "schema": lambda ws, args: ws.schema_view(args.target),
    "graph": lambda ws, args: ws.graph_view(args.target, mermaid=args.mermaid),
    "request": lambda ws, args: ws.request_view(args.target, args.session, args.user, args.message, args.provider),
    "reset": lambda ws, args: ws.reset(),
    "mcp": lambda ws, args: ws.mcp_view(args.target),
    "models": lambda ws, args: ws.models_table(),
    "model": lambda ws, args: ws.set_model(args.target),
}
