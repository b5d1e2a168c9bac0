"""The Runner: runs an agent for one user message against a session, and stores what happens.

It loads the session, records the user's message, relays the agent's events (storing each
complete one before the agent continues, so the next model call sees it) and clears the
invocation's `temp:` state at the end.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from contextlib import aclosing, suppress
from dataclasses import dataclass, field
from types import AsyncGeneratorType
from typing import TYPE_CHECKING, Any, Self, cast

from ._deadline import within_time_limit
from ._sync import run_sync
from .core.content import Content, FunctionResponse, Part
from .core.context import InvocationContext
from .core.errors import AdkError
from .core.events import Event, Usage, new_id
from .core.run_config import RunConfig
from .core.session import Session
from .core.trace import ModelPrice, Span, total_up
from .plugins.base import Plugin
from .sessions.base import BaseSessionService, session_not_found
from .sessions.in_memory import InMemorySessionService
from .sessions.leases import run_marker

if TYPE_CHECKING:
    from .agents.base import Agent
    from .artifacts import BaseArtifactService
    from .memory import BaseMemoryService

__all__ = ["RunResult", "RunStream", "Runner"]


@dataclass(slots=True)
class RunResult:
    """What one run produced."""

    events: list[Event]
    session_id: str
    state: dict[str, Any]
    output: Any = None
    usage: Usage = field(default_factory=Usage)
    trace: Span | None = None  # the run's span tree: run → agent → model / tool calls

    @classmethod
    def from_events(cls, events: list[Event], session_id: str, state: dict[str, Any], **fields: Any) -> Self:
        """Collect a run's events: token usage summed, the output-schema value of the answer."""
        usage = Usage()
        output = None
        for event in events:
            if not event.partial:
                if event.usage is not None:
                    usage = usage + event.usage
                if event.output is not None:
                    output = event.output
        return cls(events, session_id, state, output=output, usage=usage, **fields)

    @property
    def text(self) -> str:
        """The final answer of the agent that answered ("" when the run ended without one).

        An event after the answer that carries only actions (an after-agent callback writing
        state) does not replace it, and the user's own message is never taken for it: a run a
        tool ended before the model answered has no answer.
        """
        for event in reversed(self.events):
            if event.partial:
                continue
            if event.author == "user":
                break  # this run's message: nothing before it answers this run
            content = event.content
            if content is not None and content.role != "user" and event.is_final_response():
                return event.text
        return ""

    @property
    def model(self) -> str | None:
        """Who answered: the model of the run's last model turn ("openai:gpt-4o-mini", and never
        "auto"), None when no model was called."""
        return self._last_model_metadata("model")

    @property
    def finish_reason(self) -> str | None:
        """Why the last model turn ended: "stop", "tool_calls", "max_tokens" (cut by the token limit), ..."""
        return self._last_model_metadata("finish_reason")

    def _last_model_metadata(self, key: str) -> Any:
        for event in reversed(self.events):
            if not event.partial and event.author != "user" and "model" in event.metadata:
                return event.metadata.get(key)
        return None

    def __repr__(self) -> str:
        return f"RunResult(text={self.text!r}, events={len(self.events)}, session_id={self.session_id!r})"


