"""The magics in a real IPython shell: each option, each mistake as one line, redefinition.

Cells run through `shell.run_cell`, so IPython's own parsing, input transformers, top-level
await and error display are all in the loop. The live widget is replaced by `FakeView` (the
same members as `RunView`), so these tests see exactly what a run hands to its view.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any

import pytest
from IPython.core.error import UsageError
from IPython.testing import globalipapp

import adk_notebook
from adk_notebook import FunctionCall, LlmAgent, Runner, ScriptedModel
from adk_notebook.notebook import get_workspace, kernel
from adk_notebook.notebook.magics import split_chat_line
from adk_notebook.notebook.workspace import Workspace
from adk_notebook.tools.base import Tool

WEATHER_TOOL = '''%%tool --read-only
def get_weather(city: str) -> dict:
    """Get the current weather for a city.

    Args:
        city: The city to look up.
    """
    return {"city": city, "condition": "sunny"}
'''


class FakeView:
    """Stands in for RunView: records what the run hands it; can press Stop on a tool call."""

    made: list[FakeView] = []

    def __init__(
        self,
        *,
        agent_name: str,
        prompt: str,
        session_id: str | None = None,
        model: str | None = None,
        notice: str | None = None,
    ) -> None:
        self.agent_name, self.prompt, self.session_id = agent_name, prompt, session_id
        self.model, self.notice = model, notice
        self.events: list[Any] = []
        self.threads: set[str] = set()
        self.status = "new"
        self.finished: dict[str, Any] | None = None
        self.stop_callbacks: list[Any] = []
        self.stop_on_tool_call = False
        FakeView.made.append(self)

    def show(self) -> None:
        self.status = "running"

    def handle(self, event: Any) -> None:
        self.threads.add(threading.current_thread().name)
        self.events.append(event)
        if self.stop_on_tool_call and event.function_calls() and not event.partial:
            for callback in self.stop_callbacks:
                callback()

    def poll(self) -> None:
        """Nothing is buffered here."""

    def finish(self, *, result: Any = None, error: BaseException | None = None, cancelled: bool = False) -> None:
        self.finished = {"result": result, "error": error, "cancelled": cancelled}
        self.status = "cancelled" if cancelled else "error" if error is not None else "done"

    def on_stop(self, callback: Any) -> None:
        self.stop_callbacks.append(callback)


@pytest.fixture(scope="module")
def ip() -> Any:
    shell = globalipapp.start_ipython() or globalipapp.get_ipython()  # one global shell, whichever module starts it
    shell.run_cell("%load_ext adk_notebook")
    return shell


@pytest.fixture()
def shell(ip: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The shell with a fresh workspace and the fake view; the namespace is cleaned after."""
    ws = get_workspace(ip)
    ws.reset()
    ws.view_factory = FakeView
    FakeView.made.clear()
    for key in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    before = set(ip.user_ns)
    yield ip
    for name in set(ip.user_ns) - before:
        if not name.startswith("_"):
            ip.user_ns.pop(name, None)


def run(shell: Any, cell: str) -> Any:
    """Run a cell; fail the test if it failed."""
    result = shell.run_cell(cell)
    assert result.success, f"cell failed: {result.error_before_exec or result.error_in_exec!r}"
    return result.result


