"""run_view.js in Chromium, fed what a real `RunView` sent for a rich run: the page it builds
from the ops is the saved transcript, item by item.

No JupyterLab here: the widget's ES module is loaded into a blank page with a stand-in for
anywidget's model (get / on / off / send), and given the comm messages a `RunView` sent in
Python (recorded, tests/widget_comms.py): the trait it opened with, every delta, the final trait.
The run has what a notebook shows: a thought, tool cards with progress and an image and PDFs,
a failing tool, a markdown answer with a table and code, parallel lanes, a transfer, code the
provider ran, grounding, the agent graph and the waterfall, and hostile text throughout.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from test_multi_agent_view import parallel_run
from test_native_views import code_run, thinking_run
from test_render import full_run
from view_page import ViewPage, view_page
from widget_comms import RecordingComm, comms

from adk_notebook import Content, Event, EventActions, FunctionCall, FunctionResponse, LlmAgent, Part, ScriptedModel
from adk_notebook.notebook.graph import run_graph
from adk_notebook.notebook.widgets import RunView

__all__ = ["comms"]  # the fixture, used by name

TABLE_AND_CODE = (
    "## Results\n\n| city | temp |\n|---|---|\n| Tokyo | 24 |\n| Oslo | 3 |\n\n"
    "```python\nprint('<b>hi</b>')  # 🎉 ok\n```\n\nDone: **all** good 🎉 <img src=x onerror=window.__pwned=1>."
)


def transfer_run() -> list[Event]:
    call = FunctionCall("transfer_to_agent", {"agent_name": "support"}, id="t1")
    return [
        Event("desk", Content("model", [Part(function_call=call)])),
        Event(
            "desk",
            Content("tool", [Part(function_response=FunctionResponse("transfer_to_agent", {"result": None}, id="t1"))]),
            actions=EventActions(transfer_to_agent="support"),
        ),
        *[
            Event("support", Content.model(TABLE_AND_CODE[a : a + 9]), partial=True)
            for a in range(0, len(TABLE_AND_CODE), 9)
        ],
        Event("support", Content.model(TABLE_AND_CODE)),
    ]


def rich_events() -> list[Event]:
    return [*thinking_run(), *full_run(), *parallel_run(), *transfer_run(), *code_run()]


def team_graph() -> dict[str, Any]:
    def agent(name: str) -> LlmAgent:
        return LlmAgent(name=name, model=ScriptedModel([]))

    lead = LlmAgent(name="desk", model=ScriptedModel([]), sub_agents=[agent("support"), agent("pros"), agent("cons")])
    graph = run_graph(lead)
    assert graph is not None
    return graph


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def record(
    comms: list[RecordingComm], events: list[Event], graph: dict[str, Any] | None
) -> tuple[RunView, RecordingComm]:
    """What a RunView sends for `events`, a flush after each (the clock moves past the batching)."""
    view = RunView(agent_name="bot", prompt="Tell me everything", session_id="s1", graph=graph)
    clock = Clock()
    view._clock = clock
    for event in events:
        clock.now += 0.06
        view.handle(event)
    clock.now += 0.06
    view.finish()
    return view, comms[-1]


@pytest.fixture(scope="module")
def page() -> Iterator[ViewPage]:
    with view_page() as page:
        yield page


def test_the_live_page_is_the_saved_transcript_item_by_item(page: ViewPage, comms: list[RecordingComm]) -> None:
    view, recorded = record(comms, rich_events(), team_graph())
    page.load(recorded.opened()["view"])
    for delta in recorded.custom():
        page.emit(delta)
    live, saved = page.compare(view.html)
    assert [name for name, _ in live] == [name for name, _ in saved], "the same items and parts, in order"
    everything = json.dumps(saved)
    for what in (
        "adk-thoughts",
        "adk-tool",
        "<table>",
        "<pre><code",
        "adk-lane",
        "transfer to",
        "<svg",
        "adk-waterfall",
        "<img",
    ):
        assert what in everything, f"the rich run has {what}"
    for (name, shown), (_, kept) in zip(live, saved, strict=True):
        assert shown == kept, f"{name} differs live and saved"
    assert not page.pwned(), "no probe ran"


def test_a_view_opened_mid_run_catches_up_from_a_snapshot(page: ViewPage, comms: list[RecordingComm]) -> None:
    view = RunView(agent_name="bot", prompt="Tell me everything", session_id="s1")
    recorded = comms[-1]
    clock = Clock()
    view._clock = clock
    events = rich_events()
    for event in events[:20]:
        clock.now += 0.06
        view.handle(event)
    page.load(recorded.opened()["view"])  # a page reloaded now: the trait is still the start's
    (sync,) = page.sent()
    assert sync["type"] == "sync"
    recorded.receive(sync)
    for event in events[20:]:
        clock.now += 0.06
        view.handle(event)
    clock.now += 0.06
    view.finish()
    snapshot = next(m for m in recorded.custom() if m["type"] == "snapshot")
    page.emit(snapshot)
    for delta in recorded.custom():
        if delta["type"] == "delta" and delta["seq"] > snapshot["seq"]:
            page.emit(delta)
    live, saved = page.compare(view.html)
    assert live == saved


def test_stop_is_sent_once(page: ViewPage, comms: list[RecordingComm]) -> None:
    view = RunView(agent_name="bot", prompt="Go")
    stopped: list[bool] = []
    view.on_stop(lambda: stopped.append(True))
    page.load(comms[-1].opened()["view"])
    page.page.click("[data-adk-action=stop]")
    page.page.click("[data-adk-action=stop]", force=True)
    sent = [m for m in page.sent() if m["type"] == "stop"]
    assert sent == [{"type": "stop"}], "one click, one stop: the button is disabled"
    comms[-1].receive(sent[0])
    assert stopped == [True]
