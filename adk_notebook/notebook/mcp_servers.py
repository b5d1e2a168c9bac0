"""`%%mcp` and `%adk mcp`: MCP servers from the JSON people already have, and what they offer.

    %%mcp
    {"mcpServers": {
      "time": {"command": "mcp-server-time", "args": ["--local-timezone", "UTC"]},
      "docs": {"url": "http://127.0.0.1:8000/mcp", "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}}
    }}

Claude Desktop's `mcpServers` (VS Code's `servers` too): an entry with `command` (and `args`,
`env`, `cwd`) is a stdio server, one with `url` (and `headers`) a streamable-HTTP one; an
optional `timeout` is the seconds one call may take, `"disabled": true` leaves it out, other
clients' keys are ignored (and named). `${VAR}` or `${env:VAR}` in any string reads the
environment; those values, and every env and header value, never appear in an output.
Parsing and drawing live here; the workspace keeps the toolsets.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from ..core.errors import AdkError
from .display import Display, Table, pre_html
from .render import escape

if TYPE_CHECKING:
    from ..agents.llm_agent import LlmAgent
    from ..mcp import McpToolset
    from ..tools.base import Tool, Toolset

__all__ = ["McpServers", "ServerEntry", "parse_servers", "servers_card", "servers_view"]

_VAR = re.compile(r"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)\}")
_NAME = re.compile(r"[A-Za-z0-9_-]+")
_STDIO_KEYS = {"command", "args", "env", "cwd"}
_HTTP_KEYS = {"url", "headers"}
_COMMON_KEYS = {"type", "timeout", "disabled"}
_HTTP_TYPES = {"http", "streamable-http", "streamable_http", "streamableHttp"}


@dataclass(slots=True)
class ServerEntry:
    """One server of a `%%mcp` cell: its name, how to reach it, and what was left out."""

    name: str
    server: Any  # StdioServer | HttpServer
    timeout: float | None = None
    ignored: list[str] = field(default_factory=list)
    disabled: bool = False


class McpServers(Mapping[str, "McpToolset"]):
    """The notebook's MCP toolsets by server name: what `%%mcp` cells defined."""

    def __init__(self) -> None:
        self._toolsets: dict[str, McpToolset] = {}

    def __getitem__(self, name: str) -> McpToolset:
        return self._toolsets[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._toolsets)

    def __len__(self) -> int:
        return len(self._toolsets)

    def define(self, config: str, timeout: float | None, agents: Iterable[LlmAgent]) -> Display:
        """A toolset per server of the cell. One whose configuration is unchanged is kept (with
        its running server); a changed one is closed and replaced, in `agents` too."""
        try:
            from ..mcp import McpToolset
            from ..mcp.client import DEFAULT_TIMEOUT
        except ImportError as exc:
            raise UsageError(f"%%mcp: {exc}") from None
        entries = parse_servers(config)
        agents = list(agents)
        kept: set[str] = set()
        for entry in entries:
            old = self._toolsets.get(entry.name)
            if entry.disabled:
                if old is not None:
                    self._forget(entry.name, agents)
                continue
            call_timeout = entry.timeout or timeout or DEFAULT_TIMEOUT
            if old is not None and old.server == entry.server and old.timeout == call_timeout:
                kept.add(entry.name)
                continue
            new = McpToolset(entry.server, name=entry.name, timeout=call_timeout)
            if old is not None:
                _close(old)
                for agent in agents:
                    agent.toolsets = [_moved(ts, old, new) for ts in agent.toolsets]
            self._toolsets[entry.name] = new
        return servers_card(entries, self._toolsets, kept)

    def picks(self, names: Sequence[str], is_tool: Callable[[str], bool]) -> tuple[list[str], list[Toolset]]:
        """Split `--tools` names into plain tools and MCP toolsets: `time` (every tool of the
        server) or `time.get_current_time` (some, over the same connection); tools win a tie."""
        plain: list[str] = []
        chosen: dict[str, list[str] | None] = {}  # server -> tool names, None for all of them
        for name in names:
            server, dot, tool = name.partition(".")
            if is_tool(name) or server not in self._toolsets or (dot and not tool):
                plain.append(name)
            elif not dot:
                chosen[server] = None
            elif (some := chosen.setdefault(server, [])) is not None:
                some.append(tool)
        toolsets: list[Toolset] = [
            self._toolsets[s] if tools is None else self._toolsets[s].subset(tools) for s, tools in chosen.items()
        ]
        return plain, toolsets

    def view(self, name: str | None) -> Display:
        """`%adk mcp [NAME]`: connect to each server (or NAME), then show status and tools."""
        if name is not None and name not in self._toolsets:
            raise UsageError(f"%adk mcp: no MCP server {name!r} (servers: {', '.join(self._toolsets) or 'none yet'}).")
        tools = {server: _listed(ts) for server, ts in self._toolsets.items() if name in (None, server)}
        return servers_view(self._toolsets, tools, name)

    def close_all(self, agents: Iterable[LlmAgent]) -> None:
        """Stop every server and forget them (`%adk reset`, unloading the extension)."""
        agents = list(agents)
        for name in list(self._toolsets):
            self._forget(name, agents)

    def _forget(self, name: str, agents: list[LlmAgent]) -> None:
        old = self._toolsets.pop(name)
        _close(old)
        for agent in agents:
            agent.toolsets = [ts for ts in agent.toolsets if not old.same_server(ts)]


