"""Hostile runs through the transcript: whatever text, ids and names a run carries, what the
user sees is well-formed, escaped HTML and clean text, live and saved alike.

Hypothesis draws runs from events a model, a tool or a stored history could hold: user and
model text full of markup, markdown, backticks inside link URLs, NUL and other control
characters, ANSI escapes, lone surrogates; tool calls whose ids repeat (within a turn and
across turns) or are missing, responses and outcomes for them, progress lines, state and
artifact deltas, errors, and media with odd URIs and MIME types. Each run is folded by
`Transcript` and drawn by `render.state_html` / `state_text`, and the checks are:

- the HTML is well-formed (every element closed in order), uses only the renderer's tags, has
  no event-handler attribute, and no tag or attribute the input tried to smuggle in;
- every `href` is http(s) or a data: PDF and holds no markup, every `src` an image data URL;
- no output (HTML, text, the widget's state and deltas) carries a control character or a
  lone surrogate, and each encodes as UTF-8;
- in a finished run no tool card is still running.

A sample of the runs goes through a real `RunView` into run_view.js in Chromium (the ops it
sends, and a snapshot mid-run), and the page must equal the saved transcript item by item, with
no probe run; and every markdown text the runs held, streamed in pieces, must end as the HTML of
the whole text.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_render import SAFE_TAGS
from view_page import view_page
from widget_comms import RecordingComm, comms

from adk_notebook import (
    AdkError,
    Content,
    Event,
    EventActions,
    FileData,
    FunctionCall,
    FunctionResponse,
    Part,
    ToolOutcome,
    ToolProgress,
    Usage,
)
from adk_notebook.notebook.markdown import MarkdownStream, markdown_to_html
from adk_notebook.notebook.render import state_html, state_text
from adk_notebook.notebook.timeline import LiveTrace
from adk_notebook.notebook.transcript import Transcript
from adk_notebook.notebook.view_ops import LiveDiff, wire
from adk_notebook.notebook.widgets import RunView

__all__ = ["comms"]  # the fixture, used by name

SETTINGS: dict[str, Any] = {
    "deadline": None,
    "database": None,
    "derandomize": True,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
}
EXAMPLES = 300
PAGE_SAMPLE = 40  # runs also shown live by run_view.js in Chromium (one page for all of them)
MARKDOWN_SAMPLE = 800  # texts streamed in pieces

UNSAFE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")
VOID = {"br", "img"}
FRAGMENTS = [
    "<script>window.__pwned=1</script>",
    "<x-pwn>",
    '<div data-pwn="1">',
    '<a href="https://e.com" data-pwn>',
    "</code></pre></div>",
    "`",
    "``",
    "`code`",
    "[x](https://a.com/`b`)",
    "[`c` d](https://e.f/`g`)",
    "[l](javascript:x)",
    "**",
    "*",
    "_",
    "__",
    "# ",
    "- ",
    "1. ",
    "```",
    "\n",
    "\r\n",
    "\r",
    "\t",
    " ",
    "&amp;",
    "&",
    '"',
    "'",
    "<",
    ">",
    "https://",
    "data:text/html,<b>",
    "\x00",
    "\x1b[2J",
    "\x1b]0;title\x07",
    "\x7f",
    "\x85",
    "\u2028",
    "\ud800",
    "\udc00",
    "\ud83d",
    "\ude00",
    "\U0001f600",
    "\ufeff",
    "\ue000",
    "\ue004",
    "\x01",
    "\x05",
    "0\x00",
    "\x000\x00",
    # where Python's and JavaScript's regexes differ unless both keep to ASCII classes
    "\u00a0",
    "\u2003",
    "\u3000",
    "\u1680",
    "\u2029",
    "\u0661\u0662. ",
    "\u017f",
    "\u212a",
    "é",
    "_é_",
    "*é*",
    "__é__",
    "HTTPS://",
    "[x](HTTPS://A.B)",
    "[x](http\u017f://a)",
    "```é",
    "#\u00a0x",
    "-\u00a0x",
]
_chars = st.characters(min_codepoint=0, max_codepoint=0x10FFFF, blacklist_categories=())
text = st.lists(st.sampled_from(FRAGMENTS) | st.text(_chars, max_size=4), max_size=8).map("".join)
call_ids = st.sampled_from(["call_0", "call_0", "call_1", "", "\x00", "<b>"]) | text
names = st.sampled_from(["lookup", "get_weather"]) | text
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=6,
)
uris = (
    st.sampled_from(
        [
            "https://e.com/r.pdf",
            "javascript:alert(1)",
            "data:application/pdf;base64,AAAA",
            'https://e.com/"><script>',
            "gs://b/o",
            "file:///etc/passwd",
        ]
    )
    | text
)
mimes = st.sampled_from(["application/pdf", "image/png", "image/svg+xml", "text/html"]) | text


@st.composite
def events(draw: st.DrawFn) -> list[Event]:
    out: list[Event] = []
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(
            st.sampled_from(["user", "text", "chunks", "calls", "answers", "progress", "state", "error", "media"])
        )
        if kind == "user":
            out.append(Event("user", Content.user(draw(text))))
        elif kind == "text":
            out.append(Event("bot", Content.model(draw(text)), usage=Usage(1, 2, 3)))
        elif kind == "chunks":
            out += [Event("bot", Content.model(t), partial=True) for t in draw(st.lists(text, min_size=1, max_size=3))]
            if draw(st.booleans()):
                out.append(Event("bot", Content.model(draw(text))))
        elif kind == "calls":
            calls = draw(
                st.lists(
                    st.builds(FunctionCall, names, st.dictionaries(text, json_values, max_size=2), call_ids),
                    min_size=1,
                    max_size=3,
                )
            )
            out.append(Event("bot", Content("model", [Part(function_call=c) for c in calls])))
        elif kind == "answers":
            pairs = draw(
                st.lists(
                    st.tuples(
                        names,
                        call_ids,
                        st.dictionaries(st.sampled_from(["error", "r"]) | text, json_values, max_size=2),
                    ),
                    min_size=1,
                    max_size=3,
                )
            )
            parts = [Part(function_response=FunctionResponse(n, r, i)) for n, i, r in pairs]
            outcomes = [ToolOutcome(i, n, {}, draw(st.booleans()), 0.5, draw(text) or None) for n, i, _ in pairs]
            out.append(Event("bot", Content("tool", parts), tool_outcomes=draw(st.sampled_from([outcomes, []]))))
        elif kind == "progress":
            out.append(
                Event("bot", partial=True, progress=ToolProgress(draw(call_ids), draw(names), "stdout", draw(text)))
            )
        elif kind == "state":
            out.append(
                Event(
                    "bot",
                    actions=EventActions(
                        state_delta=draw(st.dictionaries(text, json_values, max_size=2)),
                        artifact_delta=draw(st.dictionaries(text, st.integers(0, 9), max_size=1)),
                        transfer_to_agent=draw(st.none() | text),
                    ),
                )
            )
        elif kind == "error":
            out.append(Event("bot", error=AdkError.tool(draw(text) or "x")))
        else:
            files = [Part(file_data=FileData(draw(mimes), draw(uris))) for _ in range(draw(st.integers(1, 2)))]
            out.append(Event("bot", Content("model", [Part(text=draw(text)), *files])))
    return out


class Checked(HTMLParser):
    """Parses HTML and records what is wrong with it."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.open: list[str] = []
        self.problems: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in SAFE_TAGS:
            self.problems.append(f"tag <{tag}>")
        for name, value in attrs:
            if name.startswith("on") or "pwn" in name:
                self.problems.append(f"attribute {name} on <{tag}>")
            if (
                tag == "a"
                and name == "href"
                and not re.match(r"^(https?://|data:application/pdf;base64,)", value or "", re.IGNORECASE)
            ):
                self.problems.append(f"href {value!r}")
            if tag == "img" and name == "src" and not re.match(r"^data:image/[a-z+]+;base64,", value or ""):
                self.problems.append(f"src {value!r}")
        if tag not in VOID:
            self.open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.open or self.open[-1] != tag:
            self.problems.append(f"</{tag}> closes <{self.open[-1] if self.open else None}>")
        else:
            self.open.pop()


