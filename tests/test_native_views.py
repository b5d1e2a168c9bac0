"""Provider-native items as a user sees them: thoughts (collapsed), code the provider ran, search grounding.

The same run is folded by `Transcript` and drawn as the static HTML (what the live view shows
too: tests/browser/test_view_page.py) and text transcripts. Model text in every one of them
stays text.
"""

from __future__ import annotations

from test_render import IMG_PROBE, SCRIPT_PROBE

from adk_notebook import Content, Event, Part, Usage
from adk_notebook.core.content import CodeExecutionResult, ExecutableCode
from adk_notebook.notebook.transcript import transcript_html, transcript_text

GROUNDING = {
    "queries": ["euro 2024 winner"],
    "sources": [
        {"uri": "https://www.uefa.com/euro2024/", "title": f"UEFA {IMG_PROBE}"},
        {"uri": "javascript:alert(1)", "title": "not a link"},
    ],
    "citations": [{"text": "Spain won Euro 2024.", "sources": [0, 1]}],
}


def thinking_run() -> list[Event]:
    """A streamed Gemini-like turn: thoughts, then the answer, then the complete event with grounding."""
    thoughts = ["The user asks who won. ", f"Search first {SCRIPT_PROBE}."]
    final = Content(
        "model",
        [Part(text="".join(thoughts), thought=True), Part(text="Spain won Euro 2024.")],
    )
    return [
        Event("user", Content.user("Who won Euro 2024?")),
        *(Event("bot", Content("model", [Part(text=t, thought=True)]), partial=True) for t in thoughts),
        Event("bot", Content.model("Spain won "), partial=True),
        Event("bot", Content.model("Euro 2024."), partial=True),
        Event(
            "bot",
            final,
            metadata={"grounding": GROUNDING},
            usage=Usage(10, 128, 138, thoughts_tokens=120),
        ),
    ]


def code_run() -> list[Event]:
    """A Gemini code-execution answer, not streamed: thoughts arrive with the complete event."""
    parts = [
        Part(text="Adding up.", thought=True),
        Part(text="The sum is 5050."),
        Part(executable_code=ExecutableCode("print(sum(range(1, 101)))  # <b>")),
        Part(code_execution_result=CodeExecutionResult("OUTCOME_OK", "5050\n")),
    ]
    return [
        Event("user", Content.user("Sum 1..100")),
        Event("bot", Content("model", parts)),
    ]


def test_thoughts_collapsed_grounding_listed_and_escaped_in_the_transcript() -> None:
    html = transcript_html(thinking_run(), agent_name="bot")
    assert '<details class="adk-thoughts"' in html and "💭 thoughts</summary>" in html
    assert "<details open" not in html, "thoughts are collapsed"
    assert "The user asks who won. Search first &lt;script&gt;" in html
    assert html.index("adk-thoughts") < html.index("Spain won Euro 2024.</p>") < html.index("adk-grounding")
    assert "🔎 searched: euro 2024 winner" in html
    assert '<a href="https://www.uefa.com/euro2024/" target="_blank" rel="noopener noreferrer">UEFA &lt;img' in html
    assert 'href="javascript' not in html and "<li>not a link</li>" in html
    assert "“Spain won Euro 2024.” [1][2]" in html
    assert IMG_PROBE not in html and SCRIPT_PROBE not in html
    assert html.count("Spain won Euro 2024.</p>") == 1, "the streamed answer is drawn once"
    assert "tokens: 10 in · 128 out (120 thinking) · 138 total" in html

    text = transcript_text(thinking_run(), agent_name="bot")
    assert "thoughts:\n    ~ The user asks who won. Search first" in text
    assert (
        "searched: euro 2024 winner" in text and "  [1] UEFA" in text and "  [2] not a link javascript:alert(1)" in text
    )


def test_code_the_provider_ran_and_its_output() -> None:
    html = transcript_html(code_run(), agent_name="bot")
    assert "▶ code the model ran (python)" in html
    assert "print(sum(range(1, 101)))  # &lt;b&gt;" in html and "OUTCOME_OK" in html and "5050\n</pre>" in html
    assert html.index("adk-thoughts") < html.index("The sum is 5050.")
    text = transcript_text(code_run(), agent_name="bot")
    assert "code the model ran (python):\n    | print(sum(range(1, 101)))" in text
    assert "    → OUTCOME_OK\n    | 5050" in text
