"""One MCP server connection, held by an owner task on the MCP loop (`_loop.py`).

The SDK's transports (`stdio_client`, `streamable_http_client`) and `ClientSession` are anyio
context managers that must be entered and exited by the same task; exiting them from another
is the "Attempted to exit cancel scope in a different task" of adk-python #362 and #2196. So
one task per connection enters them, then serves requests from a queue, each in its own cancel
scope inside the owner's task group, until it is told to stop or the server dies; then it
exits them itself. Everything here runs on the MCP loop; `client.McpToolset` hands work over.

    not connected -> connecting -> connected -> exited (the server died) / closed (close())
                               \\-> failed (could not start)

From every state but "connected" the next request connects again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import sys
import weakref
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, TypeVar

import anyio
import httpx2  # the SDK's HTTP client
import mcp_types as types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from ..core.errors import AdkError
from ..models.keys import Secrets
from ..tools.schema_check import import_jsonschema
from . import _loop
from ._redact import redacted, redacted_error, watch
from ._schemas import NO_OBJECT, unusable_schema
from ._stderr import StderrTail
from .servers import HttpServer, StdioServer

__all__ = ["Connection"]

T = TypeVar("T")

# The SDK logs transport noise (a killed server, a closed pipe) with logger.exception; with no
# handler configured Python's last-resort handler would print it into the notebook. Users who
# configure logging still get it (the records propagate).
logging.getLogger("mcp").addHandler(logging.NullHandler())

_STOP = object()  # queue sentinel: close() asked the owner to finish
_DIED = object()  # queue sentinel: the server's stderr closed, so it exited
STDERR_GRACE = 1.0  # seconds to wait for a dead server's last stderr lines
MAX_PAGES = 100  # pages of tools/list; a server with more tools than fit is not one an agent can use
PING_TIMEOUT = 5.0  # seconds a server that sent -32000 has to show it is still there
CLOSE_TIMEOUT = 10.0  # the SDK's stdio shutdown takes at most ~6 s (stdin closed, SIGTERM, SIGKILL)

_live: weakref.WeakSet[Connection] = weakref.WeakSet()


class _Job:
    """One request: `op(session)` run by the owner, its outcome in `future`."""

    def __init__(self, op: Callable[[ClientSession], Awaitable[Any]], what: str) -> None:
        self.op = op
        self.what = what
        self.future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.scope: anyio.CancelScope | None = None
        self.future.add_done_callback(self._cancelled)

    def _cancelled(self, future: asyncio.Future[Any]) -> None:
        if future.cancelled() and self.scope is not None:  # the caller gave up: stop the request
            self.scope.cancel()

    async def run(self, session: ClientSession, closed: Callable[[str], AdkError], secrets: Secrets) -> None:
        """Run the request; what the server answered (or the error it sent) leaves with its
        secrets hidden: this is where a server's text enters our code."""
        if self.future.done():
            return
        try:
            with anyio.CancelScope() as self.scope:
                result = await self.op(session)
                if not self.future.done():
                    self.future.set_result(redacted(secrets, result))
        except Exception as exc:  # noqa: BLE001 - handed to the caller
            if not self.future.done():
                self.future.set_exception(redacted_error(secrets, exc))
        finally:
            if not self.future.done():  # the owner is shutting down under this request
                self.future.set_exception(closed(self.what))


