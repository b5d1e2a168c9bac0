"""RunConfig: the settings of one run, chosen by whoever starts it (a Runner, `agent.run`)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RunConfig"]


@dataclass(slots=True)
class RunConfig:
    """Per-run settings.

    Args:
        streaming: Ask the model to stream; partial events carry the text as it arrives.
        max_llm_calls: Most model calls in the whole run, by every agent of it (loops, transfers,
            agents used as tools); the next is refused with AdkError ``max_llm_calls_exceeded``.
            Each agent's own max_iterations still bounds its turn. None: no limit.
        scopes: The permissions the user holds; tools that require others refuse to run.
        auto_create_session: Create the session when `session_id` does not exist yet.
        time_limit: Seconds the whole run may take; past it the run is cancelled and raises
            AdkError(agent, timeout, ``run_time_limit``). None: no limit (each model call is still
            bounded by its own `timeout=`).
        max_transfers: Most transfers between agents in the run; agents that keep handing the
            conversation to each other stop with AdkError ``max_transfers_exceeded``. None: no limit.
    """

    streaming: bool = True
    max_llm_calls: int | None = None
    scopes: frozenset[str] = frozenset()
    auto_create_session: bool = False
    time_limit: float | None = None
    max_transfers: int | None = 100
