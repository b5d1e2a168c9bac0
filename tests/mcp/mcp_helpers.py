"""Real MCP servers for tests/mcp, started by the tests themselves; no mock of the protocol anywhere.

- `mcp-server-time` (PyPI, stdio), nobody here wrote it;
- `@modelcontextprotocol/server-everything` (npm, stdio), the MCP project's own server that
  exercises every feature (images, progress, resources). `.ci/run` installs it into
  ADK_MCP_NODE_PREFIX (default ~/.cache/adk-notebook/mcp-node); without it its tests are
  skipped, unless ADK_MCP_REQUIRED=1 (CI) makes them fail;
- our own `python -m adk_notebook mcp serve tests/mcp/served_tools.py`, over stdio and HTTP.

conftest.py makes a toolset of each once per module, shared by tests that each run on their own
event loop: a connection lives on the MCP loop, not on the test's.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from adk_notebook.mcp import McpToolset, StdioServer, _loop

HERE = Path(__file__).resolve().parent
SERVED = HERE / "served_tools.py"
REQUIRED = os.environ.get("ADK_MCP_REQUIRED", "") not in ("", "0")
NODE_PREFIX = Path(
    os.environ.get("ADK_MCP_NODE_PREFIX")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "adk-notebook" / "mcp-node"
)
EVERYTHING = NODE_PREFIX / "node_modules" / ".bin" / "mcp-server-everything"


def time_server() -> StdioServer:
    return StdioServer("mcp-server-time", ["--local-timezone", "UTC"])  # found beside this Python


def our_server() -> StdioServer:
    return StdioServer(sys.executable, ["-m", "adk_notebook", "mcp", "serve", str(SERVED)])


def stubborn_server() -> StdioServer:
    """Our server behind a shell that outlives it by a minute: it stops only when it is stopped
    (the SDK's close sends SIGTERM to its process group when stdin's end does not end it)."""
    return StdioServer("sh", ["-c", f"'{sys.executable}' -m adk_notebook mcp serve '{SERVED}'; sleep 60"])


def everything_server() -> StdioServer:
    if not EVERYTHING.exists():
        reason = f"@modelcontextprotocol/server-everything is not installed in {NODE_PREFIX} (bash .ci/run installs it)"
        if REQUIRED:
            pytest.fail(f"MCP suite required (ADK_MCP_REQUIRED=1) but {reason}", pytrace=False)
        pytest.skip(reason)
    return StdioServer(str(EVERYTHING), ["stdio"])


def children() -> set[int]:
    """Every live process below this one (zombies are gone already as far as a user cares)."""
    return {p.pid for p in psutil.Process().children(recursive=True) if _alive(p)}


def _alive(process: psutil.Process) -> bool:
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def server_pid(toolset: McpToolset, before: set[int]) -> int:
    """The pid of the process a stdio toolset started since `before` (a `children()` taken before
    it connected): the new child whose command line is the server's. Other toolsets of the same
    server may be running, hence `before`."""
    server = toolset.server
    assert isinstance(server, StdioServer)
    wanted = Path(server.command).name
    for pid in children() - before:
        try:
            cmdline = psutil.Process(pid).cmdline()
        except psutil.NoSuchProcess:
            continue
        if any(Path(part).name == wanted for part in cmdline[:2]) and all(a in cmdline for a in server.args):
            return pid
    raise AssertionError(f"no child process runs {server.label}")


def close(toolset: McpToolset) -> None:
    _loop.run_blocking(toolset.close(), timeout=20)


class HttpProcess:
    """`mcp serve --http 0` in a child process: its URL (read from what it prints) and its stderr."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "adk_notebook", "mcp", "serve", str(SERVED), "--http", "0"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self._ready = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()
        if not self._ready.wait(90):
            self.stop()
            raise AssertionError(f"mcp serve --http did not start: {self.lines}")
        found = re.search(r"http://\S+/mcp", "\n".join(self.lines))
        assert found, self.lines
        self.url = found.group(0)

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append(line.rstrip("\n"))
            if "Serving MCP at" in line:
                self._ready.set()
        self._ready.set()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def wait_until(check: object, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.05)
