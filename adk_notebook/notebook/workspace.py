"""The notebook's `Workspace`: its tools, agents, sessions and default model, one method per magic.

The workspace is the notebook's registry: tools and agents by name, one session service for
every chat (in memory unless ADK_SESSIONS names a database, or `%adk sessions --use VAR|URL`), the current session of each agent, and
the default model. The magics (`magics.py`) only parse options and call its methods, which tests
call without a shell; what `%adk` shows is drawn by `tables.py`.

Misuse — an unknown agent or tool, a bad option, no model, a missing state variable — raises
`UsageError`, which IPython prints as one line. Objects it makes are ordinary Python objects in
the user namespace: a `%%tool` function becomes its (still callable) FunctionTool, an `%%agent`
cell binds an LlmAgent to its name.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from IPython.core.error import UsageError

from .._sync import run_sync
from ..agents.agent_tool import AgentTool
from ..agents.base import Agent
from ..agents.llm_agent import LlmAgent
from ..agents.workflow import LoopAgent, MapAgent, ParallelAgent, SequentialAgent
from ..core.errors import AdkError
from ..core.session import Session
from ..models.base import Llm
from ..models.registry import auto_choice, describe, model_id, parse_model_string, providers
from ..sessions.base import BaseSessionService
from ..sessions.urls import open_session_service, session_service_from_env
from ..tools.base import Tool, Toolset
from ..tools.builtin import BuiltinTool
from ..tools.function import tool as make_tool
from . import kernel, tables
from .display import Display, Table, model_label, pre_html
from .graph import agent_graph, graph_mermaid, layout
from .kernel import ChatPlan
from .mcp_servers import McpServers
from .render import escape, graph_svg
from .wire import next_request

__all__ = ["DEFAULT_SESSION", "DEFAULT_USER", "Workspace", "default_view_factory"]

DEFAULT_USER = "user"
DEFAULT_SESSION = "s1"


def default_view_factory(**kwargs: Any) -> kernel.View:
    """The live run widget (imported on first use: ipywidgets is not cheap to import)."""
    from .widgets import RunView

    return RunView(**kwargs)


@dataclass(slots=True)
class _AgentEntry:
    agent: LlmAgent
    tool_names: list[str]


class Workspace:
    """The notebook's tools, agents, sessions and default model, with one method per magic.

    Args:
        shell: The IPython shell whose user namespace the magics read and write.
        namespace: A namespace to use without a shell (tests).
    """

    def __init__(self, shell: Any = None, namespace: dict[str, Any] | None = None) -> None:
        self.shell = shell
        self._namespace = namespace
        self.tools: dict[str, Tool] = {}
        self.agents: dict[str, _AgentEntry] = {}
        self.session_service: BaseSessionService = session_service_from_env()
        self.user_id = DEFAULT_USER
        self.users: set[str] = {DEFAULT_USER}
        self.default_model: Llm | str = "auto"
        self.current: dict[tuple[str, str], str] = {}  # (agent, user) -> the session a bare %%chat continues
        self.view_factory: Callable[..., kernel.View] = default_view_factory
        self.mcp = McpServers()  # %%mcp: one McpToolset per server name
        self.noticed: set[str] = set()  # models whose one-line notice (a tiny demo model) was shown
        self.last_runs: dict[str, kernel.ChatResult] = {}  # agent -> its last run, latest last (%adk trace)

    @property
    def namespace(self) -> dict[str, Any]:
        if self._namespace is not None:
            return self._namespace
        return self.shell.user_ns if self.shell is not None else {}

    @property
    def user_module_name(self) -> str:
        module = getattr(self.shell, "user_module", None)
        return getattr(module, "__name__", "__main__")

    # -- %%tool --------------------------------------------------------------------------------
    def define_tools(
        self,
        defined: dict[str, Any],
        *,
        read_only: bool = False,
        concurrency_safe: bool = False,
        long_running: bool = False,
        name: str | None = None,
    ) -> list[Tool]:
        """Register the functions (and Tool objects) a cell bound, given as {variable: object}.

        Each function becomes a FunctionTool that replaces it in the namespace (it is still
        callable). Names starting with "_" are left alone, as helpers.
        """
        found = {var: obj for var, obj in defined.items() if not var.startswith("_") and self._is_tool_source(obj)}
        if not found:
            raise UsageError(
                "%%tool: the cell defines no function. Put a `def` in it, e.g. `def get_weather(city: str) -> dict:`."
            )
        if name is not None and len(found) > 1:
            raise UsageError(
                f"%%tool --name needs a cell that defines one function; this one defines {', '.join(found)}."
            )
        made: dict[str, Tool] = {}
        for var, obj in sorted(found.items(), key=lambda item: _line_of(item[1])):
            try:
                if isinstance(obj, Tool):
                    t = obj
                    if name is not None:
                        from ..tools.names import check_tool_name

                        t.name = check_tool_name(name)
                    t.is_read_only = t.is_read_only or read_only
                    t.is_concurrency_safe = t.is_concurrency_safe or concurrency_safe
                    t.is_long_running = t.is_long_running or long_running
                else:
                    t = make_tool(
                        name=name, read_only=read_only, concurrency_safe=concurrency_safe, long_running=long_running
                    )(obj)
            except (AdkError, TypeError, ValueError) as exc:
                raise UsageError(f"%%tool {var}: {_message(exc)}") from None
            made[var] = t
        for var, t in made.items():
            replaced = [old for old in (self.tools.get(t.name), self.namespace.get(var)) if isinstance(old, Tool)]
            self.namespace[var] = t
            self.tools[t.name] = t
            self._replace_in_agents(replaced, t)
        return list(made.values())

    def _is_tool_source(self, obj: Any) -> bool:
        if isinstance(obj, Tool):
            return True
        if not inspect.isfunction(obj) or obj.__name__ == "<lambda>":
            return False
        # In a shell, only the cell's own functions (not ones it imported); without one, all given.
        return self.shell is None or getattr(obj, "__module__", None) == self.user_module_name

    def _replace_in_agents(self, replaced: list[Tool], t: Tool) -> None:
        """A redefined tool replaces the very objects it redefines in every agent that holds them
        (not another tool that happens to share its name)."""
        for entry in self.agents.values():
            if any(old is r for old in entry.agent.tools for r in replaced):
                entry.agent.tools = [t if any(old is r for r in replaced) else old for old in entry.agent.tools]

    # -- %%agent -------------------------------------------------------------------------------
    def define_agent(
        self,
        name: str,
        instruction: str = "",
        *,
        model: str | None = None,
        tools: Sequence[str] = (),
        toolsets: Sequence[str] = (),
        strategy: str | None = None,
        max_iterations: int | None = None,
        output_key: str | None = None,
        output_schema: str | None = None,
        include_contents: str | None = None,
        description: str | None = None,
        sub_agents: Sequence[str] = (),
        agent_tools: Sequence[str] = (),
    ) -> LlmAgent:
        """Make an LlmAgent from a cell's options (names of notebook objects) and bind it to `name`."""
        if not name.isidentifier():
            raise UsageError(f"%%agent: the agent name {name!r} must be a Python identifier, e.g. weather_bot.")
        children = self._children(name, sub_agents)
        kwargs: dict[str, Any] = {
            "name": name,
            "instruction": instruction,
        }
        try:
            kwargs["model"] = self._model(model) if model is not None else self.default_model
        except UsageError as exc:
            raise UsageError(f"%%agent {name}: {exc}") from None
        plain, from_mcp = self.mcp.picks(tools, lambda t: t in self.tools)  # `time`, `time.get_current_time`
        kwargs["tools"] = [self._tool(t) for t in plain] + [AgentTool(self.agent(a)) for a in agent_tools]
        if children:
            kwargs["sub_agents"] = children
        if toolsets or from_mcp:
            kwargs["toolsets"] = [self._toolset(t) for t in toolsets] + from_mcp
        if description is not None:
            kwargs["description"] = description
        if max_iterations is not None:
            kwargs["max_iterations"] = max_iterations
        if output_key is not None:
            kwargs["output_key"] = output_key
        if include_contents is not None:
            kwargs["include_contents"] = include_contents
        if strategy is not None:
            kwargs["tool_execution_strategy"] = strategy
        if output_schema is not None:
            kwargs["output_schema"] = self._output_schema(output_schema)
        try:
            agent = LlmAgent(**kwargs)
        except (AdkError, TypeError, ValueError) as exc:  # e.g. an output schema it cannot use
            raise UsageError(f"%%agent {name}: {_message(exc)}") from None
        self.agents[name] = _AgentEntry(agent, [t.name for t in agent.tools])
        self.namespace[name] = agent
        return agent

    def define_workflow(
        self,
        name: str,
        kind: str,
        agents: Sequence[str],
        *,
        description: str = "",
        max_iterations: int | None = None,
        items_key: str | None = None,
        output_key: str | None = None,
        max_concurrency: int | None = None,
    ) -> Agent:
        """`%%agent NAME --sequential|--parallel|--loop A,B` or `--map A --items KEY`: a workflow
        agent over agents the notebook defined, bound to `name`."""
        if not name.isidentifier():
            raise UsageError(f"%%agent: the agent name {name!r} must be a Python identifier, e.g. pipeline.")
        children = self._children(name, agents)
        if not children:
            raise UsageError(f"%%agent {name} --{kind}: name the agents it runs, e.g. --{kind} research,writer.")
        options: dict[str, Any] = {"name": name, "description": description}
        try:
            if kind == "map":
                if len(children) != 1:
                    raise UsageError(
                        f"%%agent {name} --map: one agent runs per item, got {len(children)}: {', '.join(agents)}."
                    )
                if not items_key:
                    raise UsageError(
                        f"%%agent {name} --map {agents[0]}: say which state list it maps over, e.g. --items topics."
                    )
                agent: Agent = MapAgent(
                    sub_agent=children[0],
                    items_key=items_key,
                    output_key=output_key or name,
                    max_concurrency=max_concurrency,
                    **options,
                )
            elif kind == "loop":
                agent = LoopAgent(sub_agents=children, max_iterations=max_iterations, **options)
            else:
                agent = (SequentialAgent if kind == "sequential" else ParallelAgent)(sub_agents=children, **options)
        except AdkError as exc:
            raise UsageError(f"%%agent {name}: {_message(exc)}") from None
        self.namespace[name] = agent
        return agent

    def _children(self, name: str, names: Sequence[str]) -> list[Agent]:
        """The agents `name` will hold. Those the previous definition of `name` held are let go first,
        so running a cell again redefines it rather than failing on "already belongs to"."""
        children = [self.agent(n) for n in names]
        previous = self.namespace.get(name)
        for child in children:
            if previous is not None and child.parent is previous:
                child.parent = None
        return children

    def _model(self, value: Llm | str, label: str = "--model") -> Llm | str:
        """A model object, a variable holding one (or a model string), or a model string; errors start with `label`."""
        if isinstance(value, Llm):
            return value
        held = self.namespace.get(value, None) if value.isidentifier() else None
        if isinstance(held, Llm):
            return held
        if held is not None and not isinstance(held, str):
            raise UsageError(
                f"{label} {value}: that variable holds a {type(held).__name__}, not a model "
                "(an Llm such as ScriptedModel([...]), or a model string)."
            )
        text = held if isinstance(held, str) else value
        if held is None and value.isidentifier() and value not in ("auto", "local") and not value.startswith("gemini"):
            raise UsageError(
                f"{label} {value}: no variable of that name, and not a model string "
                "(e.g. auto, gemini-2.5-flash, openai:gpt-4o-mini, anthropic:claude-sonnet-4-6, local)."
            )
        try:  # the string only: a provider's key is read when a request is sent
            parse_model_string(text)
        except AdkError as exc:
            raise UsageError(f"{label} {value}: {_message(exc)}") from None
        return text

    def _tool(self, name: str) -> Tool | BuiltinTool | Callable[..., Any]:
        if name in self.tools:
            return self.tools[name]
        held = self.namespace.get(name)
        if isinstance(held, Tool | BuiltinTool) or inspect.isfunction(held):  # BuiltinTool: `search = GoogleSearch()`
            return held
        raise self._unknown_tool(name)

    def _unknown_tool(self, name: str) -> UsageError:
        known = ", ".join(sorted(self.tools)) or "none yet"
        servers = f"; MCP servers: {', '.join(self.mcp)}" if self.mcp else ""
        return UsageError(f"Unknown tool {name!r} (tools: {known}{servers}). Define it with %%tool.")

    def _toolset(self, name: str) -> Toolset:
        held = self.namespace.get(name)
        if isinstance(held, Toolset):
            return held
        raise UsageError(f"--toolsets {name}: {_holding(held)}, not a Toolset.")

    def _output_schema(self, name: str) -> Any:
        from pydantic import BaseModel

        held = self.namespace.get(name)
        if isinstance(held, dict) or (isinstance(held, type) and issubclass(held, BaseModel)):
            return held
        raise UsageError(
            f"--output-schema {name}: {_holding(held)}; give a pydantic model class or a JSON-schema dict."
        )

    def agent(self, name: str) -> Agent:
        """The agent called `name`: one from %%agent, else an Agent object in a variable of that name."""
        if name in self.agents:
            return self.agents[name].agent
        held = self.namespace.get(name)
        if isinstance(held, Agent):
            return held
        every = self._all_agents()  # by their .name, as `%adk agents` lists them
        if name in every:
            return every[name]
        known = ", ".join(sorted(every)) or "none yet"
        raise UsageError(f"Unknown agent {name!r} (agents: {known}). Define it with %%agent {name}.")

    # -- %%chat --------------------------------------------------------------------------------
    def plan_chat(
        self,
        name: str,
        message: str,
        *,
        session: str | None = None,
        user: str | None = None,
        state: Iterable[str] = (),
        new_session: bool = False,
    ) -> ChatPlan:
        """Decide everything about one chat: agent, session, state; check the model is configured."""
        agent = self.agent(name)
        if not message.strip():
            raise UsageError(
                f"%%chat {name}: the message is empty. Write it below the %%chat line (or: %chat {name} Hello)."
            )
        values = _parse_state(state)
        resolve = getattr(agent, "resolve_model", None)
        model_name = notice = None
        if resolve is not None:
            try:
                model = resolve()
            except (AdkError, ImportError) as exc:  # no key set, an optional extra not installed
                raise UsageError(f"%%chat {name}: {_message(exc)}") from None
            model_name = model_id(model)
            notice = getattr(model, "notice", None)
            if notice is not None:  # said once a kernel, not at every run
                notice = None if model_name in self.noticed else notice
                self.noticed.add(model_name)
        user = user or self.user_id
        self.users.add(user)
        key = (agent.name, user)
        if session is not None:
            session_id, restart = session, new_session
        elif new_session:
            session_id, restart = self._free_session_id(agent.name, user), False
        else:
            session_id, restart = self.current.get(key, DEFAULT_SESSION), False
        self.current[key] = session_id
        return ChatPlan(
            agent,
            message.strip("\n"),
            self.session_service,
            user,
            session_id,
            values,
            restart,
            model=model_name,
            notice=notice,
        )

    def _free_session_id(self, app: str, user: str) -> str:
        taken = {s.id for s in run_sync(self.session_service.list(app_name=app, user_id=user))}
        n = 1
        while f"s{n}" in taken:
            n += 1
        return f"s{n}"

    # -- %%mcp ---------------------------------------------------------------------------------
    def define_mcp(self, config: str, *, timeout: float | None = None) -> Display:
        """One McpToolset per server of a `%%mcp` cell; agents using a changed server get the new one."""
        return self.mcp.define(config, timeout, [entry.agent for entry in self.agents.values()])

    def mcp_view(self, name: str | None = None) -> Display:
        """`%adk mcp [NAME]`: each server's status and tools (connecting to it first)."""
        return self.mcp.view(name)

    # -- %adk ----------------------------------------------------------------------------------
    def tools_table(self) -> Table:
        return tables.tools_table(self.tools.values())

    def agents_table(self) -> Table:
        return tables.agents_table(self._all_agents(), self.current, self.user_id)

    def _all_agents(self) -> dict[str, Agent]:
        agents: dict[str, Agent] = {name: entry.agent for name, entry in self.agents.items()}
        for var, held in self.namespace.items():
            if isinstance(held, Agent) and not var.startswith("_") and held.name not in agents:
                agents[held.name] = held
        return agents

    def sessions_table(self) -> Table:
        return tables.sessions_table(self.session_service, self._all_agents(), sorted(self.users), self.current)

    def use_sessions(self, name: str) -> Display:
        """`%adk sessions --use VAR|URL`: a session service variable, or a URL as ADK_SESSIONS takes."""
        try:
            held = open_session_service(name) if name == "memory" or "://" in name else self.namespace.get(name)
        except AdkError as exc:
            raise UsageError(f"%adk sessions --use: {exc.message}") from None
        if not isinstance(held, BaseSessionService):
            raise UsageError(
                f"%adk sessions --use {name}: {_holding(held)}, not a session service "
                "(e.g. SqliteSessionService('chats.db'))."
            )
        self.session_service = held
        return Display(
            f"<div>Chats now keep sessions in <code>{escape(repr(held))}</code>.</div>",
            f"Chats now keep sessions in {held!r}.",
        )

    def find_session(self, name: str, session: str | None, user: str | None) -> tuple[Agent, Session | None, str, str]:
        """Agent `name`, its session (`session`, else the one its chats use now; None when there is
        none yet), and the user and session id looked up."""
        agent = self.agent(name)
        user = user or self.user_id
        session_id = session or self.current.get((agent.name, user), DEFAULT_SESSION)
        found = run_sync(self.session_service.get(app_name=agent.name, user_id=user, session_id=session_id))
        return agent, found, user, session_id

    def state_table(self, name: str, session: str | None = None, user: str | None = None) -> Table:
        agent, found, user, session_id = self.find_session(name, session, user)
        if found is None:
            raise UsageError(
                f"%adk state {name}: no session {session_id!r} for user {user!r} yet. Run %%chat {name} first."
            )
        return tables.state_table(agent.name, found, session_id, user)

    def graph_view(self, name: str, *, mermaid: bool = False) -> Display:
        """`%adk graph NAME`: the agent's tree as inline SVG, or as Mermaid text with `mermaid`."""
        graph = agent_graph(self.agent(name))
        text = graph_mermaid(graph)
        if mermaid:
            return Display(pre_html(text), text)
        return Display(graph_svg(layout(graph)), text)

    def schema_view(self, name: str) -> Display:
        t = self.tools.get(name)
        if t is None:
            held = self.namespace.get(name)
            t = held if isinstance(held, Tool) else None
        if t is None:
            raise self._unknown_tool(name)
        return tables.schema_view(t)

    def request_view(
        self,
        name: str,
        session: str | None = None,
        user: str | None = None,
        message: str | None = None,
        provider: str | None = None,
    ) -> Display:
        """What the model receives on the next call: instruction after templating, contents, tools."""
        agent, found, user, session_id = self.find_session(name, session, user)
        if not isinstance(agent, LlmAgent):
            raise UsageError(f"%adk request {name}: only an LlmAgent sends model requests.")
        pending = message if message is not None else "<your next message>"
        try:
            request, model = run_sync(next_request(agent, found, user, session_id, pending))
        except AdkError as exc:
            raise UsageError(f"%adk request {name}: {_message(exc)}") from None
        return tables.request_view(
            agent.name,
            request,
            model,
            session_id=session_id,
            user=user,
            new_session=found is None,
            message_given=message is not None,
            provider=provider,
        )

    def set_model(self, value: str | None) -> Display:
        if value is not None:
            self.default_model = self._model(value, "%adk model")
        label = model_label(self.default_model)
        if self.default_model == "auto":
            label += f" ({auto_choice().reason})"
        text = f"Default model for new agents: {label}" + (
            "" if value is None else " (agents defined before keep theirs)"
        )
        return Display(f"<div>{escape(text)}</div>", text)

    def models_table(self) -> Table:
        choice = auto_choice()
        return tables.models_table(providers(), choice, describe("auto") if choice.model else None)

    def reset(self) -> Display:
        counts = f"{len(self.tools)} tools, {len(self.agents)} agents" + (
            f", {len(self.mcp)} MCP servers" if self.mcp else ""
        )
        self.mcp.close_all([entry.agent for entry in self.agents.values()])
        self.tools.clear()
        self.agents.clear()
        self.current.clear()
        self.last_runs.clear()
        self.users = {DEFAULT_USER}
        self.session_service = session_service_from_env()
        self.default_model = "auto"
        text = f"adk reset: forgot {counts} and every chat session; the default model is auto again."
        return Display(f"<div>{escape(text)}</div>", text)


def _message(exc: BaseException) -> str:
    if not isinstance(exc, AdkError):
        return str(exc)
    variables = exc.details.get("variables") if exc.code == "missing_api_key" else None
    if variables:  # how to set one here; the terminal says it its own way
        return f"{exc.message} In a notebook: os.environ[{variables[0]!r}] = '...' (%adk models lists every provider)."
    return exc.message


def _holding(held: Any) -> str:
    """What a variable named in an option holds, for an error that says why it will not do."""
    return "no variable of that name" if held is None else f"it holds a {type(held).__name__}"


def _line_of(obj: Any) -> int:
    code = getattr(obj, "__code__", None) or getattr(getattr(obj, "__wrapped__", None), "__code__", None)
    return code.co_firstlineno if code is not None else 0


def _parse_state(pairs: Iterable[str]) -> dict[str, Any]:
    """`key=value` pairs; a value that reads as a Python literal (3, True, [1, 2]) is one, else text."""
    values: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--state expects KEY=VALUE, got {pair!r} (e.g. --state user_name=Ana).")
        try:
            values[key.strip()] = ast.literal_eval(raw)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            values[key.strip()] = raw
    return values