class Connection:
    """The session with one server: connected on first use, again after it died or closed."""

    def __init__(self, server: StdioServer | HttpServer, name: str, connect_timeout: float | None) -> None:
        self.server = server
        self.name = name
        self.connect_timeout = connect_timeout
        self.status = "not connected"
        self.error: AdkError | None = None
        self.stderr: StderrTail | None = None
        self._owner: asyncio.Task[None] | None = None
        self._queue: asyncio.Queue[Any] | None = None
        self._lock: asyncio.Lock | None = None
        self._tools: list[types.Tool] | None = None
        self._scope: anyio.CancelScope | None = None

    # -- requests (on the MCP loop) ------------------------------------------------------------
    async def list_tools(self, timeout: float | None) -> list[types.Tool]:
        """Every tool the server offers (all pages), cached until it reconnects or says they changed.

        Bounded: within `timeout` seconds for all pages, at most MAX_PAGES pages, and never a
        cursor twice; past a bound, an AdkError naming the server (the session stays).
        """
        if self._tools is not None and self.status == "connected":
            return self._tools

        async def every_page(session: ClientSession) -> list[types.Tool]:
            with anyio.move_on_after(timeout):
                return await _pages(session)
            raise AdkError(  # only reached when the clock ran out
                "mcp",
                "timeout",
                "mcp_list_timeout",
                f"MCP server {self.name!r} did not list its tools within {timeout:g} s. "
                "Fix the server, or raise McpToolset(timeout=...) if it is just slow.",
            )

        async def _pages(session: ClientSession) -> list[types.Tool]:
            tools: list[types.Tool] = []
            cursor: str | None = None
            seen: set[str] = set()
            for _ in range(MAX_PAGES):
                params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
                try:
                    page = await session.list_tools(params=params)
                except ValidationError as exc:  # the SDK refuses the whole page
                    raise await self._unlistable(session, params, exc) from None
                tools.extend(page.tools)
                cursor = page.next_cursor
                if not cursor:
                    return tools
                if cursor in seen:
                    raise self._endless(f"sent the same cursor {cursor[:40]!r} twice")
                seen.add(cursor)
            raise self._endless(f"was still paging after {MAX_PAGES} pages ({len(tools)} tools)")

        tools = await self._request(every_page, "listing its tools", timeout)
        self._tools = tools
        return tools

    async def _unlistable(
        self, session: ClientSession, params: types.PaginatedRequestParams | None, exc: ValidationError
    ) -> AdkError:
        """Why the SDK refused a page of tools, naming the tool. Built from where pydantic
        failed and what it missed, never from its text, which quotes what the server sent."""
        [first, *_] = exc.errors(include_input=False, include_url=False)
        loc = first["loc"]
        if len(loc) < 3 or loc[0] != "tools" or not isinstance(loc[1], int):
            where = ".".join(map(str, loc))
            return AdkError(
                "mcp",
                "internal",
                "mcp_error",
                f"MCP server {self.name!r} listed its tools in a shape MCP does not allow ({where}: {first['msg']}).",
            )
        tool = await _raw_tool_name(session, params, loc[1])
        field = ".".join(map(str, loc[2:]))
        problem = NO_OBJECT if loc[2:] == ("inputSchema", "type") else f"{field}: {first['msg']}"
        return unusable_schema(self.name, tool, problem)

    def _endless(self, what: str) -> AdkError:
        return AdkError(
            "mcp",
            "internal",
            "mcp_endless_listing",
            f"MCP server {self.name!r} never finished listing its tools: it {what}. Fix the server.",
        )

    async def call_tool(
        self, name: str, args: dict[str, Any], timeout: float | None, report: Callable[[str], Any] | None
    ) -> types.CallToolResult:
        """Call `name`; a timeout, a refusal or a dead server is an AdkError saying which."""

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            if report is not None:
                with contextlib.suppress(RuntimeError):  # the run it was for has ended (its loop closed)
                    report(self.server.redact(_progress_line(progress, total, message)))

        async def call(session: ClientSession) -> types.CallToolResult:
            return await session.call_tool(
                name, args, read_timeout_seconds=timeout, progress_callback=on_progress if report is not None else None
            )

        return await self._request(call, f"the call to {name!r}", timeout)

    async def _request(self, op: Callable[[ClientSession], Awaitable[T]], what: str, timeout: float | None) -> T:
        queue = await self._connected()
        job = _Job(op, what)
        queue.put_nowait(job)
        try:
            return await job.future
        except MCPError as exc:
            raise await self._mcp_error(exc, what, timeout) from None
        except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError, httpx2.TransportError) as exc:
            raise await self._died(what, exc) from None

    async def _mcp_error(self, exc: MCPError, what: str, timeout: float | None) -> AdkError:
        if exc.code == types.REQUEST_TIMEOUT:
            return AdkError(
                "mcp",
                "timeout",
                "mcp_timeout",
                f"MCP server {self.name!r} did not answer {what} within {timeout:g} s. "
                "Raise McpToolset(timeout=...) if it is just slow.",
            )
        if exc.code == types.CONNECTION_CLOSED and not await self._answers_ping():
            return await self._died(what, None)
        return AdkError(
            "mcp",
            "invalid_input" if exc.code in (types.INVALID_PARAMS, types.METHOD_NOT_FOUND) else "internal",
            "mcp_error",
            f"MCP server {self.name!r} answered {what} with an error: {exc.message}",
        )

    async def _answers_ping(self) -> bool:
        """Whether the session still works. -32000 is the SDK's "connection closed", and also
        JSON-RPC's generic server error, which a live server sends with words of its own: then
        the message is the server's answer and the connection stays."""
        queue = self._queue
        if self.status != "connected" or queue is None:
            return False
        job = _Job(lambda session: session.send_ping(), "a ping")
        queue.put_nowait(job)
        try:
            await asyncio.wait_for(job.future, PING_TIMEOUT)
        except Exception:  # noqa: BLE001 - whatever stopped the ping, the session is gone
            return False
        return True

    async def _died(self, what: str, exc: BaseException | None) -> AdkError:
        """The server went away during `what`: stop this session (the next request reconnects)."""
        tail = self.stderr
        if tail is not None:
            await asyncio.to_thread(tail.wait_closed, STDERR_GRACE)  # its last words, if it has any
        if self._queue is not None and self.status == "connected":
            self.status = "exited"
            self._queue.put_nowait(_DIED)
        reason = f": {self.server.redact(str(exc))}" if exc is not None and str(exc) else ""
        error = AdkError(
            "mcp",
            "unavailable",
            "mcp_server_exited",
            f"MCP server {self.name!r} ({self.server.label}) went away during {what}{reason}. "
            f"{self._again()}{self._stderr_text()}",
        )
        self.error = error
        return error

    # -- the owner task ------------------------------------------------------------------------
    async def _connected(self) -> asyncio.Queue[Any]:
        """The queue of a live session, connecting first when there is none."""
        if self._lock is None:
            self._lock = asyncio.Lock()
            _live.add(self)
            _register_exit_hook()
        async with self._lock:
            if self.status == "connected" and self._queue is not None:
                return self._queue
            if self._owner is not None:  # the last session is still winding down
                await asyncio.wait([self._owner], timeout=CLOSE_TIMEOUT)
            self.status, self.error, self._tools = "connecting", None, None
            queue: asyncio.Queue[Any] = asyncio.Queue()
            ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._queue = queue
            self._owner = asyncio.create_task(self._own(queue, ready), name=f"adk-mcp-{self.name}")
            ready.add_done_callback(_retrieve)  # nobody may be waiting any more
            try:
                await asyncio.shield(ready)
            except AdkError as exc:
                self.status, self.error = "failed", exc
                raise
            return queue

    async def _own(self, queue: asyncio.Queue[Any], ready: asyncio.Future[None]) -> None:
        scope = self._scope = anyio.CancelScope()  # close() while connecting cancels it
        try:
            with scope:
                async with AsyncExitStack() as stack:
                    session = await self._open(stack)
                    self.status = "connected"
                    ready.set_result(None)
                    async with anyio.create_task_group() as jobs:
                        while (job := await queue.get()) not in (_STOP, _DIED):
                            jobs.start_soon(job.run, session, self._closed_error, self.server.secrets)
                        jobs.cancel_scope.cancel()
            if scope.cancelled_caught and not ready.done():
                ready.set_exception(
                    AdkError(
                        "mcp", "cancelled", "mcp_closed", f"MCP server {self.name!r}: closed while it was starting."
                    )
                )
        except Exception as exc:  # noqa: BLE001 - a failed start goes to whoever waits for it
            if not ready.done():
                ready.set_exception(await self._start_error(exc))
        finally:
            self._fail_waiting(queue)
            if self.status in ("connecting", "connected"):
                self.status = "exited" if self.stderr is not None and self.stderr.closed else "closed"
            if self._queue is queue:
                self._owner = None

    async def _open(self, stack: AsyncExitStack) -> ClientSession:
        """Start the transport and the session, and do the MCP handshake."""
        _warm_up()
        server = self.server
        watch(server)  # the SDK logs what the server sends
        if isinstance(server, StdioServer):
            home = asyncio.get_running_loop()
            tail = StderrTail(server.redact, lambda: self._on_stderr_closed(tail, home))
            self.stderr = tail
            params = StdioServerParameters(
                command=_command(server.command, server.env),
                args=list(server.args),
                env=dict(server.env) if server.env else None,
                cwd=server.cwd,
            )
            try:
                read, write = await stack.enter_async_context(stdio_client(params, errlog=tail.writer))
            finally:
                tail.spawned()
        else:
            http = await stack.enter_async_context(create_mcp_http_client(headers=dict(server.headers) or None))
            read, write = await stack.enter_async_context(streamable_http_client(server.url, http_client=http))
        session = await stack.enter_async_context(ClientSession(read, write, message_handler=self._on_message))
        with anyio.fail_after(self.connect_timeout):
            await session.initialize()
        return session

    def _on_stderr_closed(self, tail: StderrTail, home: asyncio.AbstractEventLoop) -> None:
        """The reader thread saw EOF: the server exited. Wind the session down if it was live."""

        def note() -> None:
            if self.stderr is tail and self.status == "connected" and self._queue is not None:
                self.status = "exited"
                self._queue.put_nowait(_DIED)

        if not home.is_closed():
            home.call_soon_threadsafe(note)

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self._tools = None

    def _fail_waiting(self, queue: asyncio.Queue[Any]) -> None:
        while not queue.empty():
            job = queue.get_nowait()
            if isinstance(job, _Job) and not job.future.done():
                job.future.set_exception(self._closed_error(job.what))

    def _closed_error(self, what: str) -> AdkError:
        """Why a request ended without an answer: the server exited, or close() was called."""
        if self.status == "exited":
            return AdkError(
                "mcp",
                "unavailable",
                "mcp_server_exited",
                f"MCP server {self.name!r} ({self.server.label}) went away during {what}. "
                f"{self._again()}{self._stderr_text()}",
            )
        return AdkError(
            "mcp", "cancelled", "mcp_closed", f"The connection to MCP server {self.name!r} was closed during {what}."
        )

    # -- closing -------------------------------------------------------------------------------
    async def close(self) -> None:
        """End the session and stop the server; a later request connects again."""
        owner, queue = self._owner, self._queue
        if owner is None or queue is None:
            if self.status != "failed":
                self.status = "closed" if self.status != "not connected" else self.status
            return
        if self.status == "connecting" and self._scope is not None:
            self._scope.cancel()  # unwinds inside the owner task itself
        else:
            queue.put_nowait(_STOP)
        await asyncio.wait([owner], timeout=CLOSE_TIMEOUT)
        self.status = "closed"

    # -- messages ------------------------------------------------------------------------------
    async def _start_error(self, exc: BaseException) -> AdkError:
        cause = redacted_error(self.server.secrets, _root_cause(exc))  # a refused handshake is the server's text
        if isinstance(cause, AdkError):
            return cause
        label = f"MCP server {self.name!r} ({self.server.label})"
        server, tail = self.server, self.stderr
        if isinstance(cause, FileNotFoundError) and tail is not None:
            cwd = getattr(server, "cwd", None)
            if cwd is not None and not Path(cwd).is_dir():
                return AdkError(
                    "mcp",
                    "not_found",
                    "mcp_cwd_not_found",
                    f"{label} cannot start: its working folder {str(cwd)!r} does not exist.",
                )
            return AdkError(
                "mcp",
                "not_found",
                "mcp_command_not_found",
                f"{label} cannot start: there is no command {getattr(server, 'command', '')!r} "
                "on PATH or beside this Python. Install the server (e.g. pip install "
                "mcp-server-time, or npm install the package) or give the command's full path.",
            )
        if isinstance(cause, TimeoutError):
            return AdkError(
                "mcp",
                "timeout",
                "mcp_connect_timeout",
                f"{label} did not finish the MCP handshake within {self.connect_timeout:g} s. "
                f"Check the command, or raise connect_timeout.{self._stderr_text()}",
            )
        exited = tail is not None and await asyncio.to_thread(tail.wait_closed, STDERR_GRACE)
        if exited or (isinstance(cause, MCPError) and cause.code == types.CONNECTION_CLOSED):
            return AdkError(
                "mcp",
                "unavailable",
                "mcp_server_exited",
                f"{label} exited before it finished starting. Fix the command, its arguments or "
                f"its environment, then run again.{self._stderr_text()}",
            )
        if isinstance(cause, MCPError) and tail is None:
            return AdkError(
                "mcp",
                "unavailable",
                "mcp_connect_failed",
                f"{label} refused the MCP handshake: {cause.message}. Check the URL (servers made with "
                "the MCP SDK answer at /mcp) and the headers.",
            )
        hint = " Is it running?" if tail is None else ""
        return AdkError(
            "mcp",
            "unavailable",
            "mcp_connect_failed",
            f"{label} could not be reached: {self.server.redact(_describe(cause))}.{hint}{self._stderr_text()}",
        )

    def _again(self) -> str:
        return "The next call starts it again." if self.stderr is not None else "The next call connects again."

    def _stderr_text(self) -> str:
        """The server's last stderr lines, for the end of a message."""
        lines = self.stderr.lines() if self.stderr is not None else []
        if not lines:
            return ""
        return "\nIts last stderr lines:\n" + "\n".join(f"    {line}" for line in lines[-10:])


