"""McpToolset: the tools of an MCP server, over stdio or streamable HTTP, as an agent's toolset.

    from adk_notebook.mcp import McpToolset, StdioServer, HttpServer
    clock = McpToolset(StdioServer("mcp-server-time", ["--local-timezone", "UTC"]), tool_filter=["get_current_time"])
    agent = LlmAgent(name="a", model=m, toolsets=[clock])
    ...
    await clock.close()          # also done for you when the interpreter (or the kernel) exits

The server starts (or is reached) on first use, when a run resolves its tools. Each tool keeps
the server's input schema as its parameters, and its arguments are checked against it before
the call; a call has a timeout; what it answers becomes a function response, images as inline
parts (`results.py`); progress notifications become the run's tool progress. A stdio server's
stderr goes to a pipe, never to the notebook; its last lines are shown when it fails. A server
that dies fails the call in flight with an error naming it; the next call starts it again.
The connection lives on the MCP loop (`_loop.py`), so a toolset serves `%%chat` on the
kernel's loop, `agent.run()` on a private loop and scripts alike.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Literal, Self

from ..core.errors import AdkError
from ..tools.base import Tool, Toolset
from ..tools.schema_check import JsonSchemaCheck
from . import _loop
from ._schemas import check_usable
from .results import response_data
from .servers import NOT_IN_NAMES, HttpServer, StdioServer

if TYPE_CHECKING:
    from ..core.context import ReadonlyContext, ToolContext
    from ..tools.responses import FunctionResponseData
    from ._connection import Connection

__all__ = ["McpTool", "McpToolset"]

DEFAULT_TIMEOUT = 30.0
DEFAULT_CONNECT_TIMEOUT = 60.0
_NAME = re.compile(r"[A-Za-z0-9_-]+")


class _Link:
    """The connection a toolset and its subsets share. Made on first use, on the MCP loop, so
    the SDK (a few seconds to import) loads only when a server is actually needed."""

    def __init__(self, server: StdioServer | HttpServer, name: str, connect_timeout: float | None) -> None:
        self.server, self.name, self.connect_timeout = server, name, connect_timeout
        self.connection: Connection | None = None

    def get(self) -> Connection:
        if self.connection is None:
            from ._connection import Connection

            self.connection = Connection(self.server, self.name, self.connect_timeout)
        return self.connection


class McpToolset(Toolset):
    """The tools of one MCP server, resolved at the start of each run.

    Args:
        server: A `StdioServer` (a command to start) or an `HttpServer` (a URL to reach).
        tool_filter: Only these tools (their names), or those a `predicate(tool)` accepts.
        timeout: Seconds one call, or listing the tools, may take (None: no limit); past it
            the model gets an error.
        connect_timeout: Seconds to start the server and finish the MCP handshake.
        name: Identifies the toolset in messages and notebooks (default: from the command or host).
    """

    def __init__(
        self,
        server: StdioServer | HttpServer,
        *,
        tool_filter: Iterable[str] | Callable[[Tool], bool] | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
        connect_timeout: float | None = DEFAULT_CONNECT_TIMEOUT,
        name: str | None = None,
    ) -> None:
        if not isinstance(server, (StdioServer, HttpServer)):
            raise AdkError.config(
                f"McpToolset takes a StdioServer or an HttpServer, got {type(server).__name__}.",
                code="invalid_mcp_server",
            )
        name = name or server.default_name
        if not _NAME.fullmatch(name):
            raise AdkError.config(
                f"McpToolset name {name!r} may contain only letters, digits, '_' and '-'.", code="invalid_mcp_server"
            )
        self.name = name
        self.server = server
        self.timeout = timeout
        self.tool_filter = (
            tool_filter
            if tool_filter is None or callable(tool_filter)
            else tuple([tool_filter] if isinstance(tool_filter, str) else tool_filter)
        )
        self._link = _Link(server, name, connect_timeout)
        self._made: tuple[object, list[McpTool], AdkError | None] | None = None
        self._listing_error: AdkError | None = None  # the server is up, but its tools could not be listed

    # -- the toolset ---------------------------------------------------------------------------
    async def tools(self, ctx: ReadonlyContext | None = None) -> list[Tool]:
        """The server's tools (connecting first when needed), filtered by `tool_filter`.

        Raises:
            AdkError: the server cannot be started or reached, or (outside a run) it is up but
                its tools cannot be listed: it hangs, pages without end, or sends a schema that
                cannot be used. In a run (`ctx` given) that second kind does not stop the run:
                it goes on without the server's tools (only without the tools whose schema
                cannot be used, when the listing itself went through), and the model gets one
                tool in their place, `NAME_unavailable`, whose description says why (calling it
                returns the error), so the model can tell the user; `%adk mcp` and
                `toolset.error` say it too. A server that is not there at all still fails the
                run, as a missing model would.
        """
        try:
            specs = await _loop.run(self._list())
        except AdkError as exc:
            self._listing_error = exc if self.status == "connected" else None
            if ctx is None or self._listing_error is None:
                raise
            return [_Unavailable(self, exc, "its tools are")]
        if self._made is None or self._made[0] is not specs:
            self._made = (specs, *self._make(specs))
        _, made, unusable = self._made
        self._listing_error = unusable
        if unusable is not None and ctx is None:
            raise unusable
        tools = self._filtered(made)
        return tools if unusable is None else [*tools, _Unavailable(self, unusable, "some of its tools are")]

    def _make(self, specs: list[Any]) -> tuple[list[McpTool], AdkError | None]:
        """A tool per spec whose schema can be used, and one error naming those that cannot."""
        names = _tool_names([spec.name for spec in specs])
        made: list[McpTool] = []
        problems: list[str] = []
        for spec in specs:
            try:
                made.append(McpTool(self, spec, names[spec.name]))
            except AdkError as exc:
                problems.append(exc.message)
        if not problems:
            return made, None
        return made, AdkError("mcp", "invalid_input", "mcp_bad_schema", " ".join(problems))

    async def _list(self) -> list[Any]:
        return await self._link.get().list_tools(self.timeout)

    def _filtered(self, tools: list[McpTool]) -> list[Tool]:
        chosen = self.tool_filter
        if chosen is None:
            return list(tools)
        if callable(chosen):
            return [t for t in tools if chosen(t)]
        known = {n for t in tools for n in (t.name, t.mcp_name)}
        missing = [n for n in chosen if n not in known]
        if missing:
            have = ", ".join(t.mcp_name for t in tools) or "none"
            raise AdkError.config(
                f"MCP server {self.name!r} has no tool {', '.join(map(repr, missing))} (its tools: {have}).",
                code="unknown_mcp_tool",
            )
        return [t for t in tools if t.name in chosen or t.mcp_name in chosen]

    def same_server(self, other: object) -> bool:
        """Whether `other` is this toolset or a subset of it: one connection to one server."""
        return isinstance(other, McpToolset) and other._link is self._link

    def tools_blocking(self) -> list[Tool]:
        """`tools()` from synchronous code (a magic), waiting as long as starting the server and
        listing may take."""
        waits = (self._link.connect_timeout or 60) + (self.timeout or 60)
        return _loop.run_blocking(self.tools(), timeout=waits + 15)

    def close_blocking(self, timeout: float = 15) -> None:
        """`close()` from synchronous code (a magic, the end of the kernel)."""
        _loop.run_blocking(self.close(), timeout=timeout)

    def subset(self, names: Iterable[str]) -> McpToolset:
        """Some of this toolset's tools, over the same connection (one server process for both)."""
        view = McpToolset.__new__(McpToolset)
        view.__dict__.update(self.__dict__)
        view.tool_filter, view._made = tuple(names), None
        return view

    # -- calls and lifetime --------------------------------------------------------------------
    async def call_tool(
        self, name: str, args: dict[str, Any] | None = None, *, progress: Callable[[str], Any] | None = None
    ) -> FunctionResponseData:
        """Call the server's tool `name` directly (no argument check) and convert its answer.

        Args:
            progress: Called with one line per progress notification the server sends.

        Raises:
            AdkError: the server could not be reached, timed out, went away, or its tool
                reported an error (`mcp_tool_error`).
        """
        result = await _loop.run(self._call(name, args or {}, progress))
        return response_data(self.name, name, result)

    async def _call(self, name: str, args: dict[str, Any], progress: Callable[[str], Any] | None) -> Any:
        return await self._link.get().call_tool(name, args, self.timeout, progress)

    async def close(self) -> None:
        """Stop the server (or end the HTTP session); using the toolset again reconnects."""
        await _loop.run(self._close())

    async def _close(self) -> None:
        if self._link.connection is not None:
            await self._link.connection.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- what notebooks show -------------------------------------------------------------------
    @property
    def status(self) -> str:
        """not connected | connecting | connected | failed | exited | closed."""
        connection = self._link.connection
        return connection.status if connection is not None else "not connected"

    @property
    def error(self) -> AdkError | None:
        """Why the last start or call failed while the connection is not live, or why the last
        listing of its tools failed while it is."""
        connection = self._link.connection
        if connection is None:
            return None
        return connection.error if connection.status != "connected" else self._listing_error

    @property
    def stderr_lines(self) -> list[str]:
        """The last lines a stdio server wrote to stderr (secrets hidden)."""
        connection = self._link.connection
        tail = connection.stderr if connection is not None else None
        return tail.lines() if tail is not None else []

    def __repr__(self) -> str:
        chosen = f", tool_filter={list(self.tool_filter)!r}" if isinstance(self.tool_filter, tuple) else ""
        return f"McpToolset({self.server!r}, name={self.name!r}{chosen}, status={self.status!r})"