class Runner:
    """Runs `agent` within an app, against sessions kept by `session_service`."""

    def __init__(
        self,
        *,
        app_name: str,
        agent: Agent,
        session_service: BaseSessionService | None = None,
        artifact_service: BaseArtifactService | None = None,
        memory_service: BaseMemoryService | None = None,
        run_config: RunConfig | None = None,
        plugins: Sequence[Plugin] = (),
        prices: Mapping[str, ModelPrice] | None = None,
    ) -> None:
        """`plugins` apply to every agent of every run, in order; `prices` (per model string,
        "openai:gpt-4o-mini" or "gpt-4o-mini") put the cost of each model call in the trace."""
        self.app_name = app_name
        self.agent = agent
        self.session_service = session_service or InMemorySessionService()
        self.artifact_service = artifact_service
        self.memory_service = memory_service
        self.run_config = run_config or RunConfig()
        self.plugins = _checked_plugins(plugins)
        self.prices = dict(prices or {})
        self._active: dict[tuple[str, str], tuple[asyncio.AbstractEventLoop, _RunHandle]] = {}

    def run(
        self,
        *,
        user_id: str,
        session_id: str,
        content: Content | str,
        run_config: RunConfig | None = None,
        state: dict[str, Any] | None = None,
    ) -> RunStream:
        """Run the agent on `content`; yield every event, partial chunks included.

        Closing the stream stops the run, and so does leaving an `async for` over it early
        (`break`, an exception), even while a variable still holds the stream: to pause and go
        on later, step it with `anext()`. Cancelling the task that steps it stops the run too,
        even when the cancel lands in that task's own await between two events, and so does
        `cancel()`. A stopped run releases its session and answers its open calls at once.
        """
        watch = _RunHandle()
        trace = Span(name=f"run {self.agent.name}", kind="run", agent=self.agent.name, session_id=session_id)
        stream = cast(_Events, self._run(user_id, session_id, content, run_config, state, watch, trace))
        watch.stream = weakref.ref(stream)  # weak: the stream holds the watch, and must stay collectable
        limit = (run_config or self.run_config).time_limit
        return RunStream(stream if limit is None else cast(_Events, within_time_limit(stream, limit)), trace)

    async def _run(
        self,
        user_id: str,
        session_id: str,
        content: Content | str,
        run_config: RunConfig | None,
        state: dict[str, Any] | None,
        watch: _RunHandle,
        trace: Span,
    ) -> AsyncGenerator[Event, None]:
        config = run_config or self.run_config
        if isinstance(content, str):
            content = Content.user(content)
        service = self.session_service
        session = await service.get(app_name=self.app_name, user_id=user_id, session_id=session_id)
        if session is None:
            if not config.auto_create_session:
                raise session_not_found(self.app_name, user_id, session_id)
            session = await service.create(app_name=self.app_name, user_id=user_id, session_id=session_id, state=state)
        run_id = trace.invocation_id = "e-" + new_id()
        await _closes_in_flight()  # a run left early may still be giving this session back
        await service.begin_run(session, run_id)  # refuses a second run on this session
        key = (user_id, session.id)
        claim = self._active[key] = (asyncio.get_running_loop(), watch)
        mark_live = run_marker(run_id, watch.follow)
        mark_live()
        ctx: InvocationContext | None = None
        try:
            # Read again now that the session is ours: the run that held it may have added to it.
            session = await service.get(app_name=self.app_name, user_id=user_id, session_id=session_id) or session
            agent = _agent_to_run(self.agent, session)
            ctx = InvocationContext(
                session=session,
                agent_name=agent.name,
                user_content=content,
                run_config=config,
                invocation_id=run_id,
                artifact_service=self.artifact_service,
                memory_service=self.memory_service,
                plugins=self.plugins,
                span=trace,
            )
            # A run that died (kill -9, a crashed kernel) may have left calls without an answer.
            repaired = await _answer_dangling_calls(service, ctx, session, _INTERRUPTED, _any_event)
            if repaired is not None:
                yield repaired
                mark_live()
            user_event = Event("user", content, run_id)
            await service.append_event(session, user_event)
            yield user_event
            mark_live()
            async with aclosing(agent.invoke(ctx)) as events:  # closed here: a cancel stops every branch first
                async for event in events:
                    if not event.partial:
                        await service.append_event(session, event)
                    yield event
                    mark_live()  # the consumer may step this stream from a new task each time
        except (asyncio.CancelledError, GeneratorExit) as exc:
            trace.finish(exc)
            if ctx is not None:
                # Answer this run's own calls, reading the session again: when this stream was
                # abandoned and is only closed now, a later run may have answered them already.
                await self._answer_own_calls(ctx, user_id, session.id, _CANCELLED)
            raise
        except BaseException as exc:  # a failure, or KeyboardInterrupt/SystemExit from a tool
            trace.finish(exc)
            if ctx is not None:
                with suppress(Exception):  # the error that ended the run is the one to report
                    await self._answer_own_calls(ctx, user_id, session.id, _ended_by(exc))
            raise
        finally:
            trace.finish()
            total_up(trace, self.prices)
            watch.follow(None)
            if self._active.get(key) is claim:
                del self._active[key]
            await service.end_run(session, run_id)
            if ctx is not None:
                ctx.clear_temp_state()
                for plugin in self.plugins:  # the exporters: they see the finished trace
                    if trace.failed:  # the error that ended the run is the one to report
                        with suppress(Exception):
                            await plugin.after_run_callback(ctx)
                    else:
                        await plugin.after_run_callback(ctx)

    async def _answer_own_calls(
        self, ctx: InvocationContext, user_id: str, session_id: str, response: dict[str, Any]
    ) -> None:
        fresh = await self.session_service.get(app_name=self.app_name, user_id=user_id, session_id=session_id)
        if fresh is not None:
            run_id = ctx.invocation_id
            await _answer_dangling_calls(
                self.session_service, ctx, fresh, response, lambda e: e.invocation_id == run_id
            )

    def cancel(self, *, user_id: str, session_id: str) -> bool:
        """Cancel the run in progress on a session (from any thread); False when there is none.

        The task stepping the run is cancelled, whichever it is; a run nobody steps right now
        (its consumer holds the stream between two events) is closed. Either way the session
        stays consistent: every function call already stored gets an answer.
        """
        active = self._active.get((user_id, session_id))
        if active is None:
            return False
        loop, watch = active
        try:
            loop.call_soon_threadsafe(watch.cancel)
        except RuntimeError:  # its loop is closed: nothing runs there any more
            return False
        return True

    async def run_to_result(
        self,
        *,
        user_id: str,
        session_id: str | None,
        content: Content | str,
        run_config: RunConfig | None = None,
        state: dict[str, Any] | None = None,
        on_event: Callable[[Event], None] | None = None,
    ) -> RunResult:
        """Run to the end and collect a `RunResult`; `on_event` sees every event as it comes."""
        if session_id is None:
            session = await self.session_service.create(app_name=self.app_name, user_id=user_id, state=state)
            session_id, state = session.id, None
        events: list[Event] = []
        stream = self.run(user_id=user_id, session_id=session_id, content=content, run_config=run_config, state=state)
        async with aclosing(stream):  # a cancel closes the run at once, not when the stream is collected
            async for event in stream:
                events.append(event)
                if on_event is not None:
                    on_event(event)
        stored = await self.session_service.get(app_name=self.app_name, user_id=user_id, session_id=session_id)
        return RunResult.from_events(events, session_id, dict(stored.state) if stored else {}, trace=stream.trace)

    def run_sync(self, *, user_id: str, session_id: str | None, content: Content | str, **kwargs: Any) -> RunResult:
        """Blocking `run_to_result` for scripts (also safe inside a running kernel)."""
        return run_sync(self.run_to_result(user_id=user_id, session_id=session_id, content=content, **kwargs))


