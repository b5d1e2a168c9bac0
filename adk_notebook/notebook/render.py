"""What a run looks like without a live widget: a static HTML and a plain-text transcript.

`Transcript` folds a run's events, in order, into one JSON-ready state: the user's prompt,
model text (streamed, then complete), one card per tool call (arguments, status, duration,
attempts, progress log, result, images, PDF references), state deltas, errors, token usage
and wall time. The live widget (`widgets.run_view`) keeps the same state: its front end draws
it, and `state_html` / `state_text` here draw it for nbconvert, GitHub, VS Code and logs.

Safety: every string that came from a user, a model or a tool goes through `html.escape`
before it is part of HTML. Images are inlined only as `<img src="data:...">` with a mime type
from `IMAGE_TYPES` (so an SVG never becomes markup), and a link is made only from an
http(s) URL or a data: URL of an allowed type; a `javascript:` URI stays text.

No IPython or ipywidgets here: the magics use these functions for `%adk` tables as well.
"""

from __future__ import annotations

import base64
import html
import json
import re
import time
from collections.abc import Iterable, Sequence
from typing import Any

from ..core.content import Content, FunctionResponse, Part
from ..core.errors import AdkError
from ..core.events import Event, EventActions, ToolOutcome, ToolProgress, Usage

__all__ = [
    "IMAGE_TYPES",
    "Transcript",
    "error_line",
    "escape",
    "markdown_to_html",
    "safe_url",
    "state_html",
    "state_text",
    "table_html",
    "transcript_html",
    "transcript_text",
]

# Shown inline as <img src="data:...">. SVG is drawn by <img>, where its scripts never run.
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp", "image/svg+xml"})
_MIME_ALIASES = {"image/jpg": "image/jpeg", "image/pjpeg": "image/jpeg"}
MAX_INLINE_IMAGE = 8 * 1024 * 1024  # bytes; larger images are listed, not shown
MAX_INLINE_PDF = 10 * 1024 * 1024  # bytes; larger PDFs are listed, not embedded
LOG_LIMIT = 8192  # characters of a tool's progress log kept on screen (the tail)
MAX_RESULT = 20_000  # characters of a tool's result JSON shown
MAX_ARGS = 4_000  # characters of a tool call's arguments shown
MAX_VALUE = 80  # characters of one state value shown


def escape(value: object) -> str:
    """`value` as text that is safe inside HTML elements and quoted attributes."""
    return html.escape(value if isinstance(value, str) else str(value), quote=True)


def error_line(error: BaseException | str) -> str:
    """One clear line for an error: its message, never a traceback."""
    if isinstance(error, AdkError):
        text = str(error)
    elif isinstance(error, BaseException):
        text = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    else:
        text = str(error)
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return _cap(line, 500)


def safe_url(url: str | None) -> str | None:
    """`url` when it may become a link (http, https, or data: of an allowed type), else None."""
    if not url:
        return None
    url = url.strip()
    lower = url[:40].lower()
    if lower.startswith(("http://", "https://")):
        return url
    if lower.startswith("data:"):
        mime = lower[5:].split(";", 1)[0].split(",", 1)[0]
        if mime == "application/pdf" or mime in IMAGE_TYPES:
            return url
    return None


def _cap(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"… ({len(text) - limit:,} more characters)"


def _json(value: Any, *, indent: int | None = None) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, indent=indent, default=repr)
    except (TypeError, ValueError):
        return repr(value)


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else _json(value)
    return text if len(text) <= MAX_VALUE else text[: MAX_VALUE - 1] + "…"


def _size(n: int | None) -> str:
    if n is None:
        return ""
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.0f} KB" if n >= 10 * 1024 else f"{n / 1024:.1f} KB"
    return f"{n / (1024 * 1024):.1f} MB"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return ""
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    return f"{int(seconds // 60)} min {seconds % 60:.0f} s"


# -- the state of a run ------------------------------------------------------------------------
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
        return {"k": kind, "mime": mime, "name": name, "uri": ref.file_uri[:2000], "href": safe_url(ref.file_uri),
                "data": None, "size": None}
    return None


class _Text:
    __slots__ = ("author", "chunks", "done", "index")

    def __init__(self, author: str, chunks: list[str], done: bool) -> None:
        self.author, self.chunks, self.done = author, chunks, done
        self.index = -1

    def json(self) -> dict[str, Any]:
        return {"k": "text", "author": self.author, "text": "".join(self.chunks), "done": self.done}


