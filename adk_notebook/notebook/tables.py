"""What `%%tool`, `%%agent` and `%adk` show: tool cards, an agent card, the tables of tools,
agents, sessions and state, a tool's schema and the next model request.

Plain functions from notebook objects to a `Display`; the workspace looks the objects up (and
says what is wrong when it cannot), these only draw them. Every string is escaped in HTML.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .._sync import run_sync
from ..agents.base import Agent
from ..agents.llm_agent import LlmAgent
from ..core.session import Session
from ..models.base import LlmRequest
from ..models.registry import AutoChoice, ProviderStatus
from ..sessions.base import BaseSessionService
from ..tools.base import Tool
from .display import (
    Display,
    Table,
    agent_model_label,
    instruction_text,
    json_text,
    one_line,
    pre_html,
)
from .render import escape, table_html
from .wire import request_json, wire_bodies

__all__ = [
    "agent_card",
    "agents_table",
    "models_table",
    "request_view",
    "schema_view",
    "sessions_table",
    "state_table",
    "tool_cards",
    "tools_table",
]


# -- cards: what %%tool and %%agent return -----------------------------------------------------
def tool_cards(tools: Sequence[Tool]) -> Display:
    """Each tool's schema as the model sees it: name, flags, description, parameters."""
    html, text = [], []
    for t in tools:
        flags = _flags(t)
        rows = _parameter_rows(t)
        badges = "".join(
            f' <span style="font-size:11px;padding:0 4px;border:1px solid currentColor;border-radius:3px;'
            f'opacity:.7">{escape(f)}</span>'
            for f in flags
        )
        html.append(
            f'<div style="margin:4px 0 10px"><div>tool <code><b>{escape(t.name)}</b></code>{badges}</div>'
            f'<div style="opacity:.8">{escape(t.description)}</div>'
            + (
                table_html(["parameter", "type", "required", "default", "description"], rows)
                if rows
                else '<div style="opacity:.7">no parameters</div>'
            )
            + "</div>"
        )
        signature = ", ".join(f"{r[0]}: {r[1]}" + (f" = {r[3]}" if r[3] else "") for r in rows)
        text.append(f"tool {t.name}({signature})" + (f"  [{', '.join(flags)}]" if flags else ""))
        if t.description:
            text.append(f"    {one_line(t.description, 200)}")
        text.extend(f"    {r[0]}: {r[4]}" for r in rows if r[4])
    return Display("".join(html), "\n".join(text))


def agent_card(agent: LlmAgent) -> Display:
    """A short summary of a defined agent."""
    tools = ", ".join([t.name for t in agent.tools] + [_toolset_label(ts) for ts in agent.toolsets]) or "none"
    instruction = instruction_text(agent)
    model = agent_model_label(agent)
    lines = [f"agent {agent.name}: model {model}, tools {tools}"]
    if instruction:
        lines.append(f"    {one_line(instruction, 200)}")
    html = (
        f"<div>agent <code><b>{escape(agent.name)}</b></code> · model <code>{escape(model)}</code>"
        f" · tools <code>{escape(tools)}</code>"
        + (f'<div style="opacity:.8;white-space:pre-wrap">{escape(instruction)}</div>' if instruction else "")
        + "</div>"
    )
    return Display(html, "\n".join(lines))


def _toolset_label(toolset: Any) -> str:
    """`time (toolset)`, or `time.get_current_time` for a toolset narrowed to named tools."""
    name = getattr(toolset, "name", type(toolset).__name__)
    chosen = getattr(toolset, "tool_filter", None)
    if isinstance(chosen, tuple) and chosen:
        return ", ".join(f"{name}.{tool}" for tool in chosen)
    return f"{name} (toolset)"


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
    return [
        label
        for label, on in (
            ("read-only", t.is_read_only),
            ("concurrency-safe", t.is_concurrency_safe),
            ("long-running", t.is_long_running),
        )
        if on
    ]


def _parameter_rows(t: Tool) -> list[list[str]]:
    schema = t.parameters_schema or {}
    required = set(schema.get("required", ()))
    rows = []
    for name, prop in (schema.get("properties") or {}).items():
        default = (
            json.dumps(prop["default"], ensure_ascii=False) if isinstance(prop, dict) and "default" in prop else ""
        )
        rows.append(
            [
                name,
                _type_of(prop),
                "yes" if name in required else "",
                default,
                prop.get("description", "") if isinstance(prop, dict) else "",
            ]
        )
    return rows


# -- %adk --------------------------------------------------------------------------------------
def tools_table(tools: Iterable[Tool]) -> Table:
    """`%adk tools`: one row a tool."""
    rows = [
        [t.name, ", ".join(r[0] for r in _parameter_rows(t)), ", ".join(_flags(t)), one_line(t.description, 80)]
        for t in tools
    ]
    return Table(
        f"Tools ({len(rows)})",
        ["tool", "parameters", "flags", "description"],
        rows,
        "" if rows else "No tools yet: define one with %%tool.",
    )


