"""notebooks/09_native_tools.ipynb, executed offline on a real Jupyter kernel and read as a learner would.

No keys reach the kernel, so the scripted models answer; the checks read the chat transcripts,
the request bodies the notebook prints, `%adk request`, and the one-line errors it shows. (That
it is stored outputs-stripped, as nbformat writes it, is checked with every notebook.)
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from test_teaching_notebooks import cell, html, text

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "09_native_tools.ipynb"
KEYS = ("GOOGLE_API_KEY", "GEMINI_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY")

pytestmark = pytest.mark.notebook


@pytest.fixture(scope="module")
def nb() -> Iterator[nbformat.NotebookNode]:
    saved = {k: os.environ.pop(k) for k in KEYS if k in os.environ}  # offline: the kernel inherits this
    try:
        notebook = nbformat.read(NOTEBOOK, as_version=4)
        NotebookClient(
            notebook,
            timeout=180,
            kernel_name="python3",
            resources={"metadata": {"path": str(NOTEBOOK.parent)}},
        ).execute()
        yield notebook
    finally:
        os.environ.update(saved)


def printed_json(c: nbformat.NotebookNode, after: str | None = None) -> object:
    out = "".join(o.text for o in c.outputs if o.output_type == "stream" and o.name == "stdout")
    if after is not None:
        out = out.split(after, 1)[1]
    return json.JSONDecoder().raw_decode(out.lstrip())[0]


def test_thinking_on_shows_the_thoughts_folded_and_their_tokens(
    nb: nbformat.NotebookNode,
) -> None:
    chat = cell(nb, "%%chat thinker")
    shown = text(chat)
    assert "tokens: 31 in · 182 out (160 thinking) · 213 total" in shown
    assert "thoughts:\n    ~ If the ball is x" in shown and "The ball costs **5 cents**" in shown
    page = html(chat)
    assert '<details class="adk-thoughts"' in page and "<details open" not in page


def test_thinking_on_and_off_in_each_dialect(nb: nbformat.NotebookNode) -> None:
    c = cell(nb, 'gemini = GeminiModel("gemini-2.5-flash"')
    on, off = printed_json(c, "Thinking on:"), printed_json(c, "Thinking off:")
    assert on == {
        "Gemini generationConfig": {"thinkingConfig": {"includeThoughts": True, "thinkingBudget": 1024}},
        "Claude thinking / max_tokens": [
            {"type": "enabled", "budget_tokens": 1024},
            4096 + 1024,
        ],
        "OpenAI reasoning_effort": "low",
    }
    assert off == {
        "Gemini generationConfig": {"thinkingConfig": {"includeThoughts": False, "thinkingBudget": 0}},
        "Claude thinking / max_tokens": [None, 4096],
        "OpenAI reasoning_effort": "minimal",
    }


def test_claude_gets_its_signed_thinking_back(nb: nbformat.NotebookNode) -> None:
    message = printed_json(cell(nb, "signed_turn = "))
    assert message["content"][0] == {
        "type": "thinking",
        "thinking": "I need the weather first.",
        "signature": "EqQBCkYIARgCKkD...",
    }
    assert message["content"][1]["type"] == "tool_use"


def test_the_request_carries_google_search_and_other_providers_say_why_not(
    nb: nbformat.NotebookNode,
) -> None:
    shown = text(cell(nb, "%adk request searcher"))
    gemini = shown.split("Gemini body", 1)[1].split("\n", 1)[1]
    assert json.JSONDecoder().raw_decode(gemini)[0]["tools"] == [{"googleSearch": {}}]
    declared = shown.split("Tool declarations:\n", 1)[1]
    assert json.JSONDecoder().raw_decode(declared)[0] == [{"builtin": "GoogleSearch()", "runs_at": "GeminiModel"}]
    assert (
        "Anthropic Messages body (POST /v1/messages): could not be built:\nAdkError: model.unsupported: "
        "GoogleSearch() is a built-in tool of GeminiModel; AnthropicModel has no such tool."
    ) in shown


def test_a_grounded_answer_lists_queries_sources_and_citations(
    nb: nbformat.NotebookNode,
) -> None:
    chat = cell(nb, "%%chat searcher")
    shown = text(chat)
    assert "searched: euro 2024 winner; euro 2024 final score" in shown
    assert "  [2] wikipedia.org https://en.wikipedia.org/wiki/UEFA_Euro_2024_final" in shown
    assert "“It was Spain's record fourth European title.” [2]" in shown
    assert '<a href="https://www.uefa.com/euro2024/" target="_blank" rel="noopener noreferrer">uefa.com</a>' in html(
        chat
    )
    grounding = printed_json(cell(nb, "show(_.events[-1]"))
    assert grounding["queries"] == ["euro 2024 winner", "euro 2024 final score"]
    assert grounding["citations"][0]["sources"] == [0, 1]


def test_claude_web_search_and_the_error_for_google_search(
    nb: nbformat.NotebookNode,
) -> None:
    c = cell(nb, "show(claude.build_body(")
    assert printed_json(c) == [
        {
            "type": "web_search_20250305",
            "name": "web_search",
            "max_uses": 3,
            "allowed_domains": ["uefa.com"],
        }
    ]
    assert (
        "model.unsupported: GoogleSearch() is a built-in tool of GeminiModel; AnthropicModel has no such tool. "
        "Use a Gemini model for it, or remove it from the agent's tools."
    ) in text(c)


def test_code_gemini_ran_and_its_output(nb: nbformat.NotebookNode) -> None:
    shown = text(cell(nb, "%%chat coder"))
    assert "code the model ran (python):\n    | primes = [n for n in range(2, 100)" in shown
    assert "    → OUTCOME_OK\n    | 25 1060" in shown
    assert "There are 25 primes below 100, and they add up to 1060." in shown


def test_a_data_question_answered_by_code_in_a_child_process_with_a_chart(
    nb: nbformat.NotebookNode,
) -> None:
    chat = cell(nb, "%%chat analyst")
    shown = text(chat)
    assert "tool run_python(" in shown and "→ ok" in shown
    assert '"stdout": "total 1005, best Jun with 240\\n"' in shown and "[image image/png" in shown
    assert "June was the best month (240 units)" in shown
    assert '<img src="data:image/png;base64,' in html(chat)
