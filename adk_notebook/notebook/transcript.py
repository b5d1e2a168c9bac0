"""A run's transcript: its events, in order, folded into one JSON-ready state.

`Transcript` keeps the user's prompt, who answered (the concrete model, and a one-line notice
about it when there is one), model text (streamed, then complete; marked when the token limit
cut it), one card per tool call (arguments, status, duration, attempts, progress log, result,
images, PDF references, the traceback of a tool that raised), state deltas, errors, token usage
and wall time; and what the provider did itself: the model's thoughts (an item of kind
"thoughts", streamed like text, shown folded), code it ran with its output ("code"), and what a
search grounded the answer on ("grounding"). `render.state_html` / `state_text` draw it, live
and saved alike; `take_ops()` says what changed since the last call, which `view_ops.LiveDiff`
turns into the HTML the live view is sent; `transcript_html` / `transcript_text` fold and draw a
list of events in one call.

What is kept is bounded (a tool's log to its tail, results and arguments to a few thousand
characters), and media are described for the renderer here: only an image of an allowed type
is inlined, and a file reference keeps an `href` only when it is a safe URL. What leaves
(`state()`, `take_ops()`) carries no control characters or lone surrogates (`clean_text`), so
the live view, the saved widget state and the static transcripts show the same characters.

A call id names one card; when a provider reuses an id (two calls `call_0`), each response
settles the oldest card of that id still running, and a finished run has no card running.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterable, Sequence
from typing import Any

from ..core.content import Content, FunctionResponse, Part
from ..core.events import Event, EventActions, ToolOutcome, ToolProgress, Usage
from .render import IMAGE_TYPES, cap, clean_text, error_line, safe_url, state_html, state_text

__all__ = ["Transcript", "transcript_html", "transcript_text"]

_MIME_ALIASES = {"image/jpg": "image/jpeg", "image/pjpeg": "image/jpeg"}
MAX_INLINE_IMAGE = 8 * 1024 * 1024  # bytes; larger images are listed, not shown
MAX_INLINE_PDF = 10 * 1024 * 1024  # bytes; larger PDFs are listed, not embedded
LOG_LIMIT = 8192  # characters of a tool's progress log kept on screen (the tail)
MAX_RESULT = 20_000  # characters of a tool's result JSON shown
MAX_ARGS = 4_000  # characters of a tool call's arguments shown
MAX_VALUE = 80  # characters of one state value shown


def _json(value: Any, *, indent: int | None = None) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, indent=indent, default=repr)
    except (TypeError, ValueError):
        return repr(value)


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else _json(value)
    return text if len(text) <= MAX_VALUE else text[: MAX_VALUE - 1] + "…"


def _media(part: Part, owner: str) -> dict[str, Any] | None:
    """A JSON-ready description of an inline or file part, or None for other parts."""
    if part.inline_data is not None:
        blob = part.inline_data
        mime = blob.mime_type.split(";", 1)[0].strip().lower()
        mime = _MIME_ALIASES.get(mime, mime)
        size = len(blob.data)
        if mime in IMAGE_TYPES and size <= MAX_INLINE_IMAGE:
            return {"k": "image", "mime": mime, "data": base64.b64encode(blob.data).decode("ascii"), "size": size}
        if mime == "application/pdf":
            data = base64.b64encode(blob.data).decode("ascii") if size <= MAX_INLINE_PDF else None
            return {"k": "pdf", "name": f"{owner}.pdf", "href": None, "data": data, "size": size}
        return {"k": "file", "mime": mime, "name": owner, "href": None, "size": size}
    if part.file_data is not None:
        ref = part.file_data
        mime = ref.mime_type.split(";", 1)[0].strip().lower()
        name = ref.file_uri.rstrip("/").rsplit("/", 1)[-1][:120] or ref.file_uri[:120]
        kind = "pdf" if mime == "application/pdf" else "file"
        return {
            "k": kind,
            "mime": mime,
            "name": name,
            "uri": ref.file_uri[:2000],
            "href": safe_url(ref.file_uri),
            "data": None,
            "size": None,
        }
    return None


class _Text:
    """A model's text turn, or (kind "thoughts") its reasoning, shown collapsed."""

    __slots__ = ("author", "chunks", "done", "index", "kind")

    def __init__(self, author: str, chunks: list[str], done: bool, kind: str = "text") -> None:
        self.author, self.chunks, self.done, self.kind = author, chunks, done, kind
        self.index = -1

    def json(self) -> dict[str, Any]:
        return {"k": self.kind, "author": self.author, "text": "".join(self.chunks), "done": self.done}


