"""Workflow agents: run sub-agents in order, side by side, in a loop, or once per item of a list.

    pipeline = SequentialAgent(name="pipeline", sub_agents=[research, writer])
    both = ParallelAgent(name="both", sub_agents=[pros, cons])
    refine = LoopAgent(name="refine", sub_agents=[critic, reviser], max_iterations=3)
    each = MapAgent(name="each", sub_agent=summarize, items_key="docs", output_key="summaries")

The seed's form works too: `LoopAgent.new("refine", [critic, reviser]).with_max_iterations(3)`.
None of them calls a model; each runs its children through `Agent.invoke`.

Concurrent branches (ParallelAgent, MapAgent) each get a branch of their own ("both.pros"):
their models see the history up to the fork plus their own branch. A branch waits until each
of its events is stored before it goes on, as a lone agent does, so its next model call sees
it; the other branches run meanwhile. Each branch reads a list of only the events it may see
(`_forked`), so a branch's model call costs the same however many siblings it has.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Iterator, Sequence
from contextlib import aclosing, nullcontext, suppress
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Self

from ..core.errors import AdkError
from ..core.events import Event, EventActions
from ..core.session import Session
from .base import Agent, Callbacks, check_agent_name
from .callbacks import CallbackChain
from .history import in_branch

if TYPE_CHECKING:
    from ..core.context import InvocationContext

__all__ = ["ITEM_KEY", "LoopAgent", "MapAgent", "ParallelAgent", "SequentialAgent"]

ITEM_KEY = "temp:item"  # where a MapAgent's branch finds its item
_ENDED_LOOP = "ended_loop"  # metadata: the loop an escalation ended (outer loops go on)


class _Workflow(Agent):
    """What every workflow agent shares: a name, a description, children, agent callbacks."""

    def __init__(
        self,
        *,
        name: str,
        sub_agents: Sequence[Agent] = (),
        description: str = "",
        before_agent_callback: Callbacks = None,
        after_agent_callback: Callbacks = None,
    ) -> None:
        check_agent_name(type(self).__name__, name)
        self.name = name
        self.description = description
        self.before_agent_callback = CallbackChain(before_agent_callback)
        self.after_agent_callback = CallbackChain(after_agent_callback)
        self.sub_agents = self._adopt(sub_agents)

    @classmethod
    def new(cls, name: str, sub_agents: Sequence[Agent] = ()) -> Self:
        """The seed's constructor: `SequentialAgent.new("pipeline", [research, writer])`."""
        return cls(name=name, sub_agents=sub_agents)

    def with_description(self, description: str) -> Self:
        self.description = description
        return self

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, sub_agents={[a.name for a in self.sub_agents]!r})"