class McpTool(Tool):
    """One tool of an MCP server: its schema as the parameters, a call to the server as `execute`."""

    def __init__(self, toolset: McpToolset, spec: Any, name: str | None = None) -> None:
        self.toolset = toolset
        self.mcp_name: str = spec.name
        self.name = name or _tool_name(spec.name)
        self.description = spec.description or getattr(spec, "title", None) or ""
        if self.name != self.mcp_name:  # the model, and whoever reads the tool cards, see which it is
            self.description = f"(MCP tool {self.mcp_name!r} of server {toolset.name!r}) {self.description}".rstrip()
        self._parameters: dict[str, Any] = dict(spec.input_schema or {"type": "object", "properties": {}})
        check_usable(toolset.name, spec.name, self._parameters)
        hints = getattr(spec, "annotations", None)
        self.is_read_only = bool(getattr(hints, "read_only_hint", False))
        self._check: JsonSchemaCheck | Literal[False] | None = None  # False: the schema is not valid JSON Schema

    @property
    def parameters_schema(self) -> dict[str, Any]:
        return self._parameters

    def validate_args(self, args: dict[str, Any]) -> dict[str, Any]:
        """Check the arguments against the server's schema (JSON Schema, with jsonschema)."""
        # pydantic loads with the first call, not with the package
        from ..tools.schema import ToolArgumentsError

        if self._check is None:
            try:
                self._check = JsonSchemaCheck(self._parameters)
            except AdkError:  # the schema itself is invalid: the server judges the arguments then
                self._check = False
        problems = self._check.problems(args) if self._check else []
        if problems:
            raise ToolArgumentsError(problems)
        return args

    async def execute(self, ctx: ToolContext, args: dict[str, Any]) -> FunctionResponseData:
        return await self.toolset.call_tool(
            self.mcp_name, args, progress=lambda line: ctx.emit_progress("progress", line)
        )

    def __repr__(self) -> str:
        return f"<McpTool {self.name!r} of {self.toolset.name!r}>"


