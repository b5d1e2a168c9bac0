"""The static transcript (HTML and text) and its markdown, from real runs' events."""

from __future__ import annotations

import base64
import json
import re
import struct
import zlib
from html.parser import HTMLParser

import pytest

from adk_notebook import (
    AdkError,
    Content,
    Event,
    EventActions,
    FunctionCall,
    FunctionResponse,
    LlmAgent,
    LlmResponse,
    Part,
    ScriptedModel,
    ToolContext,
    ToolOutcome,
    ToolProgress,
    Usage,
    tool,
)
from adk_notebook.notebook.render import error_line, escape, markdown_to_html, safe_url, table_html
from adk_notebook.notebook.transcript import LOG_LIMIT, Transcript, transcript_html, transcript_text

IMG_PROBE = "<img src=x onerror=window.__pwned=1>"
SCRIPT_PROBE = "<script>window.__pwned=1</script>"
JS_LINK = "[click me](javascript:alert(1))"


def png(width: int = 2, height: int = 2) -> bytes:
    """A valid RGB PNG, made without PIL."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


PNG = png()
PDF = b"%PDF-1.4\n" + b"0" * 2000 + b"\n%%EOF\n"
SVG = b'<svg xmlns="http://www.w3.org/2000/svg"><script>window.__pwned=1</script></svg>'


@tool
def get_weather(city: str, tool_context: ToolContext) -> dict:
    """Get the current weather for a city."""
    tool_context.state["last_city"] = city
    return {"city": city, "condition": "sunny", "note": SCRIPT_PROBE}


@tool
def lookup(query: str) -> dict:
    """Look something up (and fail)."""
    raise ValueError(f"no luck with {IMG_PROBE}\nTraceback (most recent call last): ...")


ANSWER = f"It is **sunny** in *Tokyo*.\n\n- one\n- two\n\n{JS_LINK} {IMG_PROBE} {SCRIPT_PROBE}"


def full_run() -> list[Event]:
    """A real run (two tools, one failing; streamed answer; usage) plus a multimodal tool turn."""
    model = ScriptedModel(
        [
            LlmResponse(
                Content(
                    "model",
                    [
                        Part(function_call=FunctionCall("get_weather", {"city": "Tokyo"})),
                        Part(function_call=FunctionCall("lookup", {"query": IMG_PROBE})),
                    ],
                ),
                usage=Usage(10, 2, 12),
            ),
            LlmResponse(Content.model(ANSWER), usage=Usage(12, 30, 42)),
        ]
    )
    agent = LlmAgent(name="weather", model=model, tools=[get_weather, lookup])
    events = agent.run(f"Weather in Tokyo? {SCRIPT_PROBE}").events
    media = media_turn("weather", events[0].invocation_id)
    return events[: -1 - _partials(events)] + media + events[-1 - _partials(events) :]


def _partials(events: list[Event]) -> int:
    return sum(1 for e in events if e.partial)


def media_turn(agent: str, invocation_id: str) -> list[Event]:
    """A tool that streams progress and returns an image, an SVG, PDFs and a javascript: URI."""
    call = FunctionCall("render_chart", {"title": IMG_PROBE}, id="c1")
    parts = [
        Part.from_bytes("image/png", PNG),
        Part.from_bytes("image/svg+xml", SVG),
        Part.from_uri("application/pdf", "https://example.com/report.pdf"),
        Part.from_bytes("application/pdf", PDF),
        Part.from_uri("application/pdf", "javascript:alert(1)"),
        Part.from_bytes("text/html", SCRIPT_PROBE.encode()),
    ]
    response = FunctionResponse("render_chart", {"result": "chart ready", "html": IMG_PROBE}, "c1", parts)
    return [
        Event(agent, Content("model", [Part(function_call=call)]), invocation_id),
        Event(
            agent,
            invocation_id=invocation_id,
            partial=True,
            progress=ToolProgress("c1", "render_chart", "stdout", "loading data\n"),
        ),
        Event(
            agent,
            invocation_id=invocation_id,
            partial=True,
            progress=ToolProgress("c1", "render_chart", "stdout", f"plotting {SCRIPT_PROBE}\n"),
        ),
        Event(
            agent,
            Content("tool", [Part(function_response=response)]),
            invocation_id,
            tool_outcomes=[ToolOutcome("c1", "render_chart", call.args, True, 1.5, attempt=2)],
        ),
    ]


class Structure(HTMLParser):
    """Every tag and attribute of an HTML string."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