def check(run: list[Event]) -> list[str]:
    """What is wrong with how `run` is shown (an empty list when nothing is)."""
    transcript = Transcript(agent_name="bot", track=True)
    diff = LiveDiff(transcript, LiveTrace("bot"))
    ops: list[Any] = []
    for event in run:
        transcript.add(event)
        ops += wire(diff.take())
    transcript.finish(status="done")
    ops += wire(diff.take())
    state = transcript.state()
    html, plain = state_html(state), state_text(state)
    parsed = Checked()
    parsed.feed(html)
    parsed.close()
    problems = parsed.problems + [f"<{tag}> left open" for tag in parsed.open]
    problems += [f"markup in href {h!r}" for h in re.findall(r'href="([^"]*)"', html) if "<" in h or ">" in h]
    for label, out in (("html", html), ("text", plain), ("widget", json.dumps([ops, state], ensure_ascii=False))):
        if UNSAFE.search(out):
            problems.append(f"{label} carries {UNSAFE.search(out)[0]!r}")  # type: ignore[index]
        try:
            out.encode("utf-8")
        except UnicodeEncodeError as exc:
            problems.append(f"{label} does not encode: {exc}")
    running = [i for i in state["items"] if i["k"] == "tool" and i["status"] == "running"]
    if running:
        problems.append(f"{len(running)} card(s) still running in a finished run")
    return problems