def fails(shell: Any, cell: str, capsys: pytest.CaptureFixture[str]) -> str:
    """Run a cell that must fail; return its one line of output (asserting there is one)."""
    capsys.readouterr()
    result = shell.run_cell(cell)
    assert not result.success
    out = capsys.readouterr()
    lines = [line for line in (out.out + out.err).splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one line, got: {lines}"
    return lines[0]


def define_weather_bot(shell: Any, script: list[Any] | None = None, options: str = "") -> ScriptedModel:
    run(shell, WEATHER_TOOL)
    model = ScriptedModel(script or [FunctionCall("get_weather", {"city": "Tokyo"}), "It is sunny in Tokyo."])
    shell.user_ns["scripted"] = model
    run(
        shell,
        f"%%agent weather_bot --model scripted --tools get_weather {options}\nYou help {{user_name}} with the weather.",
    )
    return model


# -- loading -----------------------------------------------------------------------------------
def test_the_extension_registers_the_magics(ip: Any) -> None:
    magics = ip.magics_manager.magics
    assert {"tool", "agent", "chat"} <= set(magics["cell"])
    assert {"chat", "adk"} <= set(magics["line"])
    assert callable(adk_notebook.load_ipython_extension)
    assert kernel.CHAT_FUNCTION in ip.user_ns


def test_import_stays_free_of_ipython_and_widgets() -> None:
    code = (
        "import sys, adk_notebook; print(sorted(m for m in ('IPython', 'ipywidgets', 'anywidget') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_unload_and_load_again(ip: Any) -> None:
    ip.run_cell("%unload_ext adk_notebook")
    try:
        assert "tool" not in ip.magics_manager.magics["cell"]
        assert kernel.CHAT_FUNCTION not in ip.user_ns
        assert "await" not in ip.transform_cell("%%chat bot\nhi")
    finally:
        ip.run_cell("%load_ext adk_notebook")
    assert "tool" in ip.magics_manager.magics["cell"]


# -- %%tool ------------------------------------------------------------------------------------
def test_tool_registers_what_the_cell_defines(shell: Any) -> None:
    shell.run_cell("from math import sqrt")
    shown = run(
        shell,
        WEATHER_TOOL.replace("%%tool --read-only", "%%tool --read-only --concurrency-safe")
        + "\ndef _helper():\n    return 1\n\nsquare = lambda x: x * x\n",
    )
    get_weather = shell.user_ns["get_weather"]
    assert isinstance(get_weather, Tool) and get_weather.is_read_only and get_weather.is_concurrency_safe
    assert get_weather("Lima") == {"city": "Lima", "condition": "sunny"}, "still callable"
    assert not isinstance(shell.user_ns["_helper"], Tool) and not isinstance(shell.user_ns["square"], Tool)
    assert not isinstance(shell.user_ns["sqrt"], Tool), "an imported function is not the cell's"
    assert list(get_workspace(shell).tools) == ["get_weather"]
    bundle = shown._repr_mimebundle_()
    assert "get_weather" in bundle["text/html"] and "The city to look up." in bundle["text/html"]
    assert bundle["text/plain"].startswith("tool get_weather(city: string)  [read-only, concurrency-safe]")


def test_tool_options_long_running_and_name(shell: Any) -> None:
    run(
        shell,
        '%%tool --long-running --name start_job\nasync def begin(n: int) -> dict:\n    """Start a job."""\n    return {"n": n}\n',
    )
    t = shell.user_ns["begin"]
    assert t.name == "start_job" and t.is_long_running
    assert "start_job" in get_workspace(shell).tools
    assert "long-running operation" in t.declaration().description


def test_tool_cell_with_several_functions_and_a_decorated_one(shell: Any) -> None:
    run(shell, "from adk_notebook import tool\n")
    run(
        shell,
        '%%tool\ndef a(x: int) -> int:\n    """A."""\n    return x\n\n@tool\ndef b(y: str) -> str:\n    """B."""\n    return y\n',
    )
    assert list(get_workspace(shell).tools) == ["a", "b"]


def test_tool_html_is_escaped(shell: Any) -> None:
    shown = run(
        shell, '%%tool\ndef evil(x: str) -> str:\n    """Say <script>alert(1)</script> loudly."""\n    return x\n'
    )
    html = shown._repr_mimebundle_()["text/html"]
    assert "<script>" not in html and "&lt;script&gt;" in html


def test_tool_mistakes_are_one_line(shell: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert "defines no function" in fails(shell, "%%tool\nx = 1\n", capsys)
    assert "--name needs a cell that defines one function" in fails(
        shell,
        '%%tool --name t\ndef a() -> int:\n    """A."""\n    return 1\n\ndef b() -> int:\n    """B."""\n    return 2\n',
        capsys,
    )
    assert "unrecognized arguments: --fast" in fails(
        shell, '%%tool --fast\ndef a() -> int:\n    """A."""\n    return 1\n', capsys
    )


def test_tool_cell_that_raises_shows_its_error_and_registers_nothing(
    shell: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    result = shell.run_cell('%%tool\ndef a() -> int:\n    """A."""\n    return 1\n1 / 0\n')
    out = capsys.readouterr()
    assert not result.success
    assert "ZeroDivisionError" in out.out + out.err and "no tool was registered" in out.out + out.err
    assert "_run_body" not in out.out + out.err, "the traceback starts at the cell"
    assert get_workspace(shell).tools == {}


def test_redefining_a_tool_replaces_it_everywhere(shell: Any) -> None:
    model = define_weather_bot(shell, [FunctionCall("get_weather", {"city": "Oslo"}), "Rainy."])
    run(shell, WEATHER_TOOL.replace('"condition": "sunny"', '"condition": "rainy"'))
    agent = shell.user_ns["weather_bot"]
    assert [t.name for t in agent.tools] == ["get_weather"]
    assert agent.tools[0] is get_workspace(shell).tools["get_weather"] is shell.user_ns["get_weather"]
    run(shell, "%%chat weather_bot --state user_name=Ana\nWeather in Oslo?")
    assert model.requests[1].contents[-1].parts[0].function_response.response["condition"] == "rainy"


def test_redefining_a_tool_leaves_a_different_tool_of_the_same_name_alone(shell: Any) -> None:
    define_weather_bot(shell)
    run(
        shell,
        "from adk_notebook import FunctionTool, ScriptedModel\n"
        "by_location = FunctionTool('get_weather', 'Weather by location', lambda ctx, args: {'at': 'here'})\n"
        "scripted2 = ScriptedModel(['ok'])",
    )
    run(shell, "%%agent loc_bot --model scripted2 --tools by_location\nHelp.")
    run(shell, WEATHER_TOOL.replace("Get the current weather", "Get the weather, v2,"))
    assert shell.user_ns["loc_bot"].tools[0].description == "Weather by location"
    assert shell.user_ns["weather_bot"].tools[0].description.startswith("Get the weather, v2,")


# -- %%agent -----------------------------------------------------------------------------------
def test_agent_with_every_option(shell: Any) -> None:
    run(shell, WEATHER_TOOL)
    run(shell, "from pydantic import BaseModel\nclass Answer(BaseModel):\n    city: str\n")
    run(
        shell,
        "from adk_notebook import BasicToolset, ScriptedModel\nextra = BasicToolset('extra', [])\nscripted = ScriptedModel([])",
    )
    shown = run(
        shell,
        "%%agent planner --model scripted --tools get_weather --toolsets extra --strategy auto "
        "--max-iterations 7 --output-key answer --output-schema Answer --include-contents none "
        '--description "Plans trips"\nPlan for {user_name?}.\n',
    )
    agent = shell.user_ns["planner"]
    assert isinstance(agent, LlmAgent)
    assert agent.model is shell.user_ns["scripted"]
    assert [t.name for t in agent.tools] == ["get_weather"] and agent.toolsets == [shell.user_ns["extra"]]
    assert str(agent.tool_execution_strategy) == "auto"
    assert (agent.max_iterations, agent.output_key, agent.include_contents) == (7, "answer", "none")
    assert agent.description == "Plans trips" and agent.instruction == "Plan for {user_name?}."
    assert "planner" in shown._repr_mimebundle_()["text/plain"]


def test_agent_model_default_and_strings(shell: Any) -> None:
    run(shell, "%%agent a\nHi.")
    assert shell.user_ns["a"].model == "auto"
    run(shell, "%adk model openai:gpt-4o-mini")
    run(shell, "%%agent b\nHi.")
    assert shell.user_ns["b"].model == "openai:gpt-4o-mini"
    run(shell, "%%agent c --model gemini-2.5-flash\nHi.")
    assert shell.user_ns["c"].model == "gemini-2.5-flash"


def test_redefining_an_agent_replaces_it_and_keeps_its_sessions(shell: Any) -> None:
    model = define_weather_bot(shell, [FunctionCall("get_weather", {"city": "Tokyo"}), "Sunny.", "Still sunny."])
    run(shell, "%%chat weather_bot --state user_name=Ana\nTokyo?")
    first = shell.user_ns["weather_bot"]
    run(shell, "%%agent weather_bot --model scripted --tools get_weather\nYou are terse with {user_name}.")
    assert shell.user_ns["weather_bot"] is not first
    run(shell, "%%chat weather_bot\nAnd now?")
    last = model.requests[-1]
    assert last.system_instruction == "You are terse with Ana."
    assert len(last.contents) == 5, "the conversation went on in the same session"


def test_agent_mistakes_are_one_line(shell: Any, capsys: pytest.CaptureFixture[str]) -> None:
    run(shell, "x = 3")
    assert "Unknown tool 'nope'" in fails(shell, "%%agent a --tools nope\nHi.", capsys)
    assert "--model scripted_modle: no variable of that name" in fails(
        shell, "%%agent a --model scripted_modle\nHi.", capsys
    )
    assert "--model x: that variable holds a int" in fails(shell, "%%agent a --model x\nHi.", capsys)
    assert "invalid choice: 'fast'" in fails(shell, "%%agent a --strategy fast\nHi.", capsys)
    assert "invalid int value" in fails(shell, "%%agent a --max-iterations many\nHi.", capsys)
    assert "max_iterations must be at least 1" in fails(shell, "%%agent a --max-iterations 0\nHi.", capsys)
    assert "--output-schema x: it holds a int" in fails(shell, "%%agent a --output-schema x\nHi.", capsys)
    assert "--toolsets x: it holds a int, not a Toolset" in fails(shell, "%%agent a --toolsets x\nHi.", capsys)
    assert "must be a Python identifier" in fails(shell, "%%agent 9lives\nHi.", capsys)
    assert "required: name" in fails(shell, "%%agent\nHi.", capsys)
    assert "No closing quotation" in fails(shell, '%%agent a --description "open\nHi.', capsys)


def test_agent_help_shows_the_options(shell: Any, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    shell.run_cell("%%agent?")
    text = capsys.readouterr().out
    for option in (
        "--model",
        "--tools",
        "--toolsets",
        "--strategy",
        "--max-iterations",
        "--output-key",
        "--output-schema",
        "--include-contents",
        "--description",
        "the cell body is its instruction",
    ):
        assert option in text
    shell.run_cell("%%chat?")
    text = capsys.readouterr().out
    assert "--session" in text and "--new-session" in text and "--state" in text


# -- %%chat ------------------------------------------------------------------------------------
def test_chat_runs_on_the_shell_loop_and_returns_the_result(shell: Any) -> None:
    define_weather_bot(shell)
    assert shell.transform_cell("%%chat weather_bot\nhi").startswith("await __adk_chat__(")
    result = run(shell, "%%chat weather_bot --state user_name=Ana\nWhat's the weather in Tokyo?")
    assert result.text == "It is sunny in Tokyo."
    assert result.state["user_name"] == "Ana" and result.session_id == "s1"
    assert shell.user_ns["_"] is result
    view = FakeView.made[-1]
    assert (view.agent_name, view.prompt, view.session_id) == ("weather_bot", "What's the weather in Tokyo?", "s1")
    assert view.status == "done" and view.finished["result"] is result
    assert [e for e in view.events if e.partial], "partial events reach the view"
    assert view.threads == {threading.main_thread().name}


def test_chat_out_display_is_one_summary_line(shell: Any) -> None:
    define_weather_bot(shell)
    result = run(shell, "%%chat weather_bot --state user_name=Ana\nTokyo?")
    data, _ = shell.display_formatter.format(result)
    assert set(data) == {"text/plain"}
    events = len(result.events)
    assert (
        data["text/plain"]
        == f"<ChatResult: weather_bot, session 's1', {events} events, 1 tool call — .text .events .state .usage>"
    )
    assert "sunny" not in data["text/plain"], "the answer is shown by the widget, not again in Out[]"


def test_sessions_persist_across_cells(shell: Any) -> None:
    model = define_weather_bot(
        shell, [FunctionCall("get_weather", {"city": "Tokyo"}), "Sunny.", "You asked about Tokyo."]
    )
    run(shell, "%%chat weather_bot --state user_name=Ana\nTokyo?")
    second = run(shell, "%%chat weather_bot\nWhat did I ask?")
    assert second.session_id == "s1" and second.text == "You asked about Tokyo."
    assert [c.role for c in model.requests[-1].contents] == ["user", "model", "tool", "model", "user"]


def test_chat_session_options(shell: Any) -> None:
    model = define_weather_bot(shell, ["one", "two", "three", "four", "five"])
    assert run(shell, "%%chat weather_bot --session trip --state user_name=Ana n=3\nHi").session_id == "trip"
    assert shell.user_ns["_"].state == {"user_name": "Ana", "n": 3}
    assert run(shell, "%%chat weather_bot\nAgain").session_id == "trip", "the last session stays current"
    fresh = run(shell, "%%chat weather_bot --new-session --state user_name=Bo\nNew")
    assert fresh.session_id == "s1" and len(model.requests[-1].contents) == 1
    restarted = run(shell, "%%chat weather_bot --session trip --new-session --state user_name=Cy\nOver")
    assert restarted.session_id == "trip" and len(model.requests[-1].contents) == 1
    other = run(shell, "%%chat weather_bot --user bob --state user_name=Bob\nHi")
    assert other.session_id == "s1" and len(model.requests[-1].contents) == 1
    assert model.requests[-1].system_instruction == "You help Bob with the weather."


def test_state_on_an_existing_session_is_a_stored_change(shell: Any) -> None:
    model = define_weather_bot(shell, ["one", "two"])
    run(shell, "%%chat weather_bot --state user_name=Ana\nHi")
    result = run(shell, '%%chat weather_bot --state user_name="Ana Maria" mood=happy\nHi again')
    assert result.state == {"user_name": "Ana Maria", "mood": "happy"}
    assert model.requests[-1].system_instruction == "You help Ana Maria with the weather."


def test_chat_line_form(shell: Any) -> None:
    define_weather_bot(shell, ["one", "two", "three"])
    result = run(shell, "%chat weather_bot --state user_name=Ana What's up? Use {braces} and 'quotes'")
    assert FakeView.made[-1].prompt == "What's up? Use {braces} and 'quotes'"
    assert result.text == "one"
    run(shell, "answer = %chat weather_bot --session s1 And then?")
    assert shell.user_ns["answer"].text == "two" and FakeView.made[-1].prompt == "And then?"
    assert shell.transform_cell("%chat weather_bot hi").startswith("await __adk_chat__('weather_bot hi')")


def test_split_chat_line() -> None:
    assert split_chat_line("bot hello there") == ("bot", "hello there")
    assert split_chat_line("bot --session s2 --new-session --state a=1 --state b='x y' Hi --session x") == (
        "bot --session s2 --new-session --state a=1 --state b='x y'",
        "Hi --session x",
    )
    assert split_chat_line("bot") == ("bot", "")


def test_chat_mistakes_are_one_line(shell: Any, capsys: pytest.CaptureFixture[str]) -> None:
    define_weather_bot(shell)
    assert "Unknown agent 'nobody' (agents: weather_bot)" in fails(shell, "%%chat nobody\nHi", capsys)
    assert "the message is empty" in fails(shell, "%%chat weather_bot\n\n", capsys)
    assert "the message is empty" in fails(shell, "%chat weather_bot", capsys)
    assert "--state expects KEY=VALUE" in fails(shell, "%%chat weather_bot --state oops\nHi", capsys)
    assert "the message goes in the cell" in fails(shell, "%%chat weather_bot hello\nHi", capsys)
    assert "unrecognized arguments: --sesion" in fails(shell, "%%chat weather_bot --sesion s2\nHi", capsys)


def test_missing_state_variable_is_one_line(shell: Any, capsys: pytest.CaptureFixture[str]) -> None:
    define_weather_bot(shell)
    line = fails(shell, "%%chat weather_bot --session nostate\nHi", capsys)
    assert "uses {user_name} but the session state has no 'user_name'" in line
    assert FakeView.made[-1].status == "error"


def test_no_model_configured_is_one_line(shell: Any, capsys: pytest.CaptureFixture[str]) -> None:
    run(shell, "%%agent claude_bot --model anthropic:claude-haiku-4-5\nHi.")
    assert "ANTHROPIC_API_KEY" in fails(shell, "%%chat claude_bot\nHi", capsys)
    assert FakeView.made == [], "no widget for a run that cannot start"


def test_a_missing_optional_extra_is_one_line(
    shell: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # as if llama-cpp-python were not installed
    run(shell, "%%agent tiny --model local\nHi.")
    assert 'pip install "adk-notebook[local]"' in fails(shell, "%chat tiny Hello", capsys)


def test_stop_cancels_the_run_and_the_session_goes_on(shell: Any, capsys: pytest.CaptureFixture[str]) -> None:
    run(
        shell,
        '%%tool\nimport asyncio\nasync def slow(seconds: float) -> dict:\n    """Wait."""\n'
        '    await asyncio.sleep(seconds)\n    return {"waited": seconds}\n',
    )
    shell.user_ns["scripted"] = ScriptedModel([FunctionCall("slow", {"seconds": 30}), "Back."])
    run(shell, "%%agent sleeper --model scripted --tools slow\nWait when asked.")
    get_workspace(shell).view_factory = lambda **kw: _stopping(FakeView(**kw))
    capsys.readouterr()
    started = time.monotonic()
    assert run(shell, "%%chat sleeper\nWait 30 s.") is None
    assert time.monotonic() - started < 5
    assert capsys.readouterr().out.strip() == "Run cancelled."
    assert FakeView.made[-1].status == "cancelled"
    get_workspace(shell).view_factory = FakeView
    assert run(shell, "%%chat sleeper\nStill there?").text == "Back."


def _stopping(view: FakeView) -> FakeView:
    view.stop_on_tool_call = True
    return view


@pytest.mark.parametrize("awaited", [True, False], ids=["transformer", "thread-fallback"])
def test_sigint_cancels_the_run_in_one_line(shell: Any, capsys: pytest.CaptureFixture[str], awaited: bool) -> None:
    run(
        shell,
        '%%tool\nimport asyncio\nasync def slow(seconds: float) -> dict:\n    """Wait."""\n'
        '    await asyncio.sleep(seconds)\n    return {"waited": seconds}\n',
    )
    shell.user_ns["scripted"] = ScriptedModel([FunctionCall("slow", {"seconds": 30}), "Back."])
    run(shell, "%%agent sleeper --model scripted --tools slow\nWait when asked.")
    handler = signal.getsignal(signal.SIGINT)
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    cell = (
        "%%chat sleeper\nWait 30 s."
        if awaited
        else _in_a_function("get_ipython().run_cell_magic('chat', 'sleeper', 'Wait 30 s.')")
    )
    capsys.readouterr()
    started = time.monotonic()
    timer.start()
    result = shell.run_cell(cell)
    elapsed = time.monotonic() - started
    timer.join()
    out = capsys.readouterr()
    assert elapsed < 5
    assert not result.success and isinstance(result.error_in_exec, kernel.RunCancelled)
    assert [line for line in (out.out + out.err).splitlines() if line.strip()] == ["Run cancelled."]
    assert signal.getsignal(signal.SIGINT) is handler, "the previous handler is back"
    assert FakeView.made[-1].status == "cancelled"
    assert run(shell, "%%chat sleeper\nStill there?").text == "Back."
    roles = [c.role for c in shell.user_ns["scripted"].requests[-1].contents]
    assert roles == ["user", "model", "tool", "user"], "the cancelled call got its response: the session is consistent"


def test_new_session_refuses_before_deleting_a_session_a_run_holds(
    shell: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--new-session --session s1` while another run is inside a tool on s1: one line, and s1 is
    left as it is (the running run keeps its session); once that run is over, s1 starts over."""
    run(
        shell,
        '%%tool\nimport asyncio\nasync def slow(seconds: float) -> dict:\n    """Wait."""\n'
        '    await asyncio.sleep(seconds)\n    return {"waited": seconds}\n',
    )
    shell.user_ns["scripted"] = ScriptedModel([FunctionCall("slow", {"seconds": 30}), "Fresh start."])
    run(shell, "%%agent sleeper --model scripted --tools slow\nWait when asked.")
    ws = get_workspace(shell)
    runner = Runner(app_name="sleeper", agent=shell.user_ns["sleeper"], session_service=ws.session_service)
    asyncio.run(ws.session_service.create(app_name="sleeper", user_id="user", session_id="s1"))
    background = threading.Thread(
        target=lambda: _quietly(lambda: runner.run_sync(user_id="user", session_id="s1", content="Wait 30 s."))
    )
    background.start()
    deadline = time.monotonic() + 10
    while len(shell.user_ns["scripted"].requests) < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.1)  # the run is inside its tool
    try:
        line = fails(shell, "%%chat sleeper --session s1 --new-session\nStart over.", capsys)
        assert "run in progress" in line and "s1" in line, line
        kept = asyncio.run(ws.session_service.get(app_name="sleeper", user_id="user", session_id="s1"))
        assert kept is not None and [e.text for e in kept.events if e.author == "user"] == ["Wait 30 s."]
    finally:
        assert runner.cancel(user_id="user", session_id="s1")
        background.join(10)
    assert run(shell, "%%chat sleeper --session s1 --new-session\nStart over.").text == "Fresh start."
    fresh = asyncio.run(ws.session_service.get(app_name="sleeper", user_id="user", session_id="s1"))
    assert [e.text for e in fresh.events if e.author == "user"] == ["Start over."]


def _quietly(fn: Any) -> None:
    try:
        fn()
    except (asyncio.CancelledError, KeyboardInterrupt):
        pass


def _in_a_function(call: str) -> str:
    """A cell calling the magic from a function, where no await can go: the worker-thread path."""
    return f"def _chat():\n    return {call}\n_chat()"


def test_thread_fallback_hands_events_to_the_calling_thread(shell: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    define_weather_bot(shell)
    fallback = kernel.run_chat_blocking
    used: list[bool] = []
    monkeypatch.setattr(kernel, "run_chat_blocking", lambda *args: used.append(True) or fallback(*args))
    result = run(
        shell, _in_a_function("get_ipython().run_cell_magic('chat', 'weather_bot --state user_name=Ana', 'Tokyo?')")
    )
    assert used, "the cell did not take the worker-thread path"
    assert result.text == "It is sunny in Tokyo."
    assert FakeView.made[-1].threads == {threading.main_thread().name}


def test_transformer_rewrites_only_where_an_await_can_go(shell: Any) -> None:
    t = shell.transform_cell
    assert t("%%chat bot --session s1\nWhat's up?\n") == "await __adk_chat__('bot --session s1', \"What's up?\\n\")\n"
    assert t("r = %chat bot hi\n") == "r = await __adk_chat__('bot hi')\n"
    assert t("for q in qs:\n    %chat bot hi\n") == "for q in qs:\n    await __adk_chat__('bot hi')\n"
    inside = t("def f():\n    %chat bot hi\n%chat bot top\n")
    assert "run_line_magic('chat', 'bot hi')" in inside and "await __adk_chat__('bot top')" in inside
    assert t('x = """\n%chat bot\n"""\n') == 'x = """\n%chat bot\n"""\n'
    assert "pinfo" in t("%%chat?") and "pinfo" in t("%chat?")
    assert t("%chat bot How are you?\n") == "await __adk_chat__('bot How are you?')\n", "not IPython's help syntax"
    assert t("def f():\n    %chat bot Why?\n") == "def f():\n    get_ipython().run_line_magic('chat', 'bot Why?')\n"
    shell.autoawait = False
    try:
        assert "await" not in t("%%chat bot\nhi\n")
    finally:
        shell.autoawait = True


def test_agents_run_in_cells(shell: Any) -> None:
    define_weather_bot(
        shell,
        [
            FunctionCall("get_weather", {"city": "Tokyo"}),
            "Sunny.",
            FunctionCall("get_weather", {"city": "Lima"}),
            "Sunny too.",
        ],
    )
    assert run(shell, "(await weather_bot.run_async('Tokyo?', state={'user_name': 'Ana'})).text") == "Sunny."
    assert run(shell, "weather_bot.run('Lima?', state={'user_name': 'Ana'}).text") == "Sunny too."


def test_chat_with_an_agent_made_in_python(shell: Any) -> None:
    run(
        shell,
        "from adk_notebook import LlmAgent, ScriptedModel\nplain = LlmAgent(name='plain', model=ScriptedModel(['Hi!']))",
    )
    assert run(shell, "%chat plain Hello").text == "Hi!"
    run(shell, "helper = LlmAgent(name='helper_bot', model=ScriptedModel(['Hello!']))")
    assert run(shell, "%chat helper_bot Hi").text == "Hello!", "by the name %adk agents lists, too"


def test_chat_text_is_the_answer_when_an_after_agent_callback_only_writes_state(shell: Any) -> None:
    run(
        shell,
        "from adk_notebook import LlmAgent, ScriptedModel\n"
        "def remember(ctx):\n    ctx.state['answered'] = True\n"
        "noted = LlmAgent(name='noted', model=ScriptedModel(['Noted.']), after_agent_callback=remember)",
    )
    result = run(shell, "%chat noted Remember this")
    assert result.text == "Noted." and result.state["answered"] is True


def test_chat_result_carries_the_output_schema_value(shell: Any) -> None:
    run(
        shell,
        "from adk_notebook import ScriptedModel\nfrom pydantic import BaseModel\nclass Out(BaseModel):\n    x: int\ntyped_model = ScriptedModel(['{\"x\": 1}'])",
    )
    run(shell, "%%agent typed --model typed_model --output-schema Out\nAnswer in JSON.")
    result = run(shell, "%%chat typed\ngo")
    assert result.output == shell.user_ns["Out"](x=1)


# -- %adk --------------------------------------------------------------------------------------
def test_adk_tables(shell: Any) -> None:
    define_weather_bot(shell, options='--description "<b>Weather</b> & more"')
    run(shell, "%%chat weather_bot --state user_name=Ana\nTokyo?")
    tools = run(shell, "%adk tools")._repr_mimebundle_()
    assert (
        "get_weather" in tools["text/plain"] and "read-only" in tools["text/plain"] and "<table" in tools["text/html"]
    )
    agents = run(shell, "%adk agents")._repr_mimebundle_()
    assert (
        "&lt;b&gt;Weather&lt;/b&gt; &amp; more" in agents["text/html"] and "<b>Weather</b>" not in agents["text/html"]
    )
    assert "weather_bot" in agents["text/plain"] and "ScriptedModel('scripted')" in agents["text/plain"]
    sessions = run(shell, "%adk sessions")._repr_mimebundle_()["text/plain"].splitlines()
    assert sessions[2].split() == ["weather_bot", "user", "s1", "4", "user_name", "yes"]
    state = run(shell, "%adk state weather_bot")._repr_mimebundle_()["text/plain"]
    assert "user_name  'Ana'  session" in state
    schema = run(shell, "%adk schema get_weather")._repr_mimebundle_()["text/plain"]
    assert '"description": "The city to look up."' in schema and "read-only" in schema
    overview = run(shell, "%adk")._repr_mimebundle_()["text/plain"]
    assert "Tools (1)" in overview and "Agents (1)" in overview


def test_adk_request_shows_what_the_model_receives(shell: Any) -> None:
    define_weather_bot(shell)
    run(shell, "%%chat weather_bot --state user_name=Ana\nTokyo?")
    shown = run(shell, '%adk request weather_bot --message "And in Lima?"')._repr_mimebundle_()
    text = shown["text/plain"]
    ours = text.split("OpenAI Chat Completions")[0]
    assert "You help Ana with the weather." in ours, "the instruction after templating"
    assert '"text": "And in Lima?"' in ours and ours.count('"role"') == 5
    assert '"name": "get_weather"' in text
    for provider in ("OpenAI Chat Completions", "Gemini", "Anthropic Messages"):
        assert provider in text, f"{provider} wire format"
    assert '"functionDeclarations"' in text and '"input_schema"' in text
    only = run(shell, "%adk request weather_bot --provider openai")._repr_mimebundle_()["text/plain"]
    assert "OpenAI" in only and "Gemini" not in only and "<your next message>" in only


def test_adk_model_and_reset(shell: Any) -> None:
    define_weather_bot(shell)
    assert "auto" in run(shell, "%adk model")._repr_mimebundle_()["text/plain"]
    run(shell, "%adk model scripted")
    assert get_workspace(shell).default_model is shell.user_ns["scripted"]
    assert "forgot 1 tools, 1 agents" in run(shell, "%adk reset")._repr_mimebundle_()["text/plain"]
    ws = get_workspace(shell)
    assert ws.tools == {} and ws.agents == {} and ws.default_model == "auto"


def test_adk_sessions_use_a_sqlite_service(shell: Any, tmp_path: Any) -> None:
    define_weather_bot(shell, ["one", "two"])
    shell.user_ns["db_path"] = str(tmp_path / "chats.db")
    run(shell, "from adk_notebook import SqliteSessionService\nstore = SqliteSessionService(db_path)")
    run(shell, "%adk sessions --use store")
    run(shell, "%%chat weather_bot --state user_name=Ana\nHi")
    assert "in SqliteSessionService" in run(shell, "%adk sessions")._repr_mimebundle_()["text/plain"]
    shell.user_ns["store"].close()


def test_adk_mistakes_are_one_line(shell: Any, capsys: pytest.CaptureFixture[str]) -> None:
    define_weather_bot(shell)
    assert "invalid choice: 'tool'" in fails(shell, "%adk tool", capsys)
    assert "%adk state needs a AGENT" in fails(shell, "%adk state", capsys)
    assert "no session 's1' for user 'user' yet" in fails(shell, "%adk state weather_bot", capsys)
    assert "Unknown agent 'ghost'" in fails(shell, "%adk request ghost", capsys)
    assert "Unknown tool 'ghost'" in fails(shell, "%adk schema ghost", capsys)
    assert "not a session service" in fails(shell, "%adk sessions --use scripted", capsys)
    assert "uses {user_name} but the session state has no 'user_name'" in fails(
        shell, "%adk request weather_bot", capsys
    )


def test_workspace_without_a_shell() -> None:
    namespace: dict[str, Any] = {}
    ws = Workspace(namespace=namespace)

    def shout(text: str) -> str:
        """Shout."""
        return text.upper()

    [t] = ws.define_tools({"shout": shout})
    assert namespace["shout"] is t and t("hi") == "HI"
    agent = ws.define_agent("echo", "Echo.", model="auto", tools=["shout"])
    assert namespace["echo"] is agent and agent.tools == [t]
    with pytest.raises(UsageError, match="Unknown agent"):
        ws.plan_chat("nope", "hi")
    namespace["m"] = ScriptedModel(["ok"])
    ws.define_agent("echo", "Echo.", model="m")
    plan = ws.plan_chat("echo", "hi", state=["a=1"])
    assert (plan.session_id, plan.user_id, plan.state) == ("s1", "user", {"a": 1})
    result = asyncio.run(kernel.drive(plan, lambda event: None))
    assert result.text == "ok" and result.state == {"a": 1}
