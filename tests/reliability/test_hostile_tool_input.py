"""Hostile tool input: whatever arguments a model sends, a tool only ever runs with valid ones.

Every function of the schema corpus (tests/test_schema_corpus.py, with the string-annotated
ones of tests/schema_corpus_future.py) is wrapped so that it records the keyword arguments it
receives, turned into a tool, and called through the full agent loop
(`LlmAgent(model=ScriptedModel([call, "done"]), tools=[tool]).run_async(...)`) with arguments
drawn by hypothesis: random JSON-like values, wrong types, huge and odd strings (lone
surrogates, NUL, right-to-left marks), deep nesting, NaN/inf, huge integers, missing and extra
keys, None everywhere, arguments that are not an object at all — and VALID arguments generated
from the tool's own JSON schema, plain and mutated, so both paths are exercised.

For each call:
- the run ends with "done", and the call gets exactly one response with its id;
- the function ran (exactly once) iff `function_schema(fn).validate(args)` accepts the
  arguments; otherwise it never ran and the response is `{"error": ..., "code":
  "invalid_arguments"}`;
- what the function received is what `validate` returned, conforms to the JSON schema the
  model was shown (checked with the independent `jsonschema` validator), and each value is an
  instance of its annotation (pydantic strict mode); the context parameter is the real
  ToolContext, never something the model sent;
- arguments the JSON schema accepts are never refused.

Arguments the JSON schema rejects but pydantic's lax mode coerces ("5" for an int, 1 for
true, a duplicate in a set) are counted and shown in the summary: the function still only
receives values of its declared types.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import enum
import functools
import inspect
import json
import math
import typing
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import fastjsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, TypeAdapter

from adk_notebook import (
    FunctionCall,
    FunctionTool,
    LlmAgent,
    Part,
    RetryBudget,
    ScriptedModel,
    SqliteSessionService,
    Tool,
    ToolContext,
)
from adk_notebook.tools.schema import ToolArgumentsError, function_schema
from tests.test_schema_corpus import CORPUS

FUNCTIONS: list[Callable[..., Any]] = [fn for fn, _, _ in CORPUS]
SETTINGS = dict(
    deadline=None,
    database=None,  # nothing written into the tree; derandomize makes every run the same
    derandomize=True,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
        HealthCheck.large_base_example,
    ],
)
HOSTILE_EXAMPLES = 40
VALID_EXAMPLES = 25
MUTATED_EXAMPLES = 25
BATCH_EXAMPLES = 40  # per strategy; 1 to 6 calls each
_DEFAULT_TYPES = (str, int, float, bool, list, dict)


# -- instrumented tools ------------------------------------------------------------------------
@dataclass
class Instrumented:
    """A corpus function as a tool that records every call's keyword arguments."""

    fn: Callable[..., Any]
    tool: FunctionTool
    schema: Any  # FunctionSchema of the original function
    received: list[dict[str, Any]] = field(default_factory=list)
    adapters: dict[str, TypeAdapter[Any]] = field(default_factory=dict)
    json_check: Callable[[Any], str | None] = lambda document: None  # the independent JSON-schema oracle

    @property
    def name(self) -> str:
        return self.fn.__name__


def instrument(fn: Callable[..., Any]) -> Instrumented:
    received: list[dict[str, Any]] = []
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def wrapper(**kwargs: Any) -> Any:
            received.append(kwargs)
            result = await fn(**kwargs)
            return {"ran": True} if result is None else result

    else:

        @functools.wraps(fn)
        def wrapper(**kwargs: Any) -> Any:
            received.append(kwargs)
            result = fn(**kwargs)
            return {"ran": True} if result is None else result

    made = Instrumented(fn, FunctionTool.from_function(wrapper), function_schema(fn), received)
    made.json_check = json_schema_checker(made.schema.parameters)
    # The wrapper must look exactly like the function to the schema builder.
    assert made.tool.parameters_schema == made.schema.parameters, fn.__name__
    hints = typing.get_type_hints(fn, localns={"ToolContext": ToolContext}, include_extras=True)
    for name, param in inspect.signature(fn).parameters.items():
        if name == made.schema.context_param:
            continue
        if name in hints:
            annotation = hints[name]
        else:  # as the schema builder does: the type of a plain default, else anything
            annotation = type(param.default) if type(param.default) in _DEFAULT_TYPES else Any
        made.adapters[name] = (
            TypeAdapter(annotation, config=ConfigDict(strict=True)) if _plain(annotation) else TypeAdapter(annotation)
        )
    return made