class _Tool:
    __slots__ = ("fields", "log", "log_len", "log_dropped")

    def __init__(self, fields: dict[str, Any]) -> None:
        self.fields = fields
        self.log: list[str] = []
        self.log_len = 0
        self.log_dropped = 0

    @classmethod
    def card(cls, call_id: str | None, name: str, args: Any) -> _Tool:
        """A new card for a call that is running."""
        return cls(
            {
                "k": "tool",
                "id": call_id or "",
                "name": name,
                "args": cap(_json(args), MAX_ARGS),
                "status": "running",
                "duration": None,
                "attempts": None,
                "error": None,
                "result": None,
                "media": [],
                "long_running": False,
                "traceback": None,
                "inner": [],
            }
        )

    def append_log(self, chunk: str) -> None:
        self.log.append(chunk)
        self.log_len += len(chunk)
        if self.log_len > 2 * LOG_LIMIT:  # amortised: join and cut once per LOG_LIMIT characters
            text = "".join(self.log)
            tail = _log_tail(text)
            self.log_dropped += len(text) - len(tail)
            self.log, self.log_len = [tail], len(tail)

    def json(self) -> dict[str, Any]:
        text = "".join(self.log)
        tail = _log_tail(text) if len(text) > LOG_LIMIT else text
        return {**self.fields, "log": tail, "log_dropped": self.log_dropped + len(text) - len(tail)}


def _log_tail(text: str) -> str:
    """The last LOG_LIMIT characters, starting at a line when there is one."""
    if len(text) <= LOG_LIMIT:
        return text
    tail = text[-LOG_LIMIT:]
    cut = tail.find("\n")
    return tail[cut + 1 :] if 0 <= cut < len(tail) - 1 else tail


class _Plain:
    __slots__ = ("fields",)

    def __init__(self, fields: dict[str, Any]) -> None:
        self.fields = fields

    def json(self) -> dict[str, Any]:
        return dict(self.fields)


