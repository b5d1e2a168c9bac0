"""What a session keeps must be sendable later: text UTF-8 can encode, strict JSON, storable state.

Each test is the minimal reproduction of one way a session was once poisoned, through the
public API against a loopback server speaking the provider's real wire format: a value got in
that every later request failed on (httpx encodes request bodies as UTF-8 with
`allow_nan=False`), or a store refused state after the tool had run. The whole family, for
every provider and both services, is in tests/reliability/test_unsendable.py.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import pytest
from loopback import LoopbackServer, Reply, sse
from session_stores import Store

from adk_notebook import (
    AdkError,
    FunctionCall,
    GeminiModel,
    LlmAgent,
    ScriptedModel,
    ToolContext,
    tool,
)
from adk_notebook.models.http import RetryPolicy
from adk_notebook.models.openai import OpenAIModel

SSE = {"Content-Type": "text/event-stream"}
NO_RETRY = RetryPolicy(max_retries=0)
GRIN = "\U0001f600"


@pytest.fixture
def sessions(store: Store) -> Any:
    return store.service  # every service of the contract (tests/sessions/conftest.py)


def openai_text(*pieces: str, delay: float = 0.0) -> Reply:
    chunks = [{"choices": [{"index": 0, "delta": {"content": p}, "finish_reason": None}]} for p in pieces]
    return Reply(
        200,
        sse(*chunks, {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}, "[DONE]"),
        SSE,
        chunk_delay=delay,
    )


def strict(body: bytes) -> Any:
    """The request body as a provider parses it: UTF-8 and strict JSON (no NaN, no Infinity)."""

    def refuse(constant: str) -> None:
        raise AssertionError(f"the request carries {constant}, which is not JSON")

    return json.loads(body.decode("utf-8"), parse_constant=refuse)


async def test_an_emoji_split_across_two_deltas_is_joined_and_the_session_goes_on(sessions: Any) -> None:
    # json.dumps escapes a lone surrogate, so the wire carries "\ud83d" in one delta and "\ude00" in the next.
    script = [openai_text("Hi ", "\ud83d", "\ude00", " there"), openai_text("Still here.")]
    assert b'"content": "\\ud83d"' in b"".join(script[0].chunks())
    with LoopbackServer(script) as server:
        agent = LlmAgent(name="a", model=OpenAIModel("gpt-4o-mini", base_url=server.url, api_key="k", retry=NO_RETRY))
        first = await agent.run_async("hello", session_id="s1", session_service=sessions)
        assert first.text == f"Hi {GRIN} there"
        streamed = [e.text for e in first.events if e.partial]  # what a widget or a terminal shows as it comes
        assert "".join(streamed) == f"Hi {GRIN} there"
        for text in streamed:
            text.encode("utf-8")  # each chunk on its own: no lone half
        second = await agent.run_async("and now?", session_id="s1", session_service=sessions)
        assert second.text == "Still here."
        history = strict(server.requests[1].body)["messages"]
    assert [m["content"] for m in history] == ["hello", f"Hi {GRIN} there", "and now?"]
    stored = await sessions.get(app_name="a", user_id="user", session_id="s1")
    assert stored.events[1].text == f"Hi {GRIN} there"


async def test_a_user_message_with_a_lone_surrogate_does_not_poison_the_session(sessions: Any) -> None:
    script = [openai_text("Got it."), openai_text("Still here.")]
    with LoopbackServer(script) as server:
        agent = LlmAgent(name="a", model=OpenAIModel("gpt-4o-mini", base_url=server.url, api_key="k", retry=NO_RETRY))
        # e.g. a file name read with errors="surrogateescape"
        assert (
            await agent.run_async("read caf\udce9.txt", session_id="s1", session_service=sessions)
        ).text == "Got it."
        assert (await agent.run_async("and now?", session_id="s1", session_service=sessions)).text == "Still here."
        history = [strict(r.body)["messages"] for r in server.requests]
    assert history[0][0]["content"] == "read caf\ufffd.txt"
    assert [m["content"] for m in history[1]] == ["read caf\ufffd.txt", "Got it.", "and now?"]


def gemini_reply(*parts: dict[str, Any]) -> Reply:
    return Reply(200, {"candidates": [{"content": {"role": "model", "parts": list(parts)}, "finishReason": "STOP"}]})


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")], ids=repr)
async def test_a_tool_result_json_cannot_carry_is_an_error_naming_its_path(sessions: Any, value: float) -> None:
    @tool
    def statistics(column: str) -> dict:
        """Summarise a column."""
        return {"column": column, "stats": {"count": 3, "moments": [1.5, value]}}

    call = {"functionCall": {"id": "c1", "name": "statistics", "args": {"column": "price"}}}
    script = [
        gemini_reply(call),
        gemini_reply({"text": "The variance is undefined."}),
        gemini_reply({"text": "Hello."}),
    ]
    with LoopbackServer(script) as server:
        model = GeminiModel("gemini-2.5-flash", base_url=server.url, api_key="k", retry=NO_RETRY)
        agent = LlmAgent(name="a", model=model, tools=[statistics])
        result = await agent.run_async("stats?", session_id="s1", session_service=sessions, streaming=False)
        assert result.text == "The variance is undefined."
        assert (
            await agent.run_async("hi", session_id="s1", session_service=sessions, streaming=False)
        ).text == "Hello."
        sent = strict(server.requests[1].body)["contents"][2]["parts"][0]["functionResponse"]["response"]
    assert sent["code"] == "result_not_serializable"
    assert "['stats']['moments'][1]" in sent["error"] and repr(value) in sent["error"], sent["error"]
    [outcome] = result.events[2].tool_outcomes
    assert not outcome.success and "['stats']['moments'][1]" in outcome.error


@pytest.mark.parametrize(
    ("key", "value", "named"),
    [
        ("checked_at", datetime(2026, 1, 2, 3, 4), "'checked_at'"),
        (7, "seven", "State key 7 is not a string"),
        ("tags", {"a", "b"}, "'tags'"),
        ("score", float("nan"), "'score'"),
    ],
    ids=["datetime-value", "int-key", "set-value", "nan-value"],
)
async def test_state_the_store_cannot_keep_is_refused_where_the_tool_writes_it(
    sessions: Any, key: Any, value: Any, named: str
) -> None:
    @tool
    def check_in(ctx: ToolContext) -> dict:
        """Record a check-in."""
        ctx.state["visits"] = 1  # written before the bad key: kept
        ctx.state[key] = value
        return {"ok": True}

    model = ScriptedModel([FunctionCall("check_in", {}), "Noted.", "Hello again."])
    agent = LlmAgent(name="a", model=model, tools=[check_in])
    result = await agent.run_async("check me in", session_id="s1", session_service=sessions)
    assert result.text == "Noted."
    [response] = result.events[2].function_responses()
    assert response.response["code"] == "not_serializable" and named in response.response["error"]
    assert (await agent.run_async("hi", session_id="s1", session_service=sessions)).text == "Hello again."
    # The next run saw the tool's own answer, not "interrupted": nothing it did was lost.
    sent = [r.response for c in model.requests[2].contents for r in c.function_responses()]
    assert [s["code"] for s in sent] == ["not_serializable"]
    stored = await sessions.get(app_name="a", user_id="user", session_id="s1")
    assert stored.state == {"visits": 1}


async def test_state_a_callback_writes_that_the_store_cannot_keep_is_an_error_naming_the_key(sessions: Any) -> None:
    def stamp(ctx: Any) -> None:
        ctx.state["last_seen"] = datetime(2026, 1, 2)

    model = ScriptedModel(["Hello.", "Hello again."])
    agent = LlmAgent(name="a", model=model, after_agent_callback=stamp)
    with pytest.raises(AdkError) as caught:
        await agent.run_async("hi", session_id="s1", session_service=sessions)
    assert caught.value.code == "not_serializable" and "'last_seen'" in caught.value.message
    assert "isoformat" in caught.value.message
    stored = await sessions.get(app_name="a", user_id="user", session_id="s1")
    assert [e.text for e in stored.events] == ["hi", "Hello."], "the answer stored before the callback is kept"
    agent.after_agent_callback = type(agent.after_agent_callback)(None)
    assert (await agent.run_async("hi", session_id="s1", session_service=sessions)).text == "Hello again."


@pytest.mark.notebook
def test_a_chat_in_a_kernel_streams_an_emoji_split_across_two_deltas() -> None:
    """The live widget sends what streamed in since its last flush over the kernel's comm, which
    encodes it as UTF-8: with the halves 0.3 s apart, one flush holds only the first."""
    import nbformat
    from nbclient import NotebookClient

    script = [openai_text("Hi ", "\ud83d", "\ude00", " there", delay=0.3), openai_text("Still here.")]
    with LoopbackServer(script) as server:
        nb = nbformat.v4.new_notebook(
            cells=[
                nbformat.v4.new_code_cell(source)
                for source in (
                    "%load_ext adk_notebook\nfrom adk_notebook.models.openai import OpenAIModel\n"
                    f"model = OpenAIModel('gpt-4o-mini', base_url={server.url!r}, api_key='k')",
                    "%%agent emoji --model model\nBe brief.",
                    "%%chat emoji --session s1\nhello",
                    "%%chat emoji --session s1\nand now?",
                )
            ]
        )
        NotebookClient(nb, timeout=60, kernel_name="python3", allow_errors=True).execute()
    errors = [o for c in nb.cells for o in c.outputs if o.output_type == "error"]
    assert not errors, "\n".join(f"{e.ename}: {e.evalue}" for e in errors)
    shown = [
        "".join(o.data.get("text/plain", "") for o in c.outputs if o.output_type == "display_data")
        for c in nb.cells[2:]
    ]
    assert f"Hi {GRIN} there" in shown[0] and "Still here." in shown[1], shown