def _plain(annotation: Any) -> bool:
    """TypeAdapter refuses a config for types that carry their own (models, dataclasses, TypedDicts)."""
    try:
        TypeAdapter(annotation, config=ConfigDict(strict=True))
    except Exception:  # noqa: BLE001
        return False
    return True


# -- JSON values, hostile and valid ------------------------------------------------------------
ODD_STRINGS = [
    "",
    " ",
    "null",
    "None",
    "true",
    "false",
    "0",
    "-1",
    "1e309",
    "NaN",
    "Infinity",
    "2024-02-30",
    "2024-13-01",
    "\x00",
    "\x00\x01\x02",
    "\n",
    "ABC\n",
    "AB\n",
    "\u202eRTL",
    "\ufeffBOM",
    "😀" * 3,
    "\ud83d",
    "x\udfffy",
    "é" * 10,
    "'; DROP TABLE events; --",
    "{user_name}",
    "{app:x}",
    "<script>alert(1)</script>",
    "%s%n%x",
    "../" * 10,
    "9" * 400,
    "1" * 5000,
    '{"a": 1}',
    "[1, 2]",
]
_text = st.text(max_size=30) | st.text(st.characters(exclude_categories=()), max_size=10) | st.sampled_from(ODD_STRINGS)
_huge_text = st.integers(1_000, 100_000).map(lambda n: "x" * n) | st.integers(100, 10_000).map(lambda n: "é😀" * n)
_numbers = (
    st.integers()
    | st.integers(-(2**70), 2**70)
    | st.sampled_from([0, -0.0, 1, -1, 2**31, 2**63, 2**64, -(2**63) - 1, 10**400, 1.5, 5.0, 1e308, -1e-308, 5e-324])
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from([math.nan, math.inf, -math.inf])
)
_scalars = st.none() | st.booleans() | _numbers | _text
JSON_VALUES = st.recursive(
    _scalars, lambda inner: st.lists(inner, max_size=5) | st.dictionaries(_text, inner, max_size=5), max_leaves=12
)


def _nest(depth: int, leaf: Any, as_dict: bool) -> Any:
    value = leaf
    for _ in range(depth):
        value = {"a": value} if as_dict else [value]
    return value


# Deep but below the interpreter's recursion limit (deeper values: see the RecursionError test below).
_deep = st.builds(_nest, st.integers(20, 200), _scalars, st.booleans())
_big_collections = st.integers(1_000, 5_000).map(lambda n: list(range(n))) | st.integers(100, 2_000).map(
    lambda n: {f"k{i}": i for i in range(n)}
)
HOSTILE_VALUES = st.one_of(JSON_VALUES, _deep, _huge_text, _big_collections)


