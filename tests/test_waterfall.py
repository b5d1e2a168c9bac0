"""A run's trace as a waterfall: the rows (order, nesting, bar geometry), the saved HTML and
text, the live trace a run view folds from a real run's events, `%adk trace` in a real IPython
shell, and the live view's Timeline tab under Node, checked against the saved waterfall."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from adk_notebook import (
    Content,
    FunctionCall,
    LlmAgent,
    Part,
    Runner,
    ScriptedModel,
    Usage,
    tool,
)
from adk_notebook.models.base import LlmResponse
from adk_notebook.notebook.timeline import LiveTrace, trace_of
from adk_notebook.notebook.waterfall import (
    waterfall_html,
    waterfall_rows,
    waterfall_text,
)

sys.path.insert(0, str(Path(__file__).parent))
from test_run_view import shell  # noqa: F401 - the fixture
from widget_comms import comms  # noqa: F401 - the fixture

PROBE = "<script>alert(1)</script>"


def span(
    kind: str,
    start: float,
    duration: float | None,
    children: list[dict[str, Any]] = (),
    **fields: Any,
) -> dict[str, Any]:
    """A span as `Span.to_dict()` writes it."""
    return {
        "name": f"{kind} step",
        "kind": kind,
        "start": start,
        "duration": duration,
        **fields,
        "children": list(children),
    }


def sample_trace() -> dict[str, Any]:
    """A run of 10 s: a model call (2 s), a tool that failed (5 s), a model call with a cost (3 s)."""
    model = "gemini-2.5-flash"
    return span("run", 100.0, 10.0, agent="bot", children=[
        span("agent", 100.0, 10.0, agent="bot", children=[
            span("model", 100.0, 2.0, model=model, input_tokens=1200, output_tokens=30),
            span("tool", 102.0, 5.0, tool=f"get_{PROBE}", error_type="ValueError", error_message=f"no city {PROBE}"),
            span("model", 107.0, 3.0, model=model, input_tokens=1300, output_tokens=45, cost=0.00125),
        ]),
    ])  # fmt: skip


class Bars(HTMLParser):
    """The bars of a waterfall's HTML, in document order: (kind, left %, width %)."""

    def __init__(self) -> None:
        super().__init__()
        self.bars: list[tuple[str, float, float]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("class") == "adk-wf-bar":
            style = a["style"] or ""
            left = float(re.search(r"left:([\d.]+)%", style)[1])  # type: ignore[index]
            width = float(re.search(r"width:([\d.]+)%", style)[1])  # type: ignore[index]
            self.bars.append((a["data-kind"] or "", left, width))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def bars_of(html: str) -> Bars:
    parser = Bars()
    parser.feed(html)
    return parser


# -- the rows and their drawing ---------------------------------------------------------------
def test_rows_follow_the_span_tree_and_bars_are_proportional_to_durations() -> None:
    rows = waterfall_rows(sample_trace())
    assert [(r.depth, r.kind) for r in rows] == [
        (0, "run"),
        (1, "agent"),
        (2, "model"),
        (2, "tool"),
        (2, "model"),
    ]
    assert [(r.left, r.width) for r in rows] == [
        ("0.00", "100.00"),
        ("0.00", "100.00"),
        ("0.00", "20.00"),
        ("20.00", "50.00"),
        ("70.00", "30.00"),
    ]
    html = waterfall_html(sample_trace())
    bars = bars_of(html).bars
    assert [b[0] for b in bars] == ["run", "agent", "model", "tool", "model"], "one bar per span, in tree order"
    durations = [10.0, 10.0, 2.0, 5.0, 3.0]
    for (_, _, width), duration in zip(bars, durations, strict=True):
        assert width == pytest.approx(duration / 10.0 * 100)
    assert bars[3][1] + bars[3][2] == bars[4][1], "the second model call starts where the tool ended"


def test_latency_tokens_cost_and_errors_are_shown_and_labels_escaped() -> None:
    html = waterfall_html(sample_trace())
    text = "".join(bars_of(html).text)
    assert "2.0 s · 1,200 in · 30 out" in text and "3.0 s · 1,300 in · 45 out · $0.0013" in text
    assert f"🔧 get_{PROBE}" in text and f"⚠ no city {PROBE}" in text
    assert "<script>" not in html and html.count("&lt;script&gt;") == 2
    assert "var(--jp-error-color1" in html.split("adk-wf-bar")[4], "the failed tool's bar is red"
    plain = waterfall_text(sample_trace())
    lines = plain.splitlines()
    assert lines[0].startswith("bot ") and "█" * 30 in lines[0]
    assert "    get_<script>" in lines[3] and "|      ███████████████         |" in lines[3]
    assert "⚠ no city <script>alert(1)</script>" in lines[4]


def test_a_running_span_reaches_the_latest_time_known() -> None:
    trace = span(
        "run",
        0.0,
        None,
        [span("tool", 1.0, None, tool="slow"), span("model", 0.0, 4.0)],
    )
    run, slow, model = waterfall_rows(trace)
    assert (run.width, run.meta) == ("100.00", "running…")
    assert (slow.left, slow.width) == ("25.00", "75.00")
    assert model.width == "100.00"


def test_the_saved_transcript_holds_the_waterfall_collapsed() -> None:
    from adk_notebook.notebook.render import state_text
    from adk_notebook.notebook.waterfall import run_html

    state = {"agent": "bot", "status": "done", "items": [], "trace": sample_trace()}
    html = run_html(state)
    assert '<details class="adk-trace"' in html and "⏱ Timeline" in html
    assert bars_of(html).bars == bars_of(waterfall_html(sample_trace())).bars
    assert "Timeline" not in state_text(state), "text/plain stays the transcript"
    assert "adk-trace" not in run_html({**state, "trace": None})
    assert html.endswith("</details></div></div>"), "in the run's part trace, inside its box"


# -- the live trace of a real run -------------------------------------------------------------
@tool
async def get_weather(city: str) -> dict:
    """Get the weather."""
    await asyncio.sleep(0.05)
    return {"city": city, "condition": "sunny"}


@tool
def broken(city: str) -> dict:
    """Always fails."""
    raise ValueError(f"no city {city}")


def weather_agent() -> LlmAgent:
    model = ScriptedModel(
        [
            LlmResponse(
                Content(
                    "model",
                    [
                        Part(function_call=FunctionCall("get_weather", {"city": "Tokyo"}, id="c1")),
                        Part(function_call=FunctionCall("broken", {"city": PROBE}, id="c2")),
                    ],
                ),
                finish_reason="tool_calls",
                usage=Usage(120, 10, 130),
            ),
            LlmResponse(Content.model("Sunny."), finish_reason="stop", usage=Usage(150, 4, 154)),
        ]
    )
    return LlmAgent(name="bot", model=model, tools=[get_weather, broken])


async def weather_run() -> Any:
    runner = Runner(app_name="bot", agent=weather_agent())
    return await runner.run_to_result(user_id="u", session_id=None, content=Content.user("Weather in Tokyo?"))


async def test_a_real_run_folds_into_the_spans_the_runner_records() -> None:
    """The live view's trace, folded from events, has the runner's spans: same steps, tokens, errors."""
    result = await weather_run()
    live = LiveTrace("bot")
    for event in result.events:
        live.add(event)
    trace = live.finish(None)
    assert trace is not None and result.trace is not None
    recorded = result.trace.to_dict()
    rows, recorded_rows = waterfall_rows(trace), waterfall_rows(recorded)
    assert [(r.depth, r.kind, r.name, r.error is None) for r in rows] == [
        (r.depth, r.kind, r.name, r.error is None) for r in recorded_rows
    ]
    assert [r.name for r in rows] == [
        "bot",
        "bot",
        "scripted",
        "get_weather",
        "broken",
        "scripted",
    ]
    (agent,) = trace["children"]
    first, weather, failed, answer = agent["children"]
    assert (first["input_tokens"], first["output_tokens"], answer["input_tokens"]) == (
        120,
        10,
        150,
    )
    assert weather["duration"] >= 0.05 and "error_type" not in weather
    assert failed["error_message"].endswith(f"no city {PROBE}")
    assert recorded_rows[4].error is not None and recorded_rows[4].error.endswith(f"no city {PROBE}")
    assert answer["start"] >= weather["start"] + weather["duration"], "the answer follows the tool responses"
    assert float(rows[3].width) >= 0.05 / trace["duration"] * 100 - 0.01
    assert trace_of(result, "bot") == recorded, "a finished run: the runner's own trace"


async def test_sub_agents_nest_in_the_waterfall_as_in_the_trace() -> None:
    from adk_notebook import SequentialAgent

    research = LlmAgent(name="research", model=ScriptedModel(["notes"]), output_key="notes")
    writer = LlmAgent(name="writer", model=ScriptedModel(["draft"]))
    pipeline = SequentialAgent(name="pipeline", sub_agents=[research, writer])
    result = await Runner(app_name="p", agent=pipeline).run_to_result(
        user_id="u", session_id=None, content=Content.user("go")
    )
    assert result.trace is not None
    rows = waterfall_rows(result.trace.to_dict())
    assert [(r.depth, r.kind, r.name) for r in rows] == [
        (0, "run", "pipeline"), (1, "agent", "pipeline"), (2, "agent", "research"), (3, "model", "scripted"),
        (2, "agent", "writer"), (3, "model", "scripted")]  # fmt: skip
    assert float(rows[4].left) >= float(rows[2].left) + float(rows[2].width) - 0.01, "writer runs after research"
    assert all(line.count("█") >= 1 for line in waterfall_text(result.trace.to_dict()).splitlines())


async def test_the_run_view_sends_spans_as_they_happen_and_saves_the_waterfall(
    comms: Any,  # noqa: F811 - the fixture
    shell: Any,  # noqa: F811
) -> None:
    from IPython.utils.capture import capture_output

    from adk_notebook.notebook.widgets import RunView

    view = RunView(agent_name="bot", prompt="Weather in Tokyo?", session_id="s1")
    with capture_output() as shown:
        view.show()
        runner = Runner(app_name="bot", agent=weather_agent())
        result = await runner.run_to_result(
            user_id="u",
            session_id=None,
            content=Content.user("Weather in Tokyo?"),
            on_event=view.handle,
        )
        view._flush(view._clock())
        c = comms[-1]
        drawn = [
            op[2] for m in c.custom() if m["type"] == "delta" for op in m["ops"] if op[1] in ("trace", "waterfall")
        ]
        assert len(drawn) >= 3 and '<details class="adk-trace"' in drawn[0], "the waterfall went live as spans came"
        assert [len(bars_of(html).bars) for html in drawn] == sorted(len(bars_of(html).bars) for html in drawn)
        view.finish(result=result)
    html = view.html
    assert len(bars_of(html).bars) == len(waterfall_rows(result.trace.to_dict()))
    assert shown.outputs[-1].data["text/html"] == html, "the cell keeps what the view showed"
    assert '<details class="adk-trace"' in html and "🔧 get_weather" in html and "&lt;script&gt;" in html


# -- %adk trace --------------------------------------------------------------------------------
@pytest.fixture()
def ipython() -> Iterator[Any]:
    """The global IPython shell with the extension, a fresh workspace and test_magics' FakeView;
    what the test adds to the namespace is removed after."""
    from IPython.testing import globalipapp
    from test_magics import FakeView

    from adk_notebook.notebook import get_workspace

    ip = globalipapp.start_ipython() or globalipapp.get_ipython()
    ip.run_cell("%load_ext adk_notebook")
    workspace = get_workspace(ip)
    workspace.reset()
    workspace.view_factory = FakeView
    before = set(ip.user_ns)
    yield ip
    for name in set(ip.user_ns) - before:
        if not name.startswith("_"):
            ip.user_ns.pop(name, None)
    workspace.reset()


def line_error(ipython: Any, line: str) -> str:
    from IPython.core.error import UsageError

    with pytest.raises(UsageError) as caught:
        ipython.run_line_magic("adk", line)
    return str(caught.value)


def test_adk_trace_draws_the_last_run_of_an_agent(ipython: Any) -> None:
    assert "no run yet" in line_error(ipython, "trace")
    ipython.user_ns["bot"] = weather_agent()
    ipython.user_ns["other"] = LlmAgent(name="other", model=ScriptedModel(["Hi."]))
    assert ipython.run_cell("%chat bot Weather in Tokyo?").success
    assert ipython.run_cell("%chat other Hello").success
    shown = ipython.run_line_magic("adk", "trace bot")
    assert shown.text.startswith("Trace of bot (its last run)")
    assert [b[0] for b in bars_of(shown.html).bars] == [
        "run",
        "agent",
        "model",
        "tool",
        "tool",
        "model",
    ]
    assert "120 in · 10 out" in shown.html and "⚠ " in shown.html and "&lt;script&gt;" in shown.html
    last = ipython.run_line_magic("adk", "trace")
    assert last.text.startswith("Trace of other") and "get_weather" not in last.text
    assert "nobody has not run in this notebook (agents that ran: bot, other)" in line_error(ipython, "trace nobody")
    assert "--run picks a run from a file" in line_error(ipython, "trace bot --run 2")


def test_adk_trace_draws_a_run_from_a_jsonl_file(ipython: Any, tmp_path: Path) -> None:
    runs = tmp_path / "runs.jsonl"
    other = span("run", 5.0, 1.0, [span("agent", 5.0, 1.0, agent="other")], agent="other")
    runs.write_text("\n".join(json.dumps(t) for t in (sample_trace(), other, sample_trace())) + "\n")
    first = ipython.run_line_magic("adk", f"trace --file {runs} --run 1")
    assert first.text.startswith("Trace of bot (run 1 of 3 in runs.jsonl)")
    assert bars_of(first.html).bars == bars_of(waterfall_html(sample_trace())).bars
    assert "(run 2 of 3" in ipython.run_line_magic("adk", f"trace --file {runs} --run -2").text
    assert "(run 3 of 3" in ipython.run_line_magic("adk", f"trace --file {runs}").text
    assert "(run 1 of 1" in ipython.run_line_magic("adk", f"trace other --file {runs}").text
    assert "it has 3 (1 to 3, or -1 for the last)" in line_error(ipython, f"trace --file {runs} --run 4")
    assert "has no run of nobody" in line_error(ipython, f"trace nobody --file {runs}")
    assert "there is no file" in line_error(ipython, f"trace --file {tmp_path / 'missing.jsonl'}")
    runs.write_text('{"name": "x"\n')
    assert "is not a trace" in line_error(ipython, f"trace --file {runs}")
