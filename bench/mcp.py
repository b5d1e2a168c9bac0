"""MCP over stdio: our McpToolset beside the official SDK's bare client, on the same server.

Two figures per server, both clients measured alternately in one run:
- first call: start the server, MCP handshake, list the tools, answer one call;
- per call: the median of N calls of a cheap tool on a connected session. Ours adds the
  hop to the MCP loop's thread, the argument check against the schema and the conversion
  of the result into a function response.

    python bench/mcp.py [--calls 200] [--rounds 3] [--server time|everything|both] [--count-calls]

--count-calls prints, instead of the time per call, the Python function calls per call (in every
thread, the MCP loop's too): a figure the noise of a shared machine does not move, to tell a
real per-call cost from noise.

Servers: mcp-server-time (PyPI, get_current_time) and, when installed where .ci/run puts it,
@modelcontextprotocol/server-everything (npm, echo). These machines are shared and noisy:
read the ratios, not the absolute numbers.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

# Run as `python bench/mcp.py`, this file's folder comes first on sys.path, and this file would
# be the `mcp` the next line imports instead of the SDK.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import jsonschema  # noqa: F401 - both clients use it; import it before the clock starts
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from adk_notebook.mcp import McpToolset, StdioServer
from adk_notebook.tools.simple_context import SimpleToolContext

NODE_PREFIX = Path(
    os.environ.get("ADK_MCP_NODE_PREFIX")  # where .ci/run installs it
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "adk-notebook" / "mcp-node"
)
EVERYTHING = NODE_PREFIX / "node_modules" / ".bin" / "mcp-server-everything"
SERVERS: dict[str, tuple[list[str], str, dict[str, Any]]] = {
    "time": (["mcp-server-time", "--local-timezone", "UTC"], "get_current_time", {"timezone": "UTC"}),
    "everything": ([str(EVERYTHING), "stdio"], "echo", {"message": "hi"}),
}


class CallCount:
    """A profile hook counting Python function calls in every thread started after it."""

    def __init__(self) -> None:
        self.calls, self.on = 0, False
        sys.setprofile(self)
        threading.setprofile(self)

    def __call__(self, frame: Any, event: str, arg: Any) -> None:
        if self.on and event == "call":
            self.calls += 1


COUNT: CallCount | None = None  # --count-calls


def command(argv: list[str]) -> list[str]:
    found = shutil.which(argv[0]) or shutil.which(argv[0], path=str(Path(sys.executable).parent))
    return [found or argv[0], *argv[1:]]


async def bare(argv: list[str], tool: str, args: dict[str, Any], calls: int) -> tuple[float, list[float]]:
    """The official SDK as its README shows it: stdio_client + ClientSession."""
    started = time.perf_counter()
    params = StdioServerParameters(command=argv[0], args=argv[1:])
    with open(os.devnull, "w") as quiet:
        async with stdio_client(params, errlog=quiet) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await session.list_tools()
            await session.call_tool(tool, args)
            first = time.perf_counter() - started
            per_call = await timed(calls, lambda: session.call_tool(tool, args))
    return first, per_call


async def ours(argv: list[str], tool: str, args: dict[str, Any], calls: int) -> tuple[float, list[float], list[float]]:
    """McpToolset: the same work, plus per call the checks an agent's tool call goes through."""
    started = time.perf_counter()
    toolset = McpToolset(StdioServer(argv[0], argv[1:]))
    try:
        [found] = [t for t in await toolset.tools() if t.name == tool]
        await toolset.call_tool(tool, args)
        first = time.perf_counter() - started
        per_call = await timed(calls, lambda: toolset.call_tool(tool, args))
        ctx = SimpleToolContext("bench")
        as_a_tool = await timed(calls, lambda: found.execute(ctx, found.validate_args(args)))
    finally:
        await toolset.close()
    return first, per_call, as_a_tool


async def timed(n: int, call: Callable[[], Awaitable[Any]]) -> list[float]:
    for _ in range(5):  # warm up
        await call()
    if COUNT is not None:
        COUNT.calls, COUNT.on = 0, True
        for _ in range(n):
            await call()
        COUNT.on = False
        return [COUNT.calls / n]
    times = []
    for _ in range(n):
        started = time.perf_counter()
        await call()
        times.append(time.perf_counter() - started)
    return times


def ms(seconds: float) -> str:
    return f"{seconds * 1000:9.2f} ms"


def call_figure(figure: float) -> str:
    return ms(figure) if COUNT is None else f"{figure:6.0f} calls"


async def main(names: list[str], calls: int, rounds: int) -> None:
    what = "medians" if COUNT is None else "Python function calls per call (times slowed by counting)"
    print(f"MCP over stdio, {rounds} rounds (clients alternate), {calls} calls per round; {what}\n")
    for name in names:
        argv, tool, args = SERVERS[name]
        argv = command(argv)
        firsts: dict[str, list[float]] = {"bare": [], "ours": []}
        calls_of: dict[str, list[float]] = {"bare": [], "ours": [], "ours as a tool": []}
        for _ in range(rounds):
            first, per_call = await bare(argv, tool, args, calls)
            firsts["bare"].append(first)
            calls_of["bare"] += per_call
            first, per_call, as_a_tool = await ours(argv, tool, args, calls)
            firsts["ours"].append(first)
            calls_of["ours"] += per_call
            calls_of["ours as a tool"] += as_a_tool
        base_first, base_call = statistics.median(firsts["bare"]), statistics.median(calls_of["bare"])
        print(f"{name} ({tool})")
        print(f"  {'client':34} {'first call':>12} {'ratio':>6}   {'per call':>12} {'ratio':>6}")
        for label, key in (("official SDK, bare ClientSession", "bare"), ("McpToolset.call_tool", "ours")):
            first, call = statistics.median(firsts[key]), statistics.median(calls_of[key])
            print(
                f"  {label:34} {ms(first):>12} {first / base_first:6.2f}   {call_figure(call):>12} {call / base_call:6.2f}"
            )
        tool_call = statistics.median(calls_of["ours as a tool"])
        print(
            f"  {'McpTool: validate_args + execute':34} {'':>12} {'':>6}   {call_figure(tool_call):>12} "
            f"{tool_call / base_call:6.2f}\n"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--server", choices=["time", "everything", "both"], default="both")
    parser.add_argument("--count-calls", action="store_true")
    options = parser.parse_args()
    if options.count_calls:
        COUNT = CallCount()
    chosen = ["time", "everything"] if options.server == "both" else [options.server]
    if "everything" in chosen and not EVERYTHING.exists():
        print(f"(server-everything is not installed in {EVERYTHING.parents[2]}: bash .ci/run installs it)\n")
        chosen.remove("everything")
    asyncio.run(main(chosen, options.calls, options.rounds))
