"""The magics — `%%tool`, `%%agent`, `%%chat` / `%chat`, `%adk` — thin over a `Workspace`.

A magic parses its options with IPython's magic_arguments (so `%%agent?` shows them) and hands
off to a `Workspace` method, which tests call without a shell. The workspace is the notebook's
registry: tools and agents by name, one session service for every chat (in memory unless
`%adk sessions --use VAR`), the current session of each agent, and the default model.

Options and messages are taken literally: no `$var` / `{var}` expansion, so braces in a message
reach the model as written, whichever way the cell runs. Misuse — an unknown agent or tool, a
bad option, no model, a missing state variable — raises `UsageError`, which IPython prints as
one line. Objects the magics make are ordinary Python objects in the user namespace: a `%%tool`
function becomes its (still callable) FunctionTool, an `%%agent` cell binds an LlmAgent to its
name. How a `%%chat` runs on the kernel's event loop is `kernel.py`'s business.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import re
import shlex
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_cell_magic, line_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments

from .._sync import run_sync
from ..agents.base import Agent
from ..agents.llm_agent import LlmAgent
from ..core.content import Content
from ..core.context import InvocationContext, ReadonlyContext
from ..core.errors import AdkError
from ..core.events import Event
from ..models.base import Llm, LlmRequest
from ..models.registry import AUTO_DEFAULTS
from ..runner import RunConfig
from ..sessions.base import BaseSessionService, Session
from ..sessions.in_memory import InMemorySessionService
from ..tools.base import Tool, Toolset
from ..tools.function import tool as make_tool
from . import kernel
from .kernel import ChatPlan, ChatResult

__all__ = ["AdkMagics", "Display", "Table", "Workspace", "default_view_factory"]

DEFAULT_USER = "user"
DEFAULT_SESSION = "s1"


def default_view_factory(**kwargs: Any) -> kernel.View:
    """The live run widget (imported on first use: ipywidgets is not cheap to import)."""
    from .widgets import RunView

    return RunView(**kwargs)


# -- displays ----------------------------------------------------------------------------------
class Display:
    """Something the magics return: HTML (escaped) for notebooks, plain text for everything else."""

    def __init__(self, html: str, text: str) -> None:
        self.html = html
        self.text = text

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/plain": self.text, "text/html": self.html}

    def __repr__(self) -> str:
        return self.text


class Table(Display):
    """A titled table: `render.table_html` for HTML, aligned columns for text."""

    def __init__(self, title: str, headers: Sequence[str], rows: Sequence[Sequence[Any]], note: str = "") -> None:
        from .render import escape, table_html

        self.title, self.headers, self.rows = title, list(headers), [[_cell(v) for v in row] for row in rows]
        body = table_html(self.headers, self.rows) if self.rows else ""
        html = f"<div><b>{escape(title)}</b>{body}" + (f"<div style=\"opacity:.7\">{escape(note)}</div>" if note else "") + "</div>"
        super().__init__(html, _text_table(title, self.headers, self.rows, note))


def _cell(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=repr)


def _text_table(title: str, headers: list[str], rows: list[list[str]], note: str) -> str:
    lines = [title]
    if rows:
        short = [[_one_line(v, 60) for v in row] for row in rows]
        widths = [max(len(h), *(len(r[i]) for r in short)) for i, h in enumerate(headers)]
        lines.append("  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip())
        lines.extend("  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in short)
    if note:
        lines.append(note)
    return "\n".join(lines)


def _one_line(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _pre(value: Any) -> str:
    from .render import escape

    text = value if isinstance(value, str) else json.dumps(_shorten(value), indent=2, ensure_ascii=False, default=repr)
    return f'<pre style="white-space:pre-wrap;margin:2px 0 8px">{escape(text)}</pre>'


def _json(value: Any) -> str:
    return json.dumps(_shorten(value), indent=2, ensure_ascii=False, default=repr)


def _shorten(value: Any, limit: int = 2000) -> Any:
    """Long strings (base64 images...) cut for display; the structure stays."""
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:200]}… ({len(value) - 200} more characters)"
    if isinstance(value, dict):
        return {k: _shorten(v, limit) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_shorten(v, limit) for v in value]
    return value


def _type_of(schema: Any) -> str:
    """A JSON schema as a short type expression: `string`, `"a" | "b"`, `array[integer]`..."""
    if not isinstance(schema, dict):
        return "any"
    if "enum" in schema:
        return " | ".join(json.dumps(v) for v in schema["enum"])
    if "const" in schema:
        return json.dumps(schema["const"])
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return " | ".join(_type_of(s) for s in schema[key])
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(kind)
    if kind == "array":
        return f"array[{_type_of(schema.get('items'))}]"
    return kind or "any"


def _flags(t: Tool) -> list[str]:
    return [label for label, on in (("read-only", t.is_read_only), ("concurrency-safe", t.is_concurrency_safe),
                                    ("long-running", t.is_long_running)) if on]


def _parameter_rows(t: Tool) -> list[list[str]]:
    schema = t.parameters_schema or {}
    required = set(schema.get("required", ()))
    rows = []
    for name, prop in (schema.get("properties") or {}).items():
        default = json.dumps(prop["default"], ensure_ascii=False) if isinstance(prop, dict) and "default" in prop else ""
        rows.append([name, _type_of(prop), "yes" if name in required else "", default,
                     prop.get("description", "") if isinstance(prop, dict) else ""])
    return rows


def tool_cards(tools: Sequence[Tool]) -> Display:
    """Each tool's schema as the model sees it: name, flags, description, parameters."""
    from .render import escape, table_html

    html, text = [], []
    for t in tools:
        flags = _flags(t)
        rows = _parameter_rows(t)
        badges = "".join(f' <span style="font-size:11px;padding:0 4px;border:1px solid currentColor;border-radius:3px;'
                         f'opacity:.7">{escape(f)}</span>' for f in flags)
        html.append(f'<div style="margin:4px 0 10px"><div>tool <code><b>{escape(t.name)}</b></code>{badges}</div>'
                    f'<div style="opacity:.8">{escape(t.description)}</div>'
                    + (table_html(["parameter", "type", "required", "default", "description"], rows) if rows
                       else '<div style="opacity:.7">no parameters</div>') + "</div>")
        signature = ", ".join(f"{r[0]}: {r[1]}" + (f" = {r[3]}" if r[3] else "") for r in rows)
        text.append(f"tool {t.name}({signature})" + (f"  [{', '.join(flags)}]" if flags else ""))
        if t.description:
            text.append(f"    {_one_line(t.description, 200)}")
        text.extend(f"    {r[0]}: {r[4]}" for r in rows if r[4])
    return Display("".join(html), "\n".join(text))


