"""How a multi-agent run looks: one lane per agent, branches labelled, transfers marked,
AgentTool internals inside the tool card (live and saved alike: tests/browser/test_view_page.py);
and the agent graph (`%adk graph`) as well-formed, escaped SVG and as Mermaid text."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from itertools import pairwise
from typing import Any

from test_render import SCRIPT_PROBE, assert_safe_html

from adk_notebook import (
    Content,
    Event,
    EventActions,
    FunctionCall,
    FunctionResponse,
    LlmAgent,
    ParallelAgent,
    Part,
    ScriptedModel,
    SequentialAgent,
)
from adk_notebook.agents.agent_tool import AgentTool
from adk_notebook.notebook.graph import agent_graph, graph_mermaid, layout
from adk_notebook.notebook.render import active_agent, graph_svg, state_html, state_text
from adk_notebook.notebook.timeline import LiveTrace
from adk_notebook.notebook.transcript import (
    Transcript,
    transcript_html,
    transcript_text,
)
from adk_notebook.notebook.view_ops import LiveDiff, Replace
from adk_notebook.tools.toolsets import BasicToolset

SVG = "{http://www.w3.org/2000/svg}"


def pipeline_run() -> list[Event]:
    """A pipeline's events as the runner yields them: research streams and answers, then writer."""
    return [
        Event("user", Content.user("Write about tea.")),
        Event("research", Content.model("Tea is "), partial=True),
        Event("research", Content.model("old."), partial=True),
        Event(
            "research",
            Content.model("Tea is old."),
            actions=EventActions(state_delta={"notes": "Tea is old."}),
        ),
        Event("writer", Content.model("A short essay"), partial=True),
        Event("writer", Content.model("A short essay on tea.")),
    ]


def lanes(state: dict[str, Any]) -> list[tuple[str, str]]:
    return [(item["author"], item["branch"]) for item in state["items"] if item["k"] == "lane"]


def folded(events: list[Event], agent_name: str = "pipeline") -> dict[str, Any]:
    transcript = Transcript(agent_name=agent_name)
    for event in events:
        transcript.add(event)
    transcript.finish()
    return transcript.state()


def test_each_agent_gets_its_own_lane_and_its_text_stays_in_it() -> None:
    state = folded(pipeline_run())
    assert lanes(state) == [("research", ""), ("writer", "")]
    kinds = [(i["k"], i.get("author")) for i in state["items"]]
    assert kinds == [
        ("lane", "research"),
        ("text", "research"),
        ("state", None),
        ("lane", "writer"),
        ("text", "writer"),
    ]
    assert [i["text"] for i in state["items"] if i["k"] == "text"] == [
        "Tea is old.",
        "A short essay on tea.",
    ]
    text = transcript_text(pipeline_run(), agent_name="pipeline")
    assert text.index("▸ research") < text.index("Tea is old.") < text.index("▸ writer") < text.index("A short essay")
    assert "▸ writer" in transcript_html(pipeline_run(), agent_name="pipeline")


def parallel_run() -> list[Event]:
    """Two branches of `both` streaming at once: their chunks interleave."""

    def pros(text: str, partial: bool = True) -> Event:
        return Event("pros", Content.model(text), partial=partial, branch="both.pros")

    def cons(text: str, partial: bool = True) -> Event:
        return Event("cons", Content.model(text), partial=partial, branch="both.cons")

    return [
        pros("For: "),
        cons("Against: "),
        pros("cheap."),
        cons("cheap."),
        pros("For: cheap.", False),
        cons("Against: cheap.", False),
    ]


def test_parallel_branches_stream_into_their_own_lanes() -> None:
    """Interleaved chunks of two branches: each goes on in its lane; one header per lane."""
    events = parallel_run()
    state = folded(events, "both")
    assert lanes(state) == [("pros", "both.pros"), ("cons", "both.cons")]
    assert [(i["author"], i["text"], i["done"]) for i in state["items"] if i["k"] == "text"] == [
        ("pros", "For: cheap.", True),
        ("cons", "Against: cheap.", True),
    ]
    assert "▸ pros · both.pros" in transcript_text(events, agent_name="both")


