"""MCP servers that misbehave, as real processes over stdio and streamable HTTP (mcp_hostile_server.py):
errors that echo secrets, listings that never end, schemas that cannot be sent, names that collide,
and `mcp serve` tools that exit. Family "mcp" of the reliability table."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from adk_notebook import AdkError, FunctionCall, GeminiModel, LlmAgent, RunResult, ScriptedModel
from adk_notebook.mcp import HttpServer, McpToolset, StdioServer, _loop
from adk_notebook.notebook.mcp_servers import servers_view
from adk_notebook.notebook.workspace import Workspace

HOSTILE = Path(__file__).resolve().parent / "mcp_hostile_server.py"
TOKEN = "tok-canary-0123456789abcdef"
BEARER = "bearer-canary-9876543210fedcba"


def hostile(mode: str, **env: str) -> StdioServer:
    return StdioServer(sys.executable, [str(HOSTILE), mode], env=env or None)


class HttpHostile:
    """mcp_hostile_server.py MODE --http in a child process, and its URL."""

    def __init__(self, mode: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(HOSTILE), mode, "--http"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        found: list[str] = []
        ready = threading.Event()

        def read() -> None:
            assert self.process.stderr is not None
            for line in self.process.stderr:
                if line.startswith("http://"):
                    found.append(line.strip())
                    ready.set()
            ready.set()

        threading.Thread(target=read, daemon=True).start()
        assert ready.wait(60) and found, "the hostile HTTP server did not start"
        self.url = found[0]

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(10)


@pytest.fixture
def http_echo() -> Iterator[HttpHostile]:
    served = HttpHostile("echo")
    yield served
    served.stop()


def close(toolset: McpToolset) -> None:
    _loop.run_blocking(toolset.close(), timeout=20)


async def run(toolset: McpToolset, *script: Any) -> RunResult:
    model = ScriptedModel([*script, "done"])
    return await LlmAgent(name="bot", model=model, toolsets=[toolset]).run_async("go")


def everything_shown(result: RunResult) -> str:
    """What a run leaves for anyone to read: its events as stored, and its trace."""
    events = [e.to_dict() for e in result.events if not e.partial]
    return json.dumps(events, default=str) + json.dumps(result.trace.to_dict(), default=str)


def errors_shown(toolset: McpToolset, names: list[str]) -> tuple[list[str], list[str]]:
    """Each call's AdkError as str and repr (the texts), and its message (to check what reached it)."""
    texts, messages = [], []
    for name in names:
        with pytest.raises(AdkError) as caught:
            _loop.run_blocking(toolset.call_tool(name, {}), timeout=30)
        texts += [str(caught.value), repr(caught.value)]
        messages.append(caught.value.message)
    return texts, messages


# -- 1. secrets a server echoes ----------------------------------------------------------------
def test_a_stdio_server_echoing_its_env_secret_is_redacted_everywhere(
    caplog: pytest.LogCaptureFixture, tally: Any
) -> None:
    with tally.case("mcp: stdio server echoes its env secret"):
        caplog.set_level(logging.DEBUG)
        toolset = McpToolset(hostile("echo", ECHO_TOKEN=TOKEN), name="echo")
        try:
            result = _loop.run_blocking(run(toolset, FunctionCall("leak", {}), FunctionCall("boom", {})), 60)
            texts, messages = errors_shown(toolset, ["leak", "boom"])
            shown = {"run": everything_shown(result), "errors": " ".join(texts), "logs": caplog.text}
            shown["stderr"] = " ".join(toolset.stderr_lines)
            assert not [where for where, text in shown.items() if TOKEN in text]
            assert all("***" in m for m in messages), messages  # the message is there, the value hidden
            assert any("stderr says" in line for line in toolset.stderr_lines)
        finally:
            close(toolset)


