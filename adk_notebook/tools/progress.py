"""Tool progress: lines a running tool streams to the user while the model waits.

`ctx.emit_progress(stream, chunk)` puts a chunk on the batch's channel; the dispatcher turns
each into a partial event. Progress is for eyes only: bounded, lossy, never persisted.

| bound                        | value                                       |
|------------------------------|---------------------------------------------|
| events queued per tool batch | 256 (a full queue waits up to 100 ms)        |
| one chunk                    | 8 KiB of UTF-8, cut on a character boundary  |
| per call                     | 1 MiB                                        |

Past a bound a call gets exactly one `[adk: tool progress truncated]` event, then nothing.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from ..core.context import COMPLETED as _DONE
from ..core.events import Event, ToolProgress

__all__ = ["MAX_CHUNK_BYTES", "MAX_CALL_BYTES", "QUEUE_SIZE", "TRUNCATED_MARKER", "ProgressChannel"]

QUEUE_SIZE = 256
FULL_QUEUE_WAIT = 0.1
MAX_CHUNK_BYTES = 8 * 1024
MAX_CALL_BYTES = 1024 * 1024
TRUNCATED_MARKER = "[adk: tool progress truncated]"


class ProgressChannel:
    """The queue between one batch of tool calls and the event stream."""

    def __init__(self) -> None:
        # Unbounded as a queue; QUEUE_SIZE is enforced in `_offer`, so one marker per call always fits.
        # None, put by `close`, tells the reader that the batch has finished.
        self.queue: asyncio.Queue[ToolProgress | Event | None] = asyncio.Queue()
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._sent: dict[str, int] = {}  # bytes sent per call id
        self._closed: set[str] = set()  # calls that got their marker
        self._closed_all = False

    def close(self, *_: Any) -> None:
        """Mark the end of the batch (a task done-callback); later chunks are dropped."""
        self._closed_all = True
        self.queue.put_nowait(None)

    def forward(self, event: Event) -> None:
        """Queue an event a tool streams as it is (an AgentTool's child events); never dropped."""
        if not self._closed_all:
            self.queue.put_nowait(event)

    def emit(self, call_id: str, tool_name: str, stream: str, chunk: str) -> Any:
        """Queue a chunk; returns an awaitable that, when the queue is full, waits up to 100 ms for room."""
        if call_id in self._closed:
            return _DONE
        data = chunk.encode("utf-8")
        cut = (
            len(data) > MAX_CHUNK_BYTES or self._sent.get(call_id, 0) + min(len(data), MAX_CHUNK_BYTES) > MAX_CALL_BYTES
        )
        if cut:
            room = min(MAX_CHUNK_BYTES, MAX_CALL_BYTES - self._sent.get(call_id, 0))
            chunk = data[: max(room, 0)].decode("utf-8", errors="ignore")
        item = ToolProgress(call_id, tool_name, stream, chunk)
        if threading.get_ident() != self._loop_thread:  # a sync tool on a worker thread
            self._loop.call_soon_threadsafe(self._offer, item, cut)
            return _DONE
        if self.queue.qsize() < QUEUE_SIZE:
            self._offer(item, cut)
            return _DONE
        return self._wait_for_room(item, cut)

    def _offer(self, item: ToolProgress, cut: bool) -> None:
        if self._closed_all or item.call_id in self._closed:
            return
        if self.queue.qsize() >= QUEUE_SIZE:
            self._truncate(item)
            return
        if item.chunk:
            self._sent[item.call_id] = self._sent.get(item.call_id, 0) + len(item.chunk.encode("utf-8"))
            self.queue.put_nowait(item)
        if cut:
            self._truncate(item)

    async def _wait_for_room(self, item: ToolProgress, cut: bool) -> None:
        loop = self._loop
        deadline = loop.time() + FULL_QUEUE_WAIT
        while self.queue.qsize() >= QUEUE_SIZE and loop.time() < deadline:
            await asyncio.sleep(0.005)
        self._offer(item, cut)

    def _truncate(self, item: ToolProgress) -> None:
        self._closed.add(item.call_id)
        self.queue.put_nowait(ToolProgress(item.call_id, item.tool_name, item.stream, TRUNCATED_MARKER))