# -- the workspace -----------------------------------------------------------------------------
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
        self.session_service: BaseSessionService = InMemorySessionService()
        self.user_id = DEFAULT_USER
        self.users: set[str] = {DEFAULT_USER}
        self.default_model: Llm | str = "auto"
        self.current: dict[tuple[str, str], str] = {}  # (agent, user) -> the session a bare %%chat continues
        self.view_factory: Callable[..., kernel.View] = default_view_factory

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
            raise UsageError("%%tool: the cell defines no function. Put a `def` in it, e.g. `def get_weather(city: str) -> dict:`.")
        if name is not None and len(found) > 1:
            raise UsageError(f"%%tool --name needs a cell that defines one function; this one defines {', '.join(found)}.")
        made: dict[str, Tool] = {}
        for var, obj in sorted(found.items(), key=lambda item: _line_of(item[1])):
            try:
                if isinstance(obj, Tool):
                    t = obj
                    if name is not None:
                        from ..tools.base import check_tool_name

                        t.name = check_tool_name(name)
                    t.is_read_only = t.is_read_only or read_only
                    t.is_concurrency_safe = t.is_concurrency_safe or concurrency_safe
                    t.is_long_running = t.is_long_running or long_running
                else:
                    t = make_tool(name=name, read_only=read_only, concurrency_safe=concurrency_safe,
                                  long_running=long_running)(obj)
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
    ) -> LlmAgent:
        """Make an LlmAgent from a cell's options (names of notebook objects) and bind it to `name`."""
        if not name.isidentifier():
            raise UsageError(f"%%agent: the agent name {name!r} must be a Python identifier, e.g. weather_bot.")
        accepted = inspect.signature(LlmAgent).parameters
        kwargs: dict[str, Any] = {
            "name": name,
            "instruction": instruction,
            "model": self._model(model) if model is not None else self.default_model,
            "tools": [self._tool(t) for t in tools],
        }
        if toolsets:
            kwargs["toolsets"] = [self._toolset(t) for t in toolsets]
        if description is not None:
            kwargs["description"] = description
        if max_iterations is not None:
            kwargs["max_iterations"] = max_iterations
        if output_key is not None:
            kwargs["output_key"] = output_key
        if include_contents is not None:
            kwargs["include_contents"] = include_contents
        if strategy is not None:
            _require(accepted, "tool_execution_strategy", "--strategy")
            kwargs["tool_execution_strategy"] = _strategy(strategy)
        if output_schema is not None:
            _require(accepted, "output_schema", "--output-schema")
            kwargs["output_schema"] = self._output_schema(output_schema)
        try:
            agent = LlmAgent(**kwargs)
        except (AdkError, TypeError, ValueError) as exc:  # e.g. an output schema it cannot use
            raise UsageError(f"%%agent {name}: {_message(exc)}") from None
        self.agents[name] = _AgentEntry(agent, [t.name for t in agent.tools])
        self.namespace[name] = agent
        return agent

    def _model(self, value: Llm | str) -> Llm | str:
        """A model object, a variable holding one (or a model string), or a model string."""
        if isinstance(value, Llm):
            return value
        held = self.namespace.get(value, None) if value.isidentifier() else None
        if isinstance(held, (Llm, str)):
            return held
        if held is not None:
            raise UsageError(f"--model {value}: that variable holds a {type(held).__name__}, not a model "
                             "(an Llm such as ScriptedModel([...]), or a model string).")
        if value.isidentifier() and value not in ("auto", "local") and not value.startswith("gemini"):
            raise UsageError(f"--model {value}: no variable of that name, and not a model string "
                             "(e.g. auto, gemini-2.5-flash, openai:gpt-4o-mini, anthropic:claude-sonnet-4-6, local).")
        return value

    def _tool(self, name: str) -> Tool | Callable[..., Any]:
        if name in self.tools:
            return self.tools[name]
        held = self.namespace.get(name)
        if isinstance(held, Tool) or inspect.isfunction(held):
            return held
        known = ", ".join(sorted(self.tools)) or "none yet"
        raise UsageError(f"Unknown tool {name!r} (tools: {known}). Define it with %%tool.")

    def _toolset(self, name: str) -> Toolset:
        held = self.namespace.get(name)
        if isinstance(held, Toolset):
            return held
        what = "no variable of that name" if held is None else f"it holds a {type(held).__name__}"
        raise UsageError(f"--toolsets {name}: {what}, not a Toolset.")

    def _output_schema(self, name: str) -> Any:
        from pydantic import BaseModel

        held = self.namespace.get(name)
        if isinstance(held, dict) or (isinstance(held, type) and issubclass(held, BaseModel)):
            return held
        what = "no variable of that name" if held is None else f"it holds a {type(held).__name__}"
        raise UsageError(f"--output-schema {name}: {what}; give a pydantic model class or a JSON-schema dict.")

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
            raise UsageError(f"%%chat {name}: the message is empty. Write it below the %%chat line (or: %chat {name} Hello).")
        values = _parse_state(state)
        resolve = getattr(agent, "resolve_model", None)
        if resolve is not None:
            try:
                resolve()
            except (AdkError, ImportError) as exc:  # no key set, an optional extra not installed
                raise UsageError(f"%%chat {name}: {_message(exc)}") from None
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
        return ChatPlan(agent, message.strip("\n"), self.session_service, user, session_id, values, restart)

    def _free_session_id(self, app: str, user: str) -> str:
        taken = {s.id for s in run_sync(self.session_service.list(app_name=app, user_id=user))}
        n = 1
        while f"s{n}" in taken:
            n += 1
        return f"s{n}"

    # -- %adk ----------------------------------------------------------------------------------
    def tools_table(self) -> Table:
        rows = [[t.name, ", ".join(r[0] for r in _parameter_rows(t)), ", ".join(_flags(t)),
                 _one_line(t.description, 80)] for t in self.tools.values()]
        return Table(f"Tools ({len(rows)})", ["tool", "parameters", "flags", "description"], rows,
                     "" if rows else "No tools yet: define one with %%tool.")

    def agents_table(self) -> Table:
        rows = []
        for name, agent in self._all_agents().items():
            tools = [t.name for t in getattr(agent, "tools", ())] + [
                f"{getattr(ts, 'name', type(ts).__name__)} (toolset)" for ts in getattr(agent, "toolsets", ())]
            rows.append([name, _model_label(getattr(agent, "model", None)), ", ".join(tools),
                         self.current.get((agent.name, self.user_id), ""),
                         _one_line(agent.description or _instruction_text(agent), 80)])
        return Table(f"Agents ({len(rows)})", ["agent", "model", "tools", "session", "description"], rows,
                     "" if rows else "No agents yet: define one with %%agent NAME.")

    def _all_agents(self) -> dict[str, Agent]:
        agents: dict[str, Agent] = {name: entry.agent for name, entry in self.agents.items()}
        for var, held in self.namespace.items():
            if isinstance(held, Agent) and not var.startswith("_") and held.name not in agents:
                agents[held.name] = held
        return agents

    def sessions_table(self) -> Table:
        rows = []
        for name, agent in self._all_agents().items():
            for user in sorted(self.users):
                for s in run_sync(self.session_service.list(app_name=agent.name, user_id=user)):
                    full = run_sync(self.session_service.get(app_name=agent.name, user_id=user, session_id=s.id))
                    events = len(full.events) if full is not None else 0
                    mark = "yes" if self.current.get((agent.name, user)) == s.id else ""
                    rows.append([name, user, s.id, str(events), ", ".join(sorted(s.state)), mark])
        return Table(f"Sessions ({len(rows)}) in {type(self.session_service).__name__}",
                     ["agent", "user", "session", "events", "state keys", "current"], rows,
                     "" if rows else "No sessions yet: %%chat AGENT starts one.")

    def use_sessions(self, name: str) -> Display:
        held = self.namespace.get(name)
        if not isinstance(held, BaseSessionService):
            what = "no variable of that name" if held is None else f"it holds a {type(held).__name__}"
            raise UsageError(f"%adk sessions --use {name}: {what}, not a session service (e.g. SqliteSessionService('chats.db')).")
        self.session_service = held
        return Display(f"<div>Chats now keep sessions in <code>{_escape(repr(held))}</code>.</div>",
                       f"Chats now keep sessions in {held!r}.")

    def _session(self, name: str, session: str | None, user: str | None) -> tuple[Agent, Session | None, str, str]:
        agent = self.agent(name)
        user = user or self.user_id
        session_id = session or self.current.get((agent.name, user), DEFAULT_SESSION)
        found = run_sync(self.session_service.get(app_name=agent.name, user_id=user, session_id=session_id))
        return agent, found, user, session_id

    def state_table(self, name: str, session: str | None = None, user: str | None = None) -> Table:
        agent, found, user, session_id = self._session(name, session, user)
        if found is None:
            raise UsageError(f"%adk state {name}: no session {session_id!r} for user {user!r} yet. Run %%chat {name} first.")
        rows = [[key, _one_line(repr(value), 200), _scope(key)] for key, value in sorted(found.state.items())]
        return Table(f"State of {agent.name}, session {session_id!r} (user {user!r})", ["key", "value", "scope"], rows,
                     "" if rows else "The state is empty.")

    def schema_view(self, name: str) -> Display:
        t = self.tools.get(name)
        if t is None:
            held = self.namespace.get(name)
            t = held if isinstance(held, Tool) else None
        if t is None:
            known = ", ".join(sorted(self.tools)) or "none yet"
            raise UsageError(f"Unknown tool {name!r} (tools: {known}). Define it with %%tool.")
        d = t.declaration()
        declaration = {"name": d.name, "description": d.description, "parameters": d.parameters}
        if d.response is not None:
            declaration["response"] = d.response
        flags = ", ".join(_flags(t)) or "none"
        html = (f"<div><b>Tool <code>{_escape(t.name)}</code></b> (flags: {_escape(flags)})"
                f"<div>As the model sees it:</div>{_pre(declaration)}</div>")
        return Display(html, f"Tool {t.name} (flags: {flags})\nAs the model sees it:\n{_json(declaration)}")

    def request_view(self, name: str, session: str | None = None, user: str | None = None, message: str | None = None,
                     provider: str | None = None) -> Display:
        """What the model receives on the next call: instruction after templating, contents, tools."""
        agent, found, user, session_id = self._session(name, session, user)
        if not isinstance(agent, LlmAgent):
            raise UsageError(f"%adk request {name}: only an LlmAgent sends model requests.")
        pending = message if message is not None else "<your next message>"
        try:
            request, model = run_sync(_next_request(agent, self.session_service, found, user, session_id, pending))
        except AdkError as exc:
            raise UsageError(f"%adk request {name}: {_message(exc)}") from None
        ours = {
            "model": request.model,
            "system_instruction": request.system_instruction,
            "contents": [c.to_dict() for c in request.contents],
            "tools": [{"name": d.name, "description": d.description, "parameters": d.parameters} for d in request.tools],
            "config": {k: v for k, v in _config_dict(request.config).items() if v is not None},
        }
        title = (f"Next request of {agent.name} (session {session_id!r}, user {user!r}"
                 + ("" if found is not None else ", a new session") + ")")
        note = "" if message is not None else "The last user message stands for the one your next %%chat sends."
        html = [f"<div><b>{_escape(title)}</b>", f'<div style="opacity:.7">{_escape(note)}</div>' if note else "",
                "<div>System instruction (after templating):</div>", _pre(request.system_instruction or "(none)"),
                "<div>Contents:</div>", _pre(ours["contents"]), "<div>Tool declarations:</div>", _pre(ours["tools"])]
        text = [title] + ([note] if note else []) + ["System instruction (after templating):",
                                                     request.system_instruction or "(none)", "Contents:",
                                                     _json(ours["contents"]), "Tool declarations:", _json(ours["tools"])]
        for label, body in wire_bodies(model, request, provider):
            html.append(f"<details><summary>{_escape(label)}</summary>{_pre(body)}</details>")
            text += [label + ":", body if isinstance(body, str) else _json(body)]
        html.append("</div>")
        return Display("".join(html), "\n".join(text))

    def set_model(self, value: str | None) -> Display:
        if value is not None:
            self.default_model = self._model(value)
        label = _model_label(self.default_model)
        text = f"Default model for new agents: {label}" + ("" if value is None else " (agents defined before keep theirs)")
        return Display(f"<div>{_escape(text)}</div>", text)

    def reset(self) -> Display:
        counts = f"{len(self.tools)} tools, {len(self.agents)} agents"
        self.tools.clear()
        self.agents.clear()
        self.current.clear()
        self.users = {DEFAULT_USER}
        self.session_service = InMemorySessionService()
        self.default_model = "auto"
        text = f"adk reset: forgot {counts} and every chat session; the default model is auto again."
        return Display(f"<div>{_escape(text)}</div>", text)