SAFE_TAGS = {
    "div",
    "span",
    "strong",
    "em",
    "code",
    "pre",
    "details",
    "summary",
    "img",
    "a",
    "p",
    "br",
    "ul",
    "ol",
    "li",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "blockquote",
    "hr",
    "s",
}
IMAGE_SRC = re.compile(r"^data:image/(png|jpeg|gif|webp|svg\+xml);base64,[A-Za-z0-9+/=]+$")


def assert_safe_html(text: str) -> Structure:
    """Only known tags; no event handlers; images only as data URLs; links only http(s) / mailto / data:PDF."""
    parsed = Structure()
    parsed.feed(text)
    for tag, attrs in parsed.tags:
        assert tag in SAFE_TAGS, tag
        assert not [a for a in attrs if a.startswith("on")], (tag, attrs)
        if tag == "img":
            assert IMAGE_SRC.match(attrs["src"] or ""), attrs["src"][:60]
        if tag == "a":
            assert re.match(r"^(https?://|mailto:|data:application/pdf;base64,)", attrs["href"] or ""), attrs["href"]
    return parsed


# -- the transcript ---------------------------------------------------------------------------
def test_transcript_html_shows_the_whole_run() -> None:
    events = full_run()
    out = transcript_html(events, agent_name="weather")
    parsed = assert_safe_html(out)

    assert "Weather in Tokyo?" in out, "the prompt comes from the run's user event"
    assert "🔧 get_weather" in out and "🔧 lookup" in out and "🔧 render_chart" in out
    assert "{&quot;city&quot;: &quot;Tokyo&quot;}" in out, "arguments as escaped JSON"
    assert ">ok</span>" in out and ">error</span>" in out, "each card has its status"
    assert re.search(r"⚠ [^<]*ValueError: no luck with &lt;img src=x", out), "the tool's error, escaped"
    assert not [ln for ln in re.findall(r"⚠ [^<]*", out) if "Traceback" in ln], "an error is one line"
    assert "2 attempts" in out and "1.5 s" in out and "attempt 1" in out
    assert "loading data\nplotting &lt;script&gt;" in out, "the progress log, escaped"
    assert out.count("<details>") == 4 and "<summary" in out, (
        "results (and the raising tool's traceback) are collapsible"
    )
    assert "&quot;condition&quot;: &quot;sunny&quot;" in out
    # media
    images = [a["src"] for t, a in parsed.tags if t == "img"]
    assert f"data:image/png;base64,{base64.b64encode(PNG).decode()}" in images
    assert f"data:image/svg+xml;base64,{base64.b64encode(SVG).decode()}" in images
    assert "<svg" not in out, "SVG only as an <img> data URL, never as markup"
    links = [a["href"] for t, a in parsed.tags if t == "a"]
    assert "https://example.com/report.pdf" in links
    assert f"data:application/pdf;base64,{base64.b64encode(PDF).decode()}" in links
    assert "(PDF, 2.0 KB)" in out, "inline PDF: a link plus its size"
    assert "javascript:alert(1)" in out and not [h for h in links if "javascript" in h.lower()]
    assert f"text/html, {len(SCRIPT_PROBE)} B, not shown" in out
    # state, text, usage
    assert "last_city</code> = <code" in out and ">Tokyo</code>" in out
    assert "<strong>sunny</strong>" in out and "<em>Tokyo</em>" in out and "<li>one</li>" in out
    assert "tokens: 22 in · 32 out · 54 total" in out
    # the probes never become markup
    for probe in (IMG_PROBE, SCRIPT_PROBE):
        assert probe not in out
    assert "&lt;img src=x onerror=window.__pwned=1&gt;" in out
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in out
    assert "[click me](javascript:alert(1))" in out
    assert not [t for t, _ in parsed.tags if t == "script"]


