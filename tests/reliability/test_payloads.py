"""Malformed provider payloads: each one is an AdkError naming the provider and the field, never a raw error.

Every case changes one thing in a recorded answer (tests/recorded.py, the shapes of
tests/providers/*) and sends it from a loopback server:
- JSON nested 10,000 deep in a stream chunk, in tool-call arguments and in a whole body, and
  an output-schema answer nested 100,000 deep;
- fields of the wrong type (`choices` a dict or a string, `delta` a string, `content` an int,
  `usage` a string, a tool-call index a list, a name an int, Gemini `finishReason: 7`, ...);
  a null where a value was expected reads as "not given" and still gives an answer;
- a gzip header over a body that is not gzip (a 500 so encoded is retried like any 5xx);
- a base_url that is not a URL, and port 99999.
Then a hypothesis test mutates every field of every recorded payload, by type and by depth,
streamed and not, and accepts only two outcomes: an AdkError that names the provider (and, for
a malformed answer, the field), or an answer that is well typed and, unless the mutation was a
null or a documented alternative form, the same answer as the unmutated payload's.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from loopback import LoopbackServer, Reply
from recorded import PROVIDERS, Provider

from adk_notebook import AdkError, Content, LlmAgent, LlmRequest, LlmResponse
from adk_notebook.core.json_text import MAX_DEPTH

DEEP = 10_000
PLACEHOLDER = "\u0000mutated\u0000"


@pytest.fixture(scope="module")
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer() as shared:  # one per module: stopping a server takes a moment
        yield shared


def nested(depth: int, kind: str = "list") -> str:
    """JSON text nested `depth` deep (json.dumps itself cannot write it)."""
    if kind == "list":
        return "[" * depth + "]" * depth
    return '{"a":' * depth + "{}" + "}" * depth


def set_at(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    """`value` with the item at `path` replaced by `new` (the root when the path is empty)."""
    if not path:
        return new
    value = copy.deepcopy(value)
    target = value
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = new
    return value


def encode(value: Any, raw: str | None) -> str:
    """JSON text of `value`, the placeholder string (if any) replaced by the raw JSON text `raw`."""
    text = json.dumps(value)
    return text if raw is None else text.replace(json.dumps(PLACEHOLDER), raw)


def reply(
    provider: Provider, streamed: bool, index: int | None, path: tuple[Any, ...], new: Any, raw: str | None = None
) -> Reply:
    """The provider's recorded answer with one value replaced (by `new`, or by raw JSON text)."""
    if raw is not None:
        new = PLACEHOLDER
    if streamed:
        events = provider.stream()
        name, payload = events[index or 0]
        if isinstance(payload, str) and path:  # a sentinel such as "[DONE]" has no fields
            raise ValueError(path)
        events[index or 0] = (name, encode(set_at(payload, path, new), raw))
        return provider.reply(events)
    return provider.reply(encode(set_at(provider.body(), path, new), raw))


async def outcome(model: Any, streamed: bool) -> tuple[list[str], LlmResponse]:
    request = LlmRequest(contents=[Content.user("Weather in Tokyo?")])
    partial: list[str] = []
    final = None
    async for response in model.generate_content(request, stream=streamed):
        if response.partial:
            partial.append(response.content.text)
        else:
            final = response
    assert final is not None
    return partial, final


async def failure(provider: Provider, server: LoopbackServer, streamed: bool, script: list[Reply]) -> AdkError:
    server.script[:] = script
    server.requests.clear()
    with pytest.raises(AdkError) as info:
        await outcome(provider.model(server.url), streamed)
    return info.value


def assert_names(error: AdkError, provider: str, field: str) -> None:
    assert error.component == "model", repr(error)
    assert error.details.get("provider") == provider, repr(error)
    assert error.details.get("field") == field, (field, repr(error), error.details)
    assert f"`{field}`" in error.message and provider.lower() in error.message.lower(), error.message


# -- JSON nested 10,000 deep -------------------------------------------------------------------

