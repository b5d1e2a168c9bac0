"""The context hierarchy: what agents, callbacks and tools may see and do during a run.

```
ReadonlyContext      ids, the user's message, read-only state
└── CallbackContext  + writable state (recorded as a delta), artifacts
    └── ToolContext  + the function call id, event actions, memory search
```
`InvocationContext` is the runtime's own record of one invocation; the others are views on it.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from .content import Content, Part
from .errors import AdkError
from .events import EventActions, ToolOutcome, new_id
from .state import TEMP_PREFIX, State

if TYPE_CHECKING:
    from ..agents.base import Agent
    from ..runner import RunConfig
    from ..sessions.base import BaseSessionService, Session

__all__ = ["COMPLETED", "CallbackContext", "InvocationContext", "ReadonlyContext", "ToolContext"]


class _Completed:
    """An already-finished awaitable, so `ctx.emit_progress(...)` may be awaited or not."""

    __slots__ = ()

    def __await__(self) -> Generator[Any, None, None]:
        return
        yield  # pragma: no cover - makes this a generator


COMPLETED = _Completed()


@dataclass(slots=True, eq=False)
class InvocationContext:
    """Everything one invocation (one user message, all its model and tool turns) works with."""

    agent: Agent
    session: Session
    session_service: BaseSessionService
    user_content: Content
    run_config: RunConfig
    app_name: str
    invocation_id: str = field(default_factory=lambda: "e-" + new_id())
    artifact_service: Any = None
    memory_service: Any = None
    ended: bool = False

    @property
    def user_id(self) -> str:
        return self.session.user_id

    @property
    def session_id(self) -> str:
        return self.session.id

    def end_invocation(self) -> None:
        """Ask the agent to stop after the current step."""
        self.ended = True

    def clear_temp_state(self) -> None:
        """`temp:` keys live for one invocation only."""
        state = self.session.state
        for key in [k for k in state if k.startswith(TEMP_PREFIX)]:
            del state[key]


class ReadonlyContext:
    """Ids and read-only state: what an instruction provider or a toolset sees."""

    __slots__ = ("_invocation",)

    def __init__(self, invocation: InvocationContext) -> None:
        self._invocation = invocation

    @property
    def invocation_id(self) -> str:
        return self._invocation.invocation_id

    @property
    def agent_name(self) -> str:
        return self._invocation.agent.name

    @property
    def user_id(self) -> str:
        return self._invocation.session.user_id

    @property
    def app_name(self) -> str:
        return self._invocation.app_name

    @property
    def session_id(self) -> str:
        return self._invocation.session.id

    @property
    def user_content(self) -> Content:
        return self._invocation.user_content

    @property
    def state(self) -> Mapping[str, Any]:
        return MappingProxyType(self._invocation.session.state)

    @property
    def run_config(self) -> RunConfig:
        return self._invocation.run_config


class CallbackContext(ReadonlyContext):
    """Adds writable state: writes are visible at once and persisted with the next event."""

    __slots__ = ("actions", "_state")

    def __init__(self, invocation: InvocationContext, actions: EventActions | None = None) -> None:
        super().__init__(invocation)
        self.actions = actions if actions is not None else EventActions()
        self._state = State(invocation.session.state, self.actions.state_delta)

    @property
    def state(self) -> State:  # type: ignore[override]
        return self._state

    @property
    def artifacts(self) -> Any:
        """The artifact service, or None when the runner has none."""
        return self._invocation.artifact_service

    async def save_artifact(self, filename: str, artifact: Part) -> int:
        """Save a new version of an artifact; the event records it in `artifact_delta`."""
        inv = self._invocation
        version = await self._artifact_service().save(
            app_name=inv.app_name, user_id=inv.user_id, session_id=inv.session_id, filename=filename, artifact=artifact
        )
        self.actions.artifact_delta[filename] = version
        return version

    async def load_artifact(self, filename: str, version: int | None = None) -> Part | None:
        inv = self._invocation
        return await self._artifact_service().load(
            app_name=inv.app_name, user_id=inv.user_id, session_id=inv.session_id, filename=filename, version=version
        )

    async def list_artifacts(self) -> list[str]:
        inv = self._invocation
        return await self._artifact_service().list_keys(app_name=inv.app_name, user_id=inv.user_id, session_id=inv.session_id)

    def _artifact_service(self) -> Any:
        service = self._invocation.artifact_service
        if service is None:
            raise AdkError.artifact(
                "This run has no artifact service: pass artifact_service=InMemoryArtifactService() to the Runner.",
                code="no_artifact_service",
                category="invalid_input",
            )
        return service


class ToolContext(CallbackContext):
    """What a running tool gets: the call it answers, state, actions and memory."""

    __slots__ = ("function_call_id", "tool_name", "tool_outcome", "progress_channel")

    def __init__(
        self,
        invocation: InvocationContext,
        function_call_id: str,
        tool_name: str = "",
        actions: EventActions | None = None,
        progress_channel: Any = None,
        state: State | None = None,
    ) -> None:
        super().__init__(invocation, actions)
        if state is not None:  # the dispatcher's view of this call's state, closed once it is answered
            self._state = state
        self.function_call_id = function_call_id
        self.tool_name = tool_name
        self.tool_outcome: ToolOutcome | None = None  # set for after-tool callbacks
        self.progress_channel = progress_channel

    def emit_progress(self, stream: str, chunk: str) -> Any:
        """Show `chunk` on the progress stream `stream` ("stdout", "status", ...) while the tool runs.

        Works from sync and async tools; `await` it in async tools to let a full queue drain
        (it waits at most 100 ms). Bounded and lossy, never stored: see `tools/progress.py`.
        """
        if self.progress_channel is None:
            return COMPLETED
        return self.progress_channel.emit(self.function_call_id, self.tool_name, stream, chunk)

    async def search_memory(self, query: str) -> list[Any]:
        """Entries of the long-term memory service matching `query` ([] without one)."""
        memory = self._invocation.memory_service
        if memory is None:
            return []
        return await memory.search(app_name=self.app_name, user_id=self.user_id, query=query)