class _Unavailable(Tool):
    """What the model gets in place of a server's tools it could not list: the reason, to tell the user."""

    is_read_only = True

    def __init__(self, toolset: McpToolset, error: AdkError, missing: str) -> None:
        self.name = _tool_name(f"{toolset.name}_unavailable")
        self.description = (
            f"Not a real tool: {missing} unavailable in this run (MCP server {toolset.name!r}). "
            f"{error.message} Calling this returns that error; tell the user if they need them."
        )
        self._error = error

    @property
    def parameters_schema(self) -> dict[str, Any]:
        return {"type": "object", "properties": {}}

    async def execute(self, ctx: ToolContext, args: dict[str, Any]) -> Any:
        raise self._error


def _tool_name(name: str) -> str:
    """MCP allows names providers refuse (dots, slashes, 128 characters): make it one they accept."""
    safe = NOT_IN_NAMES.sub("_", name)
    if not safe or not (safe[0].isalpha() or safe[0] == "_"):
        safe = "_" + safe
    return safe[:64]


def _tool_names(mcp_names: list[str]) -> dict[str, str]:
    """A distinct provider-safe name for each MCP name, the same whatever order they come in.

    `a.b` and `a_b` are both `a_b` once sanitised: a name that was already safe keeps it, and
    the others get a suffix from a hash of their own MCP name (`a_b_3f2c1d`), so no listing
    order, and no other tool, changes what a tool is called.
    """
    safe = {name: _tool_name(name) for name in mcp_names}
    taken = Counter(safe.values())
    out = {}
    for name, candidate in safe.items():
        if taken[candidate] > 1 and name != candidate:
            suffix = hashlib.sha256(name.encode()).hexdigest()[:6]
            candidate = f"{candidate[: 64 - 7]}_{suffix}"
        out[name] = candidate
    return out