# (provider, streamed, chunk index, path, field named): a 10,000-deep value put at `path`.
DEEP_CASES = [
    ("openai", True, 1, ("choices", 0, "delta", "content"), "stream chunk"),
    (
        "openai",
        True,
        4,
        ("choices", 0, "delta", "tool_calls", 0, "function", "arguments"),
        "choices[0].delta.tool_calls[0].function.arguments",
    ),
    ("openai", False, None, ("choices", 0, "message", "content"), "response body"),
    (
        "openai",
        False,
        None,
        ("choices", 0, "message", "tool_calls", 0, "function", "arguments"),
        "choices[0].message.tool_calls[0].function.arguments",
    ),
    ("gemini", True, 1, ("candidates", 0, "content", "parts", 1, "functionCall", "args"), "stream chunk"),
    ("gemini", False, None, ("usageMetadata",), "response body"),
    ("anthropic", True, 2, ("delta", "text"), "stream chunk"),
    ("anthropic", True, 6, ("delta", "partial_json"), "content[1].input"),
    ("anthropic", False, None, ("content", 1, "input"), "response body"),
]


@pytest.mark.parametrize(
    ("provider", "streamed", "index", "path", "field"),
    DEEP_CASES,
    ids=[f"{c[0]}-{c[4]}-{'streamed' if c[1] else 'body'}" for c in DEEP_CASES],
)
async def test_json_nested_10000_deep(
    provider: str,
    streamed: bool,
    index: int | None,
    path: tuple[Any, ...],
    field: str,
    server: LoopbackServer,
    tally: Any,
) -> None:
    p = PROVIDERS[provider]
    # Arguments travel as JSON text inside the chunk: the deep JSON is that text.
    text_field = path[-1] in ("arguments", "partial_json")
    deep = nested(DEEP)
    script = [reply(p, streamed, index, path, deep if text_field else None, raw=None if text_field else deep)]
    with tally.case(f"payload: {provider} 10,000-deep JSON ({field})"):
        error = await failure(p, server, streamed, script)
        assert_names(error, provider, field)
        assert "deep" in error.message
        assert len(server.requests) == 1  # a malformed answer is not retried


