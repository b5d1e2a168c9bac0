"""McpToolset against real servers: tools and schemas, calls, images, errors, progress, a server
killed mid-call, timeouts, stderr, secrets, and no process left behind."""

from __future__ import annotations

import asyncio
import base64
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
from mcp_helpers import (
    children,
    close,
    everything_server,
    our_server,
    server_pid,
    stubborn_server,
    time_server,
    wait_until,
)

from adk_notebook import AdkError, FunctionCall, LlmAgent, RunResult, ScriptedModel
from adk_notebook.mcp import HttpServer, McpToolset, StdioServer
from adk_notebook.notebook.transcript import transcript_html

PNG = b"\x89PNG\r\n\x1a\n"


async def run(toolset: McpToolset, *script: Any, **agent: Any) -> RunResult:
    """One run of an agent that has `toolset`, its model replaying `script`."""
    model = ScriptedModel([*script, "done"])
    return await LlmAgent(name="bot", model=model, toolsets=[toolset], **agent).run_async("go")


def responses(result: RunResult) -> list[Any]:
    return [r for e in result.events if not e.partial for r in e.function_responses()]


async def bare_sdk_listing(server: StdioServer) -> dict[str, dict[str, Any]]:
    """What the official SDK's own client lists, to compare our declarations with."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    command = shutil.which(server.command) or shutil.which(server.command, path=str(Path(sys.executable).parent))
    params = StdioServerParameters(command=command or server.command, args=list(server.args))
    with open(os.devnull, "w") as quiet:
        async with stdio_client(params, errlog=quiet) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return {t.name: t.input_schema for t in (await session.list_tools()).tools}


# -- tools and calls -------------------------------------------------------------------------
async def test_the_time_servers_tools_keep_its_schemas(time_tools: McpToolset) -> None:
    tools = {t.name: t for t in await time_tools.tools()}
    assert set(tools) == {"get_current_time", "convert_time"}
    schema = tools["get_current_time"].declaration().parameters
    assert schema["properties"]["timezone"]["type"] == "string" and schema["required"] == ["timezone"]
    assert "IANA" in schema["properties"]["timezone"]["description"]
    assert tools["get_current_time"].is_read_only  # the server's readOnlyHint
    assert {n: t.parameters_schema for n, t in tools.items()} == await bare_sdk_listing(time_server())


async def test_the_everything_servers_tools_keep_their_schemas(everything_tools: McpToolset) -> None:
    tools = {t.name: t for t in await everything_tools.tools()}
    assert {"echo", "get-sum", "get-tiny-image", "trigger-long-running-operation"} <= set(tools)
    assert tools["get-sum"].parameters_schema["required"] == ["a", "b"]
    assert {n: t.parameters_schema for n, t in tools.items()} == await bare_sdk_listing(everything_server())


async def test_our_servers_tools_have_the_schemas_providers_get(our_tools: McpToolset) -> None:
    import served_tools

    tools = {t.name: t for t in await our_tools.tools()}
    assert set(tools) == {"add", "convert", "slow", "countdown", "chart", "chime", "fail"}
    for name, t in tools.items():
        assert t.declaration() == getattr(served_tools, name).declaration(), name
    assert tools["add"].is_read_only and not tools["convert"].is_read_only


@pytest.mark.parametrize(
    ("fixture", "call", "expected"),
    [
        ("time_tools", FunctionCall("get_current_time", {"timezone": "Asia/Tokyo"}), {"timezone": "Asia/Tokyo"}),
        ("everything_tools", FunctionCall("echo", {"message": "hi there"}), {"result": "Echo: hi there"}),
        ("everything_tools", FunctionCall("get-sum", {"a": 2, "b": 40}), {"result": "The sum of 2 and 40 is 42."}),
        ("our_tools", FunctionCall("add", {"a": 2, "b": 3}), {"sum": 5}),
        ("our_tools", FunctionCall("convert", {"value": 2}), {"meters": 2000.0}),
    ],
)
async def test_a_call_is_answered(
    fixture: str, call: FunctionCall, expected: dict[str, Any], request: pytest.FixtureRequest
) -> None:
    toolset: McpToolset = request.getfixturevalue(fixture)
    result = await run(toolset, call)
    [response] = responses(result)
    assert expected.items() <= response.response.items(), response.response
    assert result.text == "done"
    if call.name == "get_current_time":  # structured content, not a string of JSON
        assert response.response["datetime"].endswith("+09:00")


@pytest.mark.parametrize(
    ("fixture", "call"),
    [
        ("everything_tools", FunctionCall("get-tiny-image", {})),
        ("our_tools", FunctionCall("chart", {"title": "Q4"})),
    ],
)
async def test_an_image_result_is_stored_as_an_image_part_and_shown_inline(
    fixture: str, call: FunctionCall, request: pytest.FixtureRequest
) -> None:
    toolset: McpToolset = request.getfixturevalue(fixture)
    result = await run(toolset, call)
    [response] = responses(result)
    [part] = response.parts
    assert part.inline_data is not None and part.inline_data.mime_type == "image/png"
    assert part.inline_data.data.startswith(PNG)
    html = transcript_html(result.events, agent_name="bot")
    assert f'src="data:image/png;base64,{base64.b64encode(part.inline_data.data).decode()[:40]}' in html


async def test_an_audio_result_is_stored_as_an_audio_part(our_tools: McpToolset) -> None:
    import served_tools

    result = await run(our_tools, FunctionCall("chime", {"times": 2}))
    [response] = responses(result)
    assert response.response == {"rang": 2}
    [part] = response.parts
    assert part.inline_data is not None and part.inline_data.mime_type == "audio/wav"
    assert part.inline_data.data == served_tools.wav()


async def test_embedded_resources_and_links_become_text_and_parts(everything_tools: McpToolset) -> None:
    text = await everything_tools.call_tool("get-resource-reference", {"resourceType": "Text", "resourceId": 1})
    [resource] = text.response["resources"]
    assert resource["uri"] == "demo://resource/dynamic/text/1" and "Resource 1" in resource["text"]
    blob = await everything_tools.call_tool("get-resource-reference", {"resourceType": "Blob", "resourceId": 2})
    [part] = blob.parts
    assert part.inline_data is not None and b"Resource 2" in part.inline_data.data
    links = await everything_tools.call_tool("get-resource-links", {"count": 2})
    assert [r["uri"] for r in links.response["resources"]] == [
        "demo://resource/dynamic/blob/1",
        "demo://resource/dynamic/text/2",
    ]


@pytest.mark.parametrize(
    ("fixture", "call", "says"),
    [
        ("time_tools", FunctionCall("get_current_time", {"timezone": "Mars/Olympus_Mons"}), "Invalid timezone"),
        (
            "everything_tools",
            FunctionCall("gzip-file-as-resource", {"name": "a.gz", "data": "http://127.0.0.1:9/x"}),
            "fetch failed",
        ),
        ("our_tools", FunctionCall("fail", {"reason": "the disk is full"}), "RuntimeError: the disk is full"),
    ],
)
async def test_an_error_result_reaches_the_model_as_error(
    fixture: str, call: FunctionCall, says: str, request: pytest.FixtureRequest
) -> None:
    toolset: McpToolset = request.getfixturevalue(fixture)
    result = await run(toolset, call)
    [response] = responses(result)
    assert says in response.response["error"] and response.response["code"] == "mcp_tool_error"
    [outcome] = [o for e in result.events for o in e.tool_outcomes]
    assert not outcome.success and result.text == "done"  # the run went on


async def test_arguments_are_checked_against_the_servers_schema_before_the_call(time_tools: McpToolset) -> None:
    result = await run(time_tools, FunctionCall("get_current_time", {"timezone": 3, "extra": True}))
    [response] = responses(result)
    assert response.response["code"] == "invalid_arguments"
    assert "timezone: expected string, got integer" in response.response["error"]  # our check's words, not the server's


@pytest.mark.parametrize(
    ("fixture", "call", "lines"),
    [
        (
            "everything_tools",
            FunctionCall("trigger-long-running-operation", {"duration": 0.3, "steps": 3}),
            ["1/3\n", "2/3\n", "3/3\n"],
        ),
        ("our_tools", FunctionCall("countdown", {"n": 3}), ["3 left\n", "2 left\n", "1 left\n"]),
    ],
)
async def test_progress_notifications_become_tool_progress(
    fixture: str, call: FunctionCall, lines: list[str], request: pytest.FixtureRequest
) -> None:
    toolset: McpToolset = request.getfixturevalue(fixture)
    result = await run(toolset, call)
    progress = [e.progress for e in result.events if e.progress is not None]
    assert [p.chunk for p in progress] == lines
    assert {p.tool_name for p in progress} == {call.name}
    [response] = responses(result)
    assert "error" not in response.response


# -- one connection, any loop ----------------------------------------------------------------
async def test_one_server_process_serves_every_event_loop(time_tools: McpToolset) -> None:
    await time_tools.tools()
    running = children()
    agent = LlmAgent(
        name="bot",
        model=ScriptedModel(
            [
                FunctionCall("get_current_time", {"timezone": "UTC"}),
                "a",
                FunctionCall("get_current_time", {"timezone": "UTC"}),
                "b",
            ]
        ),
        toolsets=[time_tools],
    )
    here = await agent.run_async("on the test's loop")
    inside = agent.run("on a private loop in a worker thread, as agent.run() does inside a kernel")
    elsewhere: list[Any] = []
    thread = threading.Thread(target=lambda: elsewhere.append(asyncio.run(time_tools.tools())))  # a script's loop
    thread.start()
    thread.join(30)
    for result in (here, inside):
        [response] = responses(result)
        assert response.response["timezone"] == "UTC"
    assert elsewhere and children() == running  # no other process started


# -- failures --------------------------------------------------------------------------------
@pytest.mark.parametrize("which", ["everything", "ours"])
async def test_a_server_killed_mid_call_fails_clearly_then_the_next_call_reconnects(which: str) -> None:
    server = everything_server() if which == "everything" else our_server()
    slow = (
        ("trigger-long-running-operation", {"duration": 20, "steps": 20})
        if which == "everything"
        else ("slow", {"seconds": 20})
    )
    quick = ("echo", {"message": "back"}) if which == "everything" else ("add", {"a": 1, "b": 1})
    toolset = McpToolset(server, name=which)
    progress: list[str] = []
    before = children()
    try:
        await toolset.tools()
        pid = server_pid(toolset, before)
        running = asyncio.ensure_future(toolset.call_tool(*slow, progress=progress.append))

        # Kill it only once the call is running there (a first progress step, or the tool's own line).
        def in_flight() -> bool:
            return bool(progress) or any(line.startswith("slow: waiting") for line in toolset.stderr_lines)

        await asyncio.to_thread(wait_until, in_flight, 30)
        psutil.Process(pid).kill()
        started = time.monotonic()
        with pytest.raises(AdkError) as caught:
            await asyncio.wait_for(running, 15)
        assert time.monotonic() - started < 5
        error = caught.value
        assert error.code == "mcp_server_exited" and error.is_retryable()
        assert server.label in error.message and f"the call to {slow[0]!r}" in error.message
        assert "Its last stderr lines:" in error.message
        assert ("Starting default (STDIO) server" if which == "everything" else "slow: waiting 20.0 s") in error.message
        assert toolset.status == "exited"
        again = await run(toolset, FunctionCall(*quick))  # the next run starts it again
        [answer] = responses(again)
        assert "error" not in answer.response and server_pid(toolset, before) != pid
    finally:
        close(toolset)


async def test_a_server_that_died_between_calls_is_started_again() -> None:
    toolset = McpToolset(time_server())
    before = children()
    try:
        await toolset.tools()
        pid = server_pid(toolset, before)
        psutil.Process(pid).kill()
        await asyncio.to_thread(wait_until, lambda: toolset.status == "exited")
        result = await run(toolset, FunctionCall("get_current_time", {"timezone": "UTC"}))
        [response] = responses(result)
        assert response.response["timezone"] == "UTC" and server_pid(toolset, before) != pid
    finally:
        close(toolset)


async def test_a_killed_http_server_fails_the_call_then_a_new_one_is_reached(http_process: Any) -> None:
    toolset = McpToolset(HttpServer(http_process.url), name="web")
    try:
        assert "add" in {t.name for t in await toolset.tools()}
        running = asyncio.ensure_future(run(toolset, FunctionCall("slow", {"seconds": 20})))
        await asyncio.to_thread(wait_until, lambda: any("slow: waiting" in line for line in http_process.lines), 30)
        http_process.stop()
        [response] = responses(await asyncio.wait_for(running, 15))
        assert response.response["code"] == "mcp_server_exited" and http_process.url in response.response["error"]
        with pytest.raises(AdkError) as refused:  # the next run cannot even list the tools: it says so
            await run(toolset, FunctionCall("add", {"a": 1, "b": 1}))
        assert refused.value.code == "mcp_connect_failed" and "Is it running?" in refused.value.message
    finally:
        close(toolset)


async def test_a_call_past_its_timeout_fails_and_the_server_stays() -> None:
    toolset = McpToolset(our_server(), name="ours", timeout=0.5)
    before = children()
    try:
        await toolset.tools()
        pid = server_pid(toolset, before)
        started = time.monotonic()
        with pytest.raises(AdkError) as caught:
            await toolset.call_tool("slow", {"seconds": 10})
        assert caught.value.category == "timeout" and "within 0.5 s" in caught.value.message
        assert time.monotonic() - started < 3
        assert (await toolset.call_tool("add", {"a": 1, "b": 2})).response == {"sum": 3}
        assert server_pid(toolset, before) == pid
    finally:
        close(toolset)


async def test_a_server_that_cannot_start_says_why_with_its_stderr(capfd: pytest.CaptureFixture[str]) -> None:
    script = "import sys; print('config error: MISSING_SETTING is not set', file=sys.stderr); sys.exit(3)"
    toolset = McpToolset(StdioServer(sys.executable, ["-c", script]), name="broken")
    with pytest.raises(AdkError) as caught:
        await toolset.tools()
    error = caught.value
    assert error.code == "mcp_server_exited" and "exited before it finished starting" in error.message
    assert "config error: MISSING_SETTING is not set" in error.message and sys.executable in error.message
    assert toolset.status == "failed" and toolset.stderr_lines == ["config error: MISSING_SETTING is not set"]
    assert "MISSING_SETTING" not in capfd.readouterr().err  # never written to our fd 2


async def test_a_missing_command_is_named() -> None:
    toolset = McpToolset(StdioServer("mcp-server-that-does-not-exist"))
    with pytest.raises(AdkError) as caught:
        await toolset.tools()
    assert caught.value.category == "not_found" and "'mcp-server-that-does-not-exist'" in caught.value.message
    assert toolset.name == "mcp-server-that-does-not-exist"


async def test_secrets_in_env_never_show(capfd: pytest.CaptureFixture[str]) -> None:
    secret = "sk-live-0123456789abcdef"
    script = "import os, sys; print('using token', os.environ['API_TOKEN'], file=sys.stderr); sys.exit(1)"
    server = StdioServer(sys.executable, ["-c", script], env={"API_TOKEN": secret})
    toolset = McpToolset(server, name="leaky")
    with pytest.raises(AdkError) as caught:
        await toolset.tools()
    shown = [repr(server), repr(toolset), server.label, str(caught.value), repr(caught.value), *toolset.stderr_lines]
    assert not [s for s in shown if secret in s]
    assert "using token ***" in toolset.stderr_lines and "API_TOKEN" in repr(server)
    assert secret not in capfd.readouterr().err


async def test_env_reaches_the_server(everything_tools: McpToolset) -> None:
    toolset = McpToolset(StdioServer(everything_tools.server.command, ["stdio"], env={"ADK_SEEN": "by-the-server"}))
    try:
        shown = (await toolset.call_tool("get-env", {})).response["result"]
        assert '"ADK_SEEN": "***"' in shown  # it got there; what the server echoes of it is hidden
    finally:
        close(toolset)


# -- filters and lifetime --------------------------------------------------------------------
async def test_tool_filter_keeps_the_named_tools_and_names_unknown_ones(time_tools: McpToolset) -> None:
    only = time_tools.subset(["get_current_time"])
    assert [t.name for t in await only.tools()] == ["get_current_time"]
    by_predicate = McpToolset(time_tools.server, tool_filter=lambda t: t.name.startswith("convert"))
    by_predicate._link = time_tools._link  # the same connection, so no second server
    assert [t.name for t in await by_predicate.tools()] == ["convert_time"]
    wrong = time_tools.subset(["get_time"])
    with pytest.raises(AdkError, match=r"has no tool 'get_time' \(its tools: get_current_time, convert_time\)"):
        await wrong.tools()


@pytest.mark.parametrize("server", [time_server, everything_server, our_server])
def test_close_leaves_no_child_process_and_the_toolset_can_reconnect(server: Any) -> None:
    from adk_notebook.mcp import _loop

    before = children()
    toolset = McpToolset(server())
    _loop.run_blocking(toolset.tools(), timeout=60)
    started = children() - before
    assert started and server_pid(toolset, before) in started
    close(toolset)
    assert toolset.status == "closed"
    assert not (children() & started), "a server process outlived close()"
    assert _loop.run_blocking(toolset.tools(), timeout=60)  # used again: started again
    close(toolset)
    assert children() <= before


def test_the_interpreter_exit_stops_servers_a_script_never_closed() -> None:
    server = stubborn_server()
    code = (
        "import asyncio, psutil, sys; from adk_notebook.mcp import McpToolset, StdioServer\n"
        f"t = McpToolset(StdioServer({server.command!r}, {list(server.args)!r}))\n"
        "asyncio.run(t.tools())\n"
        "print(*[p.pid for p in psutil.Process().children(recursive=True)])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    pids = [int(p) for p in done.stdout.split()]
    assert len(pids) >= 2  # the shell and the server under it
    wait_until(lambda: not any(_alive(p) for p in pids), timeout=10)
    assert "cancel scope" not in done.stderr and "Traceback" not in done.stderr


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


async def test_a_cancelled_call_stops_there_and_the_session_goes_on(our_tools: McpToolset) -> None:
    """What the Stop button or an interrupt does to a run waiting on an MCP call."""
    await our_tools.tools()
    running = children()
    waiting = asyncio.ensure_future(our_tools.call_tool("slow", {"seconds": 30}))
    await asyncio.sleep(0.5)
    started = time.monotonic()
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert time.monotonic() - started < 1
    assert (await our_tools.call_tool("add", {"a": 2, "b": 2})).response == {"sum": 4}
    assert children() == running and our_tools.status == "connected"  # the same server, still up


async def test_a_wrong_url_says_what_to_check(http_served: Any) -> None:
    toolset = McpToolset(
        HttpServer(http_served.url.replace("/mcp", "/api"), headers={"Authorization": "Bearer t0ps3cr3t"})
    )
    with pytest.raises(AdkError) as caught:
        await toolset.tools()
    assert "refused the MCP handshake: Not Found" in caught.value.message and "/mcp" in caught.value.message
    assert "t0ps3cr3t" not in str(caught.value) + repr(toolset)
    async with McpToolset(HttpServer(http_served.url)) as right:
        assert [t.name for t in await right.tools()][:1] == ["add"]
    assert right.status == "closed"
