"""What the live view is sent while a run goes on: typed ops that put HTML drawn by render.py
in place, so the browser applies changes and draws nothing of its own.

Four ops, each addressed to an element by its `data-adk` name (render.py names the parts
"top", "stop", "graph", "body", "end", "trace", "waterfall", and item `n` "i{n}"):

- `Insert(html)`: a new item at the end of the body;
- `Replace(target, html)`: an item or a part drawn again (a tool card that settled, the head
  with new token counts, the waterfall after a span);
- `Stream(target, change)`: a streaming answer: keep its closed blocks, and draw what follows
  them again from what it grew by (`markdown.StreamChange`);
- `AppendText(target, text, reset)`: text added to a streamed thought or a tool's progress
  log (`reset`: the text replaces what is there).

`LiveDiff.take()` turns what changed in a `Transcript` and a `LiveTrace` since the last call into
these ops; `wire(ops)` is their one JSON form, which run_view.js reads.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .markdown import MarkdownStream, StreamChange, markdown_to_html
from .render import active_agent, end_html, graph_html, item_html, part, stop_html, top_html
from .timeline import LiveTrace
from .transcript import Transcript
from .waterfall import waterfall_html

__all__ = ["AppendText", "Insert", "LiveDiff", "Op", "Replace", "Stream", "wire"]


@dataclass(frozen=True, slots=True)
class Insert:
    html: str


@dataclass(frozen=True, slots=True)
class Replace:
    target: str
    html: str


@dataclass(frozen=True, slots=True)
class Stream:
    target: str
    change: StreamChange


@dataclass(frozen=True, slots=True)
class AppendText:
    target: str
    text: str
    reset: bool = False


Op = Insert | Replace | Stream | AppendText


def wire(ops: list[Op]) -> list[list[Any]]:
    """The ops as JSON-ready lists: ["insert", html], ["replace", target, html],
    ["stream", target, kept, cut, suffix, split], ["text", target, text, reset]."""
    out: list[list[Any]] = []
    for op in ops:
        if isinstance(op, Insert):
            out.append(["insert", op.html])
        elif isinstance(op, Replace):
            out.append(["replace", op.target, op.html])
        elif isinstance(op, Stream):
            change = op.change
            out.append(["stream", op.target, change.kept, change.cut, change.suffix, change.split])
        else:
            out.append(["text", op.target, op.text, op.reset])
    return out


class LiveDiff:
    """Follows one run's `Transcript` and `LiveTrace` and says, as ops, what changed.

    The transcript's own ops (`Transcript.take_ops`) say which items changed and how; the HTML
    is drawn from the items as they are now, once per flush however many events touched them.
    Growth that would cost a whole item again goes as text: streamed thoughts and a tool's log
    are appended, and a streaming answer goes through its `MarkdownStream`.
    """

    def __init__(
        self, transcript: Transcript, trace: LiveTrace, clock: Callable[[], float] = time.perf_counter
    ) -> None:
        self._transcript = transcript
        self._clock = clock
        self._trace = trace
        self._count = len(transcript.items)  # items the view has
        self._streams: dict[int, MarkdownStream] = {}  # answers streaming, by item
        self._behind: set[int] = set()  # of those, the ones with text not drawn yet (not due)
        self._logged: dict[int, int] = {}  # tool cards drawn with a log -> characters dropped then
        self._active: str | None = active_agent(self._marked()) if transcript.graph else None
        self._traced = False  # the waterfall's fold was sent: later only its grid is replaced

    def pending(self) -> bool:
        return bool(self._behind) or self._transcript.pending() or self._trace.pending()

    def snapshot(self) -> tuple[dict[int, str], dict[str, str]]:
        """For a view that joins mid-run: the HTML sent so far of each streaming turn, by item,
        and its open tail, by target (what the next `Stream` op grows)."""
        return (
            {index: stream.html for index, stream in self._streams.items()},
            {f"i{index}.md": stream.tail for index, stream in self._streams.items()},
        )

    def take(self) -> list[Op]:
        """The ops since the last call, in an order the view can apply one by one."""
        transcript = self._transcript
        changed: dict[int, str] = {}  # item -> "insert", "replace" or "grow"
        grown: dict[int, list[str]] = {}  # thoughts or log text appended, by item
        head = False
        for raw in transcript.take_ops():
            kind = raw[0]
            if kind == "i":
                changed[self._count] = "insert"
                self._count += 1
            elif kind == "s":
                head = True
            elif kind in ("u", "e"):
                if changed.get(raw[1]) != "insert":
                    changed[raw[1]] = "replace"
            else:  # "t" text or thoughts streamed, "l" a tool's log
                changed.setdefault(raw[1], "grow")
                grown.setdefault(raw[1], []).append(raw[2])
        for index in self._behind:
            changed.setdefault(index, "grow")
        ops: list[Op] = []
        for index in sorted(changed):
            ops.extend(self._item(index, changed[index], grown.get(index, ())))
        if head:
            state = transcript.head()
            ops += [
                self._part("top", top_html(state)),
                self._part("stop", stop_html(state)),
                self._part("end", end_html(state)),
            ]
        if transcript.graph and (changed or head):
            state = self._marked()
            active = active_agent(state)
            if active != self._active:
                self._active = active
                ops.append(self._part("graph", graph_html(state)))
        if self._trace.take_changed() and self._trace.root is not None:
            ops.append(self._waterfall(self._trace.root))
        return ops

    def _marked(self) -> dict[str, Any]:
        """What the graph's running agent is read from: the run's fields and its items' fields
        as they stand (not `Transcript.state()`, which joins and cleans every text at each flush)."""
        return {**self._transcript.head(), "items": self._transcript.fields()}

    def _waterfall(self, root: dict[str, Any]) -> Replace:
        if self._traced:
            return Replace("waterfall", waterfall_html(root))
        self._traced = True
        return self._part("trace", waterfall_html(root, collapsed=True))

    @staticmethod
    def _part(name: str, html: str) -> Replace:
        return Replace(name, part(name, html))

    def _item(self, index: int, how: str, grown: Sequence[str]) -> list[Op]:
        data = self._transcript.items[index].json()
        kind = data.get("k")
        if kind == "text" and (index in self._streams or (how == "insert" and not data["done"])):
            return self._answer(index, how, data)
        if how == "grow":
            if kind == "tool":
                dropped = data.get("log_dropped", 0)
                if self._logged.get(index) == dropped:
                    return [AppendText(f"i{index}.log", "".join(grown))]
            elif kind == "thoughts":
                return [AppendText(f"i{index}.text", "".join(grown))]
        html = item_html(data, index)
        if kind == "tool" and data.get("log"):
            self._logged[index] = data.get("log_dropped", 0)
        return [Insert(html) if how == "insert" else Replace(f"i{index}", html)]

    def _answer(self, index: int, how: str, data: dict[str, Any]) -> list[Op]:
        """A streaming answer: blocks as they close, the open tail again; the finished turn
        drawn whole once more only when it differs from what was sent (see MarkdownStream)."""
        ops: list[Op] = []
        stream = self._streams.get(index)
        if stream is None:
            stream = self._streams[index] = MarkdownStream(self._clock)
            ops.append(Insert(item_html({**data, "text": ""}, index)))
        elif not data["done"] and not stream.due():
            self._behind.add(index)
            return ops
        self._behind.discard(index)
        change = stream.update(data["text"])
        if data["done"]:
            del self._streams[index]
            if not stream.matches(markdown_to_html(data["text"])):
                return [*ops, Replace(f"i{index}", item_html(data, index))]
        return ops if change is None else [*ops, Stream(f"i{index}.md", change)]
