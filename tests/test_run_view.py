"""The live run widget: what it sends over the comm and what it leaves in the cell.

The comm is real ipywidgets/comm machinery with one seam replaced (tests/widget_comms.py).
Display outputs are captured from a real `InteractiveShell`. What the front end makes of the
messages is tested in Chromium (tests/browser/test_view_page.py).
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from adk_notebook import (
    AdkError,
    Content,
    Event,
    FunctionCall,
    InMemorySessionService,
    LlmAgent,
    Part,
    RunResult,
    ScriptedModel,
    Usage,
    tool,
)
from adk_notebook.notebook.kernel import ChatPlan, run_chat_blocking
from adk_notebook.notebook.widgets import RunView

sys.path.insert(0, str(Path(__file__).parent))
from test_render import SCRIPT_PROBE, full_run
from widget_comms import RecordingComm, comms

__all__ = ["comms", "shell"]  # fixtures other modules use

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


@pytest.fixture
def shell() -> Any:
    shell = InteractiveShell.instance()
    yield shell
    InteractiveShell.clear_instance()


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make_view(
    comms: list[RecordingComm], clock: FakeClock | None = None, prompt: str = "Tell me"
) -> tuple[RunView, RecordingComm]:
    view = RunView(agent_name="bot", prompt=prompt, session_id="s1")
    if clock is not None:
        view._clock = clock
        view._started = clock()
    view._last_flush = view._clock()  # as if a delta had just gone: the batching that follows the first
    return view, comms[-1]


def chunk(text: str) -> Event:
    return Event("bot", Content.model(text), partial=True)


def ops_of(custom: list[dict[str, Any]]) -> list[list[Any]]:
    return [op for m in custom if m["type"] == "delta" for op in m["ops"]]


def streamed_words(custom: list[dict[str, Any]]) -> list[str]:
    """The words the streamed answer's ops carried, in order."""
    html = "".join(op[4] for op in ops_of(custom) if op[0] == "stream")
    return re.sub(r"<[^>]*>", " ", html).split()


# -- traffic ----------------------------------------------------------------------------------
def test_deltas_are_batched_by_elapsed_time(comms: list[RecordingComm]) -> None:
    clock = FakeClock()
    view, c = make_view(comms, clock)
    words = [f"w{n} " for n in range(2000)]
    for word in words:  # one token per millisecond, for two seconds
        clock.now += 0.001
        view.handle(chunk(word))
    deltas = [m for m in c.custom() if m["type"] == "delta"]
    assert 35 <= len(deltas) <= 41, len(deltas)  # every 50 ms, not per token
    assert [m["seq"] for m in deltas] == list(range(1, len(deltas) + 1))
    shown = streamed_words(deltas)
    assert shown == [w.strip() for w in words[: len(shown)]] and len(shown) > 1900, "in order, never twice"
    assert not c.updates(), "no trait assignment while streaming"


def test_a_fast_stream_sends_few_messages(comms: list[RecordingComm]) -> None:
    view, c = make_view(comms)
    started = time.monotonic()
    for n in range(2000):
        view.handle(chunk(f"w{n} "))
    took = time.monotonic() - started
    view.finish()
    assert len(c.custom()) <= took / 0.05 + 1, (len(c.custom()), took)
    assert len(c.custom()) <= 5
    assert not c.updates() and " ".join(f"w{n}" for n in range(2000)) in view.html


def test_handle_is_cheap(comms: list[RecordingComm]) -> None:
    view, _ = make_view(comms)
    events = [chunk(f"w{n} ") for n in range(20_000)]
    started = time.process_time()  # this process's CPU: the shared machine's other work does not count
    for event in events:
        view.handle(event)
    per_event = (time.process_time() - started) / len(events)
    assert per_event < 20e-6, f"{per_event * 1e6:.1f} µs of CPU per streamed event"


def run_bytes(comms: list[RecordingComm], tokens: int) -> tuple[int, int]:
    clock = FakeClock()
    view, c = make_view(comms, clock)
    words = [f"word{n % 97} " for n in range(tokens)]
    for word in words:
        clock.now += 0.002
        view.handle(chunk(word))
    view.finish()
    return c.nbytes(include_open=False), len("".join(words))


def test_bytes_grow_linearly_with_the_output(comms: list[RecordingComm]) -> None:
    small, small_text = run_bytes(comms, 2000)
    large, large_text = run_bytes(comms, 8000)
    assert small < 3 * small_text and large < 3 * large_text, (small / small_text, large / large_text)
    assert 3.5 < large / small < 4.5, "4x the tokens, 4x the bytes"


