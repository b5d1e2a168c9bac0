"""RunConfig: the settings of one run, chosen by whoever starts it (a Runner, `agent.run`)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RunConfig"]


@dataclass(slots=True)
class RunConfig:
    """Per-run settings.

    Args:
        streaming: Ask the model to stream; partial events carry the text as it arrives.
        max_llm_calls: Most model calls in this run (on top of the agent's max_iterations).
        scopes: The permissions the user holds; tools that require others refuse to run.
        auto_create_session: Create the session when `session_id` does not exist yet.
        time_limit: Seconds the whole run may take; past it the run is cancelled and raises
            AdkError(agent, timeout, ``run_time_limit``). None: no limit (each model call is still
            bounded by its own `timeout=`).
    """

    streaming: bool = True
    max_llm_calls: int | None = None
    scopes: frozenset[str] = frozenset()
    auto_create_session: bool = False
    time_limit: float | None = None