def test_transcript_text_shows_the_whole_run() -> None:
    text = transcript_text(full_run(), agent_name="weather", prompt="Weather in Tokyo?")
    lines = text.splitlines()
    assert lines[0].startswith("[weather] done · ") and lines[0].endswith("tokens: 22 in · 32 out · 54 total")
    assert lines[1] == "> Weather in Tokyo?"
    assert f"> Weather in Tokyo? {SCRIPT_PROBE}" in text, "a different user message is shown too"
    assert 'tool get_weather({"city": "Tokyo"}) → ok' in text
    assert "tool lookup(" in text and re.search(r"\n    error: .*ValueError: no luck with <img src=x", text)
    assert "→ ok · 1.5 s · 2 attempts" in text
    assert "    | loading data" in text
    assert '    result: { "city": "Tokyo", "condition": "sunny",' in text
    assert "    [image image/png, " in text and "    [PDF] https://example.com/report.pdf" in text
    assert "    [PDF, 2.0 KB] render_chart.pdf" in text
    assert "state: last_city = Tokyo" in text
    assert "It is **sunny** in *Tokyo*." in text
    assert not [ln for ln in text.splitlines() if "error:" in ln and "Traceback" in ln]


def test_prompt_given_is_not_repeated() -> None:
    agent = LlmAgent(name="bot", model=ScriptedModel(["Hi!"]))
    events = agent.run("Hello").events
    text = transcript_text(events, agent_name="bot", prompt="Hello")
    assert text.count("Hello") == 1 and text.endswith("Hi!")


@pytest.mark.parametrize("status", ["cancelled", "error"])
def test_unfinished_runs(status: str) -> None:
    call = FunctionCall("slow", {}, id="s1")
    events = [
        Event("user", Content.user("go")),
        Event("bot", Content("model", [Part(function_call=call)])),
        Event("bot", Content.model("Half an ans"), partial=True),
    ]
    error = None if status == "cancelled" else AdkError.model("the provider hung up\nTraceback (most recent call last)")
    out = transcript_html(events, agent_name="bot", status=status, error=error)
    assert f">{status}</span>" in out
    assert ">cancelled</span>" in out, "a tool still running when the run stopped"
    assert "<p>Half an ans</p>" in out, "the cut turn is kept (and rendered: it has ended)"
    if status == "cancelled":
        assert "Run cancelled." in out
    else:
        assert "⚠ model.internal: the provider hung up</div>" in out and "Traceback" not in out


def _cards(events: list[Event], status: str = "done") -> list[tuple[str, str, str | None]]:
    transcript = Transcript(agent_name="bot", prompt="p")
    for event in events:
        transcript.add(event)
    transcript.finish(status=status)
    return [(i["id"], i["status"], i["result"]) for i in transcript.state()["items"] if i["k"] == "tool"]


def _calls(*calls: FunctionCall) -> Event:
    return Event("bot", Content("model", [Part(function_call=c) for c in calls]))


def _answers(*pairs: tuple[FunctionCall, dict]) -> Event:
    return Event(
        "bot",
        Content("tool", [Part(function_response=FunctionResponse(c.name, r, c.id)) for c, r in pairs]),
        tool_outcomes=[ToolOutcome(c.id, c.name, c.args, "error" not in r, 0.1) for c, r in pairs],
    )


def test_two_calls_with_one_id_each_get_their_own_answer_and_none_stays_running() -> None:
    first, second = FunctionCall("lookup", {"q": "a"}, id="call_0"), FunctionCall("lookup", {"q": "b"}, id="call_0")
    one_turn = [_calls(first, second), _answers((first, {"n": 1}), (second, {"error": "no"}))]
    assert _cards(one_turn) == [("call_0", "ok", '{\n  "n": 1\n}'), ("call_0", "error", '{\n  "error": "no"\n}')]
    # a server that numbers calls per answer: call_0 in every turn
    turns = [_calls(first), _answers((first, {"n": 1})), _calls(second), _answers((second, {"n": 2}))]
    assert [status for _, status, _ in _cards(turns)] == ["ok", "ok"]
    out = transcript_html(one_turn, agent_name="bot", prompt="p")
    assert ">running</span>" not in out and out.count(">ok</span>") == 1 and out.count(">error</span>") == 1