# -- helpers for the workspace -----------------------------------------------------------------
def _escape(text: str) -> str:
    from .render import escape

    return escape(text)


def _message(exc: BaseException) -> str:
    return exc.message if isinstance(exc, AdkError) else str(exc)


def _require(accepted: Any, parameter: str, option: str) -> None:
    if parameter not in accepted:
        raise UsageError(f"%%agent {option}: this version of LlmAgent has no {parameter} parameter yet.")


def _strategy(value: str) -> Any:
    try:
        from ..agents.dispatch import ToolExecutionStrategy
    except ImportError:
        return value
    return ToolExecutionStrategy(value)


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


def _scope(key: str) -> str:
    prefix = key.split(":", 1)[0] if ":" in key else ""
    return prefix if prefix in ("app", "user", "temp") else "session"


def _model_label(model: Any) -> str:
    if model is None:
        return "(none)"
    if isinstance(model, str):
        return model
    return f"{type(model).__name__}({getattr(model, 'name', '')!r})"


def _instruction_text(agent: Agent) -> str:
    instruction = getattr(agent, "instruction", "")
    return instruction if isinstance(instruction, str) else "(instruction provider)"


def _config_dict(config: Any) -> dict[str, Any]:
    from dataclasses import asdict, is_dataclass

    return asdict(config) if is_dataclass(config) else {}


