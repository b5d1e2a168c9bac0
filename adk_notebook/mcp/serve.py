"""Our tools as an MCP server: `python -m adk_notebook mcp serve FILE.py|module:attr [--http PORT]`.

What is served: from FILE.py, every public Tool and Toolset it defines at top level (its
`__all__` when it has one); from module:attr, that Tool, Toolset or LlmAgent (its tools and
toolsets), or a list of them. Each tool is declared with the schema the model providers get
(`Tool.declaration()`), its arguments are checked the same way before it runs, progress it
emits (`ctx.emit_progress`) goes out as MCP progress notifications, and its result comes back
as JSON (text plus structured content) with images and audio as MCP image/audio content.
A failure is an `isError` result whose text says what went wrong.

Over stdio (the default) the SDK points fd 1 at stderr while serving, so a `print` in a tool
never corrupts the protocol. `--http PORT` serves streamable HTTP at /mcp on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import importlib
import json
import runpy
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from .. import __version__
from ..core.context import COMPLETED
from ..core.errors import AdkError
from ..tools.base import Tool, Toolset
from ..tools.responses import FunctionResponseData
from ..tools.simple_context import SimpleToolContext
from ..tools.toolsets import collect_tools

__all__ = ["build_server", "load_tools", "main"]

Source = Tool | Toolset


def load_tools(target: str) -> list[Source]:
    """The tools and toolsets `target` (FILE.py or module:attr) names.

    Raises:
        AdkError: the file or module cannot be found, or holds no tools.
    """
    if target.endswith(".py") or Path(target).is_file():
        path = Path(target).resolve()
        if not path.is_file():
            raise AdkError.config(f"mcp serve: there is no file {target!r}.", code="not_found", category="not_found")
        sys.path.insert(0, str(path.parent))  # so the file's own imports work
        found = runpy.run_path(str(path), run_name=f"__adk_mcp_{path.stem}__")
        public = found.get("__all__") or [k for k in found if not k.startswith("_")]
        sources = [found[k] for k in public if isinstance(found.get(k), (Tool, Toolset))]
        what = str(path)
    else:
        module_name, _, attr = target.partition(":")
        if not attr:
            raise AdkError.config(
                f"mcp serve: give FILE.py or module:attr (e.g. my_tools:toolset), got {target!r}.",
                code="invalid_target",
            )
        try:
            value: Any = importlib.import_module(module_name)
        except ImportError as exc:
            raise AdkError.config(
                f"mcp serve: cannot import {module_name!r}: {exc}", code="not_found", category="not_found"
            ) from None
        for part in attr.split("."):
            if not hasattr(value, part):
                raise AdkError.config(
                    f"mcp serve: {module_name!r} has no attribute {attr!r}.", code="not_found", category="not_found"
                )
            value = getattr(value, part)
        sources = _sources(value, target)
        what = target
    if not sources:
        raise AdkError.config(
            f"mcp serve: {what} defines no tools. Decorate functions with @tool "
            "(from adk_notebook import tool), or build FunctionTools or Toolsets.",
            code="no_tools",
        )
    return sources


def _sources(value: Any, target: str) -> list[Source]:
    if isinstance(value, (Tool, Toolset)):
        return [value]
    tools, toolsets = getattr(value, "tools", None), getattr(value, "toolsets", None)
    if isinstance(tools, list) and isinstance(toolsets, list):  # an LlmAgent
        return [*tools, *toolsets]
    if isinstance(value, (list, tuple)) and all(isinstance(v, (Tool, Toolset)) for v in value):
        return list(value)
    raise AdkError.config(
        f"mcp serve: {target} is a {type(value).__name__}; give a Tool, a Toolset, an LlmAgent "
        "or a list of tools and toolsets.",
        code="invalid_target",
    )


class _ServeContext(SimpleToolContext):
    """A SimpleToolContext whose progress also goes to the MCP client, in order, from any thread."""

    __slots__ = ("_forward",)

    def __init__(self, caller: str, tool_name: str, forward: Any) -> None:
        super().__init__(caller, tool_name=tool_name)
        self._forward = forward

    def emit_progress(self, stream: str, chunk: str) -> Any:
        super().emit_progress(stream, chunk)
        self._forward(chunk)
        return COMPLETED


def build_server(sources: Iterable[Source], name: str) -> Server[Any]:
    """An MCP server (the SDK's low-level `Server`) offering the tools of `sources`."""
    sources = list(sources)
    owner = f"MCP server {name!r}"

    fixed = collect_tools(owner, [(f"tool {s.name!r}", [s]) for s in sources if isinstance(s, Tool)])

    async def resolve() -> dict[str, Tool]:
        """The tools now: toolsets are asked on every request, as an agent asks them every run."""
        if all(isinstance(s, Tool) for s in sources):
            return fixed
        ctx = SimpleToolContext(name)
        groups: list[tuple[str, Iterable[Tool]]] = [
            (f"tool {s.name!r}", [s]) if isinstance(s, Tool) else (f"toolset {s.name!r}", await s.tools(ctx))
            for s in sources
        ]
        return collect_tools(owner, groups)

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[_declare(t) for t in (await resolve()).values()])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        tools = await resolve()
        tool = tools.get(params.name)
        if tool is None:
            return _error(f"Unknown tool {params.name!r}. Available tools: {', '.join(sorted(tools)) or 'none'}.")
        try:
            args = tool.validate_args(dict(params.arguments or {}))
        except Exception as exc:  # noqa: BLE001 - whatever a validator raises, the caller hears it
            return _error(f"Invalid arguments for tool {tool.name!r}: {_message(exc)}")
        return await _run(ctx, name, tool, args)

    return Server(name, version=__version__, on_list_tools=list_tools, on_call_tool=call_tool)