def _moved(toolset: Toolset, old: McpToolset, new: McpToolset) -> Toolset:
    """What an agent holds instead of `toolset` once `old` is replaced by `new`."""
    if not old.same_server(toolset):
        return toolset
    chosen = getattr(toolset, "tool_filter", None)
    return new if chosen is None else new.subset(chosen)


def _listed(toolset: McpToolset) -> list[Tool]:
    try:
        return toolset.tools_blocking()
    except (AdkError, TimeoutError):  # the view shows toolset.error
        return []


def _close(toolset: McpToolset) -> None:
    try:
        toolset.close_blocking()
    except TimeoutError:
        pass


def parse_servers(text: str, environ: Mapping[str, str] | None = None) -> list[ServerEntry]:
    """The servers of a `%%mcp` cell. Misuse is a one-line UsageError that never shows a value."""
    from ..mcp import (  # ImportError (naming the extra) without the SDK
        HttpServer,
        StdioServer,
    )

    environ = os.environ if environ is None else environ
    try:
        config = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(
            f"%%mcp: the cell is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}). "
            'Paste Claude Desktop\'s {"mcpServers": {...}} object.'
        ) from None
    servers = _servers(config)
    entries = []
    for name, spec in servers.items():
        where = f"%%mcp server {name!r}"
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise UsageError(
                f"%%mcp: the server name {name!r} may contain only letters, digits, '_' and '-' "
                "(it is how --tools names it)."
            )
        if not isinstance(spec, dict):
            raise UsageError(f'{where}: expected an object with "command" or "url", got {type(spec).__name__}.')
        secrets: list[str] = []
        spec = _expand(spec, environ, where, secrets)
        kind = spec.get("type")
        if kind == "sse":
            raise UsageError(
                f"{where}: the SSE transport is not supported; give the server's streamable HTTP "
                'endpoint (often .../mcp) as "url".'
            )
        if ("command" in spec) == ("url" in spec):
            raise UsageError(f'{where}: give either "command" (a local server) or "url" (a running one).')
        timeout = spec.get("timeout")
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0):
            raise UsageError(f'{where}: "timeout" must be a positive number of seconds.')
        try:
            if "command" in spec:
                server: Any = StdioServer(
                    spec["command"],
                    _list(spec.get("args", []), where, "args"),
                    _map(spec.get("env"), where, "env"),
                    spec.get("cwd"),
                    secrets=secrets,
                )
                known = _STDIO_KEYS
            else:
                if kind is not None and kind not in _HTTP_TYPES:
                    raise UsageError(f'{where}: unknown "type" {kind!r} for a URL (use "http").')
                server = HttpServer(spec["url"], _map(spec.get("headers"), where, "headers"), secrets=secrets)
                known = _HTTP_KEYS
        except Exception as exc:  # AdkError from the server specs: a bad value
            if isinstance(exc, UsageError):
                raise
            raise UsageError(f"{where}: {getattr(exc, 'message', exc)}") from None
        ignored = sorted(k for k in spec if k not in known | _COMMON_KEYS)
        entries.append(
            ServerEntry(name, server, float(timeout) if timeout else None, ignored, spec.get("disabled") is True)
        )
    return entries


def _servers(config: Any) -> dict[str, Any]:
    if isinstance(config, dict):
        for key in ("mcpServers", "servers"):
            if key in config:
                inner = config[key]
                if not isinstance(inner, dict):
                    raise UsageError(f'%%mcp: "{key}" must be an object of servers by name.')
                return inner
        if config and all(isinstance(v, dict) and ("command" in v or "url" in v) for v in config.values()):
            return config  # just the servers, without the wrapper
    raise UsageError(
        '%%mcp: expected {"mcpServers": {"NAME": {"command": ..., "args": [...]}, "OTHER": {"url": "http://..."}}}.'
    )


