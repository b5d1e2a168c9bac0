"""One rule decides what is retryable: the HTTP transport and tool retry budgets agree on it.

The rule (`AdkError.is_retryable()`): an error with an HTTP status is retryable for 429,
500/502/503/504 and Anthropic's 529 (overloaded) only; any other error by its category. Before,
the transport skipped 408, 501 and 505 while `is_retryable()` said yes, so a tool wrapping an HTTP call was retried where the
transport had given up.
"""

from __future__ import annotations

import socket
import threading
from typing import Any

import httpx
import pytest
from loopback import LoopbackServer, Reply

from adk_notebook import (
    AdkError,
    FunctionCall,
    LlmAgent,
    RetryBudget,
    ScriptedModel,
    tool,
)
from adk_notebook.models.http import HttpTransport, RetryPolicy

#: status -> whether another attempt is worth it, as a user reads the rule.
RULE = {408: False, 501: False, 505: False, 429: True, 503: True, 529: True, 400: False}
RETRIES = 2


def transport(url: str, max_retries: int) -> HttpTransport:
    return HttpTransport(
        provider="acme",
        base_url=url,
        retry=RetryPolicy(max_retries=max_retries, initial_delay=0.01, max_delay=0.01),
    )


def failing(status: int) -> list[Reply]:
    return [Reply(status, {"error": {"message": f"acme says {status}"}}) for _ in range(1 + RETRIES)]


@pytest.mark.parametrize("status", list(RULE))
async def test_the_transport_retries_what_the_rule_says(status: int) -> None:
    with LoopbackServer(failing(status)) as server:
        t = transport(server.url, RETRIES)
        with pytest.raises(AdkError) as info:
            await t.post_json("/x", {})
        await t.aclose()
    error = info.value
    assert error.is_retryable() is RULE[status]
    assert len(server.requests) == (1 + RETRIES if RULE[status] else 1)
    assert error.code == f"http_{status}" and f"acme says {status}" in error.message


@pytest.mark.parametrize("status", list(RULE))
async def test_a_tool_retry_budget_retries_what_the_rule_says(status: int) -> None:
    with LoopbackServer(failing(status)) as server:
        t = transport(server.url, 0)  # the transport tries once: the tool's budget does the retrying

        @tool
        async def fetch(q: str) -> dict[str, Any]:
            """Fetch a record from the acme API."""
            return await t.post_json("/records", {"q": q})

        model = ScriptedModel([FunctionCall("fetch", {"q": "x"}), "done"])
        agent = LlmAgent(
            name="a",
            model=model,
            tools=[fetch],
            default_retry_budget=RetryBudget(RETRIES),
        )
        result = await agent.run_async("go")
        await t.aclose()
    [outcome] = next(e for e in result.events if e.tool_outcomes).tool_outcomes
    assert not outcome.success
    assert outcome.attempt == (1 + RETRIES if RULE[status] else 1)
    assert len(server.requests) == outcome.attempt
    [response] = next(e for e in result.events if e.function_responses()).function_responses()
    assert response.response["code"] == f"http_{status}"


def test_the_rule_reads_the_status_before_the_category() -> None:
    # A 408 is a timeout, a 501 "unavailable" by its 5xx class: the status says neither is worth retrying.
    timeout = AdkError(
        "model",
        "timeout",
        "http_408",
        "acme returned HTTP 408.",
        details={"status": 408},
    )
    unavailable = AdkError(
        "model",
        "unavailable",
        "http_501",
        "acme returned HTTP 501.",
        details={"status": 501},
    )
    assert not timeout.is_retryable() and not unavailable.is_retryable()
    assert AdkError("model", "timeout", "timeout", "acme timed out.").is_retryable()  # no status: the category
    assert AdkError.tool("Cannot divide by zero").is_retryable() is False


async def test_a_proxy_that_refuses_is_not_retried() -> None:
    """httpx raises ProxyError when a proxy refuses the tunnel: forbidden, and not retried."""
    seen: list[bytes] = []
    listener = socket.create_server(("127.0.0.1", 0))

    def refuse() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                seen.append(conn.recv(4096).split(b"\r\n", 1)[0])
                conn.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")

    threading.Thread(target=refuse, daemon=True).start()
    proxy = f"http://127.0.0.1:{listener.getsockname()[1]}"
    async with httpx.AsyncClient(proxy=proxy) as client:
        t = HttpTransport(
            provider="acme",
            base_url="https://api.acme.invalid/v1",
            http_client=client,
            retry=RetryPolicy(max_retries=RETRIES, initial_delay=0.01),
        )
        with pytest.raises(AdkError) as info:
            await t.post_json("/x", {})
    listener.close()
    error = info.value
    assert (error.category, error.code) == ("forbidden", "proxy_refused")
    assert not error.is_retryable() and "refused by the proxy" in error.message
    assert seen == [b"CONNECT api.acme.invalid:443 HTTP/1.1"]