async def _run(request: Any, caller: str, tool: Tool, args: dict[str, Any]) -> types.CallToolResult:
    """Run one call; its progress lines go out as notifications before the result does."""
    loop = asyncio.get_running_loop()
    lines: asyncio.Queue[str | None] = asyncio.Queue()

    async def forward() -> None:
        count = 0
        while (line := await lines.get()) is not None:
            count += 1
            await request.session.report_progress(count, None, line.rstrip("\n"))

    ctx = _ServeContext(caller, tool.name, lambda line: loop.call_soon_threadsafe(lines.put_nowait, line))
    async with anyio.create_task_group() as group:
        group.start_soon(forward)
        try:
            result = await tool.execute(ctx, args)
        except (Exception, SystemExit, KeyboardInterrupt) as exc:  # noqa: BLE001 - a failing tool is an error result, not a dead server
            # sys.exit() or a KeyboardInterrupt from a tool ends that call, not the server; a
            # Ctrl-C meant for the server arrives while it waits for a call (HTTP: uvicorn's own handler).
            return _error(f"Tool {tool.name!r} failed: {_message(exc)}")
        finally:
            loop.call_soon_threadsafe(lines.put_nowait, None)
    data = FunctionResponseData.from_tool_result(tool.name, result)
    if data.error is not None:
        return _error(data.error)
    return _result(tool.name, data)


def _declare(tool: Tool) -> types.Tool:
    d = tool.declaration()
    hints = types.ToolAnnotations(read_only_hint=True) if tool.is_read_only else None
    return types.Tool(
        name=d.name,
        description=d.description or None,
        input_schema=d.parameters or {"type": "object", "properties": {}},
        annotations=hints,
    )


def _result(name: str, data: FunctionResponseData) -> types.CallToolResult:
    content: list[Any] = [types.TextContent(type="text", text=json.dumps(data.response, ensure_ascii=False))]
    for i, part in enumerate(data.parts):
        if part.inline_data is not None:
            mime, blob = part.inline_data.mime_type, base64.b64encode(part.inline_data.data).decode("ascii")
            if mime.startswith("image/"):
                content.append(types.ImageContent(type="image", data=blob, mime_type=mime))
            elif mime.startswith("audio/"):
                content.append(types.AudioContent(type="audio", data=blob, mime_type=mime))
            else:
                content.append(
                    types.EmbeddedResource(
                        type="resource",
                        resource=types.BlobResourceContents(uri=f"adk://{name}/part-{i}", mime_type=mime, blob=blob),
                    )
                )
        elif part.file_data is not None:
            uri = part.file_data.file_uri
            uri = uri if "://" in uri else Path(uri).resolve().as_uri()
            content.append(
                types.ResourceLink(
                    type="resource_link",
                    name=uri.rsplit("/", 1)[-1] or uri,
                    uri=uri,
                    mime_type=part.file_data.mime_type,
                )
            )
    return types.CallToolResult(content=content, structured_content=data.response)


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


def _message(exc: BaseException) -> str:
    if isinstance(exc, AdkError):
        return exc.message
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


# -- running ---------------------------------------------------------------------------------
async def serve_stdio(server: Server[Any]) -> None:
    async with stdio_server() as (read, write):  # the wire has fd 1 to itself from here on
        sys.stdout = sys.stderr  # and what tools print goes to stderr, at once
        await server.run(read, write, server.create_initialization_options())


async def serve_http(server: Server[Any], host: str, port: int) -> None:
    import uvicorn

    app = server.streamable_http_app(host=host)
    web = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning"))
    serving = asyncio.ensure_future(web.serve())
    while not web.started and not serving.done():
        await asyncio.sleep(0.02)
    if web.started:
        bound = web.servers[0].sockets[0].getsockname()[1]
        print(f"Serving MCP at http://{host}:{bound}/mcp (Ctrl-C to stop)", file=sys.stderr, flush=True)
    await serving


def _default_name(target: str) -> str:
    return Path(target.split(":")[0]).stem.replace(".", "_") or "adk"


def main(args: argparse.Namespace) -> int:
    """Serve until the client goes away (stdio) or Ctrl-C (HTTP); 2 when the target is unusable."""
    try:
        with contextlib.redirect_stdout(sys.stderr):  # what the file prints as it loads is not protocol
            server = build_server(load_tools(args.target), args.name or _default_name(args.target))
        if args.http is None:
            anyio.run(serve_stdio, server)
        else:
            asyncio.run(serve_http(server, args.host, args.http))
    except AdkError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 0
    return 0