class _Tool:
    __slots__ = ("fields", "log", "log_len", "log_dropped")

    def __init__(self, fields: dict[str, Any]) -> None:
        self.fields = fields
        self.log: list[str] = []
        self.log_len = 0
        self.log_dropped = 0

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
    records what changed as small ops, which the live widget sends in batches (`take_ops`);
    `state()` is the whole JSON-ready state, for the widget's trait and for `state_html`.

    Ops, each a list: `["i", item]` new item; `["t", index, text]` text appended;
    `["e", index]` / `["e", index, text]` a text turn ended (with its full text when it differs
    from what streamed); `["u", index, fields]` item fields changed; `["l", index, text, dropped]`
    progress log appended (`dropped` characters before `text` were cut, to keep it bounded);
    `["s", fields]` run fields changed.
    """

    def __init__(self, *, agent_name: str, prompt: str | None = None, session_id: str | None = None,
                 track: bool = False) -> None:
        self.agent_name = agent_name
        self.prompt = prompt
        self.session_id = session_id
        self.status = "running"
        self.error: str | None = None
        self.started_at = time.time()
        self.elapsed: float | None = None
        self.usage = Usage()
        self.has_usage = False
        self.items: list[_Text | _Tool | _Plain] = []
        self._open: _Text | None = None  # the text turn being streamed
        self._cards: dict[str, int] = {}  # call id -> index of its tool card
        self._seen_prompt = prompt is None
        self._first_ts: float | None = None
        self._last_ts: float | None = None
        self._track = track
        self._ops: list[list[Any]] = []
        self._run: list[Any] | None = None  # the op being coalesced: ["t"|"l", index, [chunks]]

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
        return ops

    # -- folding events --------------------------------------------------------------------
    def add(self, event: Event) -> None:
        """Fold one event (partial ones included) into the state."""
        if event.progress is not None:
            self._progress(event.progress)
            return
        content = event.content
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

    def _add(self, item: _Text | _Tool | _Plain) -> int:
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

    def _close_text(self, final: str | None = None) -> None:
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
        if self._open is not None and self._open.author == event.author:
            self._close_text(text)
        else:
            self._close_text()
            if text:
                self._add(_Text(event.author, [text], True))
        self._media_item(content.parts, event.author)
        for call in content.function_calls():
            key = call.id or f"#{len(self.items)}"
            self._cards[key] = self._add(_Tool({
                "k": "tool", "id": call.id or "", "name": call.name, "args": _cap(_json(call.args), MAX_ARGS),
                "status": "running", "duration": None, "attempts": None, "error": None, "result": None,
                "media": [], "long_running": False,
            }))

    def _media_item(self, parts: Iterable[Part], owner: str) -> None:
        media = [m for m in (_media(p, owner) for p in parts if p.inline_data is not None or p.file_data is not None) if m]
        if media:
            self._add(_Plain({"k": "media", "media": media}))

    def _card(self, call_id: str | None, name: str, args: dict[str, Any] | None = None) -> int:
        if call_id and call_id in self._cards:
            return self._cards[call_id]
        if not call_id:  # no id: the oldest running card of that name
            for key, index in self._cards.items():
                fields = self.items[index].fields  # type: ignore[union-attr]
                if fields["name"] == name and fields["status"] == "running" and key.startswith("#"):
                    return index
        self._close_text()
        index = self._add(_Tool({
            "k": "tool", "id": call_id or "", "name": name, "args": _cap(_json(args or {}), MAX_ARGS),
            "status": "running", "duration": None, "attempts": None, "error": None, "result": None,
            "media": [], "long_running": False,
        }))
        self._cards[call_id or f"#{index}"] = index
        return index

    def _update(self, index: int, fields: dict[str, Any]) -> None:
        self.items[index].fields.update(fields)  # type: ignore[union-attr]
        self._op(["u", index, fields])

    def _responses(self, event: Event) -> None:
        self._close_text()
        outcomes = {o.call_id: o for o in event.tool_outcomes}
        long_running = set(event.long_running_tool_ids)
        for response in event.function_responses():
            outcome = outcomes.pop(response.id or "", None)
            index = self._card(response.id, response.name, outcome.args if outcome else None)
            self._update(index, _response_fields(response, outcome, response.id in long_running))
        if outcomes:
            self._outcomes(outcomes.values())

    def _outcomes(self, outcomes: Iterable[ToolOutcome]) -> None:
        for o in outcomes:
            index = self._card(o.call_id, o.tool_name, o.args)
            self._update(index, {"status": "ok" if o.success else "error", "duration": o.duration,
                                 "attempts": o.attempt, "error": error_line(o.error) if o.error else None})

    def _progress(self, progress: ToolProgress) -> None:
        index = self._card(progress.call_id, progress.tool_name)
        card = self.items[index]
        if progress.chunk:
            card.append_log(progress.chunk)  # type: ignore[union-attr]
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
        return {"input": u.input_tokens, "output": u.output_tokens, "total": u.total_tokens}

    # -- the end ---------------------------------------------------------------------------
    def finish(self, *, status: str = "done", error: BaseException | str | None = None,
               elapsed: float | None = None, usage: Usage | None = None) -> None:
        """Close the run: end the open text turn, settle running cards, record the outcome."""
        self._close_text()
        if status != "done":
            for index in self._cards.values():
                if self.items[index].fields["status"] == "running":  # type: ignore[union-attr]
                    self._update(index, {"status": "cancelled"})
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
        self._op(["s", {"status": status, "error": self.error, "elapsed": elapsed,
                        "usage": self._usage_json() if self.has_usage else None}])

    def state(self) -> dict[str, Any]:
        """The whole state as JSON-ready data (what the widget's `state` trait holds)."""
        return {
            "v": 1,
            "agent": self.agent_name,
            "prompt": self.prompt,
            "session_id": self.session_id,
            "status": self.status,
            "error": self.error,
            "started_at": self.started_at,
            "elapsed": self.elapsed,
            "usage": self._usage_json() if self.has_usage else None,
            "items": [item.json() for item in self.items],
        }


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
        "result": _cap(_json(body, indent=2), MAX_RESULT),
        "media": [m for m in (_media(p, response.name) for p in response.parts) if m],
        "long_running": long_running,
    }
    if outcome is not None:
        fields["duration"], fields["attempts"] = outcome.duration, outcome.attempt
    return fields


