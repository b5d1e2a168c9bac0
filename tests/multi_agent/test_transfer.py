"""transfer_to_agent: offered automatically, scoped, sticky, and forgiving of unknown names."""

from __future__ import annotations

from adk_notebook import FunctionCall, LlmAgent, ScriptedModel, SequentialAgent

from .helpers import run, texts


def _declared(model: ScriptedModel, call: int = 0) -> list[str]:
    return [d.name for d in model.requests[call].tools]


async def test_a_transfer_runs_the_target_at_once_and_it_keeps_the_conversation() -> None:
    desk_model = ScriptedModel([FunctionCall("transfer_to_agent", {"agent_name": "billing"})])
    billing_model = ScriptedModel(["Your invoice is paid.", "The refund takes 3 days."])
    billing = LlmAgent(name="billing", model=billing_model, description="Invoices and refunds")
    support = LlmAgent(name="support", model=ScriptedModel([]), description="Technical problems")
    desk = LlmAgent(name="desk", model=desk_model, sub_agents=[billing, support])

    events, runner, sid = await run(desk, "Is my invoice paid?")
    assert "transfer_to_agent" in _declared(desk_model)
    transfer_tool = next(d for d in desk_model.requests[0].tools if d.name == "transfer_to_agent")
    assert "billing: Invoices and refunds" in transfer_tool.description
    assert texts(events)[-1] == ("billing", "Your invoice is paid.")
    assert any(e.actions.transfer_to_agent == "billing" for e in events if not e.partial)
    # the next message goes straight to billing, the agent that answered last
    events, _, _ = await run(desk, "And my refund?", runner=runner, session_id=sid)
    assert texts(events)[-1] == ("billing", "The refund takes 3 days.") and len(desk_model.requests) == 1


async def test_an_unknown_target_is_an_error_the_model_reads_and_the_run_goes_on() -> None:
    desk_model = ScriptedModel(
        [
            FunctionCall("transfer_to_agent", {"agent_name": "sales"}),
            "Sorry, no sales desk.",
        ]
    )
    desk = LlmAgent(
        name="desk",
        model=desk_model,
        sub_agents=[LlmAgent(name="billing", model=ScriptedModel([]))],
    )
    events, _, _ = await run(desk, "Buy?")
    response = next(r for e in events if not e.partial for r in e.function_responses())
    assert response.response["code"] == "unknown_agent" and "billing" in response.response["error"]
    assert texts(events)[-1] == ("desk", "Sorry, no sales desk.")


async def test_children_may_go_back_to_their_parent_or_a_peer_unless_disallowed() -> None:
    billing_model = ScriptedModel(["hi"])
    billing = LlmAgent(name="billing", model=billing_model)
    support_model = ScriptedModel(["hi"])
    support = LlmAgent(
        name="support",
        model=support_model,
        disallow_transfer_to_parent=True,
        disallow_transfer_to_peers=True,
    )
    desk = LlmAgent(name="desk", model=ScriptedModel([]), sub_agents=[billing, support])
    assert set(await billing.resolve_tools(_ctx(desk))) == {"transfer_to_agent"}
    tool = (await billing.resolve_tools(_ctx(desk)))["transfer_to_agent"]
    assert set(tool.targets) == {"desk", "support"}
    assert await support.resolve_tools(_ctx(desk)) == {}  # nowhere to go: no tool offered
    assert await LlmAgent(name="alone", model=ScriptedModel([])).resolve_tools(_ctx(desk)) == {}


async def test_agents_in_a_workflow_are_not_offered_their_peers() -> None:
    first_model = ScriptedModel(["one", "one again"])
    first = LlmAgent(name="first", model=first_model)
    second = LlmAgent(name="second", model=ScriptedModel(["two", "two again"]))
    pipeline = SequentialAgent(name="pipeline", sub_agents=[first, second])
    events, runner, sid = await run(pipeline, "go")
    assert first_model.requests[0].tools == []
    # a workflow root always takes the next message itself
    events, _, _ = await run(pipeline, "again", runner=runner, session_id=sid)
    assert texts(events) == [
        ("user", "again"),
        ("first", "one again"),
        ("second", "two again"),
    ]


def _ctx(agent: LlmAgent):
    from adk_notebook import Content, InvocationContext, ReadonlyContext, Session

    return ReadonlyContext(
        InvocationContext(
            session=Session("s", "app", "u"),
            agent_name=agent.name,
            user_content=Content.user("x"),
        )
    )


async def test_a_transfer_inside_a_workflow_a_transfer_reached_runs_there_and_the_workflow_goes_on() -> None:
    """desk hands over to a pipeline; its first agent hands over to its own helper; then the pipeline's next agent runs."""
    helper = LlmAgent(name="helper", model=ScriptedModel(["helped"]))
    first = LlmAgent(
        name="first",
        model=ScriptedModel([FunctionCall("transfer_to_agent", {"agent_name": "helper"})]),
        sub_agents=[helper],
    )
    second = LlmAgent(name="second", model=ScriptedModel(["second done"]))
    pipeline = SequentialAgent(name="pipeline", sub_agents=[first, second], description="Does it in two steps")
    desk = LlmAgent(
        name="desk",
        model=ScriptedModel([FunctionCall("transfer_to_agent", {"agent_name": "pipeline"})]),
        sub_agents=[pipeline],
    )
    events, _, _ = await run(desk, "go")
    transfers = [
        (e.author, e.actions.transfer_to_agent) for e in events if not e.partial and e.actions.transfer_to_agent
    ]
    assert transfers == [("desk", "pipeline"), ("first", "helper")]
    assert texts(events)[1:] == [("helper", "helped"), ("second", "second done")]
