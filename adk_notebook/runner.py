"""The Runner: runs an agent for one user message against a session, and stores what happens.

It loads the session, records the user's message, relays the agent's events (storing each
complete one before the agent continues, so the next model call sees it) and clears the
invocation's `temp:` state at the end.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from ._sync import run_sync
from .agents.base import Agent
from .core.content import Content
from .core.context import InvocationContext
from .core.events import Event, Usage
from .sessions.base import BaseSessionService, session_not_found
from .sessions.in_memory import InMemorySessionService

__all__ = ["RunConfig", "RunResult", "Runner"]


@dataclass(slots=True)
class RunConfig:
    """Per-run settings.

    Args:
        streaming: Ask the model to stream; partial events carry the text as it arrives.
        max_llm_calls: Most model calls in this run (on top of the agent's max_iterations).
        scopes: The permissions the user holds; tools that require others refuse to run.
        auto_create_session: Create the session when `session_id` does not exist yet.
    """

    streaming: bool = True
    max_llm_calls: int | None = None
    scopes: frozenset[str] = frozenset()
    auto_create_session: bool = False


@dataclass(slots=True)
class RunResult:
    """What one run produced."""

    events: list[Event]
    session_id: str
    state: dict[str, Any]
    output: Any = None
    usage: Usage = field(default_factory=Usage)

    @property
    def text(self) -> str:
        """The text of the final response ("" when the run ended without one)."""
        for event in reversed(self.events):
            if event.is_final_response() and not event.partial:
                return event.text
        return ""

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
        artifact_service: Any = None,
        memory_service: Any = None,
        run_config: RunConfig | None = None,
    ) -> None:
        self.app_name = app_name
        self.agent = agent
        self.session_service = session_service or InMemorySessionService()
        self.artifact_service = artifact_service
        self.memory_service = memory_service
        self.run_config = run_config or RunConfig()

    async def run(
        self,
        *,
        user_id: str,
        session_id: str,
        content: Content | str,
        run_config: RunConfig | None = None,
        state: dict[str, Any] | None = None,
    ) -> AsyncIterator[Event]:
        """Run the agent on `content`; yield every event, partial chunks included."""
        config = run_config or self.run_config
        if isinstance(content, str):
            content = Content.user(content)
        service = self.session_service
        session = await service.get(app_name=self.app_name, user_id=user_id, session_id=session_id)
        if session is None:
            if not config.auto_create_session:
                raise session_not_found(self.app_name, user_id, session_id)
            session = await service.create(app_name=self.app_name, user_id=user_id, session_id=session_id, state=state)
        ctx = InvocationContext(
            agent=self.agent,
            session=session,
            session_service=service,
            user_content=content,
            run_config=config,
            app_name=self.app_name,
            artifact_service=self.artifact_service,
            memory_service=self.memory_service,
        )
        user_event = Event("user", content, ctx.invocation_id)
        await service.append_event(session, user_event)
        yield user_event
        try:
            async for event in self.agent.run_invocation(ctx):
                if not event.partial:
                    await service.append_event(session, event)
                yield event
        finally:
            ctx.clear_temp_state()

    async def run_to_result(
        self,
        *,
        user_id: str,
        session_id: str | None,
        content: Content | str,
        run_config: RunConfig | None = None,
        state: dict[str, Any] | None = None,
    ) -> RunResult:
        """Run to the end and collect a `RunResult`."""
        if session_id is None:
            session = await self.session_service.create(app_name=self.app_name, user_id=user_id, state=state)
            session_id, state = session.id, None
        events: list[Event] = []
        usage = Usage()
        async for event in self.run(user_id=user_id, session_id=session_id, content=content, run_config=run_config, state=state):
            events.append(event)
            if event.usage is not None and not event.partial:
                usage = usage + event.usage
        session = await self.session_service.get(app_name=self.app_name, user_id=user_id, session_id=session_id)
        return RunResult(events, session_id, dict(session.state) if session else {}, usage=usage)

    def run_sync(self, *, user_id: str, session_id: str | None, content: Content | str, **kwargs: Any) -> RunResult:
        """Blocking `run_to_result` for scripts (also safe inside a running kernel)."""
        return run_sync(self.run_to_result(user_id=user_id, session_id=session_id, content=content, **kwargs))