class _NamedModel:
    """Stands in for a model that cannot be built here (no key, no provider): its name is enough."""

    def __init__(self, name: str) -> None:
        self.name = name


async def _next_request(agent: LlmAgent, service: BaseSessionService, found: Session | None, user: str, session_id: str,
                        message: str) -> tuple[LlmRequest, Any]:
    """The request `agent` would build now, with `message` as the next user message (nothing is stored)."""
    session = Session(session_id, agent.name, user, state=dict(found.state) if found else {},
                      events=list(found.events) if found else [])
    ctx = InvocationContext(agent=agent, session=session, session_service=service, user_content=Content.user(message),
                            run_config=RunConfig(), app_name=agent.name)
    session.events.append(Event("user", ctx.user_content, ctx.invocation_id))
    try:
        model: Any = agent.resolve_model()
    except (AdkError, ImportError):  # the request can be shown without the model
        model = _NamedModel(_model_label(agent.model))
    tools = await agent.resolve_tools(ReadonlyContext(ctx))
    declarations = [t.declaration() for t in tools.values()]
    build = getattr(agent, "_request", None)
    if build is not None:
        return await build(ctx, model, declarations), model
    system = await agent._system_instruction(ctx)  # type: ignore[attr-defined]  # an older LlmAgent
    return LlmRequest(model.name, agent._contents(ctx), system, declarations), model


