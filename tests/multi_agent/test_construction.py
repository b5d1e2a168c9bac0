"""Building agent trees: parents, unique names, validation, the seed-style builders."""

from __future__ import annotations

import pytest

from adk_notebook import (
    AdkError,
    AgentTool,
    LlmAgent,
    LoopAgent,
    MapAgent,
    ParallelAgent,
    ScriptedModel,
    SequentialAgent,
)


def llm(name: str, *script: object) -> LlmAgent:
    return LlmAgent(
        name=name,
        model=ScriptedModel(list(script) or ["ok"]),
        description=f"the {name} agent",
    )


def test_children_know_their_parent_and_the_root() -> None:
    a, b = llm("a"), llm("b")
    pipeline = SequentialAgent(name="pipeline", sub_agents=[a, b])
    assert pipeline.sub_agents == [a, b]
    assert a.parent is pipeline and b.parent is pipeline and pipeline.parent is None
    desk = LlmAgent(name="desk", model=ScriptedModel([]), sub_agents=[pipeline])
    assert a.root_agent is desk
    assert desk.find_agent("b") is b and desk.find_agent("nobody") is None


def test_an_agent_cannot_have_two_parents() -> None:
    a = llm("a")
    SequentialAgent(name="first", sub_agents=[a])
    with pytest.raises(AdkError) as caught:
        ParallelAgent(name="second", sub_agents=[a])
    assert caught.value.code == "agent_has_parent"
    assert "'first'" in str(caught.value) and "'second'" in str(caught.value)


def test_names_are_unique_in_a_tree_even_across_levels() -> None:
    inner = SequentialAgent(name="inner", sub_agents=[llm("writer")])
    with pytest.raises(AdkError) as caught:
        SequentialAgent(name="outer", sub_agents=[inner, llm("writer")])
    assert caught.value.code == "duplicate_agent_name" and "'writer'" in str(caught.value)
    with pytest.raises(AdkError) as caught:
        SequentialAgent(name="writer", sub_agents=[llm("writer")])
    assert caught.value.code == "duplicate_agent_name"


def test_a_failed_construction_adopts_nobody() -> None:
    a = llm("a")
    with pytest.raises(AdkError):
        SequentialAgent(name="pipeline", sub_agents=[a, llm("a")])
    assert a.parent is None
    SequentialAgent(name="pipeline", sub_agents=[a])  # still free to join a tree


@pytest.mark.parametrize(
    "make",
    [
        lambda: SequentialAgent(name="not a name"),
        lambda: LoopAgent(name="loop", max_iterations=0),
        lambda: MapAgent(
            name="each",
            sub_agent=llm("x"),
            items_key="k",
            output_key="o",
            max_concurrency=0,
        ),
        lambda: SequentialAgent(name="pipeline", sub_agents=["research"]),  # type: ignore[list-item]
    ],
)
def test_bad_settings_are_clear_config_errors(make) -> None:
    with pytest.raises(AdkError) as caught:
        make()
    assert caught.value.code == "invalid_agent_config"


def test_the_seed_style_builders_make_the_same_agents() -> None:
    loop = LoopAgent.new("refine", [llm("critic"), llm("reviser")]).with_max_iterations(3).with_description("polish")
    assert (loop.name, loop.max_iterations, loop.description) == ("refine", 3, "polish")
    assert [a.name for a in loop.sub_agents] == ["critic", "reviser"]
    both = ParallelAgent.new("both", [llm("pros"), llm("cons")])
    assert isinstance(both, ParallelAgent) and both.sub_agents[0].parent is both
    assert SequentialAgent.new("pipeline", [llm("r")]).sub_agents[0].name == "r"


def test_an_agent_tool_is_named_and_described_after_its_agent() -> None:
    research = llm("research")
    declaration = AgentTool(research).declaration()
    assert declaration.name == "research" and declaration.description == "the research agent"
    assert declaration.parameters["required"] == ["request"]
    assert research.parent is None  # an agent used as a tool is not adopted