def valid_for(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """JSON values a JSON schema accepts (the subset of keywords the corpus uses)."""
    if "anyOf" in schema:
        return st.one_of([valid_for(branch) for branch in schema["anyOf"]])
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type")
    if kind is None:
        return JSON_VALUES.filter(_is_strict_json)
    if kind == "null":
        return st.none()
    if kind == "boolean":
        return st.booleans()
    if kind == "integer":
        return st.integers(schema.get("minimum"), schema.get("maximum"))
    if kind == "number":
        lo, hi = (
            schema.get("minimum", schema.get("exclusiveMinimum")),
            schema.get("maximum", schema.get("exclusiveMaximum")),
        )
        floats = st.floats(
            lo,
            hi,
            allow_nan=False,
            allow_infinity=False,
            exclude_min="exclusiveMinimum" in schema,
            exclude_max="exclusiveMaximum" in schema,
        )
        return floats if lo is not None or hi is not None else floats | st.integers(-(2**53), 2**53)
    if kind == "string":
        low, high = schema.get("minLength", 0), schema.get("maxLength")
        if schema.get("format") == "date":
            return st.dates().map(lambda d: d.isoformat())
        if "pattern" in schema:
            return st.from_regex(schema["pattern"], fullmatch=True).filter(
                lambda s: len(s) >= low and (high is None or len(s) <= high)
            )
        return st.text(min_size=low, max_size=30 if high is None else high)
    if kind == "array":
        if "prefixItems" in schema:
            return st.tuples(*(valid_for(item) for item in schema["prefixItems"])).map(list)
        unique = bool(schema.get("uniqueItems"))
        return st.lists(
            valid_for(schema.get("items", {})),
            min_size=schema.get("minItems", 0),
            max_size=schema.get("maxItems", 5),
            unique_by=(lambda v: json.dumps(v, sort_keys=True)) if unique else None,
        )
    if kind == "object":
        props = schema.get("properties", {})
        required = set(schema.get("required", ()))
        fixed = st.fixed_dictionaries(
            {k: valid_for(v) for k, v in props.items() if k in required},
            optional={k: valid_for(v) for k, v in props.items() if k not in required},
        )
        extra = schema.get("additionalProperties", True)
        if extra is False:
            return fixed
        others = st.dictionaries(
            st.text(max_size=20).filter(lambda k: k not in props),
            JSON_VALUES.filter(_is_strict_json) if extra is True else valid_for(extra),
            max_size=3,
        )
        return st.builds(lambda extra_items, own: {**extra_items, **own}, others, fixed)
    raise AssertionError(f"the generator does not know schema type {kind!r}")


def _is_strict_json(value: Any) -> bool:
    """Portable JSON (RFC 8259): no NaN/inf, no lone surrogates, numbers within a double's range."""
    try:
        json.dumps(value, allow_nan=False).encode("utf-8")
    except (ValueError, UnicodeEncodeError, RecursionError):
        return False
    return _in_double_range(value)


def _in_double_range(value: Any) -> bool:
    if isinstance(value, int) and not isinstance(value, bool):
        return abs(value) < 2**1024
    if isinstance(value, dict):
        return all(_in_double_range(v) for v in value.values())
    if isinstance(value, list):
        return all(_in_double_range(v) for v in value)
    return True


@st.composite
def mutated(draw: st.DrawFn, made: Instrumented) -> Any:
    """Valid arguments with one thing broken (or not: some mutations stay valid)."""
    args: dict[str, Any] = draw(valid_for(made.schema.parameters))
    keys = sorted(args)
    op = draw(
        st.sampled_from(["drop", "extra", "replace", "none_all", "none_deep", "swap", "stringify", "wrap", "context"])
    )
    if op == "drop" and keys:
        args.pop(draw(st.sampled_from(keys)))
    elif op == "extra":
        args[draw(st.sampled_from(["p0", "p1", "__class__", "model_config", "self", "kwargs", "ctx"]) | _text)] = draw(
            HOSTILE_VALUES
        )
    elif op == "replace" and keys:
        args[draw(st.sampled_from(keys))] = draw(HOSTILE_VALUES)
    elif op == "none_all":
        args = {k: None for k in args}
    elif op == "none_deep":
        args = _leaves_to_none(args)
    elif op == "swap" and len(keys) > 1:
        values = [args[k] for k in keys]
        values = draw(st.permutations(values))
        args = dict(zip(keys, values, strict=True))
    elif op == "stringify" and keys:
        key = draw(st.sampled_from(keys))
        args[key] = json.dumps(args[key])
    elif op == "wrap" and keys:
        key = draw(st.sampled_from(keys))
        args[key] = [args[key]]
    elif op == "context":  # try to smuggle in the context parameter
        args[made.schema.context_param or "tool_context"] = draw(HOSTILE_VALUES)
    return args


def _leaves_to_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _leaves_to_none(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_leaves_to_none(v) for v in value]
    return None


def hostile(made: Instrumented) -> st.SearchStrategy[Any]:
    props = sorted(made.schema.parameters.get("properties", {}))
    keys = (st.sampled_from(props) | _text) if props else _text
    return st.dictionaries(keys, HOSTILE_VALUES, max_size=6)


# -- the independent JSON-schema oracle --------------------------------------------------------
def json_schema_checker(schema: dict[str, Any]) -> Callable[[Any], tuple[str, Any] | None]:
    """A validator for the schema the model sees, independent of pydantic: None, or (message, bad value).

    fastjsonschema speaks draft 7, so `prefixItems` becomes the tuple form of `items`; a
    pattern's final `$` becomes `\\Z`, since JSON schema regexes (ECMA-262) match `$` only at
    the very end, where Python's `$` also matches before a final newline.
    """
    validate = fastjsonschema.compile(_draft7(schema), formats={"date": _is_date}, use_default=False)

    def check(document: Any) -> tuple[str, Any] | None:
        try:
            validate(document)
        except fastjsonschema.JsonSchemaValueException as exc:
            return exc.message, exc.value
        return None

    return check


def _draft7(node: Any) -> Any:
    if isinstance(node, list):
        return [_draft7(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _draft7(v) for k, v in node.items()}
    if "prefixItems" in out:
        out["items"] = out.pop("prefixItems")
        out["additionalItems"] = False
    pattern = out.get("pattern")
    if isinstance(pattern, str) and pattern.endswith("$") and not pattern.endswith("\\$"):
        out["pattern"] = pattern[:-1] + "\\Z"
    return out


def _is_date(value: str) -> bool:
    try:
        return len(value) == 10 and datetime.date.fromisoformat(value).isoformat() == value
    except ValueError:
        return False


# -- the oracle --------------------------------------------------------------------------------
@dataclass
class Stats:
    tried: int = 0
    accepted: int = 0
    refused: int = 0
    coerced: int = 0
    lost: int = 0
    coercions: Counter[str] = field(default_factory=Counter)
    odd_refusals: Counter[str] = field(default_factory=Counter)

    def note(self) -> str:
        parts = [f"{self.accepted} accepted, {self.refused} refused, {self.coerced} coerced by lax validation"]
        if self.coercions:
            parts.append("coercions: " + ", ".join(f"{k} x{v}" for k, v in self.coercions.most_common(6)))
        if self.odd_refusals:
            parts.append(
                "refused by a non-ToolArgumentsError: " + ", ".join(f"{k} x{v}" for k, v in self.odd_refusals.items())
            )
        return "; ".join(parts)


def _jsonable(value: Any) -> Any:
    """The JSON form of what a function received (pydantic's serializer chokes on lone surrogates)."""
    if isinstance(value, BaseModel):
        return {k: _jsonable(v) for k, v in value.__dict__.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return _jsonable(value.value)
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_jsonable(v) for v in value]
    return value


def _same(a: Any, b: Any) -> bool:
    return json.dumps(_jsonable(a), sort_keys=True, default=repr) == json.dumps(
        _jsonable(b), sort_keys=True, default=repr
    )


REFUSED = object()


def as_sent(args: Any) -> Any:
    """The arguments as the session passes them on, or REFUSED (see adk_notebook/core/json_value.py).

    A stored call must be sendable in every later request, so its text is repaired (surrogate
    halves paired, a lone one made U+FFFD) and arguments holding NaN or Infinity are answered
    with invalid_arguments instead of running.
    """

    def non_finite(value: Any) -> bool:
        if isinstance(value, float):
            return not math.isfinite(value)
        items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
        return any(non_finite(item) for item in items)

    def repair(value: Any) -> Any:
        if isinstance(value, str):
            return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
        if isinstance(value, dict):
            return {repair(k): repair(v) for k, v in value.items()}
        return [repair(v) for v in value] if isinstance(value, list) else value

    return REFUSED if non_finite(args) else repair(args)


def expected_outcome(made: Instrumented, args: Any, stats: Stats) -> dict[str, Any] | None:
    """What the function should receive for `args` (None: it must not run)."""
    sent = as_sent(args)
    if sent is REFUSED:
        return None
    try:
        return made.schema.validate(sent)
    except ToolArgumentsError:
        return None
    except ValueError as exc:  # refused, but not as documented
        stats.odd_refusals[type(exc).__name__] += 1
        return None


def schema_accepts(made: Instrumented, args: Any) -> bool:
    return made.json_check(args) is None


def check_received(made: Instrumented, kwargs: dict[str, Any], expected: dict[str, Any]) -> None:
    """What the function got is what validation produced, of its declared types, inside its schema."""
    context = made.schema.context_param
    if context is not None:
        assert isinstance(kwargs.pop(context), ToolContext), f"{made.name}: the context parameter was not a ToolContext"
    assert _same(kwargs, expected), f"{made.name}: received {kwargs!r}, validate gave {expected!r}"
    for name, value in kwargs.items():
        made.adapters[name].validate_python(value)  # raises if not an instance of its annotation
    model_param = made.schema._model_param
    document = _jsonable(kwargs[model_param] if model_param is not None else kwargs)
    error = made.json_check(document)
    assert error is None, f"{made.name}: received arguments outside the schema: {error}: {document!r}"


def check_call(
    made: Instrumented, args: Any, response: dict[str, Any], received: list[dict[str, Any]], stats: Stats
) -> None:
    stats.tried += 1
    expected = expected_outcome(made, args, stats)
    sent = as_sent(args)
    valid_json = sent is not REFUSED and _is_strict_json(sent) and schema_accepts(made, sent)
    if expected is None:
        stats.refused += 1
        assert not valid_json, f"{made.name}: arguments the JSON schema accepts were refused: {args!r} -> {response}"
        assert received == [], f"{made.name}: ran with arguments its schema rejects: {args!r} -> {received!r}"
        assert response.get("code") == "invalid_arguments" and made.name in response["error"], response
        return
    stats.accepted += 1
    if not valid_json:
        stats.coerced += 1
        stats.coercions[_coercion(made, sent)] += 1
    assert len(received) == 1, f"{made.name}: ran {len(received)} times for one call with {args!r}"
    assert "error" not in response, f"{made.name}: valid arguments {args!r} got {response}"
    check_received(made, dict(received[0]), expected)


def _coercion(made: Instrumented, args: Any) -> str:
    """A short label for what lax validation let through, e.g. "must be integer (got str)"."""
    error = made.json_check(args)
    if error is None:
        return "non-portable JSON value"
    message, got = error
    return f"{message.split(' ', 1)[1]} (got {type(got).__name__})"


# -- running calls through the loop ------------------------------------------------------------
def _call_part(name: str, args: Any) -> Part:
    # A Part is used as is by ScriptedModel, so arguments that are not even a dict reach the agent.
    return Part(function_call=FunctionCall(name, args))


async def run_one(made: Instrumented, args: Any) -> dict[str, Any]:
    made.received.clear()
    agent = LlmAgent(name="hostile", model=ScriptedModel([_call_part(made.name, args), "done"]), tools=[made.tool])
    result = await agent.run_async("go", streaming=False)
    assert result.text == "done"
    calls = [c for e in result.events for c in e.function_calls()]
    responses = [r for e in result.events for r in e.function_responses()]
    assert len(calls) == 1 and len(responses) == 1 and responses[0].id == calls[0].id
    return responses[0].response


def _property_test(made: Instrumented, strategy: st.SearchStrategy[Any], examples: int, stats: Stats) -> None:
    with asyncio.Runner() as loop:

        @settings(max_examples=examples, **SETTINGS)
        @given(args=strategy)
        def prop(args: Any) -> None:
            response = loop.run(run_one(made, args))
            check_call(made, args, response, list(made.received), stats)

        prop()


@pytest.fixture(scope="module")
def instrumented() -> dict[str, Instrumented]:
    return {fn.__name__: instrument(fn) for fn in FUNCTIONS}


def test_the_whole_corpus_is_covered(instrumented: dict[str, Instrumented]) -> None:
    assert len(instrumented) == len(FUNCTIONS) >= 30


@pytest.mark.parametrize("kind", ["hostile", "valid", "mutated"])
@pytest.mark.parametrize("name", [fn.__name__ for fn in FUNCTIONS])
def test_tool_runs_only_with_arguments_its_schema_accepts(
    instrumented: dict[str, Instrumented], tally: Any, name: str, kind: str
) -> None:
    made = instrumented[name]
    stats = Stats()
    strategy, examples = {
        "hostile": (hostile(made), HOSTILE_EXAMPLES),
        "valid": (valid_for(made.schema.parameters), VALID_EXAMPLES),
        "mutated": (mutated(made), MUTATED_EXAMPLES),
    }[kind]
    try:
        _property_test(made, strategy, examples, stats)
        if kind == "valid":
            assert stats.refused == 0
    except BaseException:
        stats.lost += 1
        raise
    finally:
        tally.record(
            f"tool args: {kind} (agent loop)",
            stats.tried,
            stats.lost,
            f"{name}: {stats.note()}" if stats.coerced or stats.odd_refusals else "",
        )


@st.composite
def batches(draw: st.DrawFn, tools: dict[str, Instrumented]) -> list[tuple[str, Any]]:
    names = sorted(tools)
    calls = []
    for _ in range(draw(st.integers(1, 6))):
        name = draw(st.sampled_from(names + ["no_such_tool"]))
        made = tools.get(name)
        if made is None:
            calls.append((name, draw(JSON_VALUES)))
            continue
        calls.append((name, draw(st.one_of(hostile(made), valid_for(made.schema.parameters), mutated(made)))))
    return calls


@pytest.mark.parametrize("strategy", ["parallel", "sequential", "auto"])
def test_batches_of_hostile_calls(instrumented: dict[str, Instrumented], tally: Any, strategy: str) -> None:
    """Several calls in one model turn: each gets its own response, in the model's order."""
    stats = Stats()
    tools = [m.tool for m in instrumented.values()]
    for t in tools:  # AUTO runs read-only, concurrency-safe tools at once
        t.is_read_only = t.is_concurrency_safe = True

    async def run_batch(calls: list[tuple[str, Any]]) -> list[Any]:
        for made in instrumented.values():
            made.received.clear()
        model = ScriptedModel([[_call_part(name, args) for name, args in calls], "done"])
        agent = LlmAgent(
            name="hostile",
            model=model,
            tools=tools,
            tool_execution_strategy=strategy,
            default_retry_budget=RetryBudget(max_retries=1),
        )
        result = await agent.run_async("go", streaming=False)
        assert result.text == "done"
        sent = [c for e in result.events for c in e.function_calls()]
        responses = [r for e in result.events for r in e.function_responses()]
        assert [r.id for r in responses] == [c.id for c in sent] and len(set(r.id for r in responses)) == len(calls)
        return [r.response for r in responses]

    try:
        with asyncio.Runner() as loop:

            @settings(max_examples=BATCH_EXAMPLES, **SETTINGS)
            @given(calls=batches(instrumented))
            def prop(calls: list[tuple[str, Any]]) -> None:
                responses = loop.run(run_batch(calls))
                expected: dict[str, list[Any]] = {}
                for (name, args), response in zip(calls, responses, strict=True):
                    stats.tried += 1
                    made = instrumented.get(name)
                    if made is None:
                        assert response["code"] == "unknown_tool"
                        continue
                    want = expected_outcome(made, args, stats)
                    if want is None:
                        stats.refused += 1
                        assert response.get("code") == "invalid_arguments", response
                    else:
                        stats.accepted += 1
                        assert "error" not in response, response
                        expected.setdefault(name, []).append(want)
                for name, made in instrumented.items():
                    want_all = expected.get(name, [])
                    assert len(made.received) == len(want_all), (
                        f"{name} ran {len(made.received)}x, {len(want_all)} valid calls"
                    )
                    got = sorted(
                        json.dumps(
                            _jsonable({k: v for k, v in r.items() if k != made.schema.context_param}),
                            sort_keys=True,
                            default=repr,
                        )
                        for r in made.received
                    )
                    assert got == sorted(json.dumps(_jsonable(w), sort_keys=True, default=repr) for w in want_all)
                    for kwargs in made.received:
                        check_received(made, dict(kwargs), _matching(want_all, kwargs, made))

            prop()
    except BaseException:
        stats.lost += 1
        raise
    finally:
        for t in tools:
            t.is_read_only = t.is_concurrency_safe = False
        tally.record(f"tool args: batches, {strategy} (agent loop)", stats.tried, stats.lost)


def _matching(candidates: list[dict[str, Any]], kwargs: dict[str, Any], made: Instrumented) -> dict[str, Any]:
    own = {k: v for k, v in kwargs.items() if k != made.schema.context_param}
    return next(c for c in candidates if _same(c, own))


@pytest.mark.parametrize("args", [[], [1, "a"], "city=Tokyo", ""], ids=repr)
def test_arguments_that_are_not_an_object_are_refused(args: Any, tally: Any) -> None:
    """`FunctionCall.args` is typed dict, but a custom Llm may still send a list or a string."""
    made = instrument(forecast)
    response = asyncio.run(run_one(made, args))
    assert made.received == [] and response["code"] == "invalid_arguments"
    tally.record("tool args: not an object (agent loop)", 1, 0)


# -- handler tools whose parameters are a JSON-schema dict ----------------------------------------
class SchemaTool(Tool):
    """A custom Tool subclass: only a `parameters_schema` and `execute`, no validation of its own."""

    def __init__(self, name: str, schema: dict[str, Any], got: list[Any]) -> None:
        self.name = name
        self._schema = schema
        self._got = got

    @property
    def parameters_schema(self) -> dict[str, Any]:
        return self._schema

    async def execute(self, ctx: Any, args: dict[str, Any]) -> dict[str, Any]:
        self._got.append(args)
        return {"ran": True}


@pytest.mark.parametrize("kind", ["handler", "subclass"])
@pytest.mark.parametrize("name", [fn.__name__ for fn in FUNCTIONS])
def test_handler_tool_with_a_json_schema_dict(
    instrumented: dict[str, Instrumented], tally: Any, name: str, kind: str
) -> None:
    """The handler (or a custom Tool subclass's `execute`) runs iff the tool's checker accepts, with the
    arguments as sent; what it accepts fits every keyword the checker enforces, and arguments the full
    schema accepts are never refused."""
    made = instrumented[name]
    schema = made.schema.parameters
    got: list[Any] = []

    async def handler(ctx: Any, args: dict[str, Any]) -> dict[str, Any]:
        got.append(args)
        return {"ran": True}

    if kind == "handler":
        tool: Tool = FunctionTool(name, "A handler tool.", handler).with_parameters_schema(schema)
    else:
        tool = SchemaTool(name, schema, got)
    stats = Stats()

    async def run(args: Any) -> dict[str, Any]:
        got.clear()
        agent = LlmAgent(name="hostile", model=ScriptedModel([_call_part(name, args), "done"]), tools=[tool])
        result = await agent.run_async("go", streaming=False)
        assert result.text == "done"
        (response,) = [r.response for e in result.events for r in e.function_responses()]
        return response

    try:
        with asyncio.Runner() as loop:

            @settings(max_examples=VALID_EXAMPLES, **SETTINGS)
            @given(args=st.one_of(hostile(made), valid_for(schema), mutated(made)))
            def prop(args: Any) -> None:
                response = loop.run(run(args))
                stats.tried += 1
                sent = as_sent(args)
                accepted = sent is not REFUSED
                if accepted:
                    try:
                        tool.validate_args(sent)
                    except ValueError:
                        accepted = False
                full = (
                    made.json_check(sent)
                    if sent is not REFUSED and _is_strict_json(sent)
                    else ("non-portable JSON", args)
                )
                if not accepted:
                    stats.refused += 1
                    assert got == [] and response.get("code") == "invalid_arguments", response
                    assert full is not None, f"{name}: arguments the JSON schema accepts were refused: {args!r}"
                    return
                stats.accepted += 1
                assert got == [sent] and "error" not in response
                assert full is None, f"{name}: the handler ran with {args!r}, which the schema rejects: {full}"

            prop()
    except BaseException:
        stats.lost += 1
        raise
    finally:
        tally.record(
            "handler tool + JSON-schema dict" if kind == "handler" else "custom Tool subclass + JSON-schema dict",
            stats.tried,
            stats.lost,
        )


@pytest.mark.parametrize(
    ("keyword", "schema", "args"),
    [
        ("pattern", {"code": {"type": "string", "pattern": "^[A-Z]+$"}}, {"code": "abc"}),
        ("exclusiveMinimum", {"ratio": {"type": "number", "exclusiveMinimum": 0}}, {"ratio": 0}),
        ("exclusiveMaximum", {"ratio": {"type": "number", "exclusiveMaximum": 1}}, {"ratio": 1}),
        ("uniqueItems", {"ids": {"type": "array", "items": {"type": "integer"}, "uniqueItems": True}}, {"ids": [1, 1]}),
        (
            "prefixItems",
            {"point": {"type": "array", "prefixItems": [{"type": "number"}, {"type": "number"}]}},
            {"point": ["a", "b"]},
        ),
        ("format", {"when": {"type": "string", "format": "date"}}, {"when": "yesterday"}),
    ],
    ids=["pattern", "exclusiveMinimum", "exclusiveMaximum", "uniqueItems", "prefixItems", "format"],
)
def test_json_schema_dict_keywords_are_enforced(
    keyword: str, schema: dict[str, Any], args: dict[str, Any], tally: Any
) -> None:
    with tally.case(f"handler tool + JSON-schema dict: {keyword} enforced"):
        got: list[Any] = []
        tool = FunctionTool("t", "T.", lambda ctx, a: got.append(a) or {"ran": True}).with_parameters_schema(
            {"type": "object", "properties": schema}
        )
        result = LlmAgent(name="a", model=ScriptedModel([FunctionCall("t", args), "done"]), tools=[tool]).run("go")
        assert result.text == "done"
        assert got == [], f"the handler ran with {args!r}, which breaks {keyword}"


# -- bugs found here once, each with its minimal reproduction -------------------------------
@pytest.mark.parametrize("args", [None, 5], ids=repr)
def test_none_arguments_are_refused_not_a_crash(args: Any, tally: Any) -> None:
    with tally.case("tool args: args=None / a number"):
        made = instrument(forecast)
        response = asyncio.run(run_one(made, args))
        assert made.received == [] and response["code"] == "invalid_arguments"


def forecast(city: str, days: int = 3) -> dict[str, Any]:
    """Forecast the weather."""
    return {"city": city}


def test_deeply_nested_wrong_argument_is_an_error_response_not_a_crash(tally: Any) -> None:
    with tally.case("tool args: deep nesting beyond recursion limit"):
        schema = function_schema(forecast)
        with pytest.raises(ToolArgumentsError):
            schema.validate({"city": _nest(2000, 1, False)})
        agent = LlmAgent(
            name="a",
            model=ScriptedModel([FunctionCall("forecast", {"city": _nest(2000, 1, False)}), "done"]),
            tools=[forecast],
        )
        assert agent.run("go").text == "done"


def test_lone_surrogate_in_arguments_is_stored_by_sqlite(tmp_path: Any, tally: Any) -> None:
    with tally.case("tool args: lone surrogate stored in SQLite"):
        args = json.loads('{"city": "Tokyo \\ud83d"}')
        with SqliteSessionService(tmp_path / "s.db") as sessions:
            agent = LlmAgent(name="a", model=ScriptedModel([FunctionCall("forecast", args), "done"]), tools=[forecast])
            assert agent.run("go", session_service=sessions).text == "done"
