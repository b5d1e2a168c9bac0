"""Values a session cannot send or keep: wherever one enters, every later message still works.

httpx encodes a request body as UTF-8 with `allow_nan=False`, so one string holding a
surrogate code point or one NaN anywhere in the history made every later request of a
session fail before it was sent, and a state value SQLite could not keep ended the run after
its tool had run. Each case below puts such a value in by one route, for each HTTP provider
(a loopback server speaking its wire format) and both session services, then sends a second
message and checks
- both runs complete, the second over the same history;
- every request the server received is UTF-8, strict JSON, and no string in it (nor in the
  JSON text some providers put inside strings) holds a surrogate; every streamed chunk on its
  own is text UTF-8 can encode (a widget sends each flush as it comes);
- the stored session (SQLite: reopened) holds no surrogate and no NaN or Infinity, and every
  function call in it has exactly one response;
- what the case itself promises: halves paired, a lone one replaced by U+FFFD, a value JSON
  cannot carry answered with an error naming its path.

The second half does the same for state no store can keep, written by each route a program has
(a tool, a tool that writes `actions.state_delta` itself, each callback), with the offline
ScriptedModel: the write is refused with an AdkError naming the key, the call is answered
(never "interrupted" by the next run), and what was stored stays.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from loopback import LoopbackServer, Reply
from test_faults import SSE_HEADERS, WIRES  # the minimal wire shape of each provider

from adk_notebook import (
    AdkError,
    FunctionCall,
    InMemorySessionService,
    LlmAgent,
    ScriptedModel,
    SqliteSessionService,
    ToolContext,
    tool,
)

GRIN = "\U0001f600"
SERVICES = ["memory", "sqlite"]


def stream(chunks: list[str]) -> Reply:
    return Reply(200, chunks, headers=SSE_HEADERS)


def surrogates(value: Any, path: str = "") -> list[str]:
    """Paths of the strings in `value` holding a surrogate; strings that are JSON texts are searched too."""
    found: list[str] = []
    if isinstance(value, str):
        if any("\ud800" <= ch <= "\udfff" for ch in value):
            found.append(path or "(root)")
        elif value[:1] in "{[" and value[-1:] in "}]":
            try:
                found += surrogates(json.loads(value), path + "<json>")
            except ValueError:
                pass
    elif isinstance(value, dict):
        for key, item in value.items():
            found += surrogates(key, f"{path}<key {key!r}>") + surrogates(item, f"{path}[{key!r}]")
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            found += surrogates(item, f"{path}[{i}]")
    return found


def non_finite(value: Any) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(non_finite(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(non_finite(v) for v in value)
    return False


def strict_body(body: bytes) -> Any:
    def refuse(constant: str) -> None:
        raise AssertionError(f"a request carries {constant}, which is not JSON")

    return json.loads(body.decode("utf-8"), parse_constant=refuse)


# -- the routes by which a value gets in --------------------------------------------------------
@dataclass
class Poison:
    name: str
    first: Callable[[Any], list[Reply]]  # the replies of the first run, per wire
    result: Any = None  # what the tool returns (None: the city and "sunny")
    message: str = "Weather in Tokyo?"
    state: dict[str, Any] = field(default_factory=dict)  # what the tool writes to ctx.state
    after_tool: dict[str, Any] | None = None  # a replacement an after-tool callback returns
    instruction: str = "Help the user."
    check: Callable[[Any], None] = lambda seen: None  # what this case promises, on what was seen


def tool_round(args: str = '{"city": "Tokyo"}') -> Callable[[Any], list[Reply]]:
    return lambda wire: [stream(wire.tool_chunks(args)), stream(wire.text_chunks(["Sunny."]))]


def answered(seen: Any) -> dict[str, Any]:
    [response] = [r.response for e in seen.events for r in e.function_responses()]
    return response


def check_text(expected: str) -> Callable[[Any], None]:
    def check(seen: Any) -> None:
        texts = [e.text for e in seen.events if e.author != "user"]
        assert texts[0] == expected, f"stored {texts[0]!r}"
        assert seen.first_text == expected, f"the run answered {seen.first_text!r}"

    return check


def check_response(expected: dict[str, Any]) -> Callable[[Any], None]:
    def check(seen: Any) -> None:
        assert answered(seen) == expected

    return check


def check_error(code: str, *words: str) -> Callable[[Any], None]:
    def check(seen: Any) -> None:
        response = answered(seen)
        assert response.get("code") == code and all(w in response["error"] for w in words), response

    return check


def check_user_text(seen: Any) -> None:
    assert seen.events[0].text == "caf\ufffd"


def check_args(seen: Any) -> None:
    [call] = [c for e in seen.events for c in e.function_calls()]
    assert call.args == {"city": "Tokyo \ufffd"} and answered(seen)["city"] == "Tokyo \ufffd"


def check_instruction(seen: Any) -> None:
    assert "Zo\ufffd" in json.dumps(seen.second_request, ensure_ascii=False)


POISONS = [
    Poison(
        "emoji split across two stream chunks",
        lambda w: [stream(w.text_chunks(["Hi ", "\ud83d", "\ude00", " there"]))],
        check=check_text(f"Hi {GRIN} there"),
    ),
    Poison(
        "lone half at the end of a stream",
        lambda w: [stream(w.text_chunks(["cut off \ud83d"]))],
        check=check_text("cut off \ufffd"),
    ),
    Poison(
        "user message with a lone surrogate",
        lambda w: [stream(w.text_chunks(["Noted."]))],
        message="caf\udce9",
        check=check_user_text,
    ),
    Poison(
        "tool result text with a lone surrogate",
        tool_round(),
        result={"name": "caf\udce9"},
        check=check_response({"name": "caf\ufffd"}),
    ),
    Poison(
        "tool result key with a lone surrogate",
        tool_round(),
        result={"caf\udce9": 1},
        check=check_response({"caf\ufffd": 1}),
    ),
    Poison(
        "tool result with NaN",
        tool_round(),
        result={"readings": [1.0, float("nan")]},
        check=check_error("result_not_serializable", "['readings'][1] is nan"),
    ),
    Poison(
        "tool result with -Infinity",
        tool_round(),
        result={"low": float("-inf")},
        check=check_error("result_not_serializable", "['low'] is -inf"),
    ),
    Poison(
        "tool result with a datetime",
        tool_round(),
        result={"at": datetime(2026, 1, 2)},
        check=check_error("result_not_serializable", "['at'] is a datetime"),
    ),
    Poison("call arguments with a lone surrogate", tool_round('{"city": "Tokyo \\ud83d"}'), check=check_args),
    Poison(
        "call arguments with NaN",
        tool_round('{"city": NaN}'),
        check=check_error("invalid_arguments", "not strict JSON", "args['city'] is nan"),
    ),
    Poison(
        "state text with a lone surrogate, in the instruction",
        tool_round(),
        state={"name": "Zo\udce9"},
        instruction="Help {name?}.",
        check=check_instruction,
    ),
    Poison(
        "after-tool callback answering NaN",
        tool_round(),
        after_tool={"temperature": float("nan")},
        check=check_error("result_not_serializable", "['temperature'] is nan"),
    ),
]


@dataclass
class Seen:
    events: list[Any]  # what the session stored
    first_text: str  # the first run's answer
    second_request: Any  # the body of the last request


def weather_tool(poison: Poison) -> Any:
    @tool
    def get_weather(city: str, ctx: ToolContext) -> Any:
        """Get the current weather for a city."""
        for key, value in poison.state.items():
            ctx.state[key] = value
        return {"city": city, "condition": "sunny"} if poison.result is None else poison.result

    return get_weather


@pytest.mark.parametrize("service", SERVICES)
@pytest.mark.parametrize("provider", list(WIRES))
@pytest.mark.parametrize("poison", POISONS, ids=lambda p: p.name.replace(" ", "-"))
async def test_a_value_no_request_can_carry_does_not_poison_the_session(
    poison: Poison, provider: str, service: str, tmp_path: Path, tally: Any
) -> None:
    wire = WIRES[provider]
    path = tmp_path / "s.db"
    sessions = InMemorySessionService() if service == "memory" else SqliteSessionService(path)
    callback = (lambda ctx, tool, args, response: poison.after_tool) if poison.after_tool is not None else None
    with tally.case(f"unsendable: {poison.name}"):
        script = [*poison.first(wire), stream(wire.text_chunks(["Still here."]))]
        with LoopbackServer(script) as server:
            agent = LlmAgent(
                name="a",
                model=wire.model(server.url),
                instruction=poison.instruction,
                tools=[weather_tool(poison)],
                after_tool_callback=callback,
            )
            first = await agent.run_async(poison.message, session_id="s1", session_service=sessions)
            second = await agent.run_async("And now?", session_id="s1", session_service=sessions)
            assert second.text == "Still here."
            bodies = [strict_body(r.body) for r in server.requests]
        assert len(bodies) == len(script)
        for event in first.events:
            if event.partial:
                event.text.encode("utf-8")  # each streamed chunk on its own, as a widget sends it
        for body in bodies:
            assert surrogates(body) == [], f"a request carried surrogates at {surrogates(body)}"
        if service == "sqlite":
            sessions.close()
            sessions = SqliteSessionService(path)  # what the file holds, read afresh
        stored = await sessions.get(app_name="a", user_id="user", session_id="s1")
        if service == "sqlite":
            sessions.close()
        dumped = [e.to_dict() for e in stored.events]
        assert surrogates(dumped) == [] and not non_finite(dumped)
        calls = [c.id for e in stored.events for c in e.function_calls()]
        answers = [r.id for e in stored.events for r in e.function_responses()]
        assert sorted(calls) == sorted(answers), f"calls {calls} answered by {answers}"
        poison.check(Seen(stored.events, first.text, bodies[-1]))


# -- state no store can keep ----------------------------------------------------------------------
BAD_STATE = [
    ("a datetime", "checked_at", datetime(2026, 1, 2, 3, 4), "state['checked_at'] is a datetime"),
    ("a date in a list", "log", [date(2026, 1, 2)], "state['log'][0] is a date"),
    ("a set", "tags", {"a"}, "state['tags'] is a set"),
    ("bytes", "raw", b"\x00", "state['raw'] is a bytes"),
    ("a Decimal", "price", Decimal("1.10"), "state['price'] is a Decimal"),
    ("NaN", "score", float("nan"), "state['score'] is nan"),
    ("Infinity in a dict", "bounds", {"hi": float("inf")}, "state['bounds']['hi'] is inf"),
    ("a tuple key in a dict", "grid", {(0, 1): "x"}, "has a key (0, 1)"),
    ("an int key", 7, "seven", "State key 7 is not a string"),
    ("a None key", None, "nothing", "State key None is not a string"),
]


def _bad_value_route(route: str, key: Any, value: Any) -> dict[str, Any]:
    """LlmAgent options that write `value` under `key` by `route`."""

    def write(ctx: Any, *_: Any) -> None:
        ctx.state[key] = value

    if route.startswith("a tool"):
        return {}
    return {
        {
            "a before-tool callback": "before_tool_callback",
            "an after-tool callback": "after_tool_callback",
            "a before-model callback": "before_model_callback",
            "an after-agent callback": "after_agent_callback",
        }[route]: write
    }


ROUTES = [
    "a tool",
    "a tool into actions.state_delta",
    "a before-tool callback",
    "an after-tool callback",
    "a before-model callback",
    "an after-agent callback",
]


@pytest.mark.parametrize("service", SERVICES)
@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize(("what", "key", "value", "named"), BAD_STATE, ids=[b[0].replace(" ", "-") for b in BAD_STATE])
async def test_state_no_store_can_keep_is_refused_and_nothing_done_is_lost(
    what: str, key: Any, value: Any, named: str, route: str, service: str, tmp_path: Path, tally: Any
) -> None:
    @tool
    def check_in(ctx: ToolContext) -> dict:
        """Record a check-in."""
        ctx.state["visits"] = 1  # a good write before the bad one: kept
        if route == "a tool":
            ctx.state[key] = value
        elif route == "a tool into actions.state_delta":
            ctx.actions.state_delta[key] = value
        return {"ok": True}

    model = ScriptedModel([FunctionCall("check_in", {}), "Noted.", "Hello again."])
    sessions = InMemorySessionService() if service == "memory" else SqliteSessionService(tmp_path / "s.db")
    agent = LlmAgent(name="a", model=model, tools=[check_in], **_bad_value_route(route, key, value))
    with tally.case(f"unstorable state: written by {route}"):
        try:
            first = await agent.run_async("check me in", session_id="s1", session_service=sessions)
        except AdkError as exc:  # the run may end, naming the key; what it stored stays
            assert exc.code == "not_serializable" and named in exc.message, exc.message
            assert route not in ("a tool", "a before-tool callback", "an after-tool callback"), (
                "the call's answer says it"
            )
        else:  # or it goes on, the call answered with the error
            [response] = first.events[2].function_responses()
            assert named in response.response["error"], response
            assert route != "a tool" or response.response["code"] == "not_serializable", response
        agent = LlmAgent(name="a", model=model, tools=[check_in])  # the program, fixed
        assert (await agent.run_async("hi", session_id="s1", session_service=sessions)).text.startswith(
            ("Noted", "Hello")
        )
        stored = await sessions.get(app_name="a", user_id="user", session_id="s1")
        calls = [c.id for e in stored.events for c in e.function_calls()]
        responses = {r.id: r.response for e in stored.events for r in e.function_responses()}
        assert sorted(calls) == sorted(responses), "every call is answered"
        assert all(r.get("code") != "interrupted" for r in responses.values()), f"a call that ran was lost: {responses}"
        assert not any(k == key for k in stored.state) and stored.state.get("visits") in (1, None)
        assert [e.text for e in stored.events if e.author == "user"] == ["check me in", "hi"]
