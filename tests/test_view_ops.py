"""The live view's ops: a run drawn once, in Python, and sent as typed changes.

What a user would check, without a browser: a streaming answer reaches the page block by block
and ends as exactly the HTML the saved transcript has; a closed block is never sent twice; every
op names an element that the HTML drawn so far has; the ops' bytes grow with the answer, not
with its square. (tests/browser/test_view_page.py applies the same ops with run_view.js in
Chromium and compares the page with the saved transcript item by item.)
"""

from __future__ import annotations

import json
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from adk_notebook import Content, Event, FunctionCall, FunctionResponse, Part
from adk_notebook.core.events import ToolProgress
from adk_notebook.notebook.markdown import MarkdownStream, markdown_to_html
from adk_notebook.notebook.timeline import LiveTrace
from adk_notebook.notebook.transcript import Transcript
from adk_notebook.notebook.view_ops import AppendText, Insert, LiveDiff, Replace, Stream, wire
from adk_notebook.notebook.waterfall import run_html

ANSWERS = [
    "Plain words only.",
    "# Title\nFirst paragraph.\n\nSecond paragraph with **bold** and `code`.\n\n- one\n- two\n\n1. a\n2. b\n",
    "| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n\nAfter the table.",
    "```python\nprint('hi')\n\nx = 1\n```\n\nText after the fence.\n\n    indented code\n\nEnd.",
    "> quoted\ncontinued lazily\n\n> again\n\n---\n\nSetext\n===\n\nPara\nline two\n",
    "- loose\n\n- list\n\n  with a second paragraph\n\nDone.",
    "Line\r\nwith CRLF\r\n\r\nand\rlone CR\r\rnext",
    "<script>alert(1)</script>\n\n[link](javascript:alert(1)) and [ok](https://example.com)",
]


def stream_in(text: str, cuts: list[int]) -> MarkdownStream:
    stream = MarkdownStream()
    for cut in sorted(set(cuts)):
        stream.update(text[:cut])
    stream.update(text)
    return stream


def test_a_streamed_answer_ends_as_the_html_of_the_whole_answer() -> None:
    for text in ANSWERS:
        for step in (1, 2, 3, 7, 40):
            stream = stream_in(text, list(range(0, len(text), step)))
            assert stream.matches(markdown_to_html(text)), (text, step)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "word ",
                "**b** ",
                "`c` ",
                "\n",
                "\n\n",
                "- ",
                "1. ",
                "# ",
                "> ",
                "```",
                "|a|b|\n|-|-|\n",
                "    ",
                "=\n",
                "\r",
            ]
        ),
        max_size=40,
    ),
    st.lists(st.integers(min_value=0, max_value=400), max_size=12),
)
def test_any_chunking_of_any_answer_ends_as_its_whole_html(pieces: list[str], cuts: list[int]) -> None:
    text = "".join(pieces)
    assert stream_in(text, cuts).matches(markdown_to_html(text))


def test_closed_blocks_go_once_and_only_the_tail_is_drawn_again() -> None:
    paragraphs = [f"Paragraph {n} has some words in it." for n in range(200)]
    text = "\n\n".join(paragraphs)
    stream = MarkdownStream()
    sent = 0
    kept_before = 0
    for end in [*range(0, len(text), 25), len(text)]:
        change = stream.update(text[:end])
        if change is not None:
            assert change.kept >= kept_before, "blocks once closed are kept"
            kept_before = change.kept
            sent += len(change.suffix)
    assert stream.matches(markdown_to_html(text))
    assert sent < 1.5 * len(markdown_to_html(text)), "the bytes grow with the answer, not with its square"


def test_a_long_open_block_is_sent_by_what_it_grew() -> None:
    text = "```python\n" + "".join(f"x{n} = {n}  # 🎉\n" for n in range(2000))
    stream = MarkdownStream()
    sent, tail = 0, ""
    for end in [*range(0, len(text), 40), len(text)]:
        change = stream.update(text[:end])
        if change is not None:
            assert change.split == 0 and change.kept == 0, "one open block: the fence"
            utf16 = tail.encode("utf-16-le")[: 2 * change.cut].decode("utf-16-le")
            tail = utf16 + change.suffix  # as run_view.js does, in UTF-16 units
            sent += len(change.suffix)
    assert tail == stream.tail == markdown_to_html(text)
    assert sent < 1.5 * len(tail), (sent, len(tail))