def test_a_finished_run_has_no_card_running() -> None:
    call = FunctionCall("lookup", {}, id="c1")
    assert _cards([_calls(call)]) == [("c1", "unanswered", None)], "a call no response ever answered"
    assert _cards([_calls(call)], status="cancelled") == [("c1", "cancelled", None)]
    out = transcript_html([_calls(call)], agent_name="bot", prompt="p")
    assert ">unanswered</span>" in out and ">running</span>" not in out


HOSTILE_CHARS = "a\x00b\x1b[31mred\x1b[0m\x07\x08\x7f\x9b\ud800z\udfff"


def test_control_characters_and_lone_surrogates_never_reach_an_output() -> None:
    call = FunctionCall("t", {"q": HOSTILE_CHARS}, id="c1")
    events = [
        Event("user", Content.user(HOSTILE_CHARS)),
        _calls(call),
        Event("bot", partial=True, progress=ToolProgress("c1", "t", "stdout", HOSTILE_CHARS)),
        _answers((call, {"r": HOSTILE_CHARS})),
        Event("bot", actions=EventActions(state_delta={HOSTILE_CHARS: HOSTILE_CHARS})),
        Event("bot", Content.model(HOSTILE_CHARS), partial=True),
        Event("bot", Content.model(f"**{HOSTILE_CHARS}** `{HOSTILE_CHARS}`")),
        Event("bot", error=AdkError.tool(HOSTILE_CHARS)),
    ]
    bad = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")
    for out in (transcript_html(events, agent_name="bot"), transcript_text(events, agent_name="bot")):
        assert not bad.search(out), repr(bad.search(out))
        out.encode("utf-8")  # would raise on a lone surrogate
        assert "a\ufffdb\ufffd[31mred" in out
    assert "a\ufffdb" in markdown_to_html("a\x00b") and table_html(["k"], [["\x00\x1b"]]).count("\ufffd") == 2
    tracked = Transcript(agent_name="bot", track=True)
    for event in events:
        tracked.add(event)
    assert not bad.search(json.dumps([tracked.take_ops(), tracked.state()], ensure_ascii=False)), "nor the widget"


def test_event_errors_and_state_deltas() -> None:
    events = [
        Event(
            "bot",
            actions=EventActions(
                state_delta={"user:name": "Ana", "big": list(range(100))},
                artifact_delta={"report.pdf": 2},
                transfer_to_agent="helper",
            ),
        ),
        Event("bot", error=AdkError.tool(f"bad {SCRIPT_PROBE}")),
    ]
    out = transcript_html(events, agent_name="bot", prompt="p")
    assert "user:name</code> = <code" in out and ">Ana</code>" in out
    assert "[0, 1, 2, 3" in out and "…</code>" in out, "long values are cut short"
    assert "artifact <code" in out and "v2" in out and "transfer to helper" in out
    assert "⚠ tool.internal: bad &lt;script&gt;" in out
    text = transcript_text(events, agent_name="bot", prompt="p")
    assert "state: user:name = Ana; big = [0, 1," in text and "error: tool.internal: bad <script>" in text


def test_progress_log_is_bounded() -> None:
    transcript = Transcript(agent_name="bot", prompt="p")
    for n in range(5000):
        transcript.add(Event("bot", partial=True, progress=ToolProgress("c1", "crunch", "stdout", f"line {n}\n")))
    card = transcript.state()["items"][0]
    assert card["name"] == "crunch" and card["status"] == "running"
    assert len(card["log"]) <= LOG_LIMIT and card["log"].startswith("line ") and card["log"].endswith("line 4999\n")
    assert card["log_dropped"] + len(card["log"]) == sum(len(f"line {n}\n") for n in range(5000))