def test_an_http_server_echoing_the_authorization_header_is_redacted_everywhere(
    http_echo: HttpHostile, caplog: pytest.LogCaptureFixture, tally: Any
) -> None:
    with tally.case("mcp: http server echoes the Authorization header"):
        caplog.set_level(logging.DEBUG)
        toolset = McpToolset(HttpServer(http_echo.url, headers={"Authorization": f"Bearer {BEARER}"}), name="web")
        try:
            result = _loop.run_blocking(run(toolset, FunctionCall("leak", {}), FunctionCall("boom", {})), 60)
            texts, _ = errors_shown(toolset, ["leak", "boom"])
            shown = {"run": everything_shown(result), "errors": " ".join(texts), "logs": caplog.text}
            assert not [where for where, text in shown.items() if BEARER in text]
        finally:
            close(toolset)


def test_the_notebook_never_shows_a_secret_from_the_mcp_cell(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, tally: Any
) -> None:
    with tally.case("mcp: %%mcp env secret echoed by the server"):
        caplog.set_level(logging.DEBUG)
        monkeypatch.setenv("HOSTILE_TOKEN", TOKEN)
        ws = Workspace(namespace={})
        config = {"mcpServers": {"echo": {"command": sys.executable, "args": [str(HOSTILE), "echo"]}}}
        config["mcpServers"]["echo"]["env"] = {"ECHO_TOKEN": "${HOSTILE_TOKEN}"}
        try:
            ws.define_mcp(json.dumps(config))
            toolset = ws.mcp["echo"]
            result = _loop.run_blocking(run(toolset, FunctionCall("leak", {}), FunctionCall("boom", {})), 60)
            view = ws.mcp_view()
            texts, _ = errors_shown(toolset, ["leak", "boom"])
            shown = {"%adk mcp": view.text + view.html, "run": everything_shown(result), "errors": " ".join(texts)}
            shown |= {"logs": caplog.text, "stderr": " ".join(toolset.stderr_lines)}
            assert not [where for where, text in shown.items() if TOKEN in text]
        finally:
            ws.mcp.close_all([])


# -- 5. tools that exit, and a server's generic error ------------------------------------------
EXITING = Path(__file__).resolve().parent / "mcp_exiting_tools.py"


@pytest.mark.parametrize(
    ("name", "args", "says"),
    [
        ("quit_now", {"code": 3}, "SystemExit: 3"),
        ("quit_async", {"code": 4}, "SystemExit: 4"),
        ("interrupt", {}, "KeyboardInterrupt"),
        ("interrupt_async", {}, "KeyboardInterrupt"),
    ],
)
def test_a_served_tool_that_exits_fails_its_call_and_the_server_keeps_serving(
    name: str, args: dict[str, Any], says: str, tally: Any
) -> None:
    with tally.case(f"mcp: served tool {name}"):
        toolset = McpToolset(StdioServer(sys.executable, ["-m", "adk_notebook", "mcp", "serve", str(EXITING)]))
        try:
            with pytest.raises(AdkError) as caught:
                _loop.run_blocking(toolset.call_tool(name, args), timeout=60)
            assert caught.value.code == "mcp_tool_error" and says in caught.value.message, caught.value
            for text in ("still", "serving"):  # the same process answers the next calls
                assert _loop.run_blocking(toolset.call_tool("echo", {"text": text}), 30).response == {"result": text}
            assert toolset.status == "connected"
        finally:
            close(toolset)


def test_a_generic_server_error_keeps_its_message_and_the_connection(tally: Any) -> None:
    with tally.case("mcp: -32000 from a live server"):
        toolset = McpToolset(hostile("generic"), name="generic")
        try:
            result = _loop.run_blocking(run(toolset, FunctionCall("flaky", {}), FunctionCall("flaky", {})), 60)
            first, second = [r.response for e in result.events if not e.partial for r in e.function_responses()]
            assert "database is locked, try again" in first["error"], first
            assert second == {"result": "flaky answered on call 2"}  # the same server process: no restart
            assert toolset.status == "connected"
        finally:
            close(toolset)


