"""OpenAIModel against the real llama.cpp OpenAI-compatible server (`python -m llama_cpp.server`).

The server runs the embedded SmolLM2-135M-Instruct GGUF with ``--chat_format
chatml-function-calling``. What that server does with tools (llama-cpp-python 0.3.x):

- without ``tool_choice`` it leaves the tools out of the prompt and answers in text;
- with ``tool_choice="auto"`` it refuses to stream ("Automatic streaming tool choice is not
  supported") and sends an empty 200 stream;
- with ``tool_choice`` naming a function it streams a call whose arguments follow the schema
  (grammar), so they always parse.

So the agent here asks for the tool with `GenerateContentConfig.tool_choice`, set by a
before-model callback while the user's question is the latest message. The run then goes through the
full agent loop: call, tool, answer. The server's template renders no ``tool`` messages, so
the answer does not see the tool result: we check that the loop finishes with text, not what
the text says.
"""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import sys
import time
from typing import Any

import pytest

from adk_notebook import (
    Content,
    FunctionCall,
    FunctionResponse,
    GenerateContentConfig,
    LlmAgent,
    LlmRequest,
    Part,
    tool,
)
from adk_notebook.models.http import RetryPolicy
from adk_notebook.models.openai import OpenAIModel

SERVER_MODULES = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings")
MISSING = [m for m in SERVER_MODULES if importlib.util.find_spec(m) is None]
pytestmark = pytest.mark.skipif(
    bool(MISSING),
    reason=f'the llama.cpp server needs {", ".join(MISSING)}: pip install "adk-notebook[local]" "llama-cpp-python[server]"',
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def server_url(tmp_path_factory: pytest.TempPathFactory):
    import httpx

    from adk_notebook.models.local import embedded_model_path

    port = free_port()
    log_path = tmp_path_factory.mktemp("llama_server") / "server.log"
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(embedded_model_path()),
        "--model_alias",
        "smollm2",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--chat_format",
        "chatml-function-calling",
        "--n_ctx",
        "2048",
        "--verbose",
        "False",
    ]
    with open(log_path, "wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                pytest.fail(f"llama_cpp.server exited with {process.returncode}:\n{log_path.read_text()[-2000:]}")
            try:
                if httpx.get(f"{url}/models", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama_cpp.server was not ready after 60 s:\n{log_path.read_text()[-2000:]}")
            time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def call_weather_first(ctx: Any, request: LlmRequest) -> None:
    """chatml-function-calling calls a tool only when tool_choice names one: ask for it while the
    user's question is the latest message, then let the model answer."""
    request.config.tool_choice = "get_weather" if request.contents[-1].role == "user" else None


async def test_streams_text_from_the_server(server_url: str) -> None:
    model = OpenAIModel("smollm2", base_url=server_url, provider_name="llama.cpp")
    agent = LlmAgent(
        name="server_bot",
        model=model,
        instruction="You are a helpful assistant.",
        generate_content_config=GenerateContentConfig(max_output_tokens=32, temperature=0.2),
    )
    try:
        result = await agent.run_async("Tell me a joke.")
    finally:
        await model.aclose()
    partial = [e for e in result.events if e.partial]
    assert len(partial) >= 2, "text should arrive in chunks"
    assert result.text.strip() and "".join(e.text for e in partial) == result.text
    # llama_cpp.server ignores stream_options.include_usage: a streamed answer carries no usage.


async def test_tool_call_through_the_agent_loop(server_url: str) -> None:
    seen: list[str] = []

    @tool
    def get_weather(city: str) -> dict:
        """Get the current weather for a city.

        Args:
            city: The city to look up.
        """
        seen.append(city)
        return {"city": city, "condition": "sunny", "temperature_c": 22}

    model = OpenAIModel("smollm2", base_url=server_url, provider_name="llama.cpp")
    agent = LlmAgent(
        name="weather_bot",
        model=model,
        tools=[get_weather],
        max_iterations=4,
        before_model_callback=call_weather_first,
        instruction="You are a helpful assistant. Use get_weather for weather questions.",
        generate_content_config=GenerateContentConfig(max_output_tokens=48, temperature=0.2),
    )
    try:
        result = await agent.run_async("Call get_weather for Tokyo: what's the weather in Tokyo?")
    finally:
        await model.aclose()
    calls = [c for e in result.events for c in e.function_calls()]
    assert [c.name for c in calls] == ["get_weather"]
    assert isinstance(calls[0].args.get("city"), str) and calls[0].args["city"].strip()
    assert calls[0].id and calls[0].id.startswith("adk-")  # the agent's own id, which the server then accepted
    assert seen == [calls[0].args["city"]]
    responses = [r for e in result.events for r in e.function_responses()]
    assert responses[0].response["condition"] == "sunny"
    final = result.events[-1]
    assert final.is_final_response() and not final.function_calls() and not final.partial
    assert result.text.strip()


async def test_server_accepts_a_call_only_assistant_message(server_url: str) -> None:
    model = OpenAIModel("smollm2", base_url=server_url, provider_name="llama.cpp", retry=RetryPolicy(max_retries=0))
    request = LlmRequest(
        "smollm2",
        [
            Content.user("Weather in Tokyo?"),
            Content("model", [Part(function_call=FunctionCall("get_weather", {"city": "Tokyo"}, "call_1"))]),
            Content(
                "tool", [Part(function_response=FunctionResponse("get_weather", {"condition": "sunny"}, "call_1"))]
            ),
        ],
        config=GenerateContentConfig(max_output_tokens=4),
    )
    try:
        responses = [r async for r in model.generate_content(request)]
    finally:
        await model.aclose()
    assert responses[-1].content is not None