def agents_table(agents: Mapping[str, Agent], current: Mapping[tuple[str, str], str], user: str) -> Table:
    """`%adk agents`: one row an agent, with `user`'s current session of it."""
    rows = []
    for name, agent in agents.items():
        tools = [t.name for t in getattr(agent, "tools", ())] + [
            _toolset_label(ts) for ts in getattr(agent, "toolsets", ())
        ]
        rows.append(
            [
                name,
                agent_model_label(agent),
                ", ".join(tools),
                current.get((agent.name, user), ""),
                one_line(agent.description or instruction_text(agent), 80),
            ]
        )
    return Table(
        f"Agents ({len(rows)})",
        ["agent", "model", "tools", "session", "description"],
        rows,
        "" if rows else "No agents yet: define one with %%agent NAME.",
    )


def models_table(providers: Sequence[ProviderStatus], auto: AutoChoice, auto_model: str | None) -> Table:
    """`%adk models`: each provider, its key's status (never the key), the model strings it
    accepts, and what "auto" picks now and why."""
    rows = [
        [p.provider, p.model_strings, " or ".join(p.key_variables) or "-", p.key, p.auto, p.note] for p in providers
    ]
    picked = f"auto → {auto_model or auto.model}" if auto.model is not None else "auto → nothing to run"
    return Table(
        "Model providers",
        ["provider", "model strings", "key variable", "key", "auto", "note"],
        rows,
        f"{picked}: {auto.reason}. Keys are read from the environment when a model is made.",
    )


def sessions_table(
    service: BaseSessionService,
    agents: Mapping[str, Agent],
    users: Sequence[str],
    current: Mapping[tuple[str, str], str],
) -> Table:
    """`%adk sessions`: every session `service` keeps for these agents and users."""
    rows = []
    for name, agent in agents.items():
        for user in users:
            for s in run_sync(service.list(app_name=agent.name, user_id=user)):
                full = run_sync(service.get(app_name=agent.name, user_id=user, session_id=s.id))
                events = len(full.events) if full is not None else 0
                mark = "yes" if current.get((agent.name, user)) == s.id else ""
                rows.append([name, user, s.id, str(events), ", ".join(sorted(s.state)), mark])
    return Table(
        f"Sessions ({len(rows)}) in {type(service).__name__}",
        ["agent", "user", "session", "events", "state keys", "current"],
        rows,
        "" if rows else "No sessions yet: %%chat AGENT starts one.",
    )


def state_table(app: str, session: Session, session_id: str, user: str) -> Table:
    """`%adk state`: a session's state, key by key, with the scope its prefix gives it."""
    rows = [[key, one_line(repr(value), 200), _scope(key)] for key, value in sorted(session.state.items())]
    return Table(
        f"State of {app}, session {session_id!r} (user {user!r})",
        ["key", "value", "scope"],
        rows,
        "" if rows else "The state is empty.",
    )


def _scope(key: str) -> str:
    prefix = key.split(":", 1)[0] if ":" in key else ""
    return prefix if prefix in ("app", "user", "temp") else "session"


def schema_view(t: Tool) -> Display:
    """`%adk schema`: a tool's declaration as the model sees it."""
    d = t.declaration()
    declaration = {"name": d.name, "description": d.description, "parameters": d.parameters}
    if d.response is not None:
        declaration["response"] = d.response
    flags = ", ".join(_flags(t)) or "none"
    html = (
        f"<div><b>Tool <code>{escape(t.name)}</code></b> (flags: {escape(flags)})"
        f"<div>As the model sees it:</div>{pre_html(declaration)}</div>"
    )
    return Display(html, f"Tool {t.name} (flags: {flags})\nAs the model sees it:\n{json_text(declaration)}")


def request_view(
    app: str,
    request: LlmRequest,
    model: Any,
    *,
    session_id: str,
    user: str,
    new_session: bool,
    message_given: bool,
    provider: str | None = None,
) -> Display:
    """`%adk request`: the instruction after templating, the contents and the tool declarations,
    then the provider body (or bodies) they become."""
    ours = request_json(request)
    title = (
        f"Next request of {app} (session {session_id!r}, user {user!r}"
        + (", a new session" if new_session else "")
        + ")"
    )
    note = "" if message_given else "The last user message stands for the one your next %%chat sends."
    html = [
        f"<div><b>{escape(title)}</b>",
        f'<div style="opacity:.7">{escape(note)}</div>' if note else "",
        "<div>System instruction (after templating):</div>",
        pre_html(request.system_instruction or "(none)"),
        "<div>Contents:</div>",
        pre_html(ours["contents"]),
        "<div>Tool declarations:</div>",
        pre_html(ours["tools"]),
    ]
    text = (
        [title]
        + ([note] if note else [])
        + [
            "System instruction (after templating):",
            request.system_instruction or "(none)",
            "Contents:",
            json_text(ours["contents"]),
            "Tool declarations:",
            json_text(ours["tools"]),
        ]
    )
    for label, body in wire_bodies(model, request, provider):
        html.append(f"<details><summary>{escape(label)}</summary>{pre_html(body)}</details>")
        text += [label + ":", body if isinstance(body, str) else json_text(body)]
    html.append("</div>")
    return Display("".join(html), "\n".join(text))