def test_transcript_ops_coalesce_streamed_text() -> None:
    transcript = Transcript(agent_name="bot", prompt="hi", track=True)
    for word in ["Hel", "lo ", "**world**"]:
        transcript.add(Event("bot", Content.model(word), partial=True))
    transcript.add(Event("bot", Content.model("Hello **world**"), usage=Usage(1, 2, 3)))
    ops = transcript.take_ops()
    assert ops == [
        ["i", {"k": "text", "author": "bot", "text": "", "done": False}],
        ["t", 0, "Hello **world**"],
        ["e", 0],
        ["s", {"usage": {"input": 1, "output": 2, "total": 3}}],
    ]
    assert transcript.take_ops() == []
    transcript.add(Event("bot", Content.model("x"), partial=True))
    transcript.add(Event("bot", Content.model("y")))
    assert transcript.take_ops()[-1] == ["e", 1, "y"], "a final text that differs from the stream replaces it"


# -- markdown ---------------------------------------------------------------------------------
A_ATTRS = 'target="_blank" rel="noopener noreferrer"'


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("plain", "<p>plain</p>\n"),
        (
            "**bold** and *it* and _em_ and __strong__",
            ("<p><strong>bold</strong> and <em>it</em> and <em>em</em> and <strong>strong</strong></p>\n"),
        ),
        ("`a *b* <c>`", "<p><code>a *b* &lt;c&gt;</code></p>\n"),
        # CommonMark: `_` inside a word is text, `*` inside a word is emphasis (as GitHub shows it)
        (
            "snake_case_name and 2*3*4 and a.__b and c.__d",
            "<p>snake_case_name and 2<em>3</em>4 and a.__b and c.__d</p>\n",
        ),
        ("one\ntwo\n\nthree", "<p>one<br>\ntwo</p>\n<p>three</p>\n"),
        ("# Title\n## Sub *x*", "<h1>Title</h1>\n<h2>Sub <em>x</em></h2>\n"),
        (
            "- a\n- **b**\n\n1. x\n2. y",
            "<ul>\n<li>a</li>\n<li><strong>b</strong></li>\n</ul>\n<ol>\n<li>x</li>\n<li>y</li>\n</ol>\n",
        ),
        ("text\n- item\n  more", "<p>text</p>\n<ul>\n<li>item<br>\nmore</li>\n</ul>\n"),
        (
            "```python\nif a < b: **x**\n```\nafter",
            ('<pre><code class="language-python">if a &lt; b: **x**\n</code></pre>\n<p>after</p>\n'),
        ),
        ("```\nunclosed <b>", "<pre><code>unclosed &lt;b&gt;</code></pre>\n"),
        (
            "| a | b |\n|--:|---|\n| `<c>` | **d** |",
            (
                '<table>\n<thead>\n<tr>\n<th style="text-align:right">a</th>\n<th>b</th>\n'
                '</tr>\n</thead>\n<tbody>\n<tr>\n<td style="text-align:right"><code>&lt;c&gt;</code></td>\n<td><strong>d</strong>'
                "</td>\n</tr>\n</tbody>\n</table>\n"
            ),
        ),
        (
            "[site](https://example.com/?a=1&b=2)",
            f'<p><a href="https://example.com/?a=1&amp;b=2" {A_ATTRS}>site</a></p>\n',
        ),
        ("[x](https://e.com/*a*)", f'<p><a href="https://e.com/*a*" {A_ATTRS}>x</a></p>\n'),
        (
            "<https://a.b/c> and <ana@example.com>",
            (
                f'<p><a href="https://a.b/c" {A_ATTRS}>https://a.b/c</a> and '
                f'<a href="mailto:ana@example.com" {A_ATTRS}>ana@example.com</a></p>\n'
            ),
        ),
        (JS_LINK, "<p>[click me](javascript:alert(1))</p>\n"),
        (
            "[x](data:text/html,<script>alert(1)</script>)",
            "<p>[x](data:text/html,&lt;script&gt;alert(1)&lt;/script&gt;)</p>\n",
        ),
        (
            "[x](file:///etc/passwd) [y](/relative) <javascript:alert(1)>",
            "<p>[x](file:///etc/passwd) [y](/relative) &lt;javascript:alert(1)&gt;</p>\n",
        ),
        ('[x](https://e.com" onmouseover="alert(1))', "<p>[x](https://e.com&quot; onmouseover=&quot;alert(1))</p>\n"),
        ("![chart](https://e.com/track.png)", f'<p>!<a href="https://e.com/track.png" {A_ATTRS}>chart</a></p>\n'),
        (IMG_PROBE, "<p>&lt;img src=x onerror=window.__pwned=1&gt;</p>\n"),
        (SCRIPT_PROBE, "<p>&lt;script&gt;window.__pwned=1&lt;/script&gt;</p>\n"),
        ("a\x00b **c** \x1b[31m", "<p>a\ufffdb <strong>c</strong> \ufffd[31m</p>\n"),
        (
            "[x](https://a.com/`b`) and `[c](https://d.e)`",
            f'<p><a href="https://a.com/%60b%60" {A_ATTRS}>x</a> and <code>[c](https://d.e)</code></p>\n',
        ),
        ("[`x` y](https://a.b/`c`/d)", f'<p><a href="https://a.b/%60c%60/d" {A_ATTRS}><code>x</code> y</a></p>\n'),
        ("\ue000x\ue004 **b** 😀", "<p>\ue000x\ue004 <strong>b</strong> 😀</p>\n"),
        # Overlapping spans: well-nested HTML whatever the marks (CommonMark's delimiter rules).
        ("_a __b_ c__", "<p><em>a <em><em>b</em> c</em></em></p>\n"),
        ("**a *b** c*", "<p><em><em>a <em>b</em></em> c</em></p>\n"),
        ("_<i>__x_\u00e9__", "<p>_&lt;i&gt;<strong>x_\u00e9</strong></p>\n"),
        ("", ""),
    ],
)
def test_markdown(source: str, expected: str) -> None:
    assert markdown_to_html(source) == expected


