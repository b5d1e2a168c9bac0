"""The notebooks, executed by a real Jupyter kernel, checked on what they print and show."""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import nbformat
import pytest
from loopback import LoopbackServer, Reply, sse
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
WIDGET = "application/vnd.jupyter.widget-view+json"
API_KEYS = ("GOOGLE_API_KEY", "GEMINI_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL")

pytestmark = pytest.mark.notebook


def execute(name: str, env: dict[str, str] | None = None) -> nbformat.NotebookNode:
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    client = NotebookClient(nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}})
    client.execute(env=env) if env is not None else client.execute()
    return nb


def stream_text(cell: nbformat.NotebookNode) -> str:
    return "".join(o.get("text", "") for o in cell.get("outputs", []) if o.output_type == "stream")


def results(cell: nbformat.NotebookNode) -> str:
    return "".join(o.data.get("text/plain", "") for o in cell.get("outputs", []) if o.output_type == "execute_result")


def run_views(code: list[nbformat.NotebookNode]) -> list[dict]:
    """Each %%chat run's display as saved (the live widget becomes its transcripts at the end)."""
    return [
        o.data
        for c in code
        if c.source.startswith("%%chat")
        for o in c.outputs
        if o.output_type == "display_data" and ("text/html" in o.data or WIDGET in o.data)
    ]


@contextmanager
def auto_model_env() -> Iterator[dict[str, str]]:
    """The kernel's environment for `--model auto`, offline either way.

    No API keys, so "auto" is the embedded local model; where llama-cpp-python is not installed,
    an OpenAI-compatible loopback server stands in (a tool call, then an answer), so the
    notebook still runs end to end.
    """
    env = {k: v for k, v in os.environ.items() if k not in API_KEYS}
    if importlib.util.find_spec("llama_cpp") is not None:
        yield env
        return
    call = {
        "choices": [
            {
                "index": 0,
                "delta": {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": json.dumps({"city": "Tokyo"})},
                        }
                    ],
                },
                "finish_reason": None,
            }
        ]
    }
    answer = {
        "choices": [
            {
                "index": 0,
                "delta": {"role": "assistant", "content": "It is sunny in Tokyo, 24 °C."},
                "finish_reason": None,
            }
        ]
    }
    script = [
        Reply(
            body=sse(call, {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}, "[DONE]"),
            headers={"Content-Type": "text/event-stream"},
        ),
        Reply(
            body=sse(answer, {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}, "[DONE]"),
            headers={"Content-Type": "text/event-stream"},
        ),
    ]
    with LoopbackServer(script) as server:
        yield {**env, "OPENAI_API_KEY": "loopback", "OPENAI_BASE_URL": server.url + "/v1"}


def test_quickstart_runs_the_tool_conversation() -> None:
    with auto_model_env() as env:
        nb = execute("01_quickstart.ipynb", env)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert not [o for c in code for o in c.outputs if o.output_type == "error"]
    printed = "\n".join(stream_text(c) for c in code)
    assert "{'city': 'Tokyo', 'condition': 'sunny', 'temperature_c': 24}" in printed  # the tool called directly
    # The magics: %%tool shows the schema, %%agent --model auto, %%chat with its saved transcripts.
    shown = "\n".join(results(c) for c in code)
    assert "tool get_weather(city: string)  [read-only, concurrency-safe]" in shown
    who = "local:SmolLM2-135M-Instruct.Q4_1.gguf" if importlib.util.find_spec("llama_cpp") else "openai:gpt-4o-mini"
    assert f"agent weather_bot: model auto → {who}, tools get_weather" in shown, "who 'auto' is"
    auto_run, scripted_run = run_views(code)
    for view in (auto_run, scripted_run):
        assert {"text/html", "text/plain"} <= set(view), "a transcript that shows without widget state"
        assert "What&#x27;s the weather in Tokyo?" in view["text/html"]
    assert auto_run["text/plain"].startswith(f"[weather_bot] done · model {who}"), auto_run["text/plain"]
    assert f">{who}</code>" in auto_run["text/html"], "the transcript's header names the model that answered"
    if who.startswith("local:"):
        assert "tiny offline demo model" in auto_run["text/html"], "the embedded model says what it is, once"
    assert "tiny offline demo model" not in scripted_run["text/html"]
    assert 'tool get_weather({"city": "Tokyo"}) → ok' in auto_run["text/plain"]
    assert "It is sunny in Tokyo, 24 °C. Enjoy your walk, Ana!" in scripted_run["text/html"]
    assert '"temperature_c": 24' in scripted_run["text/plain"], "the tool's result"
    assert "events; state: {'user_name': 'Ana'}" in printed, "the chat's result is in _"
    assert f"answered by {who}" in printed, "RunResult.model"
    assert f"auto → {who}: " in shown and "GOOGLE_API_KEY or GEMINI_API_KEY" in shown, "%adk models"
    assert "You help Ana with the weather." in shown, "%adk request: the template filled from state"
    assert '"tool_calls"' in shown or '"tools"' in shown, "%adk request: the OpenAI wire format"
    # The same in plain Python.
    assert "[weather_bot] calls get_weather({'city': 'Tokyo'})" in printed
    assert "[weather_bot] get_weather returned {'city': 'Tokyo', 'condition': 'sunny'" in printed
    assert "[weather_bot] It is sunny in Tokyo, 24 °C. Enjoy your walk, Ana!" in printed
    assert "system: You help Ana with the weather." in printed, "the template was filled from state"
    assert "Sunny in Lima too." in printed