# -- provider wire formats (optional: each provider module that exists adds its own) ----------
_PROVIDERS = {
    # key: (module, class, label)
    "openai": (".models.openai", "OpenAIModel", "OpenAI Chat Completions body (POST /chat/completions)"),
    "gemini": (".models.gemini", "GeminiModel", "Gemini body (POST /models/MODEL:streamGenerateContent)"),
    "anthropic": (".models.anthropic", "AnthropicModel", "Anthropic Messages body (POST /v1/messages)"),
}


def _body_of(model: Any, request: LlmRequest) -> dict[str, Any] | None:
    """A provider model's JSON body for `request` (`build_body` / `request_body`), else None."""
    build = getattr(model, "build_body", None) or getattr(model, "request_body", None)
    if build is None or isinstance(model, _NamedModel):
        return None
    if "stream" in inspect.signature(build).parameters:
        return build(request, stream=True)  # runs stream by default
    return build(request)


def wire_bodies(model: Any, request: LlmRequest, provider: str | None = None) -> list[tuple[str, Any]]:
    """[(label, body)]: the agent's own provider when it has one, else (or with `provider`) each one."""
    own = _body_of(model, request)
    if own is not None and provider is None:
        return [(f"As {type(model).__name__} sends it", own)]
    keys = list(_PROVIDERS) if provider in (None, "all") else [provider]
    bodies: list[tuple[str, Any]] = []
    for key in keys:
        module_name, class_name, label = _PROVIDERS[key]
        try:
            cls = getattr(importlib.import_module(module_name, "adk_notebook"), class_name)
        except (ImportError, AttributeError):
            continue  # that provider is not part of this version
        try:
            default = inspect.signature(cls).parameters["model"].default
            name = default if isinstance(default, str) else AUTO_DEFAULTS.get(key, request.model)
            body = _body_of(cls(name, api_key="(not sent)"), request)  # builds no connection
        except Exception as exc:  # noqa: BLE001 - one provider's failure is a note, not an error
            bodies.append((f"{label}: could not be built", f"{type(exc).__name__}: {exc}"))
            continue
        if body is not None:
            bodies.append((label, body))
    return bodies