def test_markdown_output_is_always_safe() -> None:
    nasty = "\n".join(
        [
            IMG_PROBE,
            SCRIPT_PROBE,
            JS_LINK,
            "**<b>x</b>**",
            "`<i>`",
            "- <a href=x>",
            "# <h1>",
            "```\n</code></pre><script>x</script>\n```",
            '[a](https://x.y/"><script>)',
        ]
    )
    assert_safe_html(markdown_to_html(nasty))


# -- small helpers ----------------------------------------------------------------------------
def test_escape_and_error_line_and_safe_url() -> None:
    assert escape('<a href="x">&\'') == "&lt;a href=&quot;x&quot;&gt;&amp;&#x27;"
    assert escape(42) == "42"
    assert error_line(AdkError.tool("boom")) == "tool.internal: boom"
    assert error_line(ValueError("first\nTraceback...")) == "ValueError: first"
    assert error_line(KeyboardInterrupt()) == "KeyboardInterrupt"
    assert len(error_line("x" * 5000)) < 600
    assert safe_url("https://e.com/a.pdf") == "https://e.com/a.pdf"
    assert safe_url("HTTP://E.COM") == "HTTP://E.COM"
    assert safe_url("data:application/pdf;base64,AAAA") and safe_url("data:image/png;base64,AAAA")
    for bad in (
        "javascript:alert(1)",
        " JavaScript:alert(1)",
        "data:text/html,<b>",
        "file:///etc/passwd",
        "gs://bucket/a.pdf",
        "//evil.com",
        "",
        None,
    ):
        assert safe_url(bad) is None, bad


def test_table_html_escapes() -> None:
    out = table_html(["name", "value"], [["<b>", SCRIPT_PROBE], [1, None]])
    assert_safe_html(out)
    assert "<td style" in out and "&lt;b&gt;" in out and "&lt;script&gt;" in out and ">None</td>" in out
