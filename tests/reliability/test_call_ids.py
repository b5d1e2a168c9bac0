"""Call identity is unique per session, whatever ids the provider sends.

Some OpenAI-compatible servers number tool calls per answer (`call_0` every turn). The server
here does exactly that, over real SSE, and checks each request the way OpenAI does: every
assistant message with `tool_calls` must be followed by tool messages answering each of its
ids, every tool message must answer a call of the assistant message before it, and an id is at
most 40 characters. A request that breaks a rule gets OpenAI's 400.

Runs on one SQLite session: a completed tool round, a run cancelled inside its tool (whose call
the runner answers "cancelled"), a run after that repair, and a turn with two calls both
numbered `call_0`. Every request must pass the checks, the stored calls have distinct ids, and
each is answered exactly once.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from loopback import LoopbackServer, Reply, sse

from adk_notebook import LlmAgent, SqliteSessionService, ToolContext, tool
from adk_notebook.models.http import RetryPolicy
from adk_notebook.models.openai import OpenAIModel

SSE = {"Content-Type": "text/event-stream"}


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "c",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def openai_problems(messages: list[dict[str, Any]]) -> list[str]:
    """What OpenAI's Chat Completions API rejects in a history of messages."""
    problems = []
    expected: list[str] = []  # ids the assistant message before still waits answers for
    for index, message in enumerate(messages):
        role = message["role"]
        if role == "tool":
            if message["tool_call_id"] not in expected:
                problems.append(
                    f"messages[{index}]: role 'tool' must be a response to a preceding message with "
                    f"'tool_calls' ({message['tool_call_id']!r})"
                )
            else:
                expected.remove(message["tool_call_id"])
            continue
        if expected:
            problems.append(
                "An assistant message with 'tool_calls' must be followed by tool messages responding "
                f"to each 'tool_call_id'. The following tool_call_ids did not have response messages: "
                f"{', '.join(expected)}"
            )
            expected = []
        for call in message.get("tool_calls") or []:
            if len(call["id"]) > 40:
                problems.append(f"messages[{index}].tool_calls id {call['id']!r} is longer than 40 characters")
            expected.append(call["id"])
    if expected:
        problems.append(f"tool_call_ids without response messages: {', '.join(expected)}")
    return problems


class PerAnswerNumbering(LoopbackServer):
    """Answers a user message with `calls` tool calls, ids numbered from call_0 in every answer;
    answers tool results with text. Requests OpenAI would reject get its 400 and are kept in `rejected`."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 1
        self.rejected: list[list[str]] = []

    def _next_reply(self) -> Reply:
        messages = self.requests[-1].json()["messages"]
        problems = openai_problems(messages)
        if problems:
            self.rejected.append(problems)
            return Reply(400, {"error": {"message": problems[0], "type": "invalid_request_error"}})
        if messages[-1]["role"] == "tool":
            return Reply(
                200, sse(_chunk({"role": "assistant", "content": "done"}), _chunk({}, "stop"), "[DONE]"), headers=SSE
            )
        deltas = [
            {
                "index": i,
                "id": f"call_{i}",
                "type": "function",
                "function": {"name": "lookup", "arguments": json.dumps({"n": i})},
            }
            for i in range(self.calls)
        ]
        return Reply(
            200,
            sse(
                _chunk({"role": "assistant", "content": None, "tool_calls": deltas}), _chunk({}, "tool_calls"), "[DONE]"
            ),
            headers=SSE,
        )


async def test_call_ids_stay_unique_when_the_server_numbers_calls_per_answer(tmp_path: Path, tally: Any) -> None:
    with tally.case("server numbering calls call_0 per answer: every request valid, ids unique"):
        block = asyncio.Event()
        inside = asyncio.Event()

        @tool
        async def lookup(n: int, ctx: ToolContext) -> dict:
            """Look something up."""
            inside.set()
            if not block.is_set():
                await asyncio.sleep(30)
            return {"n": n}

        block.set()
        with PerAnswerNumbering() as server, SqliteSessionService(tmp_path / "s.db") as sessions:
            model = OpenAIModel(
                "gpt-4o-mini", base_url=server.url + "/v1", api_key="test-key", retry=RetryPolicy(max_retries=0)
            )
            agent = LlmAgent(name="a", model=model, tools=[lookup])

            async def ask() -> str:
                return (await agent.run_async("go", session_id="s", session_service=sessions)).text

            assert await ask() == "done"
            block.clear()  # the next run is cancelled inside its tool
            inside.clear()
            cancelled = asyncio.create_task(ask())
            await asyncio.wait_for(inside.wait(), 5)
            cancelled.cancel()
            await asyncio.gather(cancelled, return_exceptions=True)
            block.set()
            assert await ask() == "done", server.rejected
            server.calls = 2  # two calls, call_0 and call_1, in one answer: call_0 again
            assert await ask() == "done", server.rejected
            assert server.rejected == []
            stored = await sessions.get(app_name="a", user_id="user", session_id="s")
        calls = [c.id for e in stored.events for c in e.function_calls()]
        responses = [r.id for e in stored.events for r in e.function_responses()]
        assert len(calls) == 5 and len(set(calls)) == 5, f"call ids repeat in the session: {calls}"
        assert sorted(responses) == sorted(calls), "a call was not answered exactly once"
