"""A misbehaving MCP server, made with the official SDK's low-level `Server`: the real protocol.

    python mcp_hostile_server.py MODE            # over stdio
    python mcp_hostile_server.py MODE --http 0   # streamable HTTP on 127.0.0.1, prints its URL

Modes, each one way real servers go wrong (tests/reliability/test_mcp_hostile.py):
- `echo`: its errors and answers repeat what it was given: the `ECHO_TOKEN` env value and the
  Authorization header, in an isError result, a -32000 error, stdout (not protocol: the SDK logs the line) and stderr;
- `generic`: a -32000 error with a message of its own on the first call of `flaky`;
- `hang`: never answers tools/list;  `endless`: a new cursor on every page;
  `repeat`: the same cursor on every page;
- `refs`, `recursive`, `dangling`, `typeless`: one tool with that kind of input schema;
- `collide`: tools `a.b` and `a_b` (one name once sanitised), each saying which it is.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

OBJECT: dict[str, Any] = {"type": "object", "properties": {"q": {"type": "string"}}}


def nested_refs(levels: int = 9, width: int = 3) -> dict[str, Any]:
    """About 2 KB of JSON whose $refs expand to width**levels leaves."""
    defs: dict[str, Any] = {f"L{levels}": {"type": "string", "description": "a leaf"}}
    for level in range(levels - 1, -1, -1):
        defs[f"L{level}"] = {
            "type": "object",
            "properties": {f"p{i}": {"$ref": f"#/$defs/L{level + 1}"} for i in range(width)},
        }
    return {"type": "object", "properties": {"root": {"$ref": "#/$defs/L0"}}, "$defs": defs}


SCHEMAS: dict[str, dict[str, Any]] = {
    "refs": nested_refs(),
    "recursive": {
        "type": "object",
        "properties": {"tree": {"$ref": "#/$defs/Node"}},
        "$defs": {
            "Node": {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}
        },
    },
    "dangling": {"type": "object", "properties": {"where": {"$ref": "#/$defs/Missing"}}},
    "typeless": {"properties": {"q": {"type": "string"}}},
}


def tool(name: str, schema: dict[str, Any] = OBJECT, description: str = "") -> types.Tool:
    return types.Tool(name=name, description=description or f"the tool {name}", input_schema=schema)


def text(message: str, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=error)


def build(mode: str) -> Server[Any]:
    calls = {"flaky": 0}

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        cursor = params.cursor if params is not None else None
        if mode == "hang":
            await anyio.sleep_forever()
        if mode == "endless":
            page = int(cursor or 0) + 1
            return types.ListToolsResult(tools=[tool(f"t{page}")], next_cursor=str(page))
        if mode == "repeat":
            return types.ListToolsResult(tools=[tool("again")], next_cursor="same")
        if mode in SCHEMAS:
            return types.ListToolsResult(tools=[tool("odd", SCHEMAS[mode]), tool("plain")])
        if mode == "collide":
            return types.ListToolsResult(
                tools=[tool("a.b", description="dotted"), tool("a_b", description="underscored")]
            )
        return types.ListToolsResult(tools=[tool("leak"), tool("boom"), tool("flaky"), tool("ok")])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        secret = os.environ.get("ECHO_TOKEN", "")
        request = getattr(ctx, "request", None)
        header = request.headers.get("authorization", "") if request is not None else ""
        said = f"token {secret!r} / header {header!r} / bearer {header.partition(' ')[2]!r}"
        name = params.name
        if name in ("a.b", "a_b"):
            return text(f"you called {name}")
        if name == "leak":
            print(f"stdout noise with {said}", flush=True)  # not protocol: the client logs the bad line
            print(f"stderr says {said}", file=sys.stderr, flush=True)
            return text(f"access denied for {said}", error=True)
        if name == "boom":
            raise MCPError(code=-32000, message=f"backend refused {said}")
        if name == "flaky":
            calls["flaky"] += 1
            if calls["flaky"] == 1:
                raise MCPError(code=-32000, message="database is locked, try again")
            return text(f"flaky answered on call {calls['flaky']}")
        return text(f"ok: {params.arguments}")

    return Server("hostile", version="1", on_list_tools=list_tools, on_call_tool=call_tool)


async def serve_stdio(server: Server[Any]) -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


async def serve_http(server: Server[Any]) -> None:
    import uvicorn

    web = uvicorn.Server(uvicorn.Config(server.streamable_http_app(), host="127.0.0.1", port=0, log_level="warning"))
    async with anyio.create_task_group() as group:
        group.start_soon(web.serve)
        while not web.started:
            await anyio.sleep(0.02)
        port = web.servers[0].sockets[0].getsockname()[1]
        print(f"http://127.0.0.1:{port}/mcp", file=sys.stderr, flush=True)


def send_unchecked_listings() -> None:
    """Let tools/list results out as they are, as servers built without an SDK that checks do
    (this SDK refuses to send a schema without `type: object`: "Handler returned an invalid result")."""
    from mcp.server import runner

    checked = runner._methods.serialize_server_result

    def serialize(method: str, version: str, data: Any, **kw: Any) -> Any:
        return dict(data) if method == "tools/list" else checked(method, version, data, **kw)

    runner._methods.serialize_server_result = serialize  # type: ignore[assignment]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode")
    parser.add_argument("--http", action="store_true")
    args = parser.parse_args()
    if args.mode == "typeless":
        send_unchecked_listings()
    server = build(args.mode)
    anyio.run(serve_http if args.http else serve_stdio, server)


if __name__ == "__main__":
    main()