def _checked_plugins(plugins: Sequence[Plugin]) -> tuple[Plugin, ...]:
    wrong = [p for p in plugins if not isinstance(p, Plugin)]
    if wrong:
        raise AdkError.config(
            f"plugins= takes Plugin instances, got {', '.join(type(p).__name__ for p in wrong)}: "
            "subclass adk_notebook.Plugin and pass an instance.",
            code="invalid_plugin",
        )
    return tuple(plugins)


_Events = AsyncGeneratorType[Event, None]  # the run's own generator: it has ag_frame and ag_running


class RunStream(AsyncGenerator[Event, None]):
    """The events of one run (what `Runner.run` returns): an async generator of `Event`s.

    One difference from a plain one: the iterator an `async for` takes from it closes the run
    when the loop is left early (`break`, an exception), as soon as the loop lets go of it. A
    plain async generator would stay suspended while a variable (a notebook's, say) holds it,
    its session claimed and the call it had just announced unanswered.
    """

    __slots__ = ("_events", "trace")

    def __init__(self, events: _Events, trace: Span) -> None:
        self._events = events
        self.trace = trace  # the run's span tree, growing while it runs

    def __aiter__(self) -> _Iteration:
        return _Iteration(self._events)

    def __anext__(self) -> Any:
        return self._events.__anext__()

    def asend(self, value: None) -> Any:
        return self._events.asend(value)

    def athrow(self, *args: Any) -> Any:
        return self._events.athrow(*args)

    def aclose(self) -> Any:
        return self._events.aclose()

    def __repr__(self) -> str:
        return f"<RunStream {self._events!r}>"


class _Iteration:
    """One `async for` over a RunStream; dropped before the run's end, it closes the run."""

    __slots__ = ("_events",)

    def __init__(self, events: _Events) -> None:
        self._events = events

    def __aiter__(self) -> _Iteration:
        return self

    def __anext__(self) -> Any:
        return self._events.__anext__()

    def __del__(self) -> None:
        events = self._events
        if events.ag_frame is not None and not events.ag_running:  # left early, nobody inside it now
            _close_soon(events)