def test_a_link_defined_further_down_is_drawn_again_whole() -> None:
    text = "See [the docs][d].\n\nMore text.\n\n[d]: https://example.com"
    stream = stream_in(text, list(range(0, len(text), 5)))
    assert not stream.matches(markdown_to_html(text)), "the reference changes a closed block"


# -- the ops of a run --------------------------------------------------------------------------
def rich_run() -> list[Event]:
    call = FunctionCall("lookup", {"q": "x"}, id="c1")
    return [
        Event("user", Content.user("Tell me")),
        Event("bot", Content("model", [Part(text="Thinking ", thought=True)]), partial=True),
        Event("bot", Content("model", [Part(text="it over.", thought=True)]), partial=True),
        Event("bot", Content("model", [Part(text="Thinking it over.", thought=True), Part(function_call=call)])),
        Event("bot", None, partial=True, progress=ToolProgress("c1", "lookup", "log", "step 1\n")),
        Event("bot", None, partial=True, progress=ToolProgress("c1", "lookup", "log", "step 2\n")),
        Event("bot", Content("tool", [Part(function_response=FunctionResponse("lookup", {"ok": True}, id="c1"))])),
        *[
            Event("bot", Content.model(w), partial=True)
            for w in ["# Answer\n\n", "Some ", "**bold**", " text.\n\n", "| a |"]
        ],
        Event("bot", Content.model("# Answer\n\nSome **bold** text.\n\n| a |")),
    ]


def diff_ops(events: list[Event]) -> tuple[list[list[object]], Transcript, LiveTrace]:
    transcript = Transcript(agent_name="bot", prompt="Tell me", track=True)
    trace = LiveTrace("bot")
    diff = LiveDiff(transcript, trace)
    ops: list[list[object]] = []
    for event in events:
        transcript.add(event)
        if not event.partial:
            trace.add(event)
        ops += wire(diff.take())
    transcript.finish(status="done", elapsed=1.0)
    trace.finish(1.0)
    ops += wire(diff.take())
    return ops, transcript, trace


def test_every_op_names_an_element_the_view_has() -> None:
    ops, transcript, trace = diff_ops(rich_run())
    html = run_html({**Transcript(agent_name="bot", prompt="Tell me").state()})
    names = set(re.findall(r'data-adk="([^"]+)"', html))
    for op in ops:
        if op[0] == "insert":
            names |= set(re.findall(r'data-adk="([^"]+)"', str(op[1])))
            continue
        assert op[1] in names, f"{op[0]} addresses {op[1]!r}, which the view does not have"
        if op[0] == "replace":
            names |= set(re.findall(r'data-adk="([^"]+)"', str(op[2])))
    final = run_html({**transcript.state(), "trace": trace.root})
    assert set(re.findall(r'data-adk="(i\d+)"', final)) <= names


def test_ops_are_typed_and_text_grows_as_text() -> None:
    transcript = Transcript(agent_name="bot", prompt="Tell me", track=True)
    diff = LiveDiff(transcript, LiveTrace("bot"))
    transcript.add(Event("bot", Content("model", [Part(text="hmm ", thought=True)]), partial=True))
    first = diff.take()
    assert isinstance(first[0], Insert)
    transcript.add(Event("bot", Content("model", [Part(text="more", thought=True)]), partial=True))
    assert diff.take() == [AppendText("i0.text", "more")], "a streamed thought grows as text, not drawn again"
    transcript.add(Event("bot", Content.model("Hello "), partial=True))
    ops = diff.take()
    assert isinstance(ops[0], Replace) and ops[0].target == "i0", "the thought settled"
    assert isinstance(ops[1], Insert) and isinstance(ops[2], Stream)
    assert json.loads(json.dumps(wire(ops)))[2] == ["stream", "i1.md", 0, 0, "<p>Hello</p>\n", 0]