# -- the magics --------------------------------------------------------------------------------
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
    """The magic's own parser over shell-style words: `--state name="Ana Maria"` is one value."""
    try:
        return magic.parser.parse_args(shlex.split(line))  # type: ignore[attr-defined]
    except UsageError as exc:
        raise UsageError(f"{prefix}: {exc}") from None
    except ValueError as exc:  # unbalanced quotes
        raise UsageError(f"{prefix}: {exc} in {line.strip()!r}") from None


def _names(values: Sequence[str] | None) -> list[str]:
    return [n for v in values or () for n in re.split(r"[,\s]+", v) if n]


@magics_class
class AdkMagics(Magics):
    """%%tool, %%agent, %%chat / %chat and %adk."""

    def __init__(self, shell: Any, workspace: Workspace | None = None) -> None:
        super().__init__(shell)
        self.workspace = workspace or Workspace(shell)

    @magic_arguments("%tool")
    @argument("--read-only", action="store_true", help="The tool only reads (no side effects).")
    @argument("--concurrency-safe", action="store_true", help="Calls may run at the same time as others.")
    @argument("--long-running", action="store_true", help="It starts a long operation; the model is told not to call it again.")
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
        tools = self.workspace.define_tools(defined, read_only=args.read_only, concurrency_safe=args.concurrency_safe,
                                            long_running=args.long_running, name=args.name)
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
    @argument("--model", help="A model string (auto, gemini-2.5-flash, openai:gpt-4o-mini, ...) or the name of a "
              "variable holding a model (e.g. a ScriptedModel). Default: %%%%adk model (auto).")
    @argument("--tools", action="append", metavar="A,B", help="Tools by name (from %%%%tool, or variables).")
    @argument("--toolsets", action="append", metavar="X,Y", help="Variables holding Toolsets.")
    @argument("--strategy", choices=["sequential", "parallel", "auto"], help="How one turn's tool calls run.")
    @argument("--max-iterations", type=int, metavar="N", help="Most model calls per message (default 100).")
    @argument("--output-key", metavar="K", help="Save the final answer in session state under K.")
    @argument("--output-schema", metavar="VAR", help="A variable holding a pydantic model or JSON schema for the answer.")
    @argument("--include-contents", choices=["default", "none"], help="Send the conversation so far, or only this message.")
    @argument("--description", help="What the agent does.")
    @no_var_expand
    @cell_magic
    def agent(self, line: str, cell: str) -> Display:
        """Define an LlmAgent; the cell body is its instruction ({var} is filled from session state).

        Redefining an agent replaces it; its sessions go on with the new definition.
        """
        args = _parse(self.agent, line, "%%agent")
        agent = self.workspace.define_agent(
            args.name, cell.strip(), model=args.model, tools=_names(args.tools), toolsets=_names(args.toolsets),
            strategy=args.strategy, max_iterations=args.max_iterations, output_key=args.output_key,
            output_schema=args.output_schema, include_contents=args.include_contents, description=args.description,
        )
        return agent_card(agent)

    @magic_arguments("%chat")
    @argument("agent", help="The agent's name (from %%%%agent, or a variable holding an agent).")
    @argument("message", nargs="*", help="%%chat only: the message, the rest of the line.")
    @argument("--session", metavar="ID", help="The session to use (created when new); it becomes the current one. "
              "Without it the agent's current session (s1 at first) goes on.")
    @argument("--user", metavar="U", help="The user id (default: user).")
    @argument("--state", nargs="+", action="extend", metavar="KEY=VALUE", default=[],
              help="Session state: the initial state of a new session, or changes to an existing one.")
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
        return kernel.run_chat_blocking(self.plan_chat(line, cell), self.workspace.view_factory)

    async def chat_async(self, line: str, cell: str | None = None) -> ChatResult | None:
        """What `await __adk_chat__(...)` runs: the same chat, on the running loop."""
        return await kernel.run_chat(self.plan_chat(line, cell), self.workspace.view_factory)

    def plan_chat(self, line: str, cell: str | None) -> ChatPlan:
        if cell is None:
            options, message = split_chat_line(line)
            args = _parse(self.chat, options, "%chat")
        else:
            args = _parse(self.chat, line, "%%chat")
            if args.message:
                raise UsageError(f"%%chat: the message goes in the cell below the %%chat line, not after {args.agent!r}.")
            message = cell
        return self.workspace.plan_chat(args.agent, message, session=args.session, user=args.user, state=args.state,
                                        new_session=args.new_session)

    @magic_arguments()
    @argument("command", nargs="?", choices=["tools", "agents", "sessions", "state", "schema", "request", "reset", "model"],
              help="What to show (default: tools and agents).")
    @argument("target", nargs="?", help="The AGENT (state, request), TOOL (schema) or model STRING (model).")
    @argument("--session", metavar="ID", help="state/request: the session (default: the agent's current one).")
    @argument("--user", metavar="U", help="state/request: the user id.")
    @argument("--message", metavar="TEXT", help="request: the next user message to show in the contents.")
    @argument("--provider", choices=["openai", "gemini", "anthropic", "all"],
              help="request: the provider wire format(s) to show (default: the agent's model's, else all).")
    @argument("--use", metavar="VAR", help="sessions: keep chat sessions in this session service from now on.")
    @no_var_expand
    @line_magic
    def adk(self, line: str) -> Display:
        """Look at the notebook's tools, agents, sessions and state, and what a model receives.

        %adk tools | agents | sessions [--use VAR] | state AGENT [--session ID] | schema TOOL
        %adk request AGENT [--message TEXT] [--provider P] | reset | model [STRING]
        """
        args = _parse(self.adk, line, "%adk")
        ws, command, target = self.workspace, args.command, args.target
        needs = {"state": "AGENT", "request": "AGENT", "schema": "TOOL"}
        if command in needs and not target:
            raise UsageError(f"%adk {command} needs a {needs[command]}: %adk {command} {needs[command]}.")
        if target and command not in (*needs, "model"):
            raise UsageError(f"%adk {command or ''} takes no {target!r}.".replace("  ", " "))
        if command is None:
            tools, agents = ws.tools_table(), ws.agents_table()
            return Display(tools.html + agents.html, f"{tools.text}\n\n{agents.text}")
        if command == "tools":
            return ws.tools_table()
        if command == "agents":
            return ws.agents_table()
        if command == "sessions":
            return ws.use_sessions(args.use) if args.use else ws.sessions_table()
        if command == "state":
            return ws.state_table(target, args.session, args.user)
        if command == "schema":
            return ws.schema_view(target)
        if command == "request":
            return ws.request_view(target, args.session, args.user, args.message, args.provider)
        if command == "reset":
            return ws.reset()
        return ws.set_model(target)


def agent_card(agent: LlmAgent) -> Display:
    """A short summary of a defined agent."""
    tools = ", ".join(t.name for t in agent.tools) or "none"
    instruction = _instruction_text(agent)
    lines = [f"agent {agent.name}: model {_model_label(agent.model)}, tools {tools}"]
    if instruction:
        lines.append(f"    {_one_line(instruction, 200)}")
    html = (f"<div>agent <code><b>{_escape(agent.name)}</b></code> · model <code>{_escape(_model_label(agent.model))}</code>"
            f" · tools <code>{_escape(tools)}</code>"
            + (f'<div style="opacity:.8;white-space:pre-wrap">{_escape(instruction)}</div>' if instruction else "")
            + "</div>")
    return Display(html, "\n".join(lines))
