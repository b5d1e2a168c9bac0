"""Widget comms that record what they would publish: the real ipywidgets / comm machinery with
one seam replaced (`comm.create_comm`), for tests of what the live view sends."""

from __future__ import annotations

import json
from typing import Any

import comm
import pytest
from comm.base_comm import BaseComm

__all__ = ["RecordingComm", "comms"]


class RecordingComm(BaseComm):
    """A comm that keeps what it would have published."""

    def publish_msg(
        self, msg_type: str, data: Any = None, metadata: Any = None, buffers: Any = None, **keys: Any
    ) -> None:
        self.sent.append((msg_type, data or {}))

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.sent: list[tuple[str, dict[str, Any]]] = []
        super().__init__(*args, **kwargs)

    # -- what the widget sent -----------------------------------------------------------------
    def opened(self) -> dict[str, Any]:
        """The state the model was opened with."""
        return next(d["state"] for t, d in self.sent if t == "comm_open")

    def custom(self) -> list[dict[str, Any]]:
        return [d["content"] for t, d in self.sent if t == "comm_msg" and d.get("method") == "custom"]

    def updates(self) -> list[dict[str, Any]]:
        return [d["state"] for t, d in self.sent if t == "comm_msg" and d.get("method") == "update"]

    def nbytes(self, *, include_open: bool = True) -> int:
        return sum(len(json.dumps(d, separators=(",", ":"))) for t, d in self.sent if include_open or t != "comm_open")

    # -- what a front end says ----------------------------------------------------------------
    def receive(self, content: dict[str, Any]) -> None:
        self.handle_msg(
            {"content": {"comm_id": self.comm_id, "data": {"method": "custom", "content": content}}, "buffers": []}
        )


@pytest.fixture
def comms(monkeypatch: pytest.MonkeyPatch) -> list[RecordingComm]:
    """Every comm made during the test, recording."""
    made: list[RecordingComm] = []

    def create(*args: Any, **kwargs: Any) -> RecordingComm:
        made.append(RecordingComm(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(comm, "create_comm", create)
    return made