# -- 2. listings that never end ----------------------------------------------------------------
@pytest.mark.parametrize(
    ("mode", "says"),
    [
        ("hang", "did not list its tools within 2 s"),
        ("endless", "pages"),
        ("repeat", "the same cursor"),
    ],
)
def test_a_listing_that_never_ends_fails_clearly_and_the_run_goes_on_without_it(
    mode: str, says: str, tally: Any
) -> None:
    with tally.case(f"mcp: tools/list {mode}"):
        toolset = McpToolset(hostile(mode), name=mode, timeout=2)
        try:
            with pytest.raises(AdkError) as caught:
                _loop.run_blocking(toolset.tools(), timeout=60)
            assert f"MCP server {mode!r}" in caught.value.message and says in caught.value.message, caught.value
            assert toolset.error is not None and says in toolset.error.message
            assert says in servers_view({mode: toolset}, {mode: []}).text  # what %adk mcp shows
            model = ScriptedModel([FunctionCall(f"{mode}_unavailable", {}), "done"])
            result = LlmAgent(name="bot", model=model, toolsets=[toolset]).run("go")
            assert result.text == "done"  # the run went on
            [declared] = model.requests[0].tools  # the model is told, by the one tool it has
            assert declared.name == f"{mode}_unavailable" and says in declared.description
            [response] = [r.response for e in result.events if not e.partial for r in e.function_responses()]
            assert says in response["error"] and response["code"] == caught.value.code
        finally:
            close(toolset)


# -- 4. names that collide once sanitised ------------------------------------------------------
def test_tools_whose_names_collide_once_sanitised_both_stay_callable(tally: Any) -> None:
    with tally.case("mcp: tools a.b and a_b"):
        toolset, again = McpToolset(hostile("collide"), name="c"), McpToolset(hostile("collide"), name="c")
        try:
            tools = {t.mcp_name: t for t in _loop.run_blocking(toolset.tools(), 60)}
            names = {t.mcp_name: t.name for t in _loop.run_blocking(again.tools(), 60)}
            assert {m: t.name for m, t in tools.items()} == names  # the same names every time
            assert names["a_b"] == "a_b" and names["a.b"] != "a_b"
            assert "'a.b'" in tools["a.b"].description and "dotted" in tools["a.b"].description
            calls = [FunctionCall(names["a.b"], {}), FunctionCall("a_b", {})]
            result = _loop.run_blocking(run(toolset, *calls), 60)
            said = [r.response for e in result.events if not e.partial for r in e.function_responses()]
            assert said == [{"result": "you called a.b"}, {"result": "you called a_b"}]
            listed = servers_view({"c": toolset}, {"c": list(tools.values())}).text
            assert f"{names['a.b']} (a.b)" in listed  # %adk mcp says which is which
        finally:
            close(toolset)
            close(again)


# -- 3. schemas that cannot be sent ------------------------------------------------------------
@pytest.mark.parametrize(
    ("mode", "says"),
    [
        ("refs", "expands past"),
        ("recursive", "'Node' refers to itself"),
        ("dangling", "'#/$defs/Missing'"),
        ("typeless", 'no "type": "object"'),
    ],
)
def test_a_schema_that_cannot_be_sent_is_a_clear_error_naming_server_and_tool(mode: str, says: str, tally: Any) -> None:
    with tally.case(f"mcp: {mode} input schema"):
        toolset = McpToolset(hostile(mode), name=mode)
        try:
            model = ScriptedModel(["done"])
            result = LlmAgent(name="bot", model=model, toolsets=[toolset]).run("go")
            body = GeminiModel("gemini-2.5-flash", api_key="unused").build_body(model.requests[0])
            size = len(json.dumps(body))
            print(f"[{mode}] the Gemini request is {size} bytes")
            assert size < 20_000 and result.text == "done"  # the run goes on, its request stays small
            kept = {"plain"} if mode != "typeless" else set()  # the SDK refuses a type-less listing whole
            assert {d.name for d in model.requests[0].tools} == {*kept, f"{mode}_unavailable"}
            with pytest.raises(AdkError) as caught:
                _loop.run_blocking(toolset.tools(), 60)
            error = caught.value
            assert error.code == "mcp_bad_schema" and f"MCP server {mode!r}" in error.message, error
            assert "tool 'odd'" in error.message and says in error.message, error
        finally:
            close(toolset)