@pytest.mark.parametrize("schema_kind", ["json schema", "pydantic"])
async def test_an_output_schema_answer_nested_100000_deep(schema_kind: str, server: LoopbackServer, tally: Any) -> None:
    from pydantic import BaseModel

    class Report(BaseModel):
        city: str

    schema: Any = (
        Report if schema_kind == "pydantic" else {"type": "object", "properties": {"city": {"type": "string"}}}
    )
    p = PROVIDERS["openai"]
    deep_answer = p.reply(
        p.body()
        | {
            "choices": [
                {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": nested(100_000)}}
            ]
        }
    )
    good = p.reply(
        p.body()
        | {
            "choices": [
                {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": '{"city": "Tokyo"}'}}
            ]
        }
    )
    server.script[:] = [deep_answer, good]
    server.requests.clear()
    agent = LlmAgent(name="reporter", model=p.model(server.url), output_schema=schema, output_max_retries=1)
    with tally.case(f"payload: output-schema answer nested 100,000 deep ({schema_kind})"):
        result = await agent.run_async("Weather in Tokyo?", streaming=False)
        assert (
            result.output is not None
            and (result.output["city"] if isinstance(result.output, dict) else result.output.city) == "Tokyo"
        )
        retry = json.dumps(server.requests[1].json())
        assert "deep" in retry or "recursion limit" in retry  # the model was told what was wrong with its answer
    server.script[:] = [deep_answer, deep_answer]
    with tally.case(f"payload: output-schema answer nested 100,000 deep, twice ({schema_kind})"):
        with pytest.raises(AdkError) as info:
            await agent.run_async("Weather in Tokyo?", streaming=False)
        assert (info.value.component, info.value.code) == ("agent", "output_schema_mismatch")
        assert "deep" in info.value.message or "recursion limit" in info.value.message


# -- fields of the wrong type ------------------------------------------------------------------

# (provider, streamed, chunk index, path, value, field named)
WRONG_TYPES = [
    ("openai", True, 1, ("choices",), {"0": {}}, "choices"),
    ("openai", True, 1, ("choices",), "abc", "choices"),
    ("openai", True, 1, ("choices", 0, "delta"), "It is ", "choices[0].delta"),
    ("openai", True, 1, ("choices", 0, "delta", "content"), 5, "choices[0].delta.content"),
    ("openai", True, 7, ("usage",), "lots", "usage"),
    ("openai", True, 3, ("choices", 0, "delta", "tool_calls", 0, "index"), [0], "choices[0].delta.tool_calls[0].index"),
    (
        "openai",
        True,
        3,
        ("choices", 0, "delta", "tool_calls", 0, "function", "name"),
        5,
        "choices[0].delta.tool_calls[0].function.name",
    ),
    ("openai", True, 6, ("choices", 0, "finish_reason"), 7, "choices[0].finish_reason"),
    ("openai", False, None, ("choices",), {"0": {}}, "choices"),
    ("openai", False, None, ("choices", 0, "message"), "hi", "choices[0].message"),
    ("openai", False, None, ("choices", 0, "message", "content"), 5, "choices[0].message.content"),
    ("openai", False, None, ("usage",), "lots", "usage"),
    ("openai", False, None, ("usage", "prompt_tokens"), "12", "usage.prompt_tokens"),
    (
        "openai",
        False,
        None,
        ("choices", 0, "message", "tool_calls", 0, "function", "name"),
        5,
        "choices[0].message.tool_calls[0].function.name",
    ),
    ("gemini", True, 1, ("candidates", 0, "finishReason"), 7, "candidates[0].finishReason"),
    ("gemini", True, 0, ("candidates",), {"0": {}}, "candidates"),
    ("gemini", True, 0, ("candidates", 0, "content", "parts", 0, "text"), 5, "candidates[0].content.parts[0].text"),
    (
        "gemini",
        True,
        1,
        ("candidates", 0, "content", "parts", 1, "functionCall", "name"),
        5,
        "candidates[0].content.parts[1].functionCall.name",
    ),
    ("gemini", True, 1, ("usageMetadata",), "lots", "usageMetadata"),
    ("gemini", False, None, ("candidates", 0, "finishReason"), 7, "candidates[0].finishReason"),
    ("gemini", False, None, ("candidates", 0, "content", "parts"), "It is sunny.", "candidates[0].content.parts"),
    (
        "gemini",
        False,
        None,
        ("candidates", 0, "content", "parts", 1, "functionCall", "args"),
        ["Tokyo"],
        "candidates[0].content.parts[1].functionCall.args",
    ),
    ("gemini", False, None, ("usageMetadata", "candidatesTokenCount"), "5", "usageMetadata.candidatesTokenCount"),
    ("anthropic", True, 2, ("index",), [0], "index"),
    ("anthropic", True, 2, ("delta",), "It is ", "delta"),
    ("anthropic", True, 2, ("delta", "text"), 5, "delta.text"),
    ("anthropic", True, 5, ("content_block",), "tool_use", "content_block"),
    ("anthropic", True, 5, ("content_block", "name"), 5, "content_block.name"),
    ("anthropic", True, 10, ("usage",), "lots", "usage"),
    ("anthropic", True, 10, ("delta", "stop_reason"), 7, "delta.stop_reason"),
    ("anthropic", True, 0, ("message", "usage", "input_tokens"), "12", "message.usage.input_tokens"),
    ("anthropic", False, None, ("content",), {"0": {}}, "content"),
    ("anthropic", False, None, ("content", 0, "text"), 5, "content[0].text"),
    ("anthropic", False, None, ("content", 1, "input"), ["Tokyo"], "content[1].input"),
    ("anthropic", False, None, ("stop_reason",), 7, "stop_reason"),
    ("anthropic", False, None, ("usage",), "lots", "usage"),
]


@pytest.mark.parametrize(
    ("provider", "streamed", "index", "path", "value", "field"),
    WRONG_TYPES,
    ids=[f"{c[0]}-{c[5]}={json.dumps(c[4])}-{'streamed' if c[1] else 'body'}" for c in WRONG_TYPES],
)
async def test_a_field_of_the_wrong_type(
    provider: str,
    streamed: bool,
    index: int | None,
    path: tuple[Any, ...],
    value: Any,
    field: str,
    server: LoopbackServer,
    tally: Any,
) -> None:
    p = PROVIDERS[provider]
    with tally.case(f"payload: {provider} wrong-typed field"):
        error = await failure(p, server, streamed, [reply(p, streamed, index, path, value)])
        assert_names(error, provider, field)
        assert (error.category.value, error.code) == ("internal", "invalid_response")


# (provider, streamed, chunk index, path): null reads as "not given"
NULLS = [
    ("gemini", True, 1, ("usageMetadata", "candidatesTokenCount")),
    ("gemini", False, None, ("usageMetadata", "candidatesTokenCount")),
    ("openai", True, 7, ("usage", "completion_tokens")),
    ("anthropic", True, 0, ("message", "usage", "input_tokens")),
    ("anthropic", False, None, ("usage", "output_tokens")),
]


@pytest.mark.parametrize(
    ("provider", "streamed", "index", "path"),
    NULLS,
    ids=[f"{c[0]}-{'.'.join(map(str, c[3]))}-{'streamed' if c[1] else 'body'}" for c in NULLS],
)
async def test_a_null_count_still_gives_the_answer(
    provider: str, streamed: bool, index: int | None, path: tuple[Any, ...], server: LoopbackServer, tally: Any
) -> None:
    p = PROVIDERS[provider]
    server.script[:] = [reply(p, streamed, index, path, None)]
    with tally.case(f"payload: {provider} null token count"):
        _, final = await outcome(p.model(server.url), streamed)
        assert final.content.text == "It is sunny."
        assert [c.args for c in final.content.function_calls()] == [{"city": "Tokyo"}]
        assert all(
            type(n) is int for n in (final.usage.input_tokens, final.usage.output_tokens, final.usage.total_tokens)
        )


# -- bodies that cannot be decoded, URLs that cannot be used ---------------------------------------

GZIP = {"Content-Encoding": "gzip"}


@pytest.mark.parametrize("streamed", [True, False], ids=["streamed", "body"])
@pytest.mark.parametrize("provider", list(PROVIDERS))
async def test_a_gzip_header_over_garbage(provider: str, streamed: bool, server: LoopbackServer, tally: Any) -> None:
    p = PROVIDERS[provider]
    good = p.reply(p.stream() if streamed else p.body())
    garbage_500 = Reply(500, b"this is not gzip", headers=GZIP)
    with tally.case(f"payload: {provider} gzip header over garbage, on a 500 (retried)"):
        server.script[:] = [garbage_500, garbage_500, good]
        server.requests.clear()
        _, final = await outcome(p.model(server.url), streamed)
        assert final.content.text == "It is sunny." and len(server.requests) == 3
    with tally.case(f"payload: {provider} gzip header over garbage, on a 200"):
        headers = {**GZIP, "Content-Type": "text/event-stream"} if streamed else GZIP
        error = await failure(p, server, streamed, [Reply(200, [b"data: not gzip\n\n"], headers=headers)])
        assert_names(error, provider, "Content-Encoding")


BAD_URLS = [
    "http://127.0.0.1:99999",
    "http://[::1",
    "http://exa mple.com",
    "127.0.0.1:8080",
    "ftp://example.com",
    "http://",
]


@pytest.mark.parametrize("url", BAD_URLS)
@pytest.mark.parametrize("provider", list(PROVIDERS))
def test_a_base_url_that_cannot_be_used(provider: str, url: str, tally: Any) -> None:
    make = PROVIDERS[provider].make
    with tally.case(f"payload: {provider} unusable base_url"):
        with pytest.raises(AdkError) as info:
            make(url.removesuffix("/v1"), "test-key-0123456789")
        error = info.value
        assert (error.category.value, error.code) == ("invalid_input", "invalid_base_url"), repr(error)
        assert error.details.get("provider") == provider and error.details.get("field") == "base_url"
        assert "base_url" in error.message


# -- hypothesis: every field of every recorded payload, by type and by depth ----------------------

# Where a provider documents a second form for a field, a mutation into that form is an answer.
ALTERNATIVES = {
    ("openai", False, ("choices", 0, "message", "content")): (list,),  # content parts
    ("openai", False, ("choices", 0, "message", "tool_calls", 0, "function", "arguments")): (dict,),
    ("openai", True, ("choices", 0, "delta", "tool_calls", 0, "function", "arguments")): (dict,),
}
VALUES: list[Any] = [None, True, False, 0, 7, -1, 2.5, "", "x", [], [1, "a"], {}, {"a": 1}]
# The model's own arguments (Gemini `args`, Anthropic `input`): any JSON object is an answer.
FREE_FORM = frozenset({"args", "input"})


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from paths(item, (*prefix, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from paths(item, (*prefix, i))


def at(value: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        value = value[step]
    return value


def json_type(value: Any) -> type:
    return type(value)


def summary(partial: list[str], final: LlmResponse) -> Any:
    """What a user sees of an answer: the streamed text, the final parts, finish reason, usage."""
    parts = [
        (p.text, p.thought, p.function_call and (p.function_call.name, p.function_call.args, p.function_call.id))
        for p in final.content.parts
    ]
    usage = final.usage and (final.usage.input_tokens, final.usage.output_tokens, final.usage.total_tokens)
    return "".join(partial), parts, final.finish_reason, usage


def depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth(v) for v in value), default=0)
    return 0


def assert_well_typed(partial: list[str], final: LlmResponse) -> None:
    assert all(type(t) is str for t in partial)
    assert final.content is not None and final.content.role == "model"
    for part in final.content.parts:
        if part.text is not None:
            assert type(part.text) is str and type(part.thought) is bool
        if part.function_call is not None:
            call = part.function_call
            assert type(call.name) is str and type(call.args) is dict and (call.id is None or type(call.id) is str)
            assert depth(call.args) <= MAX_DEPTH
    assert final.finish_reason is None or type(final.finish_reason) is str
    if final.usage is not None:
        assert all(
            type(n) is int for n in (final.usage.input_tokens, final.usage.output_tokens, final.usage.total_tokens)
        )
    json.dumps(final.content.to_dict())  # storable in a session


@st.composite
def mutations(draw: st.DrawFn) -> tuple[str, bool, int | None, tuple[Any, ...], str, Any]:
    provider = draw(st.sampled_from(sorted(PROVIDERS)))
    streamed = draw(st.booleans())
    p = PROVIDERS[provider]
    index = draw(st.integers(0, len(p.stream()) - 1)) if streamed else None
    payload = p.stream()[index][1] if streamed else p.body()
    path = draw(st.sampled_from(list(paths(payload))))
    original = at(payload, path)
    kind = draw(st.sampled_from(["type", "depth"]))
    if kind == "type":
        new = draw(st.sampled_from([v for v in VALUES if json_type(v) is not json_type(original)]))
        return provider, streamed, index, path, kind, new
    # depth: the same container type nested past the limit, or a scalar buried in lists
    levels = draw(st.sampled_from([MAX_DEPTH + 1, 400, DEEP]))
    form = "dict" if isinstance(original, dict) else "list"
    return provider, streamed, index, path, kind, nested(levels, form)


_BASELINES: dict[tuple[str, bool], Any] = {}


def baseline(p: Provider, streamed: bool, server: LoopbackServer) -> Any:
    key = (p.name, streamed)
    if key not in _BASELINES:
        server.script[:] = [p.reply(p.stream() if streamed else p.body())]
        _BASELINES[key] = summary(*asyncio.run(outcome(p.model(server.url), streamed)))
    return _BASELINES[key]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutation=mutations())
def test_mutated_payloads_give_an_adk_error_or_the_answer(mutation: Any, server: LoopbackServer, tally: Any) -> None:
    provider, streamed, index, path, kind, new = mutation
    p = PROVIDERS[provider]
    expected = baseline(p, streamed, server)
    raw = new if kind == "depth" else None
    server.script[:] = [reply(p, streamed, index, path, None if raw else new, raw=raw)]
    label = f"payload: hypothesis mutations ({provider}, {'streamed' if streamed else 'body'})"
    with tally.case(label):
        try:
            partial, final = asyncio.run(outcome(p.model(server.url), streamed))
        except AdkError as error:
            assert error.component == "model" and error.details.get("provider") == provider, repr(error)
            if error.code == "invalid_response":
                assert error.details.get("field"), repr(error)
            return
        assert_well_typed(partial, final)
        alternative = isinstance(new, ALTERNATIVES.get((provider, streamed, path), ()))
        free_form = any(step in FREE_FORM for step in path[:-1])
        if kind == "type" and new is not None and not alternative and not free_form:
            # A field of another type that the provider accepted without a word: it must be one it ignores.
            assert summary(partial, final) == expected, (path, new)