def test_what_a_branch_adds_after_its_sibling_spoke_goes_under_its_own_header() -> None:
    """A real ParallelAgent run: the branches stream at once, then each stores its answer."""
    pros = LlmAgent(name="pros", model=ScriptedModel(["For it."]), output_key="pros")
    cons = LlmAgent(name="cons", model=ScriptedModel(["Against it."]), output_key="cons")
    result = ParallelAgent(name="both", sub_agents=[pros, cons]).run("Go?")
    text = transcript_text(result.events, agent_name="both")
    in_lane = {}
    lane = None
    for line in text.splitlines():
        if line.startswith("▸ "):
            lane = line
        elif line.startswith("state: "):
            in_lane[line] = lane
    assert in_lane == {
        "state: pros = For it.": "▸ pros · both.pros",
        "state: cons = Against it.": "▸ cons · both.cons",
    }


def test_a_branch_whose_turn_never_ended_is_closed_with_the_run() -> None:
    events = [
        Event("pros", Content.model("For"), partial=True, branch="both.pros"),
        Event("cons", Content.model("Against"), partial=True, branch="both.cons"),
    ]
    transcript = Transcript(agent_name="both")
    for event in events:
        transcript.add(event)
    transcript.finish(status="cancelled")
    assert [(i["text"], i["done"]) for i in transcript.state()["items"] if i["k"] == "text"] == [
        ("For", True),
        ("Against", True),
    ]


def thinking_branches_run() -> list[Event]:
    """Two branches thinking at once: their thoughts interleave, then one answers, one calls a tool."""

    def branch(author: str, parts: list[Part], partial: bool = True) -> Event:
        return Event(author, Content("model", parts), partial=partial, branch=f"both.{author}")

    def thought(text: str) -> Part:
        return Part(text=text, thought=True)

    return [
        branch("pros", [thought("Weigh ")]),
        branch("cons", [thought("Doubt ")]),
        branch("pros", [thought("the cost.")]),
        branch("cons", [thought("the risk.")]),
        branch("pros", [Part(text="For it.")]),
        branch("pros", [thought("Weigh the cost."), Part(text="For it.")], False),
        branch("cons", [thought("Doubt the risk."), Part(function_call=FunctionCall("look_up", {}, id="c1"))], False),
    ]


def test_parallel_branches_thoughts_stream_into_their_own_lanes_once() -> None:
    """Each branch's thoughts are one folded item in its lane, never cut where the other spoke,
    and a turn that ends in a call without text does not repeat the thoughts that streamed."""
    events = thinking_branches_run()
    state = folded(events, "both")
    thoughts = [(i["author"], i["text"], i["done"]) for i in state["items"] if i["k"] == "thoughts"]
    assert thoughts == [("pros", "Weigh the cost.", True), ("cons", "Doubt the risk.", True)]
    assert lanes(state) == [("pros", "both.pros"), ("cons", "both.cons"), ("pros", "both.pros"), ("cons", "both.cons")]
    text = transcript_text(events, agent_name="both")
    assert text.count("Weigh the cost.") == 1 and text.count("Doubt the risk.") == 1


def test_a_single_agent_run_has_no_lanes() -> None:
    events = [
        Event("bot", Content.model("Hi"), partial=True),
        Event("bot", Content.model("Hi there.")),
    ]
    assert lanes(folded(events, "bot")) == []
    assert "▸" not in transcript_text(events, agent_name="bot")


def test_a_transfer_is_marked_and_the_target_opens_its_lane() -> None:
    call = FunctionCall("transfer_to_agent", {"agent_name": "support"}, id="t1")
    events = [
        Event("desk", Content("model", [Part(function_call=call)])),
        Event(
            "desk",
            Content(
                "tool",
                [Part(function_response=FunctionResponse("transfer_to_agent", {"result": None}, id="t1"))],
            ),
            actions=EventActions(transfer_to_agent="support"),
        ),
        Event("support", Content.model("I can help with that.")),
    ]
    state = folded(events, "desk")
    assert lanes(state) == [("support", "")], "the coordinator's own lane is the run's, with no header"
    text = transcript_text(events, agent_name="desk")
    assert text.index("transfer to support") < text.index("▸ support") < text.index("I can help")
    assert "→ transfer to support" in transcript_html(events, agent_name="desk")