def test_hostile_runs_render_well_formed_escaped_and_clean(tally: Any) -> None:
    tried, bad = 0, 0
    failures: list[tuple[list[Event], list[str]]] = []

    @settings(max_examples=EXAMPLES, **SETTINGS)
    @given(run=events())
    def prop(run: list[Event]) -> None:
        nonlocal tried, bad
        tried += 1
        problems = check(run)
        if problems:
            bad += 1
            failures.append((run, problems))
        assert not problems, problems

    try:
        prop()
    finally:
        tally.record("transcript: hostile runs (HTML well-formed and escaped, text clean)", tried, bad)


def test_hostile_runs_look_the_same_live_and_saved(comms: list[RecordingComm], tally: Any) -> None:
    runs: list[list[Event]] = []

    @settings(max_examples=PAGE_SAMPLE, **SETTINGS)
    @given(run=events())
    def collect(run: list[Event]) -> None:
        runs.append(run)

    collect()
    differ = 0
    with view_page() as page:
        for run in runs:
            view = RunView(agent_name="bot", prompt="go")
            recorded = comms[-1]
            joined = 0
            for n, event in enumerate(run):
                view.handle(event)
                view._last_flush = float("-inf")  # a delta after each event
                if n == len(run) // 2:  # the page opens mid-run: it joins through a snapshot
                    page.load(recorded.opened()["view"])
                    joined = len(recorded.custom())
                    recorded.receive(page.sent()[-1])
            view.finish()
            if not run:
                page.load(recorded.opened()["view"])
            for msg in recorded.custom()[joined:]:  # what reached the page after it opened
                page.emit(msg)
            live, saved = page.compare(view.html)
            differ += live != saved or page.pwned()
    tally.record("transcript: hostile runs, live page vs saved", len(runs), differ)
    assert not differ


def test_hostile_markdown_streamed_in_pieces_ends_as_the_whole(tally: Any) -> None:
    texts: list[str] = []

    @settings(max_examples=MARKDOWN_SAMPLE, **SETTINGS)
    @given(lines=st.lists(text, min_size=1, max_size=4), cuts=st.lists(st.integers(0, 200), max_size=6))
    def collect(lines: list[str], cuts: list[int]) -> None:
        texts.append("\n".join(lines))
        stream = MarkdownStream()
        whole = texts[-1]
        for cut in sorted(cuts):
            stream.update(whole[:cut])
        stream.update(whole)
        if not stream.matches(markdown_to_html(whole)) and "]:" not in whole:  # a reference is drawn again whole
            mismatched.append(whole)

    mismatched: list[str] = []
    collect()
    tally.record("transcript: hostile markdown, streamed vs whole", len(texts), len(mismatched))
    assert not mismatched, [repr(t) for t in mismatched[:5]]
