"""JSON-schema dicts, enforced as JSON Schema says: tool parameters and output schemas.

Each case once slipped through the hand-written checker these replaced. A tool's rejected call
reaches the model as an `invalid_arguments` error (and the handler never runs); a rejected
answer is sent back to the model with what is wrong, and its next answer is the output.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap
from typing import Any

import pytest

from adk_notebook import AdkError, FunctionCall, FunctionTool, LlmAgent, ScriptedModel

# (schema, an argument the schema accepts, one it rejects, words of the rejection)
CASES = {
    "oneOf: exactly one branch": (
        {"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 10}]},
        3,
        12,  # an integer and >= 10: both branches match
        "matches more than one of the allowed shapes",
    ),
    "not": (
        {"type": "string", "not": {"enum": ["root", "admin"]}},
        "ana",
        "root",
        'must not match {"enum": ["root", "admin"]}',
    ),
    "contains": (
        {"type": "array", "items": {"type": "string"}, "contains": {"const": "owner"}},
        ["viewer", "owner"],
        ["viewer"],
        'needs an item that matches {"const": "owner"}',
    ),
}


def with_field(schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {"value": schema}, "required": ["value"]}


def recording_tool(schema: dict[str, Any]) -> tuple[FunctionTool, list[dict[str, Any]]]:
    received: list[dict[str, Any]] = []
    tool = FunctionTool("record", "Record it.", lambda ctx, args: received.append(args) or {"ok": True})
    return tool.with_parameters_schema(schema), received


async def call_twice(schema: dict[str, Any], bad: dict[str, Any], good: dict[str, Any]) -> tuple[dict, dict, list]:
    tool, received = recording_tool(schema)
    model = ScriptedModel([[FunctionCall("record", bad), FunctionCall("record", good)], "done"])
    result = await LlmAgent(name="a", model=model, tools=[tool]).run_async("go")
    refused, accepted = result.events[2].function_responses()
    return refused.response, accepted.response, received


@pytest.mark.parametrize("case", CASES)
async def test_a_tool_enforces_the_keyword(case: str) -> None:
    schema, good, bad, says = CASES[case]
    refused, accepted, received = await call_twice(with_field(schema), {"value": bad}, {"value": good})
    assert refused["code"] == "invalid_arguments" and f"value: {says}" in refused["error"]
    assert accepted == {"ok": True} and received == [{"value": good}]


@pytest.mark.parametrize("case", CASES)
async def test_an_output_schema_enforces_the_keyword(case: str) -> None:
    schema, good, bad, says = CASES[case]
    model = ScriptedModel([f'{{"value": {json.dumps(bad)}}}', f'{{"value": {json.dumps(good)}}}'])
    result = await LlmAgent(name="a", model=model, output_schema=with_field(schema)).run_async("go")
    assert result.output == {"value": good}
    assert f"(root).value: {says}" in model.requests[1].contents[-1].text


async def test_dependent_required_names_the_missing_field() -> None:
    schema = {
        "type": "object",
        "properties": {
            "card": {"type": "string"},
            "billing_address": {"type": "string"},
        },
        "dependentRequired": {"card": ["billing_address"]},
    }
    refused, accepted, _ = await call_twice(schema, {"card": "4111"}, {"card": "4111", "billing_address": "Oslo"})
    assert refused["error"].endswith("billing_address: required when 'card' is given")
    assert accepted == {"ok": True}


async def test_if_then_applies_the_then_branch() -> None:
    schema = {
        "type": "object",
        "properties": {"country": {"type": "string"}, "postcode": {"type": "string"}},
        "if": {"properties": {"country": {"const": "NL"}}, "required": ["country"]},
        "then": {
            "properties": {"postcode": {"pattern": "^[0-9]{4} ?[A-Z]{2}$"}},
            "required": ["postcode"],
        },
    }
    model = ScriptedModel(
        [
            '{"country": "NL", "postcode": "75008"}',
            '{"country": "NL"}',
            '{"country": "NL", "postcode": "1012 AB"}',
        ]
    )
    result = await LlmAgent(name="a", model=model, output_schema=schema).run_async("go")
    assert result.output == {"country": "NL", "postcode": "1012 AB"}
    assert "(root).postcode: must match the pattern ^[0-9]{4} ?[A-Z]{2}$" in model.requests[1].contents[-1].text
    assert "(root).postcode: required" in model.requests[2].contents[-1].text
    fine = await LlmAgent(
        name="b",
        model=ScriptedModel(['{"country": "FR", "postcode": "75008"}']),
        output_schema=schema,
    ).run_async("go")
    assert fine.output == {"country": "FR", "postcode": "75008"}, "no `then` when `if` does not match"


async def test_pattern_properties_with_additional_properties_false() -> None:
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string"}},
        "patternProperties": {"^x-": {"type": "string"}},
        "additionalProperties": False,
    }
    refused, accepted, received = await call_twice(
        schema,
        {"name": "a", "x-team": 3, "colour": "red"},
        {"name": "a", "x-team": "core"},
    )
    assert accepted == {"ok": True} and received == [{"name": "a", "x-team": "core"}]
    assert refused["error"].split(": ", 1)[1] == "x-team: expected string, got integer; colour: not allowed"


async def test_an_answer_that_fits_a_one_of_twice_is_asked_again() -> None:
    shape = {"type": "object", "properties": {"kind": {"type": "string"}}}
    schema = {
        "oneOf": [
            {**shape, "required": ["kind"]},
            {**shape, "properties": {"kind": {"const": "cat"}}},
        ]
    }
    model = ScriptedModel(['{"kind": "cat"}', '{"kind": "dog"}'])
    result = await LlmAgent(name="a", model=model, output_schema=schema).run_async("go")
    assert result.output == {"kind": "dog"}
    assert "(root): matches more than one of the allowed shapes" in model.requests[1].contents[-1].text


def test_a_schema_that_is_not_json_schema_is_refused_where_it_is_given() -> None:
    tool = FunctionTool("t", "T.", lambda ctx, args: {})
    with pytest.raises(AdkError) as caught:
        tool.with_parameters_schema({"type": "object", "properties": {"n": {"type": "int"}}})
    assert (caught.value.code, caught.value.category) == (
        "invalid_schema",
        "invalid_input",
    )
    assert "at properties.n.type" in caught.value.message and "'int' is not valid" in caught.value.message
    with pytest.raises(AdkError) as caught:
        LlmAgent(
            name="a",
            model=ScriptedModel(["{}"]),
            output_schema={"type": "object", "required": "name"},
        )
    assert caught.value.code == "invalid_schema" and "at required" in caught.value.message


def test_formats_are_checked() -> None:
    tool, _ = recording_tool(with_field({"type": "string", "format": "date-time"}))
    for value, ok in [
        ("2026-12-01T20:00:00Z", True),
        ("2026-12-01T20:00:00", False),
        ("tomorrow", False),
    ]:
        try:
            tool.validate_args({"value": value})
        except ValueError as exc:
            assert not ok and str(exc).endswith("value: must be a valid date-time"), value
        else:
            assert ok, value


@pytest.mark.parametrize(
    "format, good, bad",
    [
        ("date", "2026-12-01", "2026-13-01"),
        ("time", "20:00:00Z", "8pm"),
        ("email", "ana@example.com", "ana.example.com"),
        ("uri", "https://example.com/a", "example.com/a"),
        ("uuid", "0f8fad5b-d9cb-469f-a165-70867728950e", "0f8fad5b"),
        ("ipv4", "127.0.0.1", "127.0.0.256"),
        ("regex", "^a+$", "(unclosed"),
    ],
)
def test_each_promised_format_is_checked(format: str, good: str, bad: str) -> None:
    tool, _ = recording_tool(with_field({"type": "string", "format": format}))
    assert tool.validate_args({"value": good}) == {"value": good}
    with pytest.raises(ValueError, match=f"value: must be a valid {format}$"):
        tool.validate_args({"value": bad})


@pytest.mark.skipif(
    importlib.util.find_spec("rfc3987_syntax") is None,
    reason="rfc3987_syntax (installed with Jupyter) is not installed",
)
def test_the_first_dict_schema_does_not_load_the_slow_iri_grammar() -> None:
    """rfc3987_syntax compiles a grammar for seconds as it loads; jsonschema imports it."""
    code = textwrap.dedent(
        """
        import sys
        from adk_notebook import FunctionTool
        schema = {"type": "object", "properties": {"when": {"type": "string", "format": "date-time"}}}
        tool = FunctionTool("t", "T.", lambda c, a: {}).with_parameters_schema(schema)
        tool.validate_args({"when": "2026-12-01T20:00:00Z"})
        try:
            tool.validate_args({"when": "tomorrow"})
        except ValueError as exc:
            print(exc)
        print("rfc3987_syntax" in sys.modules)
        # jsonschema itself still checks "iri" for anyone else in the process
        import jsonschema
        iri = jsonschema.Draft202012Validator.FORMAT_CHECKER
        print(iri.conforms("https://example.com/ü", "iri"), iri.conforms("not an iri", "iri"))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.splitlines()
    assert out[0].endswith("when: must be a valid date-time")
    assert out[1:] == ["False", "True False"]


def test_jsonschema_loads_with_the_first_dict_schema_not_with_the_package() -> None:
    code = (
        "import sys, adk_notebook; from adk_notebook import FunctionTool; loaded = 'jsonschema' in sys.modules; "
        "FunctionTool('t', 'T.', lambda c, a: {}).with_parameters_schema({'type': 'object'}); "
        "print(loaded, 'jsonschema' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "True"]
