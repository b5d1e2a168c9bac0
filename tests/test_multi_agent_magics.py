"""`%%agent` for multi-agent trees in a real IPython shell: --sequential / --parallel / --loop /
--map, --sub-agents and --agent-tools on an LLM agent, each mistake as one line; `%adk graph`."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

import pytest
import test_magics
from test_magics import FakeView, fails, run

from adk_notebook import (
    LlmAgent,
    LoopAgent,
    MapAgent,
    ParallelAgent,
    ScriptedModel,
    SequentialAgent,
)
from adk_notebook.agents.agent_tool import AgentTool
from adk_notebook.notebook import get_workspace

ip, shell = test_magics.ip, test_magics.shell  # the shell fixtures of the %%agent tests


class GraphView(FakeView):
    """FakeView that also takes the agent graph a multi-agent run's view is given."""

    def __init__(self, *, graph: dict[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.graph = graph


def define(shell: Any, name: str, answers: list[Any], options: str = "") -> None:
    shell.user_ns[f"{name}_model"] = ScriptedModel(answers)
    run(shell, f"%%agent {name} --model {name}_model {options}\nYou are {name}.")


def test_sequential_pipeline_runs_each_agent_and_its_view_gets_the_graph(
    shell: Any,
) -> None:
    get_workspace(shell).view_factory = GraphView
    define(shell, "research", ["Tea is old."], "--output-key notes")
    define(shell, "writer", ["An essay on old tea."])
    card = run(shell, "%%agent pipeline --sequential research,writer\nResearch, then write.")
    pipeline = shell.user_ns["pipeline"]
    assert isinstance(pipeline, SequentialAgent) and [a.name for a in pipeline.sub_agents] == ["research", "writer"]
    assert pipeline.description == "Research, then write."
    assert card.text == "agent pipeline: sequential of research, writer"
    assert "<svg" in card.html
    result = run(shell, "%%chat pipeline\nWrite about tea.")
    assert result.text == "An essay on old tea."
    (view,) = FakeView.made
    assert [e.author for e in view.events if not e.partial and e.author != "user"] == [
        "research",
        "writer",
    ]
    assert {n["agent"] for n in view.graph["nodes"]} == {
        "pipeline",
        "research",
        "writer",
    }


def test_running_a_workflow_cell_again_redefines_it(shell: Any) -> None:
    define(shell, "a", ["x"])
    define(shell, "b", ["y"])
    run(shell, "%%agent both --parallel a,b\nA team.")
    first = shell.user_ns["both"]
    run(shell, "%%agent both --parallel a,b\nA team.")
    assert isinstance(shell.user_ns["both"], ParallelAgent) and shell.user_ns["both"] is not first
    assert shell.user_ns["a"].parent is shell.user_ns["both"]


def test_loop_and_map_options(shell: Any) -> None:
    define(shell, "critic", ["ok"])
    define(shell, "reviser", ["better"])
    run(
        shell,
        "%%agent refine --loop critic,reviser --max-iterations 3\nPolish the draft.",
    )
    refine = shell.user_ns["refine"]
    assert isinstance(refine, LoopAgent) and refine.max_iterations == 3
    define(shell, "summarise", ["short"])
    run(
        shell,
        "%%agent each --map summarise --items topics --output-key summaries --max-concurrency 2\nA team.",
    )
    each = shell.user_ns["each"]
    assert isinstance(each, MapAgent)
    assert (each.items_key, each.output_key, each.max_concurrency) == (
        "topics",
        "summaries",
        2,
    )


def test_a_map_runs_its_agent_once_per_item_each_in_its_branch(shell: Any) -> None:
    get_workspace(shell).view_factory = GraphView
    define(shell, "summarise", ["short one", "short two"])
    run(
        shell,
        "%%agent each --map summarise --items topics --output-key summaries\nSummarise each topic.",
    )
    result = run(shell, '%%chat each --state topics=\'["tea", "coffee"]\'\nSummarise them.')
    assert sorted(result.state["summaries"]) == ["short one", "short two"], "one answer per item"
    (view,) = FakeView.made
    done = [e for e in view.events if not e.partial and e.author == "summarise"]
    assert sorted(e.branch for e in done) == ["each.0", "each.1"]


def test_sub_agents_and_agent_tools_on_an_llm_agent(shell: Any) -> None:
    define(shell, "billing", ["Billing here."])
    define(shell, "support", ["Support here."])
    define(shell, "research", ["Notes."])
    shell.user_ns["desk_model"] = ScriptedModel(["Routing."])
    card = run(
        shell,
        "%%agent desk --model desk_model --sub-agents billing,support --agent-tools research\nRoute.",
    )
    desk = shell.user_ns["desk"]
    assert isinstance(desk, LlmAgent) and [a.name for a in desk.sub_agents] == [
        "billing",
        "support",
    ]
    (tool,) = desk.tools
    assert isinstance(tool, AgentTool) and tool.agent is shell.user_ns["research"]
    assert "<svg" in card.html


@pytest.mark.parametrize(
    ("cell", "says"),
    [
        (
            "%%agent p --sequential a --parallel b\nA team.",
            "choose one of --sequential, --parallel",
        ),
        (
            "%%agent p --sequential a --model m\nA team.",
            "--model is not for a sequential agent",
        ),
        (
            "%%agent p --parallel a,b --max-iterations 2\nA team.",
            "--max-iterations is not for a parallel agent",
        ),
        ("%%agent p --sequential a,ghost\nA team.", "Unknown agent 'ghost'"),
        ("%%agent p --map a,b --items xs\nA team.", "one agent runs per item, got 2"),
        ("%%agent p --map a\nA team.", "e.g. --items topics"),
        ("%%agent p --model m --items xs\nHi", "--items is for --map"),
        ("%%agent p --sequential a\nA team.", None),  # fine; then a second parent:
    ],
)
def test_mistakes_are_one_line_that_says_what_to_fix(
    shell: Any, capsys: pytest.CaptureFixture[str], cell: str, says: str | None
) -> None:
    define(shell, "a", ["x"])
    define(shell, "b", ["y"])
    shell.user_ns["m"] = ScriptedModel(["z"])
    if says is None:
        run(shell, cell)
        says = "already belongs to 'p'"
        cell = "%%agent q --sequential a\nA team."
    assert says in fails(shell, cell, capsys)


def test_adk_graph_draws_svg_and_mermaid(shell: Any, capsys: pytest.CaptureFixture[str]) -> None:
    define(shell, "pros", ["+"])
    define(shell, "cons", ["-"])
    run(shell, "%%agent both --parallel pros,cons\nA team.")
    drawn = run(shell, "%adk graph both")
    root = ET.fromstring(drawn.html)
    assert [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")][::2] == [
        "both",
        "pros",
        "cons",
    ]
    mermaid = run(shell, "%adk graph both --mermaid").text
    assert mermaid.splitlines()[:4] == [
        "flowchart TD",
        '    n0("both (parallel)")',
        '    n1("pros (llm)")',
        '    n2("cons (llm)")',
    ]
    assert "%adk graph needs a AGENT" in fails(shell, "%adk graph", capsys)
    assert "Unknown agent 'nope'" in fails(shell, "%adk graph nope", capsys)