class Transcript:
    """The state of one run, folded from its events in order; the same for widget and HTML.

    `add(event)` is cheap for streamed chunks (a list append). With `track=True` it also
    records what changed as small ops (`take_ops`), which `view_ops.LiveDiff` reads to know what
    to draw again; `state()` is the whole JSON-ready state, for `state_html`.

    Ops, each a list: `["i", item]` new item; `["t", index, text]` text appended;
    `["e", index]` / `["e", index, text]` a text turn ended (with its full text when it differs
    from what streamed); `["u", index, fields]` item fields changed; `["l", index, text, dropped]`
    progress log appended (`dropped` characters before `text` were cut, to keep it bounded);
    `["s", fields]` run fields changed.
    """

    def __init__(
        self,
        *,
        agent_name: str,
        prompt: str | None = None,
        session_id: str | None = None,
        track: bool = False,
        model: str | None = None,
        notice: str | None = None,
        graph: dict[str, Any] | None = None,
    ) -> None:
        self.agent_name = agent_name
        self.graph = graph  # a multi-agent run's agent tree (graph.layout), drawn above the lanes
        self.prompt = prompt
        self.session_id = session_id
        self.model = model  # who answers; events name the model of each turn ("model" in their metadata)
        self.notice = notice
        self.status = "running"
        self.error: str | None = None
        self.started_at = time.time()
        self.elapsed: float | None = None
        self.usage = Usage()
        self.has_usage = False
        self.items: list[_Text | _Tool | _Plain] = []
        self._open: _Text | None = None  # the text turn being streamed
        self._thinking: _Text | None = None  # the thoughts being streamed
        self._thought_streamed: set[tuple[str, str]] = set()  # lanes whose turn's thoughts came as chunks
        self._cards: dict[str, list[int]] = {}  # call id ("" for none) -> its tool cards, oldest first
        self._seen_prompt = prompt is None
        self._first_ts: float | None = None
        self._last_ts: float | None = None
        self._track = track
        self._ops: list[list[Any]] = []
        self._run: list[Any] | None = None  # the op being coalesced: ["t"|"l", index, [chunks]]
        self._lane = (agent_name, "")  # the (author, branch) whose lane is open: the run's agent at first
        # other lanes' turns still streaming: (text, thoughts), as _open and _thinking
        self._parked: dict[tuple[str, str], tuple[_Text | None, _Text | None]] = {}
        self._header = self._lane  # the lane whose header is the latest one in `items`
        self._inner_open: dict[int, str] = {}  # card -> the inner agent whose turn streams into it

    # -- ops -------------------------------------------------------------------------------
    def _op(self, op: list[Any]) -> None:
        if self._track:
            self._run = None
            self._ops.append(op)

    def _chunk(self, kind: str, index: int, text: str) -> None:
        if self._track:
            run = self._run
            if run is not None and run[1] == index and run[0] == kind:
                run[2].append(text)
            else:
                self._run = run = [kind, index, [text]]
                self._ops.append(run)

    def pending(self) -> bool:
        """True when there are ops not yet taken."""
        return bool(self._ops)

    def take_ops(self) -> list[list[Any]]:
        """The ops recorded since the last call, coalesced (text chunks joined)."""
        ops, self._ops, self._run = self._ops, [], None
        for op in ops:
            if op[0] == "t":
                op[2] = "".join(op[2])
            elif op[0] == "l":
                text = "".join(op[2])
                tail = _log_tail(text) if len(text) > LOG_LIMIT else text
                op[2:] = [tail, len(text) - len(tail)]
        return _clean(ops)

    # -- folding events --------------------------------------------------------------------
    def add(self, event: Event) -> None:
        """Fold one event (partial ones included) into the state."""
        if event.progress is not None:
            self._progress(event.progress)
            return
        content = event.content
        if event.metadata.get("parent_call_id"):
            self._inner(event)
            return
        lane = (event.author, event.branch)
        if lane != self._lane and event.author != "user":
            self._switch_lane(lane)
        if event.partial:  # the hot path: one streamed chunk
            if content is not None:
                for part in content.parts:
                    text = part.text
                    if text and not part.thought:
                        item = self._open
                        if item is None or item.author != event.author:
                            self._stream(event.author, text)
                            continue
                        item.chunks.append(text)
                        run = self._run
                        if run is not None and run[1] == item.index and run[0] == "t":
                            run[2].append(text)
                        else:
                            self._chunk("t", item.index, text)
                    elif text:
                        self._think(event.author, text)
            return
        ts = event.timestamp
        if self._first_ts is None:
            self._first_ts = ts
        self._last_ts = ts
        if content is not None:
            if content.role == "user" or event.author == "user":
                self._user(content)
            elif content.role == "tool" or (event.tool_outcomes and not content.function_calls()):
                self._responses(event)
            else:
                self._model(event)
        elif event.tool_outcomes:
            self._outcomes(event.tool_outcomes)
        actions = event.actions
        if actions.state_delta or actions.artifact_delta or actions.transfer_to_agent:
            self._state(actions)
        if event.usage is not None:
            self.usage = self.usage + event.usage
            self.has_usage = True
            self._op(["s", {"usage": self._usage_json()}])
        if event.error is not None:
            self._add(_Plain({"k": "error", "message": error_line(event.error)}))

    # -- multi-agent: lanes and AgentTool internals -----------------------------------------
    def _switch_lane(self, lane: tuple[str, str]) -> None:
        """Go on in another agent's (or branch's) lane. A lane whose turn (its text or its
        thoughts) is still streaming (parallel branches interleave) picks that turn up again;
        else a header item opens it, so a single-agent run has none."""
        if self._open is not None or self._thinking is not None:
            self._parked[self._lane] = (self._open, self._thinking)
        self._lane = lane
        self._open, self._thinking = self._parked.pop(lane, (None, None))
        if self._open is None and self._thinking is None:
            self._lane_header()

    def _lane_header(self) -> None:
        self._header = self._lane
        self._add(_Plain({"k": "lane", "author": self._lane[0], "branch": self._lane[1]}))

    def _inner(self, event: Event) -> None:
        """An AgentTool's inner event, streamed live: its text and calls go inside that tool's card.

        They arrive as partial events, streamed chunks and the finished turn alike; a turn that
        repeats what streamed since its author started is that turn ending, not new text.
        """
        call_id = str(event.metadata["parent_call_id"])
        index = self._card(call_id, "")
        fields = self.items[index].fields  # type: ignore[union-attr]  # the index of a tool card
        inner: list[list[str]] = [list(seg) for seg in fields.get("inner") or ()]
        content = event.content
        if content is None:
            return
        text = "".join(p.text for p in content.parts if p.text and not p.thought)
        author = event.author
        if text:
            if self._inner_open.get(index) == author and inner and inner[-1][0] == author:
                if text == inner[-1][1]:  # the finished turn: it repeats what streamed
                    del self._inner_open[index]
                else:
                    inner[-1][1] += text
            else:
                inner.append([author, text])
                self._inner_open[index] = author
        for call in content.function_calls():
            inner.append([author, f"🔧 {call.name}"])
            self._inner_open.pop(index, None)
        self._update(index, {"inner": inner})

    def _add(self, item: _Text | _Tool | _Plain) -> int:
        if self._lane != self._header and not (isinstance(item, _Plain) and item.fields["k"] in ("lane", "user")):
            self._lane_header()  # a branch that picked its turn up again adds below another lane: say whose it is
        index = len(self.items)
        if isinstance(item, _Text):
            item.index = index
        self.items.append(item)
        self._op(["i", item.json()])
        return index

    def _stream(self, author: str, text: str) -> None:
        item = self._open
        if item is None or item.author != author:
            self._close_text()
            item = self._open = _Text(author, [], False)
            self._add(item)
        item.chunks.append(text)
        self._chunk("t", item.index, text)

    def _think(self, author: str, text: str) -> None:
        item = self._thinking
        if item is None or item.author != author:
            self._close_text()
            item = self._thinking = _Text(author, [], False, "thoughts")
            self._add(item)
        self._thought_streamed.add(self._lane)
        item.chunks.append(text)
        self._chunk("t", item.index, text)

    def _close_text(self, final: str | None = None) -> None:
        thinking = self._thinking
        if thinking is not None:  # thoughts end where anything else begins
            self._thinking, thinking.done = None, True
            self._op(["u", thinking.index, {"done": True}])
        item = self._open
        if item is None:
            return
        self._open = None
        item.done = True
        index = item.index
        if final and final != "".join(item.chunks):
            item.chunks = [final]
            self._op(["e", index, final])
        else:
            self._op(["e", index])

    def _user(self, content: Content) -> None:
        self._close_text()
        text = content.text
        if self.prompt is None:
            self.prompt = text
            self._seen_prompt = True
            self._op(["s", {"prompt": text}])
        elif not self._seen_prompt and text == self.prompt:
            self._seen_prompt = True
        elif text:
            self._add(_Plain({"k": "user", "text": text}))
        self._media_item(content.parts, "user")

    def _model(self, event: Event) -> None:
        content = event.content
        assert content is not None
        text = event.text
        thoughts = "".join(p.text for p in content.parts if p.thought and p.text)
        streaming = self._open is not None and self._open.author == event.author
        if thoughts and self._lane not in self._thought_streamed and not streaming:
            self._close_text()
            self._add(_Text(event.author, [thoughts], True, "thoughts"))
        self._thought_streamed.discard(self._lane)
        if self._open is not None and self._open.author == event.author:
            self._close_text(text)
        else:
            self._close_text()
            if text:
                self._add(_Text(event.author, [text], True))
        self._media_item(content.parts, event.author)
        metadata = event.metadata
        model = metadata.get("model")
        if model and model != self.model:
            self.model = model
            self._op(["s", {"model": model}])
        if metadata.get("finish_reason") == "max_tokens":  # the answer stops mid-way: say so
            self._add(_Plain({"k": "cut", "tokens": event.usage.output_tokens if event.usage else None}))
        self._native(content.parts, metadata.get("grounding"))
        for call in content.function_calls():
            self._cards.setdefault(call.id or "", []).append(self._add(_Tool.card(call.id, call.name, call.args)))

    def _native(self, parts: Iterable[Part], grounding: Any) -> None:
        """Code the provider ran (with what it printed) and what a provider-side search found."""
        code: int | None = None
        for part in parts:
            if part.executable_code is not None:
                code = self._add(
                    _Plain(
                        {
                            "k": "code",
                            "language": part.executable_code.language.lower(),
                            "code": cap(part.executable_code.code, MAX_RESULT),
                            "outcome": None,
                            "output": None,
                        }
                    )
                )
            elif part.code_execution_result is not None:
                result = {
                    "outcome": part.code_execution_result.outcome,
                    "output": cap(part.code_execution_result.output, MAX_RESULT),
                }
                if code is None:
                    self._add(_Plain({"k": "code", "language": "", "code": "", **result}))
                else:
                    self._update(code, result)
                code = None
        if isinstance(grounding, dict) and grounding:
            self._add(_Plain(_grounding_fields(grounding)))

    def _media_item(self, parts: Iterable[Part], owner: str) -> None:
        media = [
            m for m in (_media(p, owner) for p in parts if p.inline_data is not None or p.file_data is not None) if m
        ]
        if media:
            self._add(_Plain({"k": "media", "media": media}))

    def _card(self, call_id: str | None, name: str, args: dict[str, Any] | None = None) -> int:
        """The card of call `call_id` (made when there is none): the oldest one still running.

        Without an id, the oldest running card of that name among the calls without one.
        """
        cards = self._cards.get(call_id or "", [])
        for index in cards:
            fields = self.items[index].fields  # type: ignore[union-attr]  # the index of a tool card
            if fields["status"] == "running" and (call_id or fields["name"] == name):
                return index
        if call_id and cards:
            return cards[-1]  # every card of this id is settled: this updates the latest again
        self._close_text()
        index = self._add(_Tool.card(call_id, name, args or {}))
        self._cards.setdefault(call_id or "", []).append(index)
        return index

    def _update(self, index: int, fields: dict[str, Any]) -> None:
        self.items[index].fields.update(fields)  # type: ignore[union-attr]  # the index of a tool card
        self._op(["u", index, fields])

    def _responses(self, event: Event) -> None:
        self._close_text()
        outcomes: dict[str, list[ToolOutcome]] = {}  # by call id, in order: ids may repeat
        for o in event.tool_outcomes:
            outcomes.setdefault(o.call_id, []).append(o)
        long_running = set(event.long_running_tool_ids)
        for response in event.function_responses():
            same_id = outcomes.get(response.id or "")
            outcome = same_id.pop(0) if same_id else None
            index = self._card(response.id, response.name, outcome.args if outcome else None)
            self._update(index, _response_fields(response, outcome, response.id in long_running))
        self._outcomes(o for same_id in outcomes.values() for o in same_id)

    def _outcomes(self, outcomes: Iterable[ToolOutcome]) -> None:
        for o in outcomes:
            index = self._card(o.call_id, o.tool_name, o.args)
            self._update(
                index,
                {
                    "status": "ok" if o.success else "error",
                    "duration": o.duration,
                    "attempts": o.attempt,
                    "error": error_line(o.error) if o.error else None,
                    "traceback": o.traceback,
                },
            )

    def _progress(self, progress: ToolProgress) -> None:
        index = self._card(progress.call_id, progress.tool_name)
        card = self.items[index]
        if progress.chunk:
            card.append_log(progress.chunk)  # type: ignore[union-attr]  # _card gave a tool card's index
            self._chunk("l", index, progress.chunk)

    def _state(self, actions: EventActions) -> None:
        fields: dict[str, Any] = {"k": "state", "delta": [[str(k), _short(v)] for k, v in actions.state_delta.items()]}
        if actions.artifact_delta:
            fields["artifacts"] = [[str(k), v] for k, v in actions.artifact_delta.items()]
        if actions.transfer_to_agent:
            fields["transfer"] = actions.transfer_to_agent
        self._add(_Plain(fields))

    def _usage_json(self) -> dict[str, int]:
        u = self.usage
        usage = {"input": u.input_tokens, "output": u.output_tokens, "total": u.total_tokens}
        if u.thoughts_tokens:
            usage["thoughts"] = u.thoughts_tokens  # of the output
        return usage

    # -- the end ---------------------------------------------------------------------------
    def finish(
        self,
        *,
        status: str = "done",
        error: BaseException | str | None = None,
        elapsed: float | None = None,
        usage: Usage | None = None,
    ) -> None:
        """Close the run: end the open text turn, settle running cards, record the outcome.

        A card still running when the run is over was cancelled, or, in a run that ended
        well, never answered (a history with a call but no response).
        """
        self._close_text()
        for turn in self._parked.values():  # branches whose turn never ended
            self._open, self._thinking = turn
            self._close_text()
        self._parked.clear()
        settled = "unanswered" if status == "done" else "cancelled"
        for index, item in enumerate(self.items):
            if isinstance(item, _Tool) and item.fields["status"] == "running":
                self._update(index, {"status": settled})
        if error is not None:
            self.error = error_line(error)
        elif status == "cancelled":
            self.error = "Run cancelled."
        self.status = status
        if elapsed is None and self._first_ts is not None and self._last_ts is not None:
            elapsed = max(0.0, self._last_ts - self._first_ts)
        self.elapsed = elapsed
        if usage is not None and (usage.input_tokens or usage.output_tokens or usage.total_tokens):
            self.usage, self.has_usage = usage, True
        self._op(
            [
                "s",
                {
                    "status": status,
                    "error": self.error,
                    "elapsed": elapsed,
                    "usage": self._usage_json() if self.has_usage else None,
                },
            ]
        )

    def head(self) -> dict[str, Any]:
        """The run's own fields, without its items: what its head, Stop button and error are drawn from."""
        return _clean(
            {
                "v": 1,
                "agent": self.agent_name,
                "prompt": self.prompt,
                "session_id": self.session_id,
                "model": self.model,
                "notice": self.notice,
                "status": self.status,
                "error": self.error,
                "started_at": self.started_at,
                "elapsed": self.elapsed,
                "usage": self._usage_json() if self.has_usage else None,
                **({"graph": self.graph} if self.graph else {}),
            }
        )

    def fields(self) -> list[dict[str, Any]]:
        """Each item's fields as they stand, not copied or joined (a text turn: its kind only):
        cheap enough to scan at every flush, as `render.active_agent` does."""
        return [{"k": item.kind} if isinstance(item, _Text) else item.fields for item in self.items]

    def state(self) -> dict[str, Any]:
        """The whole state as JSON-ready data: what `render.state_html` draws."""
        return {**self.head(), "items": [_clean(item.json()) for item in self.items]}


