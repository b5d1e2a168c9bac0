"""The provider dialects share one walk: a keyword is rewritten wherever schemas nest, and a
property that happens to share a keyword's name ("title", "format") is left alone."""

from __future__ import annotations

from typing import Any

from adk_notebook import Content
from adk_notebook.models.anthropic import AnthropicModel
from adk_notebook.models.base import GenerateContentConfig, LlmRequest
from adk_notebook.models.gemini import GeminiModel
from adk_notebook.tools.schema import model_json_schema

SCHEMA: dict[str, Any] = {
    "title": "Book",
    "type": "object",
    "properties": {
        "title": {"title": "Title", "type": "string", "maxLength": 80},
        "format": {"$ref": "#/$defs/Format"},
        "tags": {
            "type": "array",
            "items": {"title": "Tag", "type": "string", "format": "slug"},
        },
    },
    "required": ["title"],
    "$defs": {"Format": {"title": "Format", "oneOf": [{"const": "paper"}, {"const": "ebook"}]}},
}


def request(schema: dict[str, Any]) -> LlmRequest:
    return LlmRequest("m", [Content.user("hi")], config=GenerateContentConfig(response_schema=schema))


def test_titles_are_dropped_and_properties_named_title_kept() -> None:
    plain = model_json_schema(SCHEMA)
    assert list(plain["properties"]) == ["title", "format", "tags"]
    assert plain["properties"]["title"] == {"type": "string", "maxLength": 80}
    assert plain["properties"]["format"] == {"oneOf": [{"const": "paper"}, {"const": "ebook"}]}
    assert "title" not in plain and "$defs" not in plain


def test_gemini_dialect() -> None:
    body = GeminiModel("gemini-2.5-flash", api_key="unused").build_body(request(SCHEMA))
    schema = body["generationConfig"]["responseSchema"]
    assert schema["properties"]["format"] == {"anyOf": [{"enum": ["paper"]}, {"enum": ["ebook"]}]}
    assert schema["properties"]["tags"]["items"] == {"type": "string"}  # an unknown format dropped
    assert schema["properties"]["title"] == {"type": "string", "maxLength": 80}


def test_anthropic_dialect() -> None:
    body = AnthropicModel("claude-sonnet-4-5", api_key="unused").build_body(request(SCHEMA))
    schema = body["output_config"]["format"]["schema"]
    assert schema["additionalProperties"] is False and schema["required"] == ["title"]
    assert schema["properties"]["title"] == {
        "type": "string",
        "description": "(maxLength: 80)",
    }
    assert schema["properties"]["format"] == {"anyOf": [{"const": "paper"}, {"const": "ebook"}]}
    assert schema["properties"]["tags"]["items"] == {
        "type": "string",
        "description": "(format: slug)",
    }