def test_a_runs_comm_open_is_small(comms: list[RecordingComm]) -> None:
    make_view(comms)
    (opened,) = [d for t, d in comms[-1].sent if t == "comm_open"]
    assert len(json.dumps(opened)) < 12_000, "run_view.js (no renderer, no markdown library) and the first view"


async def test_the_first_delta_goes_at_once(comms: list[RecordingComm]) -> None:
    view = RunView(agent_name="bot", prompt="Tell me", session_id="s1")
    c = comms[-1]
    view.handle(chunk("The first token"))
    assert streamed_words(c.custom()) == ["The", "first", "token"], "no wait before the first token"
    view.handle(chunk(" and the next"))
    assert len(c.custom()) == 1, "later ones are batched"
    view.finish()


async def test_a_pending_delta_goes_out_when_the_stream_pauses(comms: list[RecordingComm]) -> None:
    view, c = make_view(comms)  # a delta has just gone
    view.handle(Event("bot", Content("model", [Part(function_call=FunctionCall("slow", {}, "c1"))])))
    assert not c.custom(), "less than 50 ms since the last delta: buffered"
    await asyncio.sleep(0.12)  # a tool is running; no events arrive
    deltas = c.custom()
    assert len(deltas) == 1 and "🔧 slow" in deltas[0]["ops"][0][1], "flushed by the loop, not a thread"
    view.finish(cancelled=True)


def test_poll_sends_what_is_pending_once_due(comms: list[RecordingComm]) -> None:
    clock = FakeClock()
    view, c = make_view(comms, clock)
    view.handle(chunk("hello"))
    view.poll()
    assert not c.custom(), "not due yet"
    clock.now += 0.051
    view.poll()
    assert streamed_words(c.custom()) == ["hello"]
    clock.now += 0.051
    view.poll()
    assert len(c.custom()) == 1, "nothing pending, nothing sent"


def test_the_thread_fallback_sends_a_running_tools_card_before_its_result(comms: list[RecordingComm]) -> None:
    """Where no await can go, the run's events reach the view over a queue, with no loop to flush
    on: the card of a tool that has just started still goes out while the tool runs."""
    seen: list[bool] = []

    def card_sent() -> bool:
        return any(
            op[0] == "insert" and "🔧 slow" in op[1] and ">running<" in op[1] for op in ops_of(comms[-1].custom())
        )

    @tool
    def slow() -> dict:
        """Take a while."""
        deadline = time.monotonic() + 3
        while not card_sent() and time.monotonic() < deadline:
            time.sleep(0.01)
        seen.append(card_sent())
        return {"done": True}

    # Text streams first, so the card arrives right after a delta went out: it waits to be flushed.
    model = ScriptedModel([["Let me look that up.", FunctionCall("slow", {})], "Done."])
    plan = ChatPlan(
        agent=LlmAgent(name="bot", model=model, tools=[slow]),
        message="Go.",
        session_service=InMemorySessionService(),
        user_id="u",
        session_id="s1",
    )
    result = run_chat_blocking(plan, RunView)
    assert result is not None and result.text == "Done."
    assert seen == [True], "the card went out only with the tool's result"


# -- the final state and the cell output ------------------------------------------------------
def test_finish_puts_the_whole_run_in_the_trait_and_a_static_transcript_in_the_cell(
    comms: list[RecordingComm], shell: Any
) -> None:
    events = full_run()
    with capture_output() as captured:
        view, c = make_view(comms, prompt="Weather in Tokyo?")
        model_id = view.widget.model_id
        view.show()
        for event in events:
            view.handle(event)
        assert view.status == "running"
        view.finish(result=RunResult(events, "s1", {"last_city": "Tokyo"}, usage=Usage(22, 32, 54)))
    assert view.status == "done"

    first, last = captured.outputs
    display_id = first.transient["display_id"]
    assert first.data[WIDGET_MIME]["model_id"] == model_id and not first.update
    assert last.update and last.transient["display_id"] == display_id == view.display_id
    # The finished cell holds the transcript only: it renders without widget state or a kernel.
    assert set(last.data) == {"text/html", "text/plain"}
    assert "🔧 render_chart" in last.data["text/html"] and "tokens: 22 in" in last.data["text/html"]
    assert last.data["text/plain"].startswith("[bot] done · ")

    state = view.state
    assert last.data["text/html"] == view.html and not c.updates(), "the cell keeps the run as drawn"
    assert c.sent[-1][0] == "comm_close", "and the model is closed: nothing shows it, nothing saves it"
    assert state["status"] == "done" and state["prompt"] == "Weather in Tokyo?" and state["error"] is None
    assert state["usage"] == {"input": 22, "output": 32, "total": 54} and state["elapsed"] >= 0
    kinds = [item["k"] for item in state["items"]]
    assert kinds.count("tool") == 3 and "state" in kinds and kinds[-1] == "text"
    chart = next(i for i in state["items"] if i["k"] == "tool" and i["name"] == "render_chart")
    assert chart["status"] == "ok" and chart["attempts"] == 2 and chart["duration"] == 1.5
    assert chart["log"] == f"loading data\nplotting {SCRIPT_PROBE}\n"
    assert [m["k"] for m in chart["media"]] == ["image", "image", "pdf", "pdf", "pdf", "file"]
    assert chart["media"][2]["href"] == "https://example.com/report.pdf"
    assert chart["media"][4]["href"] is None, "a javascript: URI never becomes a link"
    assert state["items"][-1]["done"] and state["items"][-1]["text"].startswith("It is **sunny**")