def agent_tool_run() -> list[Event]:
    """A lead calls its AgentTool `research`; the inner run streams live as partial events."""
    call = FunctionCall("research", {"request": "tea"}, id="c1")
    inner = {"parent_call_id": "c1"}
    return [
        Event("lead", Content("model", [Part(function_call=call)])),
        Event("research", Content.model("Looking "), partial=True, metadata=inner),
        Event("research", Content.model("it up"), partial=True, metadata=inner),
        Event("research", Content.model("Looking it up"), partial=True, metadata=inner),  # the turn, complete
        Event(
            "research",
            Content("model", [Part(function_call=FunctionCall("search", {"q": "tea"}))]),
            partial=True,
            metadata=inner,
        ),
        Event(
            "research",
            Content.model(f"Tea is old {SCRIPT_PROBE}"),
            partial=True,
            metadata=inner,
        ),
        Event(
            "lead",
            Content(
                "tool",
                [Part(function_response=FunctionResponse("research", {"result": "Tea is old"}, id="c1"))],
            ),
        ),
        Event("lead", Content.model("Done: tea is old.")),
    ]


def test_agent_tool_internals_show_inside_its_card_never_as_the_parents_text() -> None:
    state = folded(agent_tool_run(), "lead")
    (card,) = [i for i in state["items"] if i["k"] == "tool"]
    assert card["inner"] == [
        ["research", "Looking it up"],
        ["research", "🔧 search"],
        ["research", f"Tea is old {SCRIPT_PROBE}"],
    ]
    assert card["status"] == "ok"
    assert [i["text"] for i in state["items"] if i["k"] == "text"] == ["Done: tea is old."]
    assert lanes(state) == [], "inner events open no lane: they are the tool's"
    html = state_html(state)
    assert_safe_html(html)
    assert SCRIPT_PROBE not in html and "research:</span>" in html
    assert "    » research: 🔧 search" in state_text(state)


def test_the_live_view_streams_inner_events_into_the_card() -> None:
    transcript = Transcript(agent_name="lead", track=True)
    events = agent_tool_run()
    for event in events[:3]:
        transcript.add(event)
    ops = transcript.take_ops()
    assert ops[-1] == ["u", 0, {"inner": [["research", "Looking it up"]]}], "each inner chunk updates the card at once"


GRAPH = layout(
    agent_graph(
        SequentialAgent(
            name="pipeline",
            sub_agents=[LlmAgent(name=n, model=ScriptedModel(["ok"])) for n in ("research", "writer")],
        )
    )
)


def test_the_running_agent_is_the_latest_lanes_or_the_one_behind_a_running_agent_tool() -> None:
    transcript = Transcript(agent_name="lead")
    assert active_agent(transcript.state()) == "lead"
    events = agent_tool_run()
    for event in events[:3]:
        transcript.add(event)
    assert active_agent(transcript.state()) == "research", "the AgentTool's agent, while its card runs"
    for event in events[3:]:
        transcript.add(event)
    assert active_agent(transcript.state()) == "lead", "its card settled: the lead again"
    for event in pipeline_run():
        transcript.add(event)
    assert active_agent(transcript.state()) == "writer"
    transcript.finish()
    assert active_agent(transcript.state()) is None, "nothing runs once the run is over"


def test_the_live_graph_marks_the_running_agent() -> None:
    events = [*pipeline_run(), *agent_tool_run()[:3]]
    transcript = Transcript(agent_name="pipeline", track=True, graph=GRAPH)
    diff = LiveDiff(transcript, LiveTrace("pipeline"))
    marked: list[list[str]] = []
    for event in events:
        transcript.add(event)
        for op in diff.take():
            if isinstance(op, Replace) and op.target == "graph":
                marked.append(re.findall(r'class="adk-node adk-active" data-agent="([^"]+)"', op.html))
    # research, writer, the lead (not in this graph: nothing marked), its AgentTool's research
    assert marked == [["research"], ["writer"], [], ["research"]], marked
    saved = graph_svg(GRAPH, active="writer")
    assert 'class="adk-node adk-active" data-agent="writer"' in saved


# -- the graph -------------------------------------------------------------------------------
def get_weather(city: str) -> dict:
    """The weather in a city."""
    return {"city": city}


def weather_agent() -> LlmAgent:
    return LlmAgent(
        name="weather_bot",
        model=ScriptedModel(["ok"]),
        tools=[get_weather],
        toolsets=[BasicToolset(f"odd {SCRIPT_PROBE} & co", [])],
    )


