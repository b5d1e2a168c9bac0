"""The Agent interface: a name, a description, and a stream of events per invocation."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import aclosing
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .._sync import run_sync
from ..core.run_config import RunConfig

if TYPE_CHECKING:
    from ..core.context import InvocationContext
    from ..core.content import Content
    from ..core.events import Event
    from ..core.trace import ModelPrice
    from ..plugins.base import Plugin
    from ..runner import RunResult
    from ..sessions.base import BaseSessionService

__all__ = ["Agent"]


class Agent(ABC):
    """Base of every agent. `run_invocation` is the runtime's entry; `run`/`run_async` are the user's."""

    name: str
    description: str = ""
    sub_agents: list[Agent]
    _sessions: BaseSessionService | None = None  # made on first `run_async` without a service

    @abstractmethod
    def run_invocation(self, ctx: InvocationContext) -> AsyncIterator[Event]:
        """Yield the events of one invocation; the runner stores each complete one before resuming."""

    async def invoke(self, ctx: InvocationContext) -> AsyncIterator[Event]:
        """Run this agent in `ctx`, recorded as an agent span in the run's trace."""
        span = ctx.span.child(f"invoke_agent {self.name}", "agent", agent=self.name)
        ctx = replace(ctx, agent_name=self.name, span=span)
        try:
            async with aclosing(self.run_invocation(ctx)) as events:  # type: ignore[type-var]
                async for event in events:
                    yield event
        except BaseException as exc:
            span.finish(exc)
            raise
        span.finish()

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
