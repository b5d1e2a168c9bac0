"""The Agent interface: a name, a description, sub-agents, and a stream of events per invocation.

Every agent of a run, root or child, LLM or workflow, runs through `Agent.invoke`: the runner
calls it for the root and every parent calls it for a child, so what must happen around any
agent (its before/after-agent callbacks, its branch on its events) happens in one place.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, Iterator, Mapping, Sequence
from contextlib import aclosing
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar

from .._sync import run_sync
from ..core.content import Content
from ..core.context import CallbackContext
from ..core.errors import AdkError
from ..core.events import Event, EventActions
from ..core.run_config import RunConfig
from ..plugins.base import plugin_chain
from .callbacks import Callback, CallbackChain

if TYPE_CHECKING:
    from ..core.context import InvocationContext
    from ..core.trace import ModelPrice
    from ..plugins.base import Plugin
    from ..runner import RunResult
    from ..sessions.base import BaseSessionService

__all__ = ["Agent", "Callbacks"]

Callbacks = Callback | Sequence[Callback] | None


class Agent(ABC):
    """Base of every agent. `invoke` is the runtime's entry; `run`/`run_async` are the user's.

    A subclass implements `run_invocation` (its own steps) and runs any child through the
    child's `invoke`. An agent has at most one `parent`; names are unique within a tree.
    """

    name: str
    description: str = ""
    sub_agents: Sequence[Agent] = ()
    parent: Agent | None = None
    transfers_by_model: ClassVar[bool] = False  # its model may transfer: its children may transfer to peers
    before_agent_callback: CallbackChain = CallbackChain()
    after_agent_callback: CallbackChain = CallbackChain()
    _sessions: BaseSessionService | None = None  # made on first `run_async` without a service

    @abstractmethod
    def run_invocation(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        """Yield the events of one invocation; the runner stores each complete one before resuming."""

    async def invoke(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        """Run this agent in `ctx` (a parent's context is fine): callbacks, then its own steps.

        Before-agent callbacks may answer instead of the agent; after-agent callbacks may add a
        last answer; the run's plugins' hooks come before the agent's own. Each event leaves
        marked with the branch it ran in; the invocation is an agent span in the run's trace.
        """
        span = ctx.span.child(f"invoke_agent {self.name}", "agent", agent=self.name)
        ctx = replace(ctx, agent_name=self.name, span=span)
        try:
            before = plugin_chain(ctx.plugins, "before_agent_callback", self.before_agent_callback)
            if before:
                event = await self._agent_callback(before, ctx)
                if event is not None:
                    yield event
                    if event.content is not None:  # it answered for the agent
                        span.finish()
                        return
            branch = ctx.branch
            async with aclosing(self.run_invocation(ctx)) as events:
                async for event in events:
                    if branch and not event.branch:
                        event.branch = branch
                    yield event
            after = plugin_chain(ctx.plugins, "after_agent_callback", self.after_agent_callback)
            if after:
                event = await self._agent_callback(after, ctx)
                if event is not None:
                    yield event
        except BaseException as exc:
            span.finish(exc)
            raise
        span.finish()

    async def _agent_callback(self, chain: CallbackChain, ctx: InvocationContext) -> Event | None:
        """Run a before/after-agent chain; the event that records what it said or did, if anything."""
        cb_ctx = CallbackContext(ctx)
        content = _as_content(await chain(cb_ctx))
        if content is None and cb_ctx.actions == EventActions():
            return None
        return Event(
            self.name,
            content,
            ctx.invocation_id,
            actions=cb_ctx.actions,
            branch=ctx.branch,
        )

    # -- the tree ------------------------------------------------------------------------------
    def _adopt(self, sub_agents: Sequence[Agent]) -> list[Agent]:
        """Make `sub_agents` this agent's children: each has one parent, and names stay unique."""
        children = list(sub_agents)
        for child in children:
            if not isinstance(child, Agent):
                raise AdkError.config(
                    f"Agent {self.name!r}: sub_agents must be agents, got {type(child).__name__}.",
                    code="invalid_agent_config",
                )
            if child.parent is not None:
                raise AdkError.config(
                    f"Agent {child.name!r} already belongs to {child.parent.name!r}, so it cannot also be a "
                    f"sub-agent of {self.name!r}. An agent has one parent: make another agent for {self.name!r}.",
                    code="agent_has_parent",
                )
        seen: dict[str, Agent] = {self.name: self}
        for agent in (a for child in children for a in child.walk()):
            other = seen.setdefault(agent.name, agent)
            if other is not agent:
                where = "itself" if other is self else f"another agent of {self.name!r}'s tree"
                raise AdkError.config(
                    f"Agent {self.name!r}: the name {agent.name!r} is used by {where} and by a sub-agent; "
                    "names must be unique in an agent tree. Rename one of them.",
                    code="duplicate_agent_name",
                )
        for child in children:
            child.parent = self
        return children

    def walk(self) -> Iterator[Agent]:
        """This agent and all its descendants, depth first."""
        yield self
        for child in self.sub_agents:
            yield from child.walk()

    @property
    def root_agent(self) -> Agent:
        agent = self
        while agent.parent is not None:
            agent = agent.parent
        return agent

    def find_agent(self, name: str) -> Agent | None:
        """The agent called `name` in this agent's subtree, or None."""
        return next((a for a in self.walk() if a.name == name), None)

    # -- the user's entry points -----------------------------------------------------------------
    async def run_async(
        self,
        message: str | Content,
        *,
        user_id: str = "user",
        session_id: str | None = None,
        state: dict[str, Any] | None = None,
        session_service: BaseSessionService | None = None,
        plugins: Sequence[Plugin] = (),
        prices: Mapping[str, ModelPrice] | None = None,
        **run_options: Any,
    ) -> RunResult:
        """Run one message to the end and return a `RunResult` (text, events, state, usage, output, trace).

        Without `session_id` each call is a new conversation in this agent's own in-memory
        session service; pass the same `session_id` again to continue one. `plugins` and
        `prices` are the Runner's (see `Runner`).
        """
        from ..runner import Runner  # the runner sits above agents: imported when used

        service = session_service or self._default_sessions()
        runner = Runner(app_name=self.name, agent=self, session_service=service, plugins=plugins, prices=prices)
        return await runner.run_to_result(
            user_id=user_id,
            session_id=session_id,
            content=message,
            state=state,
            run_config=RunConfig(auto_create_session=True, **run_options),
        )

    def run(self, message: str | Content, **kwargs: Any) -> RunResult:
        """The blocking form of `run_async`; it also works inside a running notebook kernel."""
        return run_sync(self.run_async(message, **kwargs))

    def _default_sessions(self) -> BaseSessionService:
        if self._sessions is None:
            from ..sessions.in_memory import InMemorySessionService

            self._sessions = InMemorySessionService()
        return self._sessions


def check_agent_name(kind: str, name: str) -> None:
    if not isinstance(name, str) or not name.isidentifier():
        raise AdkError.config(
            f"{kind}: name {name!r} must be a Python identifier (letters, digits, '_'), e.g. 'weather_bot'.",
            code="invalid_agent_config",
        )


def _as_content(value: Any) -> Content | None:
    if value is None or isinstance(value, Content):
        return value
    if isinstance(value, str):
        return Content.model(value)
    raise AdkError.config(
        f"An agent callback must return Content, str or None, got {type(value).__name__}.",
        code="invalid_callback_result",
    )