def test_graph_svg_is_well_formed_and_escapes_every_label() -> None:
    svg = graph_svg(layout(agent_graph(weather_agent())), active="weather_bot")
    root = ET.fromstring(svg)  # well-formed XML, or this raises
    assert root.tag == f"{SVG}svg"
    labels = [t.text for t in root.iter(f"{SVG}text")]
    assert "weather_bot" in labels and "get_weather" in labels
    assert SCRIPT_PROBE not in svg and f"odd {SCRIPT_PROBE} & co" in [t.text for t in root.iter(f"{SVG}title")][2]
    assert not [e for e in root.iter() if e.tag.endswith("script") or e.tag.endswith("foreignObject")]
    active = [g for g in root.iter(f"{SVG}g") if "adk-active" in (g.get("class") or "")]
    assert [g.get("data-agent") for g in active] == ["weather_bot"]
    assert "adk-active" not in graph_svg(layout(agent_graph(weather_agent())))


def test_graph_layout_puts_children_below_their_parent() -> None:
    lay = layout(agent_graph(weather_agent()))
    at = {n["id"]: n for n in lay["nodes"]}
    root, tool = at["agent:weather_bot"], at["tool:weather_bot/get_weather"]
    assert tool["y"] > root["y"] and root["x"] + lay["node_w"] <= lay["width"]
    assert [e["kind"] for e in lay["edges"]] == ["tool", "tool"]


def test_mermaid_text_names_every_node_and_keeps_labels_inert() -> None:
    text = graph_mermaid(agent_graph(weather_agent()))
    lines = text.splitlines()
    assert lines[0] == "flowchart TD"
    assert '    n0("weather_bot (llm)")' in lines and '    n1["get_weather (tool)"]' in lines
    assert "    n0 --> n1" in lines
    assert "<" not in text and "&" not in text.replace("#38;", ""), "every other character as a #code; entity"


def team() -> LlmAgent:
    """A lead with a coordinator under it (two specialists, one with a tool) and a pipeline as a tool."""
    m = ScriptedModel(["ok"])
    billing = LlmAgent(name="billing", model=m, tools=[get_weather])
    support = LlmAgent(name="support", model=m, disallow_transfer_to_parent=True)
    desk = LlmAgent(name="desk", model=m, sub_agents=[billing, support])
    writer = LlmAgent(name="writer", model=m)
    pipeline = SequentialAgent(name="pipeline", sub_agents=[writer])
    return LlmAgent(name="lead", model=m, sub_agents=[desk], tools=[AgentTool(pipeline)])


def test_a_whole_tree_is_drawn_layer_by_layer_without_overlaps() -> None:
    graph = agent_graph(team())
    kinds = sorted((e.source.split(":")[1], e.target.split(":")[1], e.kind) for e in graph.edges)
    assert ("lead", "pipeline", "agent_tool") in kinds and (
        "pipeline",
        "writer",
        "tree",
    ) in kinds
    assert ("billing", "billing/get_weather", "tool") in kinds
    transfers = {(a, b) for a, b, k in kinds if k == "transfer"}
    assert transfers == {
        ("lead", "desk"),
        ("desk", "lead"),
        ("desk", "billing"),
        ("billing", "desk"),
        ("desk", "support"),
    }, "support may not hand back (disallow_transfer_to_parent)"
    lay = layout(graph)
    by_y: dict[int, list[int]] = {}
    for n in lay["nodes"]:
        by_y.setdefault(n["y"], []).append(n["x"])
    assert len(by_y) == 4, "lead; desk, pipeline; billing, support, writer; get_weather"
    for xs in by_y.values():
        xs.sort()
        assert all(b - a >= lay["node_w"] for a, b in pairwise(xs)), xs
    assert all(0 <= n["x"] <= lay["width"] - lay["node_w"] for n in lay["nodes"])
    assert all(0 <= n["y"] <= lay["height"] - lay["node_h"] for n in lay["nodes"])
    svg = ET.fromstring(graph_svg(lay))
    dashes = sorted(p.get("stroke-dasharray", "solid") for p in svg.iter(f"{SVG}path") if p.get("class"))
    assert dashes == ["1,3", *["5,4"] * 5, *["solid"] * 5], "the agent tool dotted, transfers dashed"
    mermaid = graph_mermaid(graph)
    assert "-- AgentTool -->" in mermaid and mermaid.count("-. transfer .->") == 5