# -- markdown ----------------------------------------------------------------------------------
_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})\s*([\w+.#-]*)")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^\s{0,3}[-*+]\s+(.*)$")
_NUMBER = re.compile(r"^\s{0,3}\d{1,9}[.)]\s+(.*)$")
_CODE_SPAN = re.compile(r"`([^`\n]+)`")
_LINK = re.compile(r"\[([^\]\n]+)\]\((https?://[^\s()]+)\)", re.IGNORECASE)
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*|(?<![\w_])__(?=\S)(.+?)(?<=\S)__(?![\w_])")
_ITALIC = re.compile(r"(?<![\w*])\*(?=[^\s*])([^*\n]+?)(?<=\S)\*(?![\w*])|(?<![\w_])_(?=\S)([^_\n]+?)(?<=\S)_(?![\w_])")
_HOLE = re.compile("\x00(\\d+)\x00")


def _inline(text: str) -> str:
    """Inline markup on already escaped text: code spans, links, bold, italic."""
    holes: list[str] = []

    def hold(html_text: str) -> str:
        holes.append(html_text)
        return f"\x00{len(holes) - 1}\x00"

    text = _CODE_SPAN.sub(lambda m: hold(f"<code>{m[1]}</code>"), text)
    text = _LINK.sub(lambda m: hold(f'<a href="{m[2]}" target="_blank" rel="noopener noreferrer">{m[1]}</a>'), text)
    text = _BOLD.sub(lambda m: f"<strong>{m[1] or m[2]}</strong>", text)
    text = _ITALIC.sub(lambda m: f"<em>{m[1] or m[2]}</em>", text)
    while "\x00" in text:
        text = _HOLE.sub(lambda m: holes[int(m[1])], text)
    return text


def markdown_to_html(text: str) -> str:
    """A small, safe markdown: the text is escaped first, then a subset becomes markup.

    The subset: paragraphs (a single newline is a line break), headings (`#`), **bold**,
    *italic*, `code`, fenced code blocks, flat bulleted and numbered lists, and links whose
    URL is http(s). Anything else (raw HTML included) shows as the text it is.
    """
    lines = escape(text.replace("\x00", "\ufffd").replace("\r\n", "\n").replace("\r", "\n")).split("\n")
    out: list[str] = []
    para: list[str] = []
    items: list[str] = []
    list_tag = ""

    def end_blocks() -> None:
        nonlocal list_tag
        if para:
            out.append("<p>" + "<br>".join(_inline(ln) for ln in para) + "</p>")
            para.clear()
        if items:
            out.append(f"<{list_tag}>" + "".join(f"<li>{_inline(i)}</li>" for i in items) + f"</{list_tag}>")
            items.clear()
            list_tag = ""

    i = 0
    while i < len(lines):
        line = lines[i]
        fence = _FENCE.match(line)
        if fence:
            end_blocks()
            marker, lang = fence[1], fence[2]
            body: list[str] = []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith(marker):
                body.append(lines[i])
                i += 1
            cls = f' class="language-{lang}"' if lang else ""
            out.append(f"<pre><code{cls}>" + "\n".join(body) + "</code></pre>")
            i += 1
            continue
        heading = _HEADING.match(line)
        bullet = _BULLET.match(line)
        number = None if bullet else _NUMBER.match(line)
        if heading:
            end_blocks()
            level = len(heading[1])
            out.append(f"<h{level}>{_inline(heading[2])}</h{level}>")
        elif bullet or number:
            tag = "ul" if bullet else "ol"
            if para or (items and list_tag != tag):
                end_blocks()
            list_tag = tag
            items.append((bullet or number)[1])  # type: ignore[index]
        elif not line.strip():
            end_blocks()
        elif items and line.startswith((" ", "\t")):
            items[-1] += " " + line.strip()  # a list item's continuation line
        else:
            if items:
                end_blocks()
            para.append(line)
        i += 1
    end_blocks()
    return "".join(out)


# -- HTML --------------------------------------------------------------------------------------
_FONT = "font-family:var(--jp-ui-font-family,system-ui,-apple-system,'Segoe UI',sans-serif)"
_MONO = "font-family:var(--jp-code-font-family,ui-monospace,SFMono-Regular,Menlo,Consolas,monospace)"
_BORDER = "1px solid var(--jp-border-color2,rgba(128,128,128,.35))"
_MUTED = "opacity:.7"
_PRE = (f"{_MONO};font-size:12px;white-space:pre-wrap;word-break:break-word;margin:4px 0;padding:4px 6px;"
        "background:var(--jp-layout-color2,rgba(128,128,128,.12));border-radius:4px;max-height:24em;overflow:auto")
_STATUS_COLOR = {
    "running": "var(--jp-brand-color1,#1976d2)",
    "ok": "var(--jp-success-color1,#388e3c)",
    "done": "var(--jp-success-color1,#388e3c)",
    "error": "var(--jp-error-color1,#d32f2f)",
    "cancelled": "var(--jp-warn-color1,#f57c00)",
}


def _badge(status: str) -> str:
    color = _STATUS_COLOR.get(status, "inherit")
    return (f'<span style="color:{color};border:1px solid currentColor;border-radius:8px;padding:0 6px;'
            f'font-size:11px">{escape(status)}</span>')


def _media_html(media: dict[str, Any]) -> str:
    kind = media.get("k")
    if kind == "image" and media.get("mime") in IMAGE_TYPES:
        src = f"data:{media['mime']};base64,{media['data']}"
        return (f'<div><img src="{escape(src)}" alt="{escape(media["mime"])} image" '
                'style="max-width:100%;max-height:480px;border-radius:4px;margin:4px 0"></div>')
    size = _size(media.get("size"))
    if kind == "pdf":
        href = media.get("href")
        if href is None and media.get("data"):
            href = f"data:application/pdf;base64,{media['data']}"
        label = "PDF" + (f", {size}" if size else "")
        name = escape(media.get("name") or "document.pdf")
        if safe_url(href):
            download = f' download="{name}"' if href.startswith("data:") else ""
            return (f'<div>📄 <a href="{escape(href)}" target="_blank" rel="noopener noreferrer"{download}>{name}</a> '
                    f'<span style="{_MUTED}">({label})</span></div>')
        uri = media.get("uri")
        where = f" {escape(uri)}" if uri and uri != media.get("name") else ""
        note = ", not a link" if uri else ", not embedded"
        return f'<div>📄 {name} <span style="{_MUTED}">({label}{note}){where}</span></div>'
    href = safe_url(media.get("href"))
    desc = escape(media.get("mime") or "file") + (f", {size}" if size else "")
    if href:
        return (f'<div>📎 <a href="{escape(href)}" target="_blank" rel="noopener noreferrer">'
                f'{escape(media.get("name") or href)}</a> <span style="{_MUTED}">({desc})</span></div>')
    where = escape(media.get("uri") or media.get("name") or "")
    return f'<div>📎 {where} <span style="{_MUTED}">({desc}, not shown)</span></div>'


def _tool_html(card: dict[str, Any]) -> str:
    meta = []
    if card.get("duration") is not None:
        meta.append(_duration(card["duration"]))
    if card.get("attempts"):
        meta.append(f"attempt {card['attempts']}" if card["attempts"] == 1 else f"{card['attempts']} attempts")
    if card.get("long_running"):
        meta.append("long-running")
    parts = [
        f'<div style="border:{_BORDER};border-radius:6px;margin:6px 0;padding:4px 8px">',
        f'<div><span style="{_MONO};font-weight:600">🔧 {escape(card.get("name", ""))}</span> {_badge(card.get("status", ""))}'
        + (f' <span style="{_MUTED};font-size:12px">{escape(" · ".join(meta))}</span>' if meta else "") + "</div>",
    ]
    if card.get("args") not in (None, "", "{}"):
        parts.append(f'<pre style="{_PRE}">{escape(card["args"])}</pre>')
    if card.get("error"):
        parts.append(f'<div style="color:{_STATUS_COLOR["error"]}">⚠ {escape(card["error"])}</div>')
    if card.get("log"):
        dropped = card.get("log_dropped") or 0
        note = f'<div style="{_MUTED};font-size:11px">… {dropped:,} earlier characters not shown</div>' if dropped else ""
        parts.append(f"{note}<pre style=\"{_PRE}\">{escape(card['log'])}</pre>")
    if card.get("result") is not None:
        parts.append(f'<details><summary style="cursor:pointer;{_MUTED};font-size:12px">result</summary>'
                     f'<pre style="{_PRE}">{escape(card["result"])}</pre></details>')
    parts.extend(_media_html(m) for m in card.get("media") or ())
    parts.append("</div>")
    return "".join(parts)


def _item_html(item: dict[str, Any]) -> str:
    kind = item.get("k")
    if kind == "text":
        body = markdown_to_html(item["text"]) if item.get("done") else (
            f'<div style="white-space:pre-wrap">{escape(item["text"])}</div>')
        return f'<div class="adk-text" style="margin:4px 0">{body}</div>'
    if kind == "tool":
        return _tool_html(item)
    if kind == "user":
        return f'<div style="margin:4px 0"><span style="{_MUTED}">you:</span> {escape(item["text"])}</div>'
    if kind == "media":
        return "".join(_media_html(m) for m in item.get("media") or ())
    if kind == "state":
        rows = [f'<code style="{_MONO}">{escape(k)}</code> = <code style="{_MONO}">{escape(v)}</code>'
                for k, v in item.get("delta") or ()]
        rows += [f'artifact <code style="{_MONO}">{escape(k)}</code> v{escape(v)}' for k, v in item.get("artifacts") or ()]
        if item.get("transfer"):
            rows.append(f"→ transfer to {escape(item['transfer'])}")
        return f'<div style="font-size:12px;margin:2px 0"><span style="{_MUTED}">state:</span> {" · ".join(rows)}</div>'
    if kind == "error":
        return f'<div style="color:{_STATUS_COLOR["error"]};margin:4px 0">⚠ {escape(item["message"])}</div>'
    return ""


def _footer(state: dict[str, Any]) -> str:
    bits = []
    if state.get("elapsed") is not None:
        bits.append(_duration(state["elapsed"]))
    usage = state.get("usage")
    if usage:
        bits.append(f"tokens: {usage['input']:,} in · {usage['output']:,} out · {usage['total']:,} total")
    return " · ".join(bits)


def state_html(state: dict[str, Any]) -> str:
    """A run's state (`Transcript.state()`) as self-contained, escaped HTML."""
    head = (f'<div style="display:flex;gap:8px;align-items:center;margin-bottom:4px">'
            f'<strong>{escape(state.get("agent") or "agent")}</strong>{_badge(state.get("status") or "")}'
            f'<span style="{_MUTED};font-size:12px">{escape(_footer(state))}</span></div>')
    parts = [f'<div class="adk-run" style="{_FONT};font-size:13px;line-height:1.45;border:{_BORDER};'
             f'border-radius:8px;padding:6px 10px;margin:2px 0">', head]
    if state.get("prompt"):
        parts.append(f'<div style="margin:4px 0;padding:4px 8px;border-left:3px solid {_STATUS_COLOR["running"]};'
                     f'white-space:pre-wrap">{escape(state["prompt"])}</div>')
    parts.extend(_item_html(item) for item in state.get("items") or ())
    if state.get("error"):
        parts.append(f'<div style="color:{_STATUS_COLOR["error"]};margin-top:4px">⚠ {escape(state["error"])}</div>')
    parts.append("</div>")
    return "".join(parts)


def _indent(text: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + ln for ln in text.splitlines())


def _media_text(media: dict[str, Any]) -> str:
    size = _size(media.get("size"))
    if media.get("k") == "image":
        return f"[image {media['mime']}{', ' + size if size else ''}]"
    where = media.get("href") or media.get("uri") or media.get("name") or ""
    label = "PDF" if media.get("k") == "pdf" else (media.get("mime") or "file")
    return f"[{label}{', ' + size if size else ''}] {where}".rstrip()


def state_text(state: dict[str, Any]) -> str:
    """A run's state as plain text (text/plain, logs, terminals)."""
    footer = _footer(state)
    lines = [f"[{state.get('agent') or 'agent'}] {state.get('status')}" + (f" · {footer}" if footer else "")]
    if state.get("prompt"):
        lines.append(_indent(state["prompt"], "> "))
    for item in state.get("items") or ():
        kind = item.get("k")
        if kind == "text":
            lines.append(item["text"])
        elif kind == "user":
            lines.append(_indent(item["text"], "> "))
        elif kind == "tool":
            meta = [item["status"]] + ([_duration(item["duration"])] if item.get("duration") is not None else [])
            if item.get("attempts") and item["attempts"] > 1:
                meta.append(f"{item['attempts']} attempts")
            lines.append(f"tool {item['name']}({item['args']}) → {' · '.join(meta)}")
            if item.get("error"):
                lines.append(f"    error: {item['error']}")
            if item.get("log"):
                lines.append(_indent(item["log"].rstrip("\n")[-2000:], "    | "))
            if item.get("result") is not None:
                lines.append("    result: " + " ".join(_cap(item["result"], 300).split()))
            lines.extend("    " + _media_text(m) for m in item.get("media") or ())
        elif kind == "media":
            lines.extend(_media_text(m) for m in item.get("media") or ())
        elif kind == "state":
            pairs = [f"{k} = {v}" for k, v in item.get("delta") or ()]
            pairs += [f"artifact {k} v{v}" for k, v in item.get("artifacts") or ()]
            if item.get("transfer"):
                pairs.append(f"transfer to {item['transfer']}")
            lines.append("state: " + "; ".join(pairs))
        elif kind == "error":
            lines.append(f"error: {item['message']}")
    if state.get("error"):
        lines.append(f"error: {state['error']}")
    return "\n".join(lines)


def _transcript(events: Sequence[Event], agent_name: str, prompt: str | None, status: str,
                error: BaseException | None) -> dict[str, Any]:
    transcript = Transcript(agent_name=agent_name, prompt=prompt)
    for event in events:
        transcript.add(event)
    transcript.finish(status=status, error=error)
    return transcript.state()


def transcript_html(events: Sequence[Event], *, agent_name: str, prompt: str | None = None, status: str = "done",
                    error: BaseException | None = None) -> str:
    """A run as static HTML: prompt, text, tool cards, media, state, errors, usage, wall time.

    `prompt` defaults to the text of the run's first user event. Every string is escaped.
    """
    return state_html(_transcript(events, agent_name, prompt, status, error))


def transcript_text(events: Sequence[Event], *, agent_name: str, prompt: str | None = None, status: str = "done",
                    error: BaseException | None = None) -> str:
    """A run as plain text; the same content as `transcript_html`, images as one-line notes."""
    return state_text(_transcript(events, agent_name, prompt, status, error))


def table_html(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A small escaped HTML table (for `%adk tools`, `%adk sessions`...)."""
    cell = f"padding:2px 8px;text-align:left;vertical-align:top;border-bottom:{_BORDER}"
    head = "".join(f'<th style="{cell}">{escape(h)}</th>' for h in headers)
    body = "".join("<tr>" + "".join(f'<td style="{cell}">{escape(v)}</td>' for v in row) + "</tr>" for row in rows)
    return f'<table style="{_FONT};font-size:13px;border-collapse:collapse"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
