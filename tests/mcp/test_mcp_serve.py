"""`python -m adk_notebook mcp serve`, checked with the official SDK's own client over stdio and HTTP."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import pytest
import served_tools
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp_helpers import SERVED, HttpProcess

SERVE = [sys.executable, "-m", "adk_notebook", "mcp", "serve"]


@asynccontextmanager
async def stdio_session(*target: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=SERVE[0], args=[*SERVE[1:], *target])
    with open(os.devnull, "w") as quiet:
        async with stdio_client(params, errlog=quiet) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


@asynccontextmanager
async def http_session(url: str) -> AsyncIterator[ClientSession]:
    async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


Connect = Callable[[], AbstractAsyncContextManager[ClientSession]]


@pytest.fixture(params=["stdio", "http"])
def connect(request: pytest.FixtureRequest, http_served: HttpProcess) -> Connect:
    """Opens a session inside the test itself: the SDK's contexts must be entered and exited by
    one task, and an async fixture's setup and teardown run in different ones."""
    return lambda: stdio_session(str(SERVED)) if request.param == "stdio" else http_session(http_served.url)


async def test_tools_are_listed_with_the_schemas_providers_get(connect: Connect) -> None:
    async with connect() as session:
        listed = {t.name: t for t in (await session.list_tools()).tools}
        assert list(listed) == ["add", "convert", "slow", "countdown", "chart", "chime", "fail"]
        for name, tool in listed.items():
            declared = getattr(served_tools, name).declaration()
            assert tool.input_schema == declared.parameters, name
            assert tool.description == declared.description
        assert listed["add"].annotations is not None and listed["add"].annotations.read_only_hint
        assert listed["convert"].input_schema["properties"]["unit"] == {
            "default": "km",
            "description": "Its unit.",
            "enum": ["km", "mi"],
            "type": "string",
        }


async def test_a_call_is_answered_with_text_and_structured_content(connect: Connect) -> None:
    async with connect() as session:
        result = await session.call_tool("add", {"a": 2, "b": 40})  # the tool prints: the protocol must not mind
        assert not result.is_error
        assert result.structured_content == {"sum": 42}
        assert [(c.type, getattr(c, "text", None)) for c in result.content] == [("text", '{"sum": 42}')]


async def test_progress_goes_out_as_mcp_progress_notifications(connect: Connect) -> None:
    async with connect() as session:
        seen: list[tuple[float, float | None, str | None]] = []

        async def progress(done: float, total: float | None, message: str | None) -> None:
            seen.append((done, total, message))

        result = await session.call_tool("countdown", {"n": 3}, progress_callback=progress)
        assert result.structured_content == {"done": True}
        assert seen == [(1, None, "3 left"), (2, None, "2 left"), (3, None, "1 left")]


async def test_an_image_result_is_mcp_image_content(connect: Connect) -> None:
    async with connect() as session:
        result = await session.call_tool("chart", {"title": "Q4"})
        text, image = result.content
        assert text.type == "text" and result.structured_content == {"title": "Q4"}
        assert image.type == "image" and image.mime_type == "image/png"
        assert base64.b64decode(image.data) == served_tools.png()


async def test_an_audio_result_is_mcp_audio_content(connect: Connect) -> None:
    async with connect() as session:
        result = await session.call_tool("chime", {"times": 2})
        text, audio = result.content
        assert text.type == "text" and result.structured_content == {"rang": 2}
        assert audio.type == "audio" and audio.mime_type == "audio/wav"
        assert base64.b64decode(audio.data) == served_tools.wav()


@pytest.mark.parametrize(
    ("call", "says"),
    [
        (("fail", {"reason": "out of paper"}), "Tool 'fail' failed: RuntimeError: out of paper"),
        (("add", {"a": "two", "b": 1}), "Invalid arguments for tool 'add'"),
        (("nope", {}), "Unknown tool 'nope'. Available tools: add, chart, chime, convert, countdown, fail, slow."),
    ],
)
async def test_failures_are_error_results(connect: Connect, call: tuple[str, dict[str, Any]], says: str) -> None:
    async with connect() as session:
        result = await session.call_tool(*call)
    assert result.is_error
    [content] = result.content
    assert says in content.text


async def test_a_module_attribute_can_be_served() -> None:
    async with stdio_session("served_tools:chart") as live:  # found on the path of the working folder
        assert [t.name for t in (await live.list_tools()).tools] == ["chart"]


def test_a_target_without_tools_is_a_clear_error(tmp_path: Any) -> None:
    empty = tmp_path / "empty.py"
    empty.write_text("x = 1\n")
    for target, says in [
        (str(empty), "defines no tools"),
        (str(tmp_path / "missing.py"), "there is no file"),
        ("no_such_module:tools", "cannot import 'no_such_module'"),
    ]:
        done = subprocess.run(
            [*SERVE, target], check=False, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL
        )
        assert done.returncode == 2 and says in done.stderr and "Traceback" not in done.stderr, done.stderr


@pytest.fixture(autouse=True)
def _served_tools_on_the_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """`module:attr` targets import from the working folder, as `python -m` does."""
    monkeypatch.chdir(SERVED.parent)