def _expand(value: Any, environ: Mapping[str, str], where: str, secrets: list[str]) -> Any:
    """`${VAR}` read from the environment in every string; the values read are secrets."""
    if isinstance(value, str):

        def read(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in environ:
                raise UsageError(
                    f"{where}: the environment has no variable {name}. Set it without printing it, "
                    f"e.g. os.environ[{name!r}] = getpass.getpass(), then run this cell again."
                )
            secrets.append(environ[name])
            return environ[name]

        return _VAR.sub(read, value)
    if isinstance(value, dict):
        return {k: _expand(v, environ, where, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [_expand(v, environ, where, secrets) for v in value]
    return value


def _list(value: Any, where: str, key: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, (str, int, float)) for v in value):
        raise UsageError(f'{where}: "{key}" must be a list of strings.')
    return [v if isinstance(v, str) else json.dumps(v) for v in value]


def _map(value: Any, where: str, key: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, (str, int, float, bool)) for v in value.values()):
        raise UsageError(f'{where}: "{key}" must map names to strings.')  # never echo the values
    return {k: v if isinstance(v, str) else json.dumps(v) for k, v in value.items()}


# -- what the magics show ----------------------------------------------------------------------
def _transport(toolset: Any) -> str:
    return "stdio" if hasattr(toolset.server, "command") else "http"


def servers_card(entries: Sequence[ServerEntry], toolsets: Mapping[str, Any], kept: set[str]) -> Display:
    """What `%%mcp` returns: the servers it defined, how they are reached, how to use them."""
    rows = []
    for entry in entries:
        if entry.disabled:
            rows.append([entry.name, "", "(disabled: left out)", ""])
            continue
        toolset = toolsets[entry.name]
        status = toolset.status + (" (unchanged)" if entry.name in kept else "")
        rows.append([entry.name, _transport(toolset), toolset.server.label, status])
    notes = [f"{e.name}: ignored {', '.join(e.ignored)}." for e in entries if e.ignored]
    first = next((e.name for e in entries if not e.disabled), "NAME")
    notes.append(
        f"Each server starts on first use. Give an agent its tools with --tools {first} (all of them) "
        f"or --tools {first}.TOOL; %adk mcp connects and lists them."
    )
    return Table(
        f"MCP servers ({len(rows)})", ["server", "transport", "command / url", "status"], rows, " ".join(notes)
    )


def _listed_name(tool: Any) -> str:
    """`name`, or `name (mcp.name)` when the server calls it something providers refuse."""
    original = getattr(tool, "mcp_name", tool.name)
    return tool.name if original == tool.name else f"{tool.name} ({original})"


def servers_view(toolsets: Mapping[str, Any], tools: Mapping[str, list[Any]], only: str | None = None) -> Display:
    """`%adk mcp [NAME]`: every server's status and tools, with the last stderr lines of a failed one;
    for one server, its tools' schemas too."""
    from .tables import tool_cards

    rows, html, text = [], [], []
    for name, toolset in toolsets.items():
        found = tools.get(name)
        listed = ", ".join(_listed_name(t) for t in found) if found else ""
        rows.append([name, _transport(toolset), toolset.server.label, toolset.status, listed])
    table = Table(
        f"MCP servers ({len(rows)})",
        ["server", "transport", "command / url", "status", "tools"],
        rows,
        "" if rows else "No MCP servers yet: define them with a %%mcp cell.",
    )
    html.append(table.html)
    text.append(table.text)
    for name, toolset in toolsets.items():
        error = toolset.error
        if error is not None:
            message = error.message.split("\nIts last stderr lines:")[0]
            html.append(f"<div><b>{escape(name)}</b>: {escape(message)}</div>")
            text.append(f"{name}: {message}")
            lines = toolset.stderr_lines
            if lines:
                html.append(f"<div>Last stderr lines of {escape(name)}:</div>{pre_html(chr(10).join(lines))}")
                text.append(f"Last stderr lines of {name}:\n" + "\n".join(f"    {line}" for line in lines))
    if only is not None and tools.get(only):
        cards = tool_cards(tools[only])
        html.append(cards.html)
        text.append(cards.text)
    return Display("".join(html), "\n\n".join(text))