_warming: asyncio.Future[Any] | None = None


def _warm_up() -> None:
    """Import jsonschema on a worker thread while the first server starts: the arguments of
    every call are checked with it, and the SDK checks structured results with it. Through
    `import_jsonschema`, which leaves out a grammar that takes seconds to build."""
    global _warming
    if _warming is None:
        _warming = asyncio.ensure_future(asyncio.to_thread(import_jsonschema))


async def _raw_tool_name(session: ClientSession, params: types.PaginatedRequestParams | None, index: int) -> str:
    """The name (quoted) of tool `index` of a page the SDK refused, asked for again without its
    checks; "number N" when even that fails."""
    try:
        raw = await session._dispatcher.send_raw_request(  # the SDK has no unchecked listing
            "tools/list", params.model_dump(mode="json", exclude_none=True) if params else None
        )
        name = raw["tools"][index]["name"]
    except Exception:  # noqa: BLE001 - the name is a courtesy; the error stands without it
        return f"number {index + 1}"
    return repr(name) if isinstance(name, str) else f"number {index + 1}"


def _progress_line(done: float, total: float | None, message: str | None) -> str:
    """One line of the tool card's progress log: "[2/5] message", "message", "2/5" or "2"."""
    count = f"{done:g}/{total:g}" if total else f"{done:g}"
    if message:
        return f"[{count}] {message}\n" if total else f"{message}\n"
    return f"{count}\n"


def _command(command: str, env: Any) -> str:
    """A bare command found on PATH, else beside this Python (a server pip-installed into the
    kernel's virtual environment, whose bin/ is often not on a notebook's PATH)."""
    if Path(command).name != command or shutil.which(command):
        return command
    beside = shutil.which(command, path=str(Path(sys.executable).parent))
    return beside or command


def _root_cause(exc: BaseException) -> BaseException:
    """The first real failure inside the exception groups anyio wraps errors in."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = next((e for e in exc.exceptions if not isinstance(e, asyncio.CancelledError)), exc.exceptions[0])
    return exc


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _retrieve(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


_hook_registered = False


def _register_exit_hook() -> None:
    global _hook_registered
    if not _hook_registered:
        _hook_registered = True
        _loop.at_exit(_close_all)


async def _close_all() -> None:
    await asyncio.gather(*(c.close() for c in list(_live)), return_exceptions=True)
