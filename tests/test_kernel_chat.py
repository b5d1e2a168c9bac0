"""%%chat on a real Jupyter kernel (nbclient): outputs, the kernel loop, interrupts, Stop.

These run small notebooks the way Jupyter does, so what they check is what a user sees: the
saved outputs (a widget view plus text/html and text/plain transcripts), an interrupt that
cancels a run stuck in a long await within a second, and the Stop button of the widget.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

pytestmark = pytest.mark.notebook

WIDGET = "application/vnd.jupyter.widget-view+json"

SETUP = [
    "%load_ext adk_notebook\nimport ipykernel, threading\nipykernel.__version__",
    '''%%tool --read-only
async def get_weather(city: str) -> dict:
    """Get the current weather for a city.

    Args:
        city: The city to look up.
    """
    return {"city": city, "condition": "sunny", "thread": threading.current_thread().name}''',
    '''%%tool
import asyncio
async def slow(seconds: float) -> dict:
    """Wait for a while.

    Args:
        seconds: How long to wait.
    """
    await asyncio.sleep(seconds)
    return {"waited": seconds}''',
]


def notebook(*cells: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])


def client_for(nb: nbformat.NotebookNode) -> NotebookClient:
    return NotebookClient(nb, timeout=60, kernel_name="python3", allow_errors=True)


def outputs(cell: nbformat.NotebookNode, kind: str) -> list[Any]:
    return [o for o in cell.outputs if o.output_type == kind]


def run_view(cell: nbformat.NotebookNode) -> dict[str, Any]:
    """The run's display as saved: the live widget, replaced when the run ends by its transcripts."""
    [shown] = [o for o in outputs(cell, "display_data") if "text/html" in o.data or WIDGET in o.data]
    assert {"text/html", "text/plain"} <= set(shown.data), "a transcript that shows without widget state"
    return shown.data


def value(cell: nbformat.NotebookNode) -> str:
    [result] = outputs(cell, "execute_result")
    return result.data["text/plain"]


def test_a_chat_notebook_saves_its_transcripts() -> None:
    nb = notebook(
        *SETUP,
        """from adk_notebook import FunctionCall, ScriptedModel
scripted = ScriptedModel([FunctionCall("get_weather", {"city": "Tokyo"}), "It is sunny in Tokyo. Enjoy, Ana!",
                          "Sunny again.", "And again."])""",
        "%%agent weather_bot --model scripted --tools get_weather\nYou help {user_name} with the weather.",
        "%%chat weather_bot --state user_name=Ana\nWhat's the weather in Tokyo?",
        "_.text",
        "(await weather_bot.run_async('Again?', state={'user_name': 'Ana'})).text",
        "weather_bot.run('Once more?', state={'user_name': 'Ana'}).text",
        "%adk sessions",
    )
    client_for(nb).execute()
    cells = nb.cells
    assert not [o for c in cells for o in outputs(c, "error")]
    chat = cells[5]
    data = run_view(chat)
    html, text = data["text/html"], data["text/plain"]
    for shown in (html, text):
        assert "What&#x27;s the weather in Tokyo?" in shown or "What's the weather in Tokyo?" in shown
        assert "get_weather" in shown and "sunny" in shown, "the tool call and its result"
        assert "It is sunny in Tokyo. Enjoy, Ana!" in shown, "the final text"
    assert "MainThread" in text, "the tool ran on the kernel's loop thread: the cell was a top-level await"
    assert value(chat).startswith("<ChatResult: weather_bot, session 's1',"), "Out[] is one summary line"
    assert "Enjoy" not in value(chat)
    assert value(cells[6]) == "'It is sunny in Tokyo. Enjoy, Ana!'"
    assert value(cells[7]) == "'Sunny again.'"
    assert value(cells[8]) == "'And again.'"
    assert "weather_bot  user  s1" in value(cells[9])


