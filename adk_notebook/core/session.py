"""Session: one conversation's events in order and its state, as plain data.

Session services (`adk_notebook.sessions`) keep and load them; the runtime reads and extends
the live object during a run.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from .events import Event

__all__ = ["Session"]


@dataclass(slots=True, eq=False)
class Session:
    """A conversation: its events in order and its state (app, user and session scopes merged)."""

    id: str
    app_name: str
    user_id: str
    state: dict[str, Any] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)
    last_update_time: float = field(default_factory=time.time)