def _clean(value: Any) -> Any:
    """JSON-ready data with every string through `clean_text` (the base64 of media is made here, and clean)."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {key: item if key == "data" else _clean(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_clean(item) for item in value]
    return value


def _grounding_fields(grounding: dict[str, Any]) -> dict[str, Any]:
    """A search's grounding (`Grounding.to_dict()`) bounded for the screen; links only from safe URLs."""
    sources = [
        {
            "title": cap(str(s.get("title") or ""), 200),
            "uri": cap(str(s.get("uri") or ""), 2000),
            "href": safe_url(str(s.get("uri") or "")),
        }
        for s in grounding.get("sources") or ()
    ][:50]
    citations = [
        {
            "text": cap(str(c.get("text") or ""), 500),
            "sources": [n for n in c.get("sources") or () if isinstance(n, int) and 0 <= n < len(sources)],
        }
        for c in grounding.get("citations") or ()
    ][:50]
    queries = [cap(str(q), 200) for q in grounding.get("queries") or ()][:20]
    return {"k": "grounding", "queries": queries, "sources": sources, "citations": citations}


def _response_fields(response: FunctionResponse, outcome: ToolOutcome | None, long_running: bool) -> dict[str, Any]:
    body = response.response
    failed = isinstance(body, dict) and "error" in body
    if outcome is not None:
        status, error = ("ok" if outcome.success else "error"), outcome.error
    else:
        status, error = ("error" if failed else "ok"), (body.get("error") if failed else None)
    fields: dict[str, Any] = {
        "status": status,
        "error": error_line(str(error)) if error else None,
        "result": cap(_json(body, indent=2), MAX_RESULT),
        "media": [m for m in (_media(p, response.name) for p in response.parts) if m],
        "long_running": long_running,
    }
    if outcome is not None:
        fields["duration"], fields["attempts"], fields["traceback"] = (
            outcome.duration,
            outcome.attempt,
            outcome.traceback,
        )
    return fields


# -- a whole run at once -----------------------------------------------------------------------
def _transcript(
    events: Sequence[Event], agent_name: str, prompt: str | None, status: str, error: BaseException | None
) -> dict[str, Any]:
    transcript = Transcript(agent_name=agent_name, prompt=prompt)
    for event in events:
        transcript.add(event)
    transcript.finish(status=status, error=error)
    return transcript.state()


def transcript_html(
    events: Sequence[Event],
    *,
    agent_name: str,
    prompt: str | None = None,
    status: str = "done",
    error: BaseException | None = None,
) -> str:
    """A run as static HTML: prompt, text, tool cards, media, state, errors, usage, wall time.

    `prompt` defaults to the text of the run's first user event. Every string is escaped.
    """
    return state_html(_transcript(events, agent_name, prompt, status, error))


def transcript_text(
    events: Sequence[Event],
    *,
    agent_name: str,
    prompt: str | None = None,
    status: str = "done",
    error: BaseException | None = None,
) -> str:
    """A run as plain text; the same content as `transcript_html`, images as one-line notes."""
    return state_text(_transcript(events, agent_name, prompt, status, error))
