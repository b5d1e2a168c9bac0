"""Handing the conversation to another agent, and leaving a loop: the two built-in flow tools.

`transfer_to_agent(agent_name)` is offered to an LLM agent that has somewhere to go: its
sub-agents, its parent and its peers (when the parent is an LLM agent too, and unless
`disallow_transfer_to_parent/peers`). The tool only records `actions.transfer_to_agent`; the
agent that called it then runs the target at once, in the same invocation (`transfer`). An
unknown name is an error response the model reads, and the run goes on. Transfers do not nest
(agents handing the conversation back and forth would grow the stack until RecursionError):
the first agent of a chain runs each target in turn, and `RunConfig(max_transfers=)` bounds it.

`exit_loop` sets `actions.escalate`: the innermost `LoopAgent` around the caller stops.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..core.errors import AdkError
from ..tools.base import Tool
from .base import Agent

if TYPE_CHECKING:
    from ..core.context import InvocationContext, ToolContext
    from ..core.events import Event

__all__ = [
    "TRANSFER_TOOL_NAME",
    "ExitLoopTool",
    "Handoff",
    "TransferToAgentTool",
    "exit_loop",
    "transfer",
    "transfer_targets",
]

TRANSFER_TOOL_NAME = "transfer_to_agent"


def transfer_targets(agent: Agent) -> dict[str, Agent]:
    """The agents `agent` may hand the conversation to, by name."""
    targets = {child.name: child for child in agent.sub_agents}
    parent = agent.parent
    if parent is not None and parent.transfers_by_model:
        if not getattr(agent, "disallow_transfer_to_parent", False):
            targets[parent.name] = parent
        if not getattr(agent, "disallow_transfer_to_peers", False):
            targets.update((peer.name, peer) for peer in parent.sub_agents if peer is not agent)
    return targets


class TransferToAgentTool(Tool):
    """`transfer_to_agent(agent_name)`: the model hands the conversation to another agent."""

    def __init__(self, targets: dict[str, Agent]) -> None:
        self.name = TRANSFER_TOOL_NAME
        self.targets = targets
        listing = "\n".join(f"- {name}: {a.description or 'no description'}" for name, a in targets.items())
        self.description = (
            "Hand the conversation to another agent when it is better suited to answer. "
            f"The agents you may transfer to:\n{listing}"
        )

    @property
    def parameters_schema(self) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {
                "agent_name": {
                    "type": "string",
                    "description": "The name of the agent to transfer to.",
                }
            },
            "required": ["agent_name"],
        }

    async def execute(self, ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
        name = args["agent_name"]
        if name not in self.targets:
            return {
                "error": f"There is no agent {name!r} to transfer to. Choose one of: {', '.join(self.targets)}.",
                "code": "unknown_agent",
            }
        ctx.actions.transfer_to_agent = name
        return {"transferred_to": name}


@dataclass(slots=True, eq=False)
class Handoff:
    """A chain of transfers in progress: the agent it runs now, and where that one handed over."""

    running: Agent
    next: Agent | None = None


async def transfer(source: Agent, target_name: str, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
    """Run the agent `source` transferred to, at once and in the same invocation.

    When a chain of transfers runs `source` (it was itself a target), `source` only tells the
    chain where to go, and its turn ends; otherwise `source` starts a chain here and runs the
    targets one after another, so the stack stays as deep however often the agents hand over.
    """
    target = transfer_targets(source).get(target_name)
    if target is None:  # set by hand in a callback: the same check the tool makes
        raise AdkError.agent(
            f"Agent {source.name!r} transferred to {target_name!r}, which is not one of its transfer targets "
            f"({', '.join(transfer_targets(source)) or 'none'}).",
            code="unknown_agent",
            category="invalid_input",
        )
    ctx.count_transfer(source.name, target.name)
    if ctx.handoff is not None and ctx.handoff.running is source:
        ctx.handoff.next = target
        return
    chain = Handoff(target)
    while True:
        async with aclosing(chain.running.invoke(replace(ctx, handoff=chain))) as events:
            async for event in events:
                yield event
        if chain.next is None:
            return
        chain.running, chain.next = chain.next, None


class ExitLoopTool(Tool):
    """`exit_loop()`: the model says the loop's task is done; the innermost LoopAgent stops."""

    name = "exit_loop"
    description = "Call this only when the task is done, to stop the loop you run in."

    @property
    def parameters_schema(self) -> dict[str, Any]:
        return {"type": "object", "properties": {}}

    async def execute(self, ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
        ctx.actions.escalate = True
        ctx.actions.skip_summarization = True  # the caller ends its turn here: nothing to summarize
        return {}


exit_loop = ExitLoopTool()