def test_finish_without_events_uses_the_result(comms: list[RecordingComm]) -> None:
    agent = LlmAgent(name="bot", model=ScriptedModel(["Hello *there*"]))
    result = agent.run("Hi")
    view, _ = make_view(comms, prompt="Hi")
    view.finish(result=result)
    assert [i["text"] for i in view.state["items"]] == ["Hello *there*"]
    assert "<p>Hello <em>there</em></p>" in view.html


@pytest.mark.parametrize("how", ["cancelled", "error"])
def test_cancelled_and_failed_runs(comms: list[RecordingComm], shell: Any, how: str) -> None:
    with capture_output() as captured:
        view, c = make_view(comms)
        view.show()
        view.handle(Event("bot", Content("model", [Part(function_call=FunctionCall("slow", {}, "c1"))])))
        view.handle(chunk("partial"))
        if how == "cancelled":
            view.finish(error=asyncio.CancelledError(), cancelled=True)
        else:
            view.finish(error=AdkError.model("provider down\nTraceback (most recent call last):\n  ..."))
    state = view.state
    assert view.status == state["status"] == how
    assert state["items"][0]["status"] == "cancelled", "the tool never finished"
    expected = "Run cancelled." if how == "cancelled" else "model.internal: provider down"
    assert state["error"] == expected
    assert f"⚠ {expected}" in captured.outputs[-1].data["text/html"]
    view.handle(chunk("late"))
    view.finish()
    assert view.state == state and not c.updates(), "a finished view ignores what comes after"


# -- messages from the front end --------------------------------------------------------------
def test_stop_button_calls_the_callbacks_while_running(comms: list[RecordingComm]) -> None:
    view, c = make_view(comms)
    calls: list[str] = []
    view.on_stop(lambda: calls.append("first"))
    view.on_stop(lambda: 1 / 0)  # a broken callback does not stop the others
    view.on_stop(lambda: calls.append("third"))
    c.receive({"type": "stop"})
    assert calls == ["first", "third"]
    view.finish(cancelled=True)
    c.receive({"type": "stop"})
    assert calls == ["first", "third"], "no Stop once the run has ended"


def test_a_view_that_asks_gets_a_snapshot(comms: list[RecordingComm]) -> None:
    clock = FakeClock()
    view, c = make_view(comms, clock)
    for n in range(11):  # the last one is still pending (30 ms after the last flush)
        clock.now += 0.03
        view.handle(chunk(f"w{n} "))
    sent = len(c.custom())
    c.receive({"type": "sync", "nonce": "abc", "seq": 0})
    *flushed, snapshot = c.custom()[sent:]
    assert snapshot["type"] == "snapshot" and snapshot["nonce"] == "abc"
    assert snapshot["seq"] == view._seq and flushed[-1]["seq"] == snapshot["seq"], "pending ops flushed first"
    assert " ".join(f"w{n}" for n in range(11)) in snapshot["html"]
    assert snapshot["tails"] == {"i0.md": "<p>" + " ".join(f"w{n}" for n in range(11)) + "</p>\n"}, "the open tail"
    c.receive({"type": "sync", "nonce": "def", "seq": view._seq})
    assert c.custom()[-1] == {"type": "snapshot", "nonce": "def", "seq": view._seq, "html": None}, "up to date"