def test_a_finished_run_leaves_its_transcript_and_no_widget_state() -> None:
    """nbclient saves the kernel's widget state, as JupyterLab does when asked: a finished run's
    model is closed, and the transcript in its cell is the run. (JupyterLab drops a closed model;
    nbclient keeps the state it was opened with, which no output shows: the run's empty start.)"""
    from nbconvert import HTMLExporter

    nb = notebook(
        *SETUP,
        'from adk_notebook import ScriptedModel\nscripted = ScriptedModel(["It is **sunny**.", "Still *sunny*."])',
        "%%agent weather_bot --model scripted\nYou help with the weather.",
        "%%chat weather_bot\nWeather?",
        "%%chat weather_bot\nAnd now?",
    )
    client_for(nb).execute()
    assert not [o for c in nb.cells for o in outputs(c, "error")]
    models = nb.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {}).get("state", {})
    runs = [m["state"]["view"] for m in models.values() if m["model_name"] == "AnyModel"]
    assert all('<div data-adk="body"></div>' in run["html"] for run in runs), "at most a run's empty start"
    assert "markdown-it" not in json.dumps(models), "nor any markdown library"
    html, _ = HTMLExporter().from_notebook_node(nb)
    assert "<strong>sunny</strong>" in html and "<em>sunny</em>" in html, "both transcripts, as markdown"


async def test_an_interrupt_cancels_a_long_await_and_the_session_goes_on() -> None:
    nb = notebook(
        *SETUP,
        """from adk_notebook import FunctionCall, ScriptedModel
scripted = ScriptedModel([FunctionCall("slow", {"seconds": 30}), "Still here."])""",
        "%%agent sleeper --model scripted --tools slow\nWait when asked.",
        "%%chat sleeper --session s1\nWait 30 seconds.",
        "%%chat sleeper --session s1\nAre you there?",
    )
    client = client_for(nb)
    async with client.async_setup_kernel():
        for index in range(5):
            await client.async_execute_cell(nb.cells[index], index)
        running = asyncio.ensure_future(client.async_execute_cell(nb.cells[5], 5))
        await asyncio.sleep(1.0)
        interrupted = time.monotonic()
        await client.km.interrupt_kernel()
        await running
        elapsed = time.monotonic() - interrupted
        await client.async_execute_cell(nb.cells[6], 6)
    cancelled = nb.cells[5]
    assert elapsed < 5, f"the cell took {elapsed:.1f} s to end after the interrupt"
    [error] = outputs(cancelled, "error")
    assert error.traceback == ["Run cancelled."], "one line, no traceback"
    assert "cancelled" in run_view(cancelled)["text/plain"]
    after = nb.cells[6]
    assert not outputs(after, "error")
    assert "Still here." in run_view(after)["text/plain"]


async def test_the_stop_button_cancels_the_run() -> None:
    nb = notebook(
        *SETUP,
        """from adk_notebook import FunctionCall, ScriptedModel
scripted = ScriptedModel([FunctionCall("slow", {"seconds": 30}), "Stopped, then back."])""",
        "%%agent sleeper --model scripted --tools slow\nWait when asked.",
        "%%chat sleeper\nWait 30 seconds.",
        "%%chat sleeper\nAre you there?",
    )
    client = client_for(nb)
    async with client.async_setup_kernel():
        for index in range(5):
            await client.async_execute_cell(nb.cells[index], index)
        major = int(value(nb.cells[0]).strip("'").split(".")[0])
        if major < 7:
            pytest.skip(f"ipykernel {major} holds widget messages until the cell ends (DESIGN.md)")
        running = asyncio.ensure_future(client.async_execute_cell(nb.cells[5], 5))
        model_id = await _widget_model_id(nb.cells[5])
        await asyncio.sleep(0.5)
        pressed = time.monotonic()
        msg = client.kc.session.msg(
            "comm_msg", {"comm_id": model_id, "data": {"method": "custom", "content": {"type": "stop"}}}
        )
        client.kc.shell_channel.send(msg)
        await running
        elapsed = time.monotonic() - pressed
        await client.async_execute_cell(nb.cells[6], 6)
    stopped = nb.cells[5]
    assert elapsed < 5, f"the cell took {elapsed:.1f} s to end after Stop"
    assert not outputs(stopped, "error"), "Stop ends this run only; the notebook goes on"
    assert "Run cancelled." in "".join(o.text for o in outputs(stopped, "stream"))
    assert "cancelled" in run_view(stopped)["text/plain"]
    assert "Stopped, then back." in run_view(nb.cells[6])["text/plain"]


async def _widget_model_id(cell: nbformat.NotebookNode) -> str:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        for output in cell.outputs:
            if output.output_type == "display_data" and WIDGET in output.data:
                return output.data[WIDGET]["model_id"]
        await asyncio.sleep(0.05)
    raise AssertionError("the run's widget never appeared")
