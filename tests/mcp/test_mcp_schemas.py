"""Real MCP servers' input schemas, as each provider's request declares them: valid in its
dialect, unchanged in meaning."""

from __future__ import annotations

import re
from typing import Any

import pytest
from jsonschema.validators import validator_for

from adk_notebook import Content
from adk_notebook.mcp import McpToolset, _loop
from adk_notebook.models.anthropic import AnthropicModel
from adk_notebook.models.base import LlmRequest
from adk_notebook.models.gemini import GeminiModel
from adk_notebook.models.openai import OpenAIModel

# Gemini's Schema object (an OpenAPI 3.0 subset), from its API reference.
GEMINI_FIELDS = {
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "maxItems",
    "minItems",
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "example",
    "anyOf",
    "propertyOrdering",
    "default",
    "items",
    "minimum",
    "maximum",
}
GEMINI_TYPES = {"string", "number", "integer", "boolean", "array", "object", "null"}
GEMINI_FORMATS = {"string": {"enum", "date-time"}, "number": {"float", "double"}, "integer": {"int32", "int64"}}
NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")  # OpenAI's and Anthropic's rule for tool names


@pytest.fixture(scope="module")
def declared(time_tools: McpToolset, everything_tools: McpToolset, our_tools: McpToolset) -> list[Any]:
    tools = [t for ts in (time_tools, everything_tools, our_tools) for t in _loop.run_blocking(ts.tools(), 90)]
    assert len(tools) > 15
    return tools


def request_of(tools: list[Any]) -> LlmRequest:
    return LlmRequest("m", [Content.user("hi")], None, [t.declaration() for t in tools])


def test_openai_gets_the_schemas_as_they_are(declared: list[Any]) -> None:
    body = OpenAIModel("gpt-4o-mini", api_key="unused").build_body(request_of(declared))
    for tool, wire in zip(declared, body["tools"], strict=True):
        function = wire["function"]
        assert NAME.match(function["name"]) and function["parameters"] == tool.parameters_schema
        assert function["parameters"]["type"] == "object"
        validator_for(function["parameters"]).check_schema(function["parameters"])


def test_anthropic_gets_the_schemas_as_they_are(declared: list[Any]) -> None:
    body = AnthropicModel("claude-sonnet-4-5", api_key="unused").build_body(request_of(declared))
    for tool, wire in zip(declared, body["tools"], strict=True):
        schema = wire["input_schema"]
        assert NAME.match(wire["name"]) and schema == tool.parameters_schema
        assert schema["type"] == "object" and not {"anyOf", "oneOf", "allOf"} & set(schema)  # refused at the top
        validator_for(schema).check_schema(schema)


def test_gemini_gets_its_dialect_with_the_same_meaning(declared: list[Any]) -> None:
    body = GeminiModel("gemini-2.5-flash", api_key="unused").build_body(request_of(declared))
    [group] = body["tools"]
    for tool, wire in zip(declared, group["functionDeclarations"], strict=True):
        original = tool.parameters_schema
        if not original.get("properties"):
            assert "parameters" not in wire  # Gemini refuses an object without properties
            continue
        schema = wire["parameters"]
        assert_gemini_schema(schema, wire["name"])
        assert schema.get("required", []) == original.get("required", [])
        for name, prop in original["properties"].items():
            ours = schema["properties"][name]
            assert ours["type"] == prop["type"] and ours.get("description") == prop.get("description"), name
            assert ours.get("enum") == prop.get("enum") and ours.get("default") == prop.get("default"), name
            for bound in ("minimum", "maximum"):
                assert ours.get(bound) == prop.get(bound), name


def assert_gemini_schema(node: Any, where: str) -> None:
    assert isinstance(node, dict), where
    assert set(node) <= GEMINI_FIELDS, f"{where}: {set(node) - GEMINI_FIELDS}"
    kind = node.get("type")
    assert kind is None or str(kind).lower() in GEMINI_TYPES, where
    if "format" in node:
        assert node["format"] in GEMINI_FORMATS.get(kind, ()), f"{where}: format {node['format']}"
    if "enum" in node:
        assert kind == "string" and all(isinstance(v, str) for v in node["enum"]), where
    for name, child in node.get("properties", {}).items():
        assert_gemini_schema(child, f"{where}.{name}")
    if "items" in node:
        assert_gemini_schema(node["items"], f"{where}[]")
    for i, branch in enumerate(node.get("anyOf", [])):
        assert_gemini_schema(branch, f"{where}|{i}")