class SequentialAgent(_Workflow):
    """Runs its sub-agents one after another; each sees what the ones before it did."""

    async def run_invocation(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        for agent in self.sub_agents:
            async with aclosing(agent.invoke(ctx)) as events:
                async for event in events:
                    yield event


class LoopAgent(_Workflow):
    """Runs its sub-agents in order, again and again: `max_iterations` times (None: no limit), or
    until one escalates (`exit_loop`). An escalation ends this loop only: an enclosing loop goes on.
    """

    def __init__(self, *, max_iterations: int | None = None, **options: Any) -> None:
        super().__init__(**options)
        self.max_iterations = _checked_max_iterations(self.name, max_iterations)

    def with_max_iterations(self, max_iterations: int) -> Self:
        self.max_iterations = _checked_max_iterations(self.name, max_iterations)
        return self

    async def run_invocation(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        for _ in _rounds(self.max_iterations):
            for agent in self.sub_agents:
                escalated = False
                async with aclosing(agent.invoke(ctx)) as events:
                    async for event in events:
                        if not event.partial and event.actions.escalate and _ENDED_LOOP not in event.metadata:
                            # this loop takes it; outer ones do not
                            event.metadata[_ENDED_LOOP] = self.name
                            escalated = True
                        yield event
                if escalated:
                    return


class ParallelAgent(_Workflow):
    """Runs its sub-agents at the same time, each in its own branch ("both.pros").

    State is the one session state: when two branches write the same key the last write wins,
    and one warning event names the key and both branches.
    """

    async def run_invocation(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        branches = [(agent, _forked(ctx, _branch(ctx, self.name, agent.name))) for agent in self.sub_agents]
        writers: dict[str, str] = {}
        warned: set[str] = set()
        async with aclosing(run_concurrently(branches)) as events:
            async for event in events:
                yield event
                if event.partial or not event.actions.state_delta:
                    continue
                for key in event.actions.state_delta:
                    first = writers.setdefault(key, event.branch)
                    if first != event.branch and key not in warned:
                        warned.add(key)
                        yield _warning(
                            self,
                            ctx,
                            f"Branches {first!r} and {event.branch!r} both wrote the state key "
                            f"{key!r}; the last write wins. Give each branch its own output_key.",
                        )


class MapAgent(Agent):
    """Runs `sub_agent` once per item of the list `state[items_key]`, each in its own branch with
    the item in `temp:item`, at most `max_concurrency` at a time (None: all at once); the answers,
    in the items' order, go to `state[output_key]`.
    """

    def __init__(
        self,
        *,
        name: str,
        sub_agent: Agent,
        items_key: str,
        output_key: str,
        max_concurrency: int | None = None,
        description: str = "",
        before_agent_callback: Callbacks = None,
        after_agent_callback: Callbacks = None,
    ) -> None:
        check_agent_name("MapAgent", name)
        if max_concurrency is not None and max_concurrency < 1:
            raise AdkError.config(
                f"MapAgent {name!r}: max_concurrency must be at least 1, got {max_concurrency}.",
                code="invalid_agent_config",
            )
        self.name = name
        self.description = description
        self.items_key = items_key
        self.output_key = output_key
        self.max_concurrency = max_concurrency
        self.before_agent_callback = CallbackChain(before_agent_callback)
        self.after_agent_callback = CallbackChain(after_agent_callback)
        self.sub_agents = self._adopt([sub_agent])

    @property
    def sub_agent(self) -> Agent:
        return self.sub_agents[0]

    def __repr__(self) -> str:
        return f"MapAgent(name={self.name!r}, sub_agent={self.sub_agent.name!r}, items_key={self.items_key!r})"

    async def run_invocation(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        items = ctx.session.state.get(self.items_key)
        if not isinstance(items, list | tuple):
            raise AdkError.agent(
                f"MapAgent {self.name!r} maps over state[{self.items_key!r}], which is "
                f"{'missing' if items is None else f'a {type(items).__name__}'}: set it to a list first.",
                code="invalid_map_items",
                category="invalid_input",
            )
        branches = [
            (self.sub_agent, _forked(ctx, _branch(ctx, self.name, str(i)), _ItemState(ctx.session.state, item)))
            for i, item in enumerate(items)
        ]
        answers: dict[str, Any] = {}
        depth = len(branches[0][1].branch.split(".")) if branches else 0
        async with aclosing(run_concurrently(branches, self.max_concurrency)) as events:
            async for event in events:
                if not event.partial and event.content is not None and event.is_final_response():
                    # the item's branch, also for answers from deeper inside a workflow sub-agent
                    item_branch = ".".join(event.branch.split(".")[:depth])
                    answers[item_branch] = event.output if event.output is not None else event.text
                yield event
        results = [answers.get(bctx.branch) for _, bctx in branches]
        yield Event(
            self.name,
            None,
            ctx.invocation_id,
            branch=ctx.branch,
            actions=EventActions(state_delta={self.output_key: results}),
        )


async def run_concurrently(
    branches: Sequence[tuple[Agent, InvocationContext]], limit: int | None = None
) -> AsyncGenerator[Event, None]:
    """The events of every branch as they come, each branch waiting until its event was taken
    (stored, by then), which then joins the branch's own list of events (see `_forked`).

    Closing this stream (a cancelled run) cancels every branch and waits for them; a branch's
    failure cancels the others and is raised here.
    """
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[Event, asyncio.Future[None]] | asyncio.Task[None]] = asyncio.Queue()
    gate = asyncio.Semaphore(limit) if limit is not None else None

    async def run(agent: Agent, ctx: InvocationContext) -> None:
        async with (
            gate if gate is not None else nullcontext(),
            aclosing(agent.invoke(ctx)) as events,
        ):
            async for event in events:
                taken = loop.create_future()
                queue.put_nowait((event, taken))
                await taken
                if not event.partial and event.branch == ctx.branch:  # a sub-branch's events are not its
                    ctx.session.events.append(event)

    tasks = [asyncio.create_task(run(agent, ctx)) for agent, ctx in branches]
    for task in tasks:
        task.add_done_callback(queue.put_nowait)
    running = len(tasks)
    try:
        while running:
            item = await queue.get()
            if isinstance(item, asyncio.Task):
                running -= 1
                error = None if item.cancelled() else item.exception()
                if error is not None:
                    raise error
                continue
            event, taken = item
            yield event
            taken.set_result(None)
    finally:
        for task in tasks:
            task.cancel()
        with suppress(asyncio.CancelledError):
            await asyncio.gather(*tasks, return_exceptions=True)


class _ItemState(dict[str, Any]):
    """One MapAgent branch's view of the session state: its own `temp:item`, the rest shared."""

    def __init__(self, shared: dict[str, Any], item: Any) -> None:
        super().__init__()
        self._shared = shared
        self._item = item

    def __getitem__(self, key: str) -> Any:
        return self._item if key == ITEM_KEY else self._shared[key]

    def __setitem__(self, key: str, value: Any) -> None:
        if key == ITEM_KEY:
            self._item = value
        else:
            self._shared[key] = value

    def __delitem__(self, key: str) -> None:
        del self._shared[key]

    def __contains__(self, key: object) -> bool:
        return key == ITEM_KEY or key in self._shared

    def __iter__(self) -> Iterator[str]:
        yield ITEM_KEY
        yield from (k for k in self._shared if k != ITEM_KEY)

    def __len__(self) -> int:
        return len(self._shared) + (ITEM_KEY not in self._shared)

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def keys(self) -> Any:
        return list(self)

    def items(self) -> Any:
        return [(k, self[k]) for k in self]

    def values(self) -> Any:
        return [self[k] for k in self]

    def update(self, *args: Any, **kwargs: Any) -> None:
        for key, value in dict(*args, **kwargs).items():
            self[key] = value


def _forked(ctx: InvocationContext, branch: str, state: dict[str, Any] | None = None) -> InvocationContext:
    """`ctx` for the concurrent branch `branch`: the session's state (or `state`, a view of it), and
    a list of its own of the events the branch may see, which grows by the branch's own events.

    Read from the whole session, every model call of every branch went over all its siblings'
    events too: N branches cost N² (a MapAgent of 4x the items took 23-30x the time).
    """
    shared = ctx.session
    visible = [event for event in shared.events if in_branch(event.branch, branch)]
    session = Session(shared.id, shared.app_name, shared.user_id, shared.state if state is None else state, visible)
    return replace(ctx, session=session, branch=branch)


def _branch(ctx: InvocationContext, parent: str, child: str) -> str:
    return f"{ctx.branch}.{child}" if ctx.branch else f"{parent}.{child}"


def _warning(agent: Agent, ctx: InvocationContext, message: str) -> Event:
    return Event(
        agent.name,
        None,
        ctx.invocation_id,
        branch=ctx.branch,
        metadata={"kind": "warning", "warning": message},
    )


def _rounds(limit: int | None) -> Iterator[int]:
    i = 0
    while limit is None or i < limit:
        yield i
        i += 1


def _checked_max_iterations(name: str, max_iterations: int | None) -> int | None:
    if max_iterations is not None and max_iterations < 1:
        raise AdkError.config(
            f"LoopAgent {name!r}: max_iterations must be at least 1 (or None), got {max_iterations}.",
            code="invalid_agent_config",
        )
    return max_iterations