class _RunHandle:
    """What the runner holds of a run in progress: the task stepping it now, and its stream.

    It closes a run whose consumer's task is cancelled while the run waits at a `yield`: the
    cancel then lands in the consumer's own await, not in the run; left alone, the run would
    keep its session claimed and its calls unanswered until the stream is collected, which
    never happens while a variable (a notebook's, say) still holds it.
    """

    __slots__ = ("stream", "_task")

    def __init__(self) -> None:
        self.stream: weakref.ref[_Events] | None = None
        self._task: asyncio.Task[Any] | None = None

    def follow(self, task: asyncio.Task[Any] | None) -> None:
        """Watch `task`, the one stepping the run now (None when the run ends)."""
        if self._task is not None:
            self._task.remove_done_callback(self._task_done)
        self._task = task
        if task is not None:
            task.add_done_callback(self._task_done)

    def cancel(self) -> None:
        """On the run's loop: cancel the task inside the run, or close a run nobody steps."""
        stream = self.stream() if self.stream is not None else None
        if stream is None or stream.ag_frame is None:
            return  # the run is over
        if stream.ag_running and self._task is not None:
            self._task.cancel()
        elif not stream.ag_running:
            _close_soon(stream)

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        stream = self.stream() if self.stream is not None else None
        if task is not self._task or not task.cancelled() or stream is None or stream.ag_frame is None:
            return  # another task steps the run, the task ended some other way, or the run is over
        if stream.ag_running:
            return  # the cancel reached the run itself, which answers it
        _close_soon(stream)


_CLOSING: set[asyncio.Task[None]] = set()  # closes in flight, held so they are not collected midway


def _close_soon(stream: _Events) -> None:
    """Close a run from a callback on its loop (or a finalizer), unless someone steps it by then."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # no loop here (a finalizer elsewhere): the generator's own finalizer closes it
        return
    closing = loop.create_task(_close(stream))
    _CLOSING.add(closing)
    closing.add_done_callback(_CLOSING.discard)


async def _close(stream: _Events) -> None:
    if stream.ag_frame is not None and not stream.ag_running:
        await stream.aclose()


async def _closes_in_flight() -> None:
    """Wait for the closes `_close_soon` started on this loop (none, nearly always)."""
    if _CLOSING:
        loop = asyncio.get_running_loop()
        pending = [task for task in _CLOSING if task.get_loop() is loop]
        if pending:
            await asyncio.wait(pending)


_CANCELLED = {"error": "The run was cancelled before this tool call finished.", "code": "cancelled"}
_INTERRUPTED = {
    "error": "An earlier run ended before this tool call finished; its result is unknown.",
    "code": "interrupted",
}


def _ended_by(exc: BaseException) -> dict[str, Any]:
    return {
        "error": f"The run ended with {type(exc).__name__} before this tool call finished; its result is unknown.",
        "code": "run_failed",
    }


def _agent_to_run(root: Agent, session: Session) -> Agent:
    """Who takes the session's next message: the agent that answered last, when the conversation
    got to it by transfers (it and every agent above it are LLM agents); else `root`."""
    for event in reversed(session.events):
        if event.author == "user" or event.author == root.name:
            break
        agent = root.find_agent(event.author)
        if agent is None:
            continue
        above = agent
        while above is not root and above.transfers_by_model and above.parent is not None:
            above = above.parent
        if above is root and agent.transfers_by_model and root.transfers_by_model:
            return agent
        break
    return root


def _any_event(event: Event) -> bool:
    return True


async def _answer_dangling_calls(
    service: BaseSessionService,
    ctx: InvocationContext,
    session: Session,
    response: dict[str, Any],
    among: Callable[[Event], bool],
) -> Event | None:
    """Answer every stored function call (of the events `among` selects) that has no response yet.

    Providers reject a history with an unanswered call, so the next run would fail; an explicit
    answer also tells the model what happened. Returns the stored event, if one was needed.
    """
    answered = {r.id for e in session.events for r in e.function_responses()}
    pending = [c for e in session.events if among(e) for c in e.function_calls() if c.id not in answered]
    if not pending:
        return None
    parts = [Part(function_response=FunctionResponse(c.name, dict(response), c.id)) for c in pending]
    event = Event(ctx.agent_name, Content("tool", parts), ctx.invocation_id)
    return await service.append_event(session, event)
